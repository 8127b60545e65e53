"""The bpy-free rig package (fatigue_addon/rig/): names, detection by names and by geometry, the
humanoid checks, presets and rotations, on hand-made skeletons, in plain Python (no bpy, no
mathutils: importing the package with both blocked must work)."""
from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from addon_package import PACKAGE_NAME, load_addon_package

ROOT = Path(__file__).resolve().parents[2]
RIG = ROOT / "fatigue_addon" / "rig"


def mod(name):
    load_addon_package()
    return importlib.import_module(f"{PACKAGE_NAME}.fatigue_addon.rig.{name}")


def test_the_rig_package_imports_without_bpy_or_mathutils():
    """Every module of the package imported in a Python where bpy and mathutils cannot be imported."""
    names = sorted(p.stem for p in RIG.glob("*.py") if p.stem != "__init__")
    code = ("import sys; sys.modules['bpy'] = None; sys.modules['mathutils'] = None; "
            f"sys.path.insert(0, {str(ROOT / 'tests' / 'support')!r}); "
            "import importlib, addon_package; addon_package.load_addon_package(); "
            f"[importlib.import_module('{PACKAGE_NAME}.fatigue_addon.rig.' + n) for n in {names!r}]; "
            "print('bpy' in sys.modules and sys.modules['bpy'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- a hand-made person

def _person(names: dict | None = None, tail: bool = False):
    """A standing person (Z up, facing -Y, left at +X, 1.8 m) as a Skeleton; ``names`` renames
    bones (Mixamo names by default), ``tail`` adds a long chain hanging behind the hips."""
    sk = mod("skeleton")
    table = [("Hips", None, (0, 0, 1.0), (0, 0, 1.1)), ("Spine", "Hips", (0, 0, 1.1), (0, 0, 1.25)),
             ("Spine2", "Spine", (0, 0, 1.25), (0, 0, 1.45)), ("Neck", "Spine2", (0, 0, 1.5), (0, 0, 1.6)),
             ("Head", "Neck", (0, 0, 1.6), (0, 0, 1.8))]
    for side, s in (("Left", 1.0), ("Right", -1.0)):
        table += [
            (f"{side}Shoulder", "Spine2", (0.03 * s, 0, 1.45), (0.18 * s, 0, 1.45)),
            (f"{side}Arm", f"{side}Shoulder", (0.18 * s, 0, 1.45), (0.46 * s, 0, 1.45)),
            (f"{side}ForeArm", f"{side}Arm", (0.46 * s, 0, 1.45), (0.72 * s, 0, 1.45)),
            (f"{side}Hand", f"{side}ForeArm", (0.72 * s, 0, 1.45), (0.80 * s, 0, 1.45)),
            (f"{side}UpLeg", "Hips", (0.09 * s, 0, 0.95), (0.09 * s, 0, 0.52)),
            (f"{side}Leg", f"{side}UpLeg", (0.09 * s, 0, 0.52), (0.09 * s, 0, 0.1)),
            (f"{side}Foot", f"{side}Leg", (0.09 * s, 0, 0.1), (0.09 * s, -0.12, 0.02)),
            (f"{side}ToeBase", f"{side}Foot", (0.09 * s, -0.12, 0.02), (0.09 * s, -0.18, 0.02)),
        ]
    if tail:
        table += [("Tail1", "Hips", (0, 0.1, 0.95), (0, 0.4, 0.8)), ("Tail2", "Tail1", (0, 0.4, 0.8), (0, 0.7, 0.6)),
                  ("Tail3", "Tail2", (0, 0.7, 0.6), (0, 1.0, 0.4))]
    rename = names if names is not None else {n: f"mixamorig:{n}" for n, *_ in table}
    parents = {rename.get(n, n): (rename.get(p, p) if p else None) for n, p, *_ in table}
    bones = {}
    for n, p, head, tail_ in table:
        name = rename.get(n, n)
        children = [rename.get(c, c) for c, cp, *_ in table if cp == n]
        length = math.dist(head, tail_)
        bones[name] = sk.Bone(name, parents[name], children, tuple(map(float, head)), tuple(map(float, tail_)),
                              tuple(map(float, head)), sk.depth_of(parents, name), length)
    return sk.Skeleton("person", bones), rename


EXPECTED = {"pelvis": "Hips", "chest": "Spine2", "neck": "Neck", "left_hip": "LeftUpLeg", "left_knee": "LeftLeg",
            "left_ankle": "LeftFoot", "left_shoulder": "LeftArm", "left_elbow": "LeftForeArm",
            "right_hip": "RightUpLeg", "right_knee": "RightLeg", "right_ankle": "RightFoot",
            "right_shoulder": "RightArm", "right_elbow": "RightForeArm"}


@pytest.mark.parametrize("name, want", [
    ("mixamorig:LeftUpLeg", ("thigh", "left")), ("Bip01 R Thigh", ("thigh", "right")),
    ("DEF-thigh.L", ("thigh", "left")), ("lThighBend", ("thigh", "left")),
    ("RightForeArm", ("forearm", "right")), ("spine_03", ("spine", None)), ("Node_12", (None, None)),
])
def test_parse_name_reads_class_and_side(name, want):
    assert mod("names").parse_name(name)[:2] == want


def test_plain_names_beat_def_which_beat_org():
    parse = mod("names").parse_name
    assert parse("thigh.L")[3] < parse("DEF-thigh.L")[3] < parse("ORG-thigh.L")[3]


def test_detection_by_names_maps_every_joint():
    rig, rename = _person()
    bones, notes = mod("by_names").by_names(rig)
    assert {k: bones[k] for k in EXPECTED} == {k: rename[v] for k, v in EXPECTED.items()}
    assert bones["left_hand"] == rename["LeftHand"] and bones["head"] == rename["Head"]


def test_detection_by_geometry_finds_the_same_joints_and_sides_without_names():
    table_names = list(_person()[1])
    rig, rename = _person({n: f"Node_{i}" for i, n in enumerate(table_names)})
    assert mod("by_names").by_names(rig)[0] == {}
    bones, reason = mod("by_geometry").by_geometry(rig)
    assert reason is None
    assert {k: bones[k] for k in EXPECTED} == {k: rename[v] for k, v in EXPECTED.items()}


def test_geometry_refuses_a_rig_with_four_legs():
    sk = mod("skeleton")
    rig, _ = _person()
    bones = dict(rig.bones)
    for i, x in enumerate((0.3, -0.3)):       # two more limbs from the hips reaching the floor
        name = f"extra{i}"
        bones[name] = sk.Bone(name, "mixamorig:Hips", [], (x, 0.2, 0.5), (x, 0.2, 0.02), (x, 0.2, 0.5), 1, 0.48)
        bones[name + "_tip"] = sk.Bone(name + "_tip", name, [], (x, 0.2, 0.02), (x, 0.2, 0.0), (x, 0.2, 0.02), 2, 0.02)
        bones[name].children.append(name + "_tip")
    _, reason = mod("by_geometry").by_geometry(sk.Skeleton("quadruped", bones))
    assert reason == "4 limbs reach the floor"


def test_a_standing_person_passes_the_shape_checks_and_a_tail_does_not():
    shape = mod("shape")
    rig, rename = _person()
    mapping = {k: rename[v] for k, v in EXPECTED.items()}
    assert shape.shape_problems(rig, mapping) == []
    tailed, rename = _person(tail=True)
    problems = shape.shape_problems(tailed, {k: rename[v] for k, v in EXPECTED.items()})
    assert problems == [f"not humanoid: a tail ('{rename['Tail1']}') hangs from its pelvis, and the simulated body has none"]


def test_legs_pointing_up_are_not_a_person():
    sk, shape = mod("skeleton"), mod("shape")
    rig, rename = _person()
    flipped = {}
    for n, b in rig.bones.items():          # legs mirrored above the hips
        if "Leg" in n or "Foot" in n or "Toe" in n:
            h, t = (b.head[0], b.head[1], 2.0 - b.head[2]), (b.tail[0], b.tail[1], 2.0 - b.tail[2])
            b = sk.Bone(n, b.parent, b.children, h, t, h, b.depth, b.length)
        flipped[n] = b
    problems = shape.shape_problems(sk.Skeleton("flipped", flipped), {k: rename[v] for k, v in EXPECTED.items()})
    assert "not humanoid: its right leg does not hang away from its trunk in the rest pose" in problems


def test_pose_score_grows_as_a_knee_bends():
    sk, shape = mod("skeleton"), mod("shape")
    rig, rename = _person()
    mapping = {k: rename[v] for k, v in EXPECTED.items()}
    straight = shape.pose_score(rig, mapping)
    bones = dict(rig.bones)
    knee = bones[rename["LeftLeg"]]
    bones[knee.name] = sk.Bone(knee.name, knee.parent, knee.children, (0.09, -0.2, 0.55), knee.tail,
                               (0.09, -0.2, 0.55), knee.depth, knee.length)
    assert straight == pytest.approx(0.0, abs=1e-9)
    assert shape.pose_score(sk.Skeleton("bent", bones), mapping) > 0.5


def test_presets_round_trip_and_refuse_other_files(tmp_path):
    keys, presets = mod("keys"), mod("presets")
    failure = importlib.import_module(f"{PACKAGE_NAME}.fatigue_addon.failure")
    mapping = keys.Mapping(bones={k: f"bone_{k}" for k in keys.HUMANOID_KEYS}, armature="A")
    path = presets.save_mapping(mapping, tmp_path / "mine")
    assert path.suffix == ".json"
    assert presets.load_mapping(path).bones == mapping.bones
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(failure.RigMappingError, match="not valid JSON"):
        presets.load_mapping(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something.else"}), encoding="utf-8")
    with pytest.raises(failure.RigMappingError, match="not a rig mapping preset"):
        presets.load_mapping(tmp_path / "other.json")
    assert "rigify_generated" in presets.shipped_presets()


def test_rigify_twins_and_numbered_neck():
    rigify = mod("rigify")
    assert rigify.twin("DEF-thigh.L") == "thigh.L" and rigify.twin("ORG-spine") == "spine"
    assert rigify.hangs_from(["ORG-spine", "root"], "DEF-spine")
    assert not rigify.hangs_from(["root"], "DEF-spine")
    assert rigify.head_after_neck("DEF-spine.004", {"DEF-spine.006"}) == "DEF-spine.006"
    assert rigify.head_after_neck("neck", {"head"}) is None


def test_polar_drops_scale_and_euler_orders_compose_axis_turns():
    rot = mod("rotations")
    quat = importlib.import_module(f"{PACKAGE_NAME}.runtime.maths.quat")
    R = quat.to_matrix(quat.from_axis_angle(np.array([0.3, -0.5, 0.8]), 0.9))
    assert np.allclose(rot.polar(R * np.array([2.0, 0.5, 3.0])), R, atol=1e-12)
    e = np.array([0.3, -0.2, 1.1])
    rx, ry, rz = (quat.to_matrix(quat.from_axis_angle(np.eye(3)[i], e[i])) for i in range(3))
    assert np.allclose(rot.euler_to_mat(e, "XYZ"), rz @ ry @ rx, atol=1e-12)
    assert np.allclose(rot.euler_to_mat(e, "ZXY"), ry @ rx @ rz, atol=1e-12)


def test_off_axis_angle_of_a_hinge():
    rot = mod("rotations")
    quat = importlib.import_module(f"{PACKAGE_NAME}.runtime.maths.quat")
    about_z = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), 1.2)
    off = quat.multiply(quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), 0.25), about_z)
    assert rot.twist_off_axis(about_z[None])[0] == pytest.approx(0.0, abs=1e-9)
    assert rot.twist_off_axis(off[None])[0] == pytest.approx(0.25, abs=1e-9)


