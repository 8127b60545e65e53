"""Humanoid bone detection on real armatures built with bpy (tests/support/rigs.py): every rig family
maps to the exact expected bones, a quadruped is rejected with one line that names the fix,
mapping presets survive a JSON round trip and resolve across name prefixes."""
from __future__ import annotations

import importlib
import json

import pytest

bpy = pytest.importorskip("bpy")

import rigs  # noqa: E402  (tests/support/rigs.py needs bpy)


@pytest.fixture(scope="module")
def failure(addon_package):
    return importlib.import_module(f"{addon_package.__name__}.fatigue_addon.failure")


@pytest.fixture(scope="module")
def rigmap(addon_package):
    return importlib.import_module(f"{addon_package.__name__}.fatigue_addon.rigmap")


# --------------------------------------------------------------------------- names

@pytest.mark.parametrize("name, cls, side", [
    ("mixamorig:Hips", "pelvis", None), ("mixamorig1:LeftUpLeg", "thigh", "left"), ("mixamorig:RightLeg", "shin", "right"),
    ("mixamorig:LeftArm", "upperarm", "left"), ("mixamorig:LeftForeArm", "forearm", "left"),
    ("mixamorig:LeftShoulder", "clavicle", "left"), ("mixamorig:Spine2", "spine", None),
    ("mixamorig:HeadTop_End", None, None), ("mixamorig:LeftToeBase", "toe", "left"),
    ("thigh.L", "thigh", "left"), ("shin.R", "shin", "right"), ("upper_arm.L", "upperarm", "left"),
    ("DEF-thigh.L", "thigh", "left"), ("ORG-forearm.R", "forearm", "right"), ("MCH-thigh_ik.L", None, None),
    ("thigh_fk.L", None, "left"), ("DEF-thigh.L.001", None, "left"), ("spine.003", "spine", None),
    ("pelvis.L", None, "left"),
    ("pelvis", "pelvis", None), ("spine_03", "spine", None), ("thigh_l", "thigh", "left"), ("calf_r", "shin", "right"),
    ("upperarm_l", "upperarm", "left"), ("lowerarm_r", "forearm", "right"), ("neck_01", "neck", None),
    ("thigh_twist_01_l", None, "left"), ("ik_foot_l", None, "left"), ("ball_l", "toe", "left"),
    ("Bip01 Pelvis", "pelvis", None), ("Bip01 L Thigh", "thigh", "left"), ("Bip01 R Calf", "shin", "right"),
    ("Bip01 L UpperArm", "upperarm", "left"), ("Bip01 R Forearm", "forearm", "right"), ("Bip01 Spine2", "spine", None),
    ("Bip01", None, None), ("Bip01 L Toe0", "toe", "left"),
    ("hip", "pelvis", None), ("lThighBend", "thigh", "left"), ("rShin", "shin", "right"), ("lShldrBend", "upperarm", "left"),
    ("rForearmBend", "forearm", "right"), ("chestUpper", "spine", None), ("neckLower", "neck", None),
    ("lThighTwist", None, "left"), ("lCollar", "clavicle", "left"),
    ("LHipJoint", None, "left"), ("LowerBack", "spine", None), ("Spine1", "spine", None), ("RightUpLeg", "thigh", "right"),
    ("upperarm.l", "upperarm", "left"), ("UpperArm_L", "upperarm", "left"), ("thigh_L", "thigh", "left"),
    ("UpperLeg_R", "thigh", "right"), ("Hand_R", "hand", "right"), ("CC_Base_L_Thigh", "thigh", "left"),
    ("CC_Base_Hip", "pelvis", None), ("ValveBiped.Bip01_L_Thigh", "thigh", "left"), ("Character1_LeftLeg", "shin", "left"),
    ("rig:LeftFoot", "foot", "left"), ("Armature|Hips", "pelvis", None), ("ArmLeft", "upperarm", "left"),
    ("Root", None, None), ("root", None, None), ("Leg", None, None),
])
def test_name_normalisation(rigmap, name, cls, side):
    got_cls, got_side, _, _ = rigmap.parse_name(name)
    assert (got_cls, got_side) == (cls, side), name


# --------------------------------------------------------------------------- families

@pytest.mark.parametrize("family", list(rigs.FAMILIES))
def test_detects_every_family_exactly(rigmap, family):
    rig = rigs.build(family)
    mapping = rigmap.detect_mapping(rig.obj)
    assert mapping.required() == rig.expected
    assert mapping.complete and not mapping.missing()
    assert not [p for p in mapping.problems if "not humanoid" in p or "not below" in p]
    # optional helpers point at bones below the right joints
    for side in ("right", "left"):
        hand = mapping.get(f"{side}_hand")
        if hand:
            assert mapping[f"{side}_elbow"] in [a.name for a in rig.obj.data.bones[hand].parent_recursive]


def test_rigify_generated_prefers_def_chain_over_org_mch_and_controls(rigmap):
    rigs.fresh_scene()
    rig = rigs.rigify_generated_like()
    mapping = rigmap.detect_mapping(rig.obj)
    assert mapping.required() == rig.expected


def test_nameless_humanoid_maps_by_hierarchy_and_geometry(rigmap):
    rigs.fresh_scene()
    rig = rigs.nameless_rig()
    mapping = rigmap.detect_mapping(rig.obj)
    assert mapping.required() == rig.expected
    assert set(mapping.sources.values()) == {"geometry"}


