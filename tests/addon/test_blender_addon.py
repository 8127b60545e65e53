"""The add-on inside Blender (the bpy module, in this process): registration, the Check Rig
operator on armatures built here, the slotted-action helper, fitness presets, and settings that
survive a save and re-open of the .blend.

Operators called from Python raise RuntimeError("Error: <report>") when they report an ERROR
(the C side turns any ERROR report into an exception, so the CANCELLED return value itself is
not observable from a script); the message is the user-facing one-line report.
"""
from __future__ import annotations

import importlib

import pytest

bpy = pytest.importorskip("bpy")

ADDON = "fatigued_takes"

# (name, head, tail, parent): a tiny hips -> spine -> neck chain plus a leg.
CHAIN = (
    ("hips", (0.0, 0.0, 1.0), (0.0, 0.0, 1.2), None),
    ("spine", (0.0, 0.0, 1.2), (0.0, 0.0, 1.5), "hips"),
    ("neck", (0.0, 0.0, 1.5), (0.0, 0.0, 1.65), "spine"),
    ("thigh.L", (0.1, 0.0, 1.0), (0.1, 0.0, 0.55), "hips"),
)


# --------------------------------------------------------------------------- helpers


def fatigue_params():
    """runtime.fatigue.params as the add-on imported it (same module object)."""
    return importlib.import_module(f"{ADDON}.runtime.fatigue.params")


def anim_module():
    return importlib.import_module(f"{ADDON}.fatigue_addon.anim")


def make_armature(name="Rig", bones=CHAIN, make_active=True):
    """An armature object linked to the scene, bones created in Edit Mode."""
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    if bones:
        bpy.ops.object.mode_set(mode="EDIT")
        edit = {}
        for bone_name, head, tail, parent in bones:
            eb = arm.edit_bones.new(bone_name)
            eb.head = head
            eb.tail = tail
            if parent is not None:
                eb.parent = edit[parent]
            edit[bone_name] = eb
        bpy.ops.object.mode_set(mode="OBJECT")
    if not make_active:
        bpy.context.view_layer.objects.active = None
    return obj


def key_pose(obj, bone_names, frames=(1, 12, 24)):
    """Keyframe rotation_quaternion (4 F-curves each) of ``bone_names`` with keyframe_insert."""
    for i, frame in enumerate(frames):
        for name in bone_names:
            pb = obj.pose.bones[name]
            pb.rotation_mode = "QUATERNION"
            pb.rotation_quaternion = (1.0, 0.1 * i, 0.0, 0.0)
            assert pb.keyframe_insert("rotation_quaternion", frame=frame)
    return obj.animation_data.action


def run_check_rig():
    """Call fatigue.check_rig; returns (result, None) or (None, error message without prefix)."""
    try:
        return bpy.ops.fatigue.check_rig(), None
    except RuntimeError as exc:
        text = str(exc)
        assert text.startswith("Error: "), text
        return None, text[len("Error: "):].rstrip("\n")


def assert_cancelled_with(*words):
    result, message = run_check_rig()
    assert result is None, f"expected an ERROR report, the operator returned {result}"
    assert message, "the error report is empty"
    assert "\n" not in message, f"the report is not one line: {message!r}"
    assert "Traceback" not in message
    low = message.lower()
    for word in words:
        assert word.lower() in low, f"{word!r} not in the report {message!r}"
    return message


# --------------------------------------------------------------------------- registration


def _registered_classes(pkg):
    return (
        pkg.fatigue_addon.preferences.FatigueAddonPreferences,
        pkg.fatigue_addon.properties.FatigueSettings,
        pkg.operators.rig_mapping.FATIGUE_OT_check_rig,
        pkg.panels.bake.VIEW3D_PT_fatigue,
    )


