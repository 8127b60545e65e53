"""The source action read once, not parked: from bake.bake to the written take what was read of the
action is handed along (tests/support/source_walk.py traces every call), the action is read off the
armature only where the bake picks it and puts the armature back, and a bake that skips calibration
frames reads the motion once."""
from __future__ import annotations

import importlib
import sys
from collections import Counter

import pytest

pytest.importorskip("bpy")

import bpy  # noqa: E402
import rigs  # noqa: E402
import source_walk  # noqa: E402


def test_the_source_visits_each_module_at_most_twice(addon_package):
    """Followed as the action and as what was read of it (anim.SourceAction), every module of the
    add-on, the bake and Blender's action storage included, sees the source at most twice."""
    reads: list = []
    visits = source_walk.baked_walk(reads=reads, described=True)
    assert "fatigue_addon.retarget" in visits and "fatigue_addon.checks" in visits      # the walk was traced
    walk = source_walk.summary(visits)
    over = {m: n for m, n in walk["per_module"].items() if n > 2}
    assert not over, f"the source action returns to {over}: {' -> '.join(visits)}"
    # The action itself goes from the bake that picks it to Blender's storage (read once) and back
    # to the bake that writes its take; found on the armature only by the bake (which action to
    # bake; what to put back after writing).
    action_walk = source_walk.summary(source_walk.baked_walk(described=False))
    assert set(action_walk["per_module"]) == {"fatigue_addon.bake", "fatigue_addon.anim"}, action_walk
    assert set(reads) == {"fatigue_addon.bake"}, reads


def _calls(run, names) -> Counter:
    """How many times ``run()`` calls each of the add-on's functions ``names``."""
    count: Counter = Counter()
    prefix = f"{source_walk.PACKAGE}.fatigue_addon"

    def profile(frame, event, arg):
        if (event == "call" and frame.f_code.co_name in names
                and frame.f_globals.get("__name__", "").startswith(prefix)):
            count[frame.f_code.co_name] += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


def test_a_bake_that_skips_calibration_frames_reads_the_rig_and_the_action_once(registered_addon):
    """The root away on the first two frames (a calibration pose): the take starts after them,
    the motion is read once (the frames kept are sliced off the read, not read again), the rig's
    rest pose once (mapping, body pose) and its size once (height and proportions)."""
    bake = importlib.import_module(f"{source_walk.PACKAGE}.fatigue_addon.bake")
    options = importlib.import_module(f"{source_walk.PACKAGE}.fatigue_addon.bake_options")
    rig = rigs.mixamo_rig(frames=60)
    obj = rig.obj
    bpy.context.view_layer.objects.active = obj
    path = f'pose.bones["{rig.expected["pelvis"]}"].location'
    anim = importlib.import_module(f"{source_walk.PACKAGE}.fatigue_addon.anim")
    fc = next(fc for fc in anim.action_fcurves(obj) if fc.data_path == path and fc.array_index == 0)
    for k in (0, 1):
        fc.keyframe_points[k].co[1] += 300.0            # 3 m at the rig's scale of 0.01
        fc.keyframe_points[k].interpolation = "CONSTANT"
    fc.update()
    reports = []
    opts = options.BakeOptions(preset="Fresh", frame_start=1, frame_end=60)
    calls = _calls(lambda: reports.append(bake.bake(bpy.context, obj, options=opts)),
                   ("read_motion", "read_skeleton", "rig_size"))
    assert any("root jumps away at frames 1-2" in w for w in reports[0]["warnings"]), reports[0]["warnings"]
    assert calls == {"read_motion": 1, "read_skeleton": 1, "rig_size": 1}
