"""Generality: the bake works on every rig family the mapping knows (rest poses, names, units and
import transforms differ), with the same DeepMimic walk written onto each rig first."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import rigs  # noqa: E402

ADDON = "fatigued_takes"


def mod(name):
    return importlib.import_module(f"{ADDON}.{name}")


@pytest.mark.parametrize("family", sorted(rigs.FAMILIES))
def test_every_family_bakes_a_tired_walk(registered_addon, family):
    rig = rigs.build(family)
    obj = rig.obj
    rt, rigmap, rclip, anim, bake = (mod("fatigue_addon.retarget"), mod("fatigue_addon.rigmap"),
                                     mod("runtime.motion.clip"), mod("fatigue_addon.anim"), mod("fatigue_addon.bake"))
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 30, 1.0
    mapping = rigmap.detect_mapping(obj)
    _, info = rt.action_to_clip(obj, mapping, 1, 20)
    walk = rclip.load_deepmimic(rclip.deepmimic_clip_path("walk")).repeated(1.5)
    source = rt.clip_to_action(obj, mapping, walk, info, "walk")
    old = obj.animation_data.action
    anim.assign_action(obj, source)
    if old is not None and old != source:
        bpy.data.actions.remove(old)
    scene.frame_start, scene.frame_end = 1, walk.frames
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    obj.fatigue_settings.fitness = 0.2
    obj.fatigue_settings.time_scale = 60.0

    report = bake.bake(bpy.context, obj)

    baked = bpy.data.actions.get("walk.fatigued")
    assert baked is not None and anim.active_action(obj) == baked
    assert not report["fell"], f"{family}: the proxy fell"
    assert report["peak_fatigue"]["legs"] > 0.05
    # The take still walks: the pelvis bone travels forward over the take like the source did.
    pelvis = mapping["pelvis"]
    start, end = (int(f) for f in report["take_frames"])
    heads = []
    for frame in (start, end):
        scene.frame_set(frame)
        heads.append(np.array(obj.matrix_world @ obj.pose.bones[pelvis].head))
    assert np.linalg.norm((heads[1] - heads[0])[:2]) > 0.3 * info.rig_height  # ~1.5 m walked by a 1.62 m proxy


@pytest.mark.parametrize("family", sorted(rigs.FAMILIES))
def test_every_family_measures_the_same_segment_lengths(registered_addon, family):
    """The families share one 1.76 m template: whatever the names, units (Mixamo's centimetres
    under a 0.01 scale) or import rotation, the measured segments are the template's, in metres.
    Rigify's own metarig (when the wheel has Rigify) has its own proportions: plausible ones."""
    rig = rigs.build(family)
    rt, rigmap = mod("fatigue_addon.retarget"), mod("fatigue_addon.rigmap")
    mapping = rigmap.detect_mapping(rig.obj)
    lengths = rt.rig_segment_lengths(rig.obj, mapping)
    if family == "rigify":
        default = mod("runtime.body.anthropometry").default_lengths(rt.rig_size(rig.obj, mapping).stature)
        ratios = {k: v / default[k] for k, v in lengths.items()}
        assert set(ratios) == {"thigh", "shank", "upper_arm", "hip_width", "shoulder_width", "pelvis", "chest"}
        assert all(0.7 < r < 1.4 for r in ratios.values()), ratios
        return
    t = rigs.template()
    expected = {
        "thigh": (t["knee_R"] - t["hip_R"]).length, "shank": (t["ankle_R"] - t["knee_R"]).length,
        "upper_arm": (t["elbow_R"] - t["shoulder_R"]).length,
        "hip_width": (t["hip_R"] - t["hip_L"]).length, "shoulder_width": (t["shoulder_R"] - t["shoulder_L"]).length,
    }
    # the trunk, hip joints to the neck joint, shared by the proxy's pelvis and chest links
    trunk = (t["neck"] - (t["hip_R"] + t["hip_L"]) / 2).length
    assert lengths["pelvis"] + lengths["chest"] == pytest.approx(trunk, abs=0.02)   # neck joints differ by 1 cm
    lengths = {k: v for k, v in lengths.items() if k not in ("pelvis", "chest")}
    assert set(lengths) == set(expected)
    for name, value in expected.items():
        assert lengths[name] == pytest.approx(value, abs=0.01), (family, name)