def test_register_unregister_twice(addon_package):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert not hasattr(bpy.types.Object, "fatigue_settings"), "registered before the test started"
    for _round in range(2):
        addon_package.register()
        try:
            classes = _registered_classes(addon_package)
            assert all(cls.is_registered for cls in classes)
            panel = bpy.types.VIEW3D_PT_fatigue
            assert panel.bl_category == "Fatigue"
            assert (panel.bl_space_type, panel.bl_region_type) == ("VIEW_3D", "UI")
            assert hasattr(bpy.types, "FATIGUE_OT_check_rig")
            assert "check_rig" in dir(bpy.ops.fatigue)
            assert bpy.ops.fatigue.check_rig.poll()
            assert bpy.types.Object.bl_rna.properties.get("fatigue_settings") is not None
            obj = bpy.data.objects.new("Probe", None)
            assert obj.fatigue_settings.mode == "SRB"
            bpy.data.objects.remove(obj)
        finally:
            addon_package.unregister()
        assert not hasattr(bpy.types.Object, "fatigue_settings")
        assert bpy.types.Object.bl_rna.properties.get("fatigue_settings") is None
        assert not hasattr(bpy.types, "VIEW3D_PT_fatigue")
        assert not hasattr(bpy.types, "FATIGUE_OT_check_rig")
        assert "check_rig" not in dir(bpy.ops.fatigue)
        assert not any(cls.is_registered for cls in _registered_classes(addon_package))


def test_preferences_registered_under_package_name(registered_addon):
    prefs_cls = registered_addon.fatigue_addon.preferences.FatigueAddonPreferences
    # Loaded as ``fatigued_takes`` here, ``bl_ext.<repo>.fatigued_takes`` inside Blender.
    assert prefs_cls.bl_idname == ADDON == registered_addon.__name__
    backend = prefs_cls.bl_rna.properties["backend"]
    assert backend.default == "AUTO"
    assert {i.identifier: i.value for i in backend.enum_items} == {"AUTO": 0, "WORKER": 2}    # saved values kept
    engine = prefs_cls.bl_rna.properties["engine"]
    assert engine.name == "Physics engine" and engine.default == "AUTO"
    assert [(i.identifier, i.name) for i in engine.enum_items] == [("AUTO", "Automatic"), ("PYBULLET", "PyBullet"),
                                                                  ("MUJOCO", "MuJoCo")]
    assert "worker_python" not in prefs_cls.bl_rna.properties       # the worker runs Blender's own Python


# --------------------------------------------------------------------------- check_rig


def test_check_rig_finishes_on_animated_armature(registered_addon):
    obj = make_armature()
    key_pose(obj, ["hips", "spine"])
    assert bpy.ops.fatigue.check_rig() == {"FINISHED"}
    info = registered_addon.fatigue_addon.checks.check_armature(obj, bpy.context.scene)
    assert info["armature"] == obj.name
    assert info["action"] == obj.animation_data.action.name
    assert info["bones"] == len(CHAIN)
    assert info["animated_bones"] == 2
    assert info["frames"] == (bpy.context.scene.frame_start, bpy.context.scene.frame_end)


def test_check_rig_no_active_object(registered_addon):
    make_armature(make_active=False)
    assert bpy.context.view_layer.objects.active is None
    assert_cancelled_with("no active object", "select")


def test_check_rig_mesh_selected(registered_addon):
    mesh = bpy.data.objects.new("Body", bpy.data.meshes.new("Body"))
    bpy.context.scene.collection.objects.link(mesh)
    bpy.context.view_layer.objects.active = mesh
    message = assert_cancelled_with("Body", "mesh", "select", "armature")
    assert "not an armature" in message


def test_check_rig_armature_without_bones(registered_addon):
    make_armature(bones=())
    assert_cancelled_with("no bones")


def test_check_rig_armature_without_action(registered_addon):
    obj = make_armature()
    assert obj.animation_data is None
    assert_cancelled_with("no action", "assign")
    # animation data without an action is the same case
    obj.animation_data_create()
    assert_cancelled_with("no action", "assign")


def test_check_rig_action_animating_no_bones(registered_addon):
    obj = make_armature()
    # object-level keys only: the action exists but animates no pose bone
    assert obj.keyframe_insert("location", frame=1)
    assert obj.animation_data.action is not None
    assert_cancelled_with("animates no bones", "assign")


def test_check_rig_action_of_another_rig(registered_addon):
    """An action shared with another armature animates only through that armature's slot."""
    if bpy.app.version < (4, 4, 0):
        pytest.skip("actions have no slots before Blender 4.4: a shared action animates every rig with its bone names")
    source = make_armature("Source")
    action = key_pose(source, ["hips", "spine", "neck"])
    other = make_armature("Other")
    other.animation_data_create()
    other.animation_data.action = action
    assert other.animation_data.action == action
    assert_cancelled_with("animates no bones", "assign")
    bpy.context.view_layer.objects.active = source
    assert bpy.ops.fatigue.check_rig() == {"FINISHED"}


