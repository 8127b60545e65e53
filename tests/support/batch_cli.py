"""Helpers of the headless-bake tests: shot files made in their own process, ``./fatigue bake`` run as
a technical director runs it, and the keyframes of a baked file."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np

from bakes import fcurves

ROOT = Path(__file__).resolve().parents[2]


def make_shot(path: Path, empty: bool = False, seconds: float = 1.0, off_hinge: bool = False) -> Path:
    cmd = [sys.executable, str(ROOT / "tests" / "support" / "shots.py"), str(path), "--seconds", str(seconds)]
    cmd += (["--empty"] if empty else []) + (["--off-hinge"] if off_hinge else [])
    subprocess.run(cmd, check=True, capture_output=True, cwd=str(ROOT))
    return path


def bake_cli(*args, wrapper=False, env=None):
    cmd = [str(ROOT / "fatigue"), "bake"] if wrapper else [sys.executable, str(ROOT / "tools" / "batch.py")]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, cwd=str(ROOT), timeout=600,
                          env=env)


def keyframes(path: Path) -> dict:
    """action name -> {(data_path, index): keyframe co array} of a saved file."""
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    out = {}
    for action in bpy.data.actions:
        curves = {}
        for fc in fcurves(action):
            co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
            fc.keyframe_points.foreach_get("co", co)
            curves[(fc.data_path, fc.array_index)] = co
        out[action.name] = curves
    out["_fake_user"] = {a.name: a.use_fake_user for a in bpy.data.actions}
    out["_assigned"] = {o.name: o.animation_data.action.name for o in bpy.data.objects
                        if o.animation_data is not None and o.animation_data.action is not None}
    return out
