"""Helpers of the add-on tests: the add-on's modules as Blender loads them, the Mixamo test rig
walking a DeepMimic walk, and what a refused bake must leave behind (bpy needed)."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import bpy
import numpy as np

import rigs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import demo_blend  # noqa: E402

ADDON = "fatigued_takes"
WALK_SECONDS = 1.5


def mod(name):
    return importlib.import_module(f"{ADDON}.{name}")


def walk_rig(seconds=WALK_SECONDS, fingers=False, mesh=True, fps=30, fps_base=1.0, edit=None, build=None):
    """Mixamo rig (FBX-style transform) walking a DeepMimic walk from frame 1, plus a tube mesh.
    ``edit``: a function applied to the walk (a runtime Clip) before it is keyed.  ``build``: a
    rigs.py builder of another animated rig to walk instead (then no mesh)."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = fps, fps_base
    rig = rigs.mixamo_rig(fingers=fingers) if build is None else build()
    mesh = mesh and build is None
    obj = rig.obj
    rt, rigmap, rclip, anim = (mod("fatigue_addon.retarget"), mod("fatigue_addon.rigmap"),
                               mod("runtime.motion.clip"), mod("fatigue_addon.anim"))
    mapping = rigmap.detect_mapping(obj)
    _, info = rt.action_to_clip(obj, mapping, 1, 20)
    walk = rclip.load_deepmimic(rclip.deepmimic_clip_path("walk")).repeated(seconds).resampled(fps / fps_base)
    if edit is not None:
        walk = edit(walk)
    action = rt.clip_to_action(obj, mapping, walk, info, "walk")
    old = obj.animation_data.action
    anim.assign_action(obj, action)
    bpy.data.actions.remove(old)
    scene.frame_start, scene.frame_end = 1, walk.frames
    body = None
    if mesh:
        bones = [mapping[k] for k in rigmap.HUMANOID_KEYS] + [rigs.mixamo_names()["spine1"]]
        body = demo_blend.skin_tubes(obj, [(b, 0.05) for b in bones])
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    return obj, body, mapping


def fcurves(action):
    return mod("fatigue_addon.anim").all_action_fcurves(action)


def nothing_written(obj, body=None, source_name="walk"):
    """The state a refused / cancelled / failed bake must leave behind."""
    assert not [a.name for a in bpy.data.actions if a.name.endswith(".fatigued")]
    assert obj.fatigue_settings.last_report == ""
    assert obj.fatigue_settings.baked_action is None
    if obj.animation_data is not None:
        assert len(obj.animation_data.nla_tracks) == 0
        if source_name:
            assert obj.animation_data.action.name == source_name
    if obj.type == "ARMATURE":
        assert not any("fatigue" in pb.keys() for pb in obj.pose.bones)
    if body is not None:
        assert body.modifiers.get("Fatigue Heat") is None
        assert body.data.color_attributes.get("fatigue_color") is None
    assert not [g.name for g in bpy.data.node_groups if g.name.startswith("Fatigue Heat")]