def test_check_rig_empty_frame_range(registered_addon):
    obj = make_armature()
    key_pose(obj, ["hips"])
    scene = bpy.context.scene
    scene.frame_start = 10
    scene.frame_end = 10  # Blender clamps End to >= Start, so equal is the reachable empty range
    assert scene.frame_end <= scene.frame_start
    assert_cancelled_with("frame range", "timeline")
    scene.frame_end = 11
    assert bpy.ops.fatigue.check_rig() == {"FINISHED"}


def test_check_rig_zero_length_bone(registered_addon):
    bones = CHAIN + (("toe.L", (0.1, 0.1, 0.0), (0.1, 0.1, 0.0), "thigh.L"),)
    obj = make_armature(bones=bones)
    toe = obj.data.bones.get("toe.L")
    if toe is None:
        pytest.skip("this Blender removes a zero-length bone on leaving Edit Mode: such a rig cannot be made")
    assert toe.length < 1e-5  # what Blender made of head == tail
    key_pose(obj, ["hips"])
    assert_cancelled_with("toe.L", "zero length", "edit mode")


# --------------------------------------------------------------------------- anim helper


def test_action_fcurves_finds_slotted_curves(registered_addon):
    anim = anim_module()
    obj = make_armature()
    assert anim.action_fcurves(obj) == []
    action = key_pose(obj, ["hips", "spine", "neck"])
    if bpy.app.version >= (4, 4, 0):
        assert obj.animation_data.action_slot is not None
        assert len(action.slots) == 1
    if bpy.app.version >= (5, 0, 0):
        assert not hasattr(action, "fcurves"), "5.0 removed Action.fcurves"
    curves = anim.action_fcurves(obj)
    assert len(curves) == 3 * 4
    paths = {(fc.data_path, fc.array_index) for fc in curves}
    assert paths == {
        (f'pose.bones["{b}"].rotation_quaternion', i) for b in ("hips", "spine", "neck") for i in range(4)
    }
    assert all(len(fc.keyframe_points) == 3 for fc in curves)
    assert anim.animated_bones(obj) == {"hips", "spine", "neck"}
    assert anim.active_action(obj) == action


def test_action_fcurves_only_own_slot(registered_addon):
    """Two objects keyed into one action: each sees only the F-curves of its own slot."""
    if bpy.app.version < (4, 4, 0):
        pytest.skip("actions have no slots before Blender 4.4: every user of an action sees all its F-curves")
    anim = anim_module()
    rig = make_armature("Rig")
    action = key_pose(rig, ["hips"])
    prop = bpy.data.objects.new("Prop", None)
    bpy.context.scene.collection.objects.link(prop)
    prop.animation_data_create()
    prop.animation_data.action = action
    assert prop.keyframe_insert("location", frame=1)
    assert prop.animation_data.action == action
    if bpy.app.version >= (4, 4, 0):
        assert len(action.slots) == 2
    assert {fc.data_path for fc in anim.action_fcurves(prop)} == {"location"}
    assert len(anim.action_fcurves(prop)) == 3
    assert {fc.data_path for fc in anim.action_fcurves(rig)} == {'pose.bones["hips"].rotation_quaternion'}
    assert anim.animated_bones(prop) == set()


# --------------------------------------------------------------------------- settings


