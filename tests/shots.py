"""Shot files for the headless tests: ``python tests/shots.py OUT.blend [--seconds S] [--empty]``.

A saved .blend with the Mixamo test rig walking a DeepMimic walk (tests/test_bake.walk_rig), or
with no armature at all (``--empty``: the broken shot of a batch).  Run in its own process so the
test process's Blender session is left alone.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]


def make_shot(path: Path, seconds: float = 1.0, empty: bool = False) -> Path:
    import bpy
    import conftest

    bpy.ops.wm.read_factory_settings(use_empty=True)
    if not empty:
        conftest.load_addon_package().register()
        import test_bake

        obj, _body, _mapping = test_bake.walk_rig(seconds=seconds)
        obj.fatigue_settings.fitness = 0.3          # a file with its own (unkeyed) settings
        obj.fatigue_settings.time_scale = 40.0
    else:
        bpy.ops.mesh.primitive_cube_add()
    path.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--empty", action="store_true")
    a = ap.parse_args()
    make_shot(a.out, a.seconds, a.empty)
    # The bpy 4.2 module crashes at interpreter exit once any property with an update callback
    # was registered (a plain script registering one does too); the file is saved: leave now.
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