def test_a_clip_at_rest_puts_every_proxy_link_in_its_rest_rotation():
    pr = mod("proxy_rest")
    rclip = importlib.import_module(f"{PACKAGE_NAME}.runtime.motion.clip")
    joints = len(pr.JOINT_KEYS)
    rest = rclip.Clip(name="rest", fps=30.0, root_pos=np.zeros((3, 3)), root_rot=np.tile(rclip.Y_UP_TO_Z_UP, (3, 1)),
                      joint_rots=np.tile([0.0, 0.0, 0.0, 1.0], (3, joints, 1)))
    links = pr.proxy_world_rotations(rest)
    assert set(links) == {"pelvis", *pr.CHAIN_ORDER}
    for key, R in links.items():
        assert np.allclose(R, pr.R0, atol=1e-12), key
    # the rest pose's segments: trunk up, legs and arms hanging down
    assert np.allclose(pr.R0 @ (pr.R0.T @ pr.SEGMENT_DIRECTION["chest"]), [0.0, 0.0, 1.0])
    assert pr.SEGMENT_DIRECTION["left_shoulder"] @ np.array([0.0, 0.0, 1.0]) == -1.0


def test_each_foot_is_planted_where_its_ankle_is_lowest():
    pr = mod("proxy_rest")
    bones = {"pelvis": "hips", "neck": "neck", "right_ankle": "r", "left_ankle": "l"}

    def reading(r_z, l_z):
        return {"hips": ((0, 0, 1.0),), "neck": ((0, 0, 1.6),), "r": ((-0.1, 0, r_z),), "l": ((0.1, 0, l_z),)}

    readings = [reading(0.3, 0.1), reading(0.05, 0.2), reading(0.2, 0.15)]
    feet = pr.planted(bones, np.eye(4), readings)
    assert feet["right_ankle"] is readings[1] and feet["left_ankle"] is readings[0]