def test_preset_sets_fitness_time_scale_initial_fatigue(registered_addon):
    params = fatigue_params()
    obj = make_armature()
    settings = obj.fatigue_settings
    assert settings.preset == params.DEFAULT_PRESET
    items = {i.identifier for i in settings.bl_rna.properties["preset"].enum_items}
    assert items == set(params.PRESETS) | {"CUSTOM", "FRESH"}

    settings.preset = "Exhausted"
    p = params.PRESETS["Exhausted"]
    assert settings.fitness == pytest.approx(p.fitness)
    assert settings.time_scale == pytest.approx(p.time_scale)
    assert settings.initial_fatigue == pytest.approx(p.initial_fatigue)

    for name, p in params.PRESETS.items():
        settings.preset = "CUSTOM"
        settings.fitness, settings.time_scale, settings.initial_fatigue = 0.77, 3.5, 0.11
        # Custom keeps whatever the animator typed
        assert (settings.fitness, settings.time_scale) == pytest.approx((0.77, 3.5))
        settings.preset = name
        got = (settings.fitness, settings.time_scale, settings.initial_fatigue)
        assert got == pytest.approx((p.fitness, p.time_scale, p.initial_fatigue)), name
        settings.preset = "FRESH"            # fatigue off: the typed values stay for when it is back on
        assert (settings.fitness, settings.time_scale, settings.initial_fatigue) == pytest.approx(got)


def test_presets_direct_how_tired_and_a_typed_speed_up_runs_rates_as_given(registered_addon):
    params = fatigue_params()
    settings = make_armature().fatigue_settings
    for name, p in params.PRESETS.items():
        settings.preset = name
        assert settings.direct_tiredness == (p.tiredness is not None), name
        if p.tiredness is not None:
            assert (settings.tiredness_start, settings.tiredness_end) == pytest.approx(p.tiredness), name
    settings.preset = "Exhausted"
    assert settings.direct_tiredness and settings.tiredness_start == pytest.approx(0.5)
    settings.time_scale = 20.0              # the animator asks for rates: they run as given
    assert not settings.direct_tiredness
    settings.preset = "Exhausted"
    settings.initial_fatigue = 0.3
    assert not settings.direct_tiredness


def test_fitness_is_keyframable(registered_addon):
    anim = anim_module()
    obj = make_armature()
    key_pose(obj, ["hips"])
    settings = obj.fatigue_settings
    settings.fitness = 1.0
    assert obj.keyframe_insert("fatigue_settings.fitness", frame=1)
    settings.fitness = 0.0
    assert obj.keyframe_insert("fatigue_settings.fitness", frame=901)
    curves = [fc for fc in anim.action_fcurves(obj) if fc.data_path == "fatigue_settings.fitness"]
    assert len(curves) == 1
    assert [tuple(k.co) for k in curves[0].keyframe_points] == [(1.0, 1.0), (901.0, 0.0)]
    bpy.context.scene.frame_set(451)
    assert settings.fitness == pytest.approx(0.5, abs=1e-4)
    bpy.context.scene.frame_set(1)
    assert settings.fitness == pytest.approx(1.0)
    # bone curves are still there and still the only "animated bones"
    assert anim.animated_bones(obj) == {"hips"}


def test_settings_survive_save_and_reopen(registered_addon, tmp_path):
    obj = make_armature("Hero")
    key_pose(obj, ["hips", "spine"])
    settings = obj.fatigue_settings
    settings.mode = "TORQUE"
    settings.preset = "Exhausted"
    settings.time_scale = 7.5
    settings.fitness = 0.9
    assert obj.keyframe_insert("fatigue_settings.fitness", frame=1)
    settings.fitness = 0.2
    assert obj.keyframe_insert("fatigue_settings.fitness", frame=100)
    bpy.context.scene.frame_set(1)
    path = tmp_path / "fatigued.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True) == {"FINISHED"}
    assert path.stat().st_size > 0

    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert "Hero" not in bpy.data.objects
    assert bpy.ops.wm.open_mainfile(filepath=str(path)) == {"FINISHED"}
    obj = bpy.data.objects["Hero"]
    settings = obj.fatigue_settings
    assert settings.mode == "TORQUE"
    assert settings.preset == "Exhausted"
    assert settings.time_scale == pytest.approx(7.5)
    assert settings.initial_fatigue == pytest.approx(fatigue_params().PRESETS["Exhausted"].initial_fatigue)
    curves = [fc for fc in anim_module().action_fcurves(obj) if fc.data_path == "fatigue_settings.fitness"]
    assert len(curves) == 1
    keys = [c for k in curves[0].keyframe_points for c in k.co]
    assert keys == pytest.approx([1.0, 0.9, 100.0, 0.2])
    bpy.context.scene.frame_set(100)
    assert settings.fitness == pytest.approx(0.2)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.fatigue.check_rig() == {"FINISHED"}
