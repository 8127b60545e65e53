"""Shot files for the headless tests: ``python tests/support/shots.py OUT.blend [--seconds S] [--empty | --demo | --off-hinge]``.

A saved .blend with the Mixamo test rig walking a DeepMimic walk (tests/support/bakes.walk_rig; with
``--off-hinge`` its elbows also tilt 35 degrees off their hinge axis, which the bake warns of), or
with no armature at all (``--empty``: the broken shot of a batch), or the bundled demo character
(``--demo``: tools/demo_blend.py, fitness keyed from 1.0 to 0.2; needs only bpy and numpy, so the
other Blender versions' environments, which have no pytest, can make it).  Run in its own process
so the test process's Blender session is left alone.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parents[1])]


def make_shot(path: Path, seconds: float = 1.0, empty: bool = False, off_hinge: bool = False) -> Path:
    import bpy
    import conftest

    bpy.ops.wm.read_factory_settings(use_empty=True)
    if not empty:
        conftest.load_addon_package().register()
        import bakes

        obj, _body, _mapping = bakes.walk_rig(seconds=seconds, edit=_elbows_off_hinge if off_hinge else None)
        obj.fatigue_settings.fitness = 0.3          # a file with its own (unkeyed) settings
        obj.fatigue_settings.time_scale = 40.0
    else:
        bpy.ops.mesh.primitive_cube_add()
    path.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def _elbows_off_hinge(clip):
    """``clip`` with both elbows also turned 35 degrees about their link's x axis: off the proxy's
    hinge axis (z), which the retarget reports."""
    from dataclasses import replace

    import bakes

    quat = bakes.mod("runtime.maths.quat")
    joints = clip.joint_rots.copy()
    twist = quat.from_axis_angle([1.0, 0.0, 0.0], 0.61)
    for side in ("right", "left"):
        j = clip.joints.index(f"{side}_elbow")
        joints[:, j] = quat.multiply(joints[:, j], twist)
    return replace(clip, joint_rots=joints)


def make_demo_shot(path: Path, seconds: float = 2.0) -> Path:
    """The demo character walking ``seconds`` of the DeepMimic walk, tiring fast (60x), saved."""
    import bpy

    sys.path.insert(0, str(HERE.parents[1] / "tools"))
    import demo_blend

    demo_blend.load_addon()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    demo_blend.load_addon()
    rclip = demo_blend.addon_module("runtime.motion.clip")
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 30, 1.0
    obj, _mesh = demo_blend.build_character()
    walk = rclip.load_deepmimic(rclip.deepmimic_clip_path("walk")).repeated(seconds)
    demo_blend.write_clip(obj, walk, "walk")
    frames = int(round(walk.duration * scene.render.fps)) + 1
    scene.frame_start, scene.frame_end = 1, frames
    obj.fatigue_settings.time_scale = 60.0
    demo_blend.key_fitness(obj, 1, frames)
    bpy.context.view_layer.objects.active = obj
    path.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--empty", action="store_true")
    ap.add_argument("--demo", action="store_true")
    ap.add_argument("--off-hinge", action="store_true")
    a = ap.parse_args()
    if a.demo:
        make_demo_shot(a.out, a.seconds)
    else:
        make_shot(a.out, a.seconds, a.empty, a.off_hinge)
    # The bpy 4.2 module crashes at interpreter exit once any property with an update callback
    # was registered (a plain script registering one does too); the file is saved: leave now.
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