@pytest.mark.parametrize("names", ["rigify", "arms"])
def test_quadruped_is_rejected_with_one_line(rigmap, names, failure):
    rigs.fresh_scene()
    rig = rigs.quadruped_rig(names)
    with pytest.raises(failure.RigMappingError) as exc:
        rigmap.detect_mapping(rig.obj)
    msg = str(exc.value)
    assert "\n" not in msg
    assert "does not look like a humanoid" in msg and "Wolf" in msg
    assert "Rig Mapping list" in msg
    # non-strict: what was found, with the same problem listed
    mapping = rigmap.detect_mapping(rig.obj, strict=False)
    assert any("humanoid" in p for p in mapping.problems)


def test_missing_arm_names_the_keys_and_the_fix(rigmap, failure):
    rigs.fresh_scene()
    rig = rigs.mixamo_rig()
    obj = rig.obj
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for name in ("mixamorig:LeftArm", "mixamorig:LeftForeArm", "mixamorig:LeftHand", "mixamorig:LeftShoulder"):
        obj.data.edit_bones.remove(obj.data.edit_bones[name])
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(failure.RigMappingError) as exc:
        rigmap.detect_mapping(obj)
    msg = str(exc.value)
    assert "\n" not in msg
    assert "Left upper arm" in msg and "Left forearm" in msg and "Rig Mapping list" in msg
    partial = rigmap.detect_mapping(obj, strict=False)
    assert partial.missing() == ["left_shoulder", "left_elbow"]
    assert partial["right_elbow"] == "mixamorig:RightForeArm"


def test_not_an_armature(rigmap, failure):
    rigs.fresh_scene()
    mesh = bpy.data.objects.new("Cube", bpy.data.meshes.new("Cube"))
    with pytest.raises(failure.RigMappingError, match="armature"):
        rigmap.detect_mapping(mesh)


def test_validate_flags_broken_chains_and_duplicates(rigmap):
    rig = rigs.build("mixamo")
    mapping = rigmap.detect_mapping(rig.obj)
    bad = rigmap.Mapping(bones=dict(mapping.bones))
    bad.bones["left_knee"] = "mixamorig:RightLeg"
    problems = rigmap.validate_mapping(rig.obj, bad)
    assert any("mapped twice" in p for p in problems)
    bad.bones["left_knee"] = "mixamorig:Spine"
    problems = rigmap.validate_mapping(rig.obj, bad)
    assert any("Left shin" in p and "not below" in p for p in problems)
    bad.bones["left_knee"] = "nope"
    assert any("'nope' is not in" in p for p in rigmap.validate_mapping(rig.obj, bad))


# --------------------------------------------------------------------------- presets

def test_preset_json_round_trip(rigmap, tmp_path):
    rig = rigs.build("daz")
    mapping = rigmap.detect_mapping(rig.obj)
    path = rigmap.save_mapping(mapping, tmp_path / "presets" / "daz")
    assert path.suffix == ".json" and path.exists()
    data = json.loads(path.read_text())
    assert data["format"] == "fatigued_takes.rig_mapping" and data["bones"]["pelvis"] == "hip"
    loaded = rigmap.load_mapping(path)
    assert loaded.bones == mapping.bones
    assert set(loaded.sources.values()) == {"preset"}
    resolved = rigmap.apply_preset(rig.obj, loaded)
    assert resolved.bones == mapping.bones and not resolved.problems


def test_bad_preset_files_give_one_line(rigmap, tmp_path, failure):
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    with pytest.raises(failure.RigMappingError, match="not valid JSON") as exc:
        rigmap.load_mapping(broken)
    assert "\n" not in str(exc.value)
    with pytest.raises(failure.RigMappingError, match="cannot read"):
        rigmap.load_mapping(tmp_path / "missing.json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something.else", "bones": {}}))
    with pytest.raises(failure.RigMappingError, match="not a rig mapping preset"):
        rigmap.load_mapping(other)
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"bones": {"tail": "tail.001"}}))
    with pytest.raises(failure.RigMappingError, match="unknown key 'tail'"):
        rigmap.load_mapping(unknown)


def test_shipped_presets_match_detection(rigmap):
    presets = rigmap.shipped_presets()
    assert {"mixamo", "rigify_metarig", "unreal_mannequin", "cmu_bvh", "3dsmax_biped", "daz_genesis",
            "rigify_generated"} <= set(presets)
    for family, preset in (("mixamo", "mixamo"), ("unreal", "unreal_mannequin"), ("biped", "3dsmax_biped"),
                           ("daz", "daz_genesis"), ("bvh", "cmu_bvh"), ("rigify", "rigify_metarig")):
        rig = rigs.build(family)
        resolved = rigmap.apply_preset(rig.obj, rigmap.load_mapping(presets[preset]))
        assert resolved.required() == rig.expected, family


def test_preset_resolves_other_namespace(rigmap, failure):
    """A Mixamo preset saved with 'mixamorig:' applies to a 'mixamorig1:' rig (second import)."""
    rig = rigs.build("mixamo")
    for b in rig.obj.data.bones:
        b.name = b.name.replace("mixamorig:", "mixamorig1:")
    preset = rigmap.load_mapping(rigmap.shipped_presets()["mixamo"])
    resolved = rigmap.apply_preset(rig.obj, preset)
    assert resolved["left_elbow"] == "mixamorig1:LeftForeArm"
    assert resolved.complete
    with pytest.raises(failure.RigMappingError, match="not in this armature"):
        rigmap.apply_preset(rigs.build("daz").obj, preset)