def test_motion_axes_turn_a_standing_rig_to_face_plus_x():
    """A person standing on Z, facing -Y with the left at +X (Blender's front view): A stands it as
    it is and turns its facing onto the proxy's +X (and its left onto +Y)."""
    pr, space = mod("proxy_rest"), mod("space")
    joints = {"pelvis": (0, 0, 1.0), "neck": (0, 0, 1.5), "right_hip": (-0.1, 0, 0.95), "left_hip": (0.1, 0, 0.95),
              "right_shoulder": (-0.2, 0, 1.45), "left_shoulder": (0.2, 0, 1.45), "right_knee": (-0.1, 0, 0.5),
              "left_knee": (0.1, 0, 0.5), "right_ankle": (-0.1, 0, 0.08), "left_ankle": (0.1, 0, 0.08),
              "chest": (0, 0, 1.3), "right_elbow": (-0.45, 0, 1.45), "left_elbow": (0.45, 0, 1.45)}
    world = {}
    for k, p in joints.items():
        m = np.tile(np.eye(4), (2, 1, 1))
        m[:, :3, 3] = p
        world[k] = m
    Fr = space.body_frame({k: np.array(v, dtype=float) for k, v in joints.items()})
    A, notes = pr.motion_axes("person", world, {"Fr": Fr})
    assert notes == []
    assert np.allclose(A @ [0.0, -1.0, 0.0], [1.0, 0.0, 0.0], atol=1e-12)
    assert np.allclose(A @ [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], atol=1e-12)
    assert np.allclose(A @ [0.0, 0.0, 1.0], [0.0, 0.0, 1.0], atol=1e-12)
