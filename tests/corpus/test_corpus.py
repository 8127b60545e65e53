"""Real files, imported as users import them (Blender's importers at their defaults; BVH also with
"Update Scene FPS/Duration" ticked), baked over a short stretch fresh and Exhausted with the
panel's defaults: every humanoid bakes without a fall or a traceback, its retarget round trip is
exact, and a creature that is not a person is refused in one line.  ``./fatigue corpus`` runs the
same over every action at full length and reports the numbers."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("bpy")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import corpus  # noqa: E402
import corpus_import  # noqa: E402

FILES = corpus_import.corpus_files(corpus_import.CORPUS, ("MANIFEST.json", corpus_import.NEXT_MANIFEST))
CASES = [(f, update) for f in FILES for update in ((False, True) if f.fmt == "bvh" else (False,))]
SECONDS = 1.0


def _id(case):
    f, update = case
    return f.rel + (" fps-updated" if update else "")


@pytest.fixture(scope="module")
def addon(addon_package):
    return addon_package


@pytest.mark.skipif(not FILES, reason="the real-file corpus (../shared/corpus) is not beside this checkout")
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_real_file_bakes_as_imported(addon, tmp_path, case):
    f, update = case
    rows = corpus.run_file(f.path, ["fresh", "exhausted"], SECONDS, update, tmp_path)
    assert rows, f"{f.rel}: nothing was baked or refused"
    for row in rows:
        label = f"{f.rel} [{row.get('action')}]"
        message = row["message"]
        assert "Traceback" not in message and "\n" not in message, label
        assert row["status"] != "error", f"{label}: {message}"
        if not f.humanoid:
            assert row["status"] == "refused" and "humanoid" in message, f"{label} was not refused: {row}"
            continue
        assert row["status"] == "baked", f"{label}: {message}"
        fresh = row["conditions"]["fresh"]
        assert not fresh["fell"], f"{label}: the fresh take fell at frame {fresh['fall_frame']}"
        assert row["round_trip_deg"] <= 1.0 and row["round_trip_m"] <= 0.01, f"{label}: round trip {row}"
        for cell in row["conditions"].values():
            assert all("Traceback" not in w for w in cell["warnings"])


# --------------------------------------------------------------------------- a rest pose that is not a person

LINE_RESTS = [f for f in FILES if f.humanoid and str(f.meta.get("rest_pose", "")).upper().startswith("NOT HUMAN")]


@pytest.mark.skipif(not LINE_RESTS, reason="no file whose rest pose is not a human shape in the corpus")
@pytest.mark.parametrize("f", LINE_RESTS, ids=[f.rel for f in LINE_RESTS])
def test_a_rest_pose_that_is_not_a_human_shape_is_measured_in_the_animated_pose(addon, tmp_path, f):
    """Every offset along its parent's X (a horizontal line of bones at rest), six channels on every
    joint: the bake measures the body on an animated frame, says so in one warning line, maps the
    named bones, and the take's knees and elbows bend about the proxy's hinges."""
    rows = corpus.run_file(f.path, ["fresh"], SECONDS, False, tmp_path)
    assert [row["status"] for row in rows] == ["baked"], rows
    warnings = rows[0]["conditions"]["fresh"]["warnings"]
    said = [w for w in warnings if "rest pose" in w]
    assert len(said) == 1 and "was not used" in said[0] and "\n" not in said[0], warnings
    assert not [w for w in warnings if "shin bends" in w], warnings


# --------------------------------------------------------------------------- a generic glTF rig

GENERIC_SOURCE = next((f for f in FILES if f.fmt == "gltf" and f.humanoid and "unreal" in f.meta.get("naming_family", "").lower()),
                      None)
# Unreal mannequin names -> generic joint names: torso joints numbered up the spine, legs 1..5
# from the hip down, the left arm numbered inwards (4, 3, 2) and the right one outwards.
GENERIC_NAMES = {
    "root": "Skeleton_joint_0", "pelvis": "Skeleton_torso_joint_1", "spine_01": "Skeleton_torso_joint_2",
    "spine_02": "Skeleton_torso_joint_3", "spine_03": "Skeleton_torso_joint_4", "neck_01": "Skeleton_torso_joint_5",
    "clavicle_l": "Skeleton_arm_joint_L__4_", "upperarm_l": "Skeleton_arm_joint_L__3_",
    "lowerarm_l": "Skeleton_arm_joint_L__2_",
    "clavicle_r": "Skeleton_arm_joint_R", "upperarm_r": "Skeleton_arm_joint_R__2_", "lowerarm_r": "Skeleton_arm_joint_R__3_",
    **{f"{bone}_{s}": f"leg_joint_{s.upper()}_{i + 1}" for s in "lr"
       for i, bone in enumerate(("thigh", "calf", "foot", "ball", "ball_leaf"))},
}


def _generic_rig(path):
    """A skinned glTF character turned into the generic rig users bring: joints renamed
    (GENERIC_NAMES), no hand and no head bone (the arms end at the wrist, the spine at the top of
    the neck), arms 30 degrees below horizontal at rest, and the armature under a node rotated
    -90 degrees about X (a Z-up asset: its own data lies along -Y, the node stands it up)."""
    import math

    import bpy
    import mathutils

    obj = corpus_import.import_file(path)[0]
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit = obj.data.edit_bones
    for name in ("head", "hand_l", "hand_r"):
        for bone in [edit[name]] + list(edit[name].children_recursive):
            edit.remove(bone)
    for side, sign in (("l", 1.0), ("r", -1.0)):
        upper = edit[f"upperarm_{side}"]
        pivot = upper.head.copy()
        down = (mathutils.Matrix.Translation(pivot) @ mathutils.Matrix.Rotation(math.radians(30.0 * sign), 4, "Y")
                @ mathutils.Matrix.Translation(-pivot))
        for bone in [upper] + list(upper.children_recursive):
            bone.transform(down)
    bpy.ops.object.mode_set(mode="OBJECT")
    for old, new in GENERIC_NAMES.items():
        obj.data.bones[old].name = new
    obj.data.transform(mathutils.Matrix.Rotation(math.radians(90.0), 4, "X"))
    node = bpy.data.objects.new("Skeleton_node", None)
    bpy.context.scene.collection.objects.link(node)
    node.rotation_euler = (math.radians(-90.0), 0.0, 0.0)
    obj.parent = node
    bpy.context.view_layer.update()
    return obj


@pytest.mark.skipif(GENERIC_SOURCE is None, reason="no Unreal-named glTF in the corpus beside this checkout")
def test_generic_names_opposite_numbering_no_hand_or_head_bake(addon, tmp_path):
    import bpy

    from fatigued_takes.fatigue_addon import anim, rigmap

    obj = _generic_rig(GENERIC_SOURCE.path)
    addon.register()
    try:
        mapping = rigmap.detect_mapping(obj)
        assert mapping.required() == {
            "pelvis": "Skeleton_torso_joint_1", "chest": "Skeleton_torso_joint_4", "neck": "Skeleton_torso_joint_5",
            "left_hip": "leg_joint_L_1", "left_knee": "leg_joint_L_2", "left_ankle": "leg_joint_L_3",
            "right_hip": "leg_joint_R_1", "right_knee": "leg_joint_R_2", "right_ankle": "leg_joint_R_3",
            "left_shoulder": "Skeleton_arm_joint_L__3_", "left_elbow": "Skeleton_arm_joint_L__2_",
            "right_shoulder": "Skeleton_arm_joint_R__2_", "right_elbow": "Skeleton_arm_joint_R__3_",
        }
        assert not any(k in mapping for k in ("head", "left_hand", "right_hand"))
        action = anim.active_action(obj)
        scene = bpy.context.scene
        start, end = corpus.bake_range(action, scene.render.fps / scene.render.fps_base, SECONDS)
        for condition in ("fresh", "exhausted"):
            cell = corpus.bake_one(obj, action, condition, start, end)
            assert not cell["fell"] or condition != "fresh", cell
        trip = corpus.round_trip(obj, mapping, start, end, cell["height_m"])
        assert trip["round_trip_deg"] <= 1.0 and trip["round_trip_m"] <= 0.01, trip
    finally:
        addon.unregister()


def _rest_as_a_line(obj):
    """The rig's rest pose laid out as a horizontal line of bones along the armature's X (each
    joint its old distance from its parent's further along), the animation re-keyed so that every
    frame poses the bones exactly where they were: what a capture file whose offsets all lie along
    the parent's X imports as."""
    import bpy
    import mathutils
    import numpy as np

    action = obj.animation_data.action
    lo, hi = (int(round(x)) for x in action.frame_range)
    frames = list(range(lo, hi + 1))
    names = [b.name for b in sorted(obj.data.bones, key=lambda b: len(b.parent_recursive))]
    posed = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        posed[f] = {n: np.array(obj.pose.bones[n].matrix) for n in names}
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit = obj.data.edit_bones
    old = {n: edit[n].head.copy() for n in names}
    for n in names:
        bone = edit[n]
        if bone.parent is not None:
            bone.head = edit[bone.parent.name].head + type(bone.head)(((old[n] - old[bone.parent.name]).length, 0.0, 0.0))
        else:
            bone.head = old[n]
        bone.tail = bone.head + type(bone.head)((0.05, 0.0, 0.0))
        bone.roll = 0.0
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.animation_data.action = bpy.data.actions.new(action.name + ".line")
    rest = {n: np.array(obj.data.bones[n].matrix_local) for n in names}
    for f in frames:
        for n in names:
            parent = obj.data.bones[n].parent
            base = rest[n] if parent is None else posed[f][parent.name] @ np.linalg.inv(rest[parent.name]) @ rest[n]
            basis = np.linalg.inv(base) @ posed[f][n]
            pb = obj.pose.bones[n]
            pb.rotation_mode = "QUATERNION"
            pb.location = basis[:3, 3]
            pb.rotation_quaternion = mathutils.Matrix(basis[:3, :3].tolist()).to_quaternion()
            pb.keyframe_insert("location", frame=f, group=n)
            pb.keyframe_insert("rotation_quaternion", frame=f, group=n)
    return obj


@pytest.mark.skipif(GENERIC_SOURCE is None, reason="no Unreal-named glTF in the corpus beside this checkout")
def test_generic_rig_whose_rest_is_a_line_is_found_in_its_animated_pose(addon, tmp_path):
    """Generic names and a rest pose that is no human shape together: the chains are found by
    topology and geometry in the animated body (arms hanging by the sides), and it bakes."""
    import bpy

    from fatigued_takes.fatigue_addon import anim, rigmap

    obj = _rest_as_a_line(_generic_rig(GENERIC_SOURCE.path))
    addon.register()
    try:
        mapping = rigmap.detect_mapping(obj)
        assert mapping.required()["left_shoulder"] == "Skeleton_arm_joint_L__3_"
        assert mapping.required()["right_elbow"] == "Skeleton_arm_joint_R__3_"
        assert mapping.required()["neck"] == "Skeleton_torso_joint_5"
        action = anim.active_action(obj)
        scene = bpy.context.scene
        start, end = corpus.bake_range(action, scene.render.fps / scene.render.fps_base, SECONDS)
        cell = corpus.bake_one(obj, action, "fresh", start, end)
        assert not cell["fell"], cell
        assert sum("was not used" in w for w in cell["warnings"]) == 1, cell["warnings"]
        trip = corpus.round_trip(obj, mapping, start, end, cell["height_m"])
        assert trip["round_trip_deg"] <= 1.0 and trip["round_trip_m"] <= 0.01, trip
    finally:
        addon.unregister()
