"""Never lose an animator's work: the product tried as a careful and a hostile user would (real
bpy, real PyBullet, real worker processes and ``./fatigue bake`` runs).

What each test guards: a take is written only into an action the extension made for this
armature and source; bad input is refused in one line that names the fix and writes nothing; a
worker that hangs, dies or returns damage fails in one line; a batch checks what it will write
before it simulates; nothing unexpected ever shows a traceback (the report goes to a log file).
The promises of docs/promises.md name these tests.

Two tests inject a fault (a function that raises) because no real input is known to crash the
bake, and one that is found gets fixed: they check what the user sees when the unknown happens.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import rigs  # noqa: E402
from bakes import fcurves, mod, nothing_written, walk_rig  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import batch  # noqa: E402


def one_line_error(call) -> str:
    """Run an operator call that must refuse: its one-line report, without Blender's 'Error: '."""
    with pytest.raises(RuntimeError) as err:
        call()
    msg = str(err.value).strip()
    assert msg.startswith("Error: ") and "\n" not in msg and "Traceback" not in msg, msg
    return msg[len("Error: "):]


@pytest.fixture
def logs(tmp_path, monkeypatch):
    """Unexpected-failure reports land in this test's own temp folder (where the UI's go: the
    system temp folder)."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


# ============================================================================= takes are owned

def test_a_users_action_with_the_take_s_name_is_never_written(registered_addon):
    """The user's own 'walk.fatigued' (a copy of walk, edited) and an explicit take name equal to a
    user action: both keep their keys; the take gets a fresh name and says so."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    source = obj.animation_data.action
    mine = source.copy()
    mine.name = "walk.fatigued"
    fc = next(fc for fc in fcurves(mine) if fc.data_path.endswith("location"))
    fc.keyframe_points[0].co[1] += 0.5                     # the user's edit
    other = source.copy()
    other.name = "walk.tired"
    before = {a.name: rigs.snapshot(a) for a in (source, mine, other)}

    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(obj.fatigue_settings.last_report)
    assert report["action"] == "walk.fatigued.001" and obj.animation_data.action.name == "walk.fatigued.001"
    assert report["name_notes"] == ["'walk.fatigued' is an action of yours, not a fatigued take: this take is "
                                    "'walk.fatigued.001' (rename or delete 'walk.fatigued' to use its name)"]
    assert report["name_notes"][0] in report["warnings"]
    assert bpy.ops.fatigue.bake_take(take_name="walk.tired") == {"FINISHED"}
    assert json.loads(obj.fatigue_settings.last_report)["action"] == "walk.tired.001"
    # a re-bake replaces its own take (no walk.fatigued.002), and the user's actions are as they were
    assert bpy.ops.fatigue.bake_take(action="walk") == {"FINISHED"}
    assert json.loads(obj.fatigue_settings.last_report)["action"] == "walk.fatigued.001"
    assert sorted(a.name for a in bpy.data.actions) == ["walk", "walk.fatigued", "walk.fatigued.001", "walk.tired",
                                                         "walk.tired.001"]
    for a in (source, mine, other):
        after = rigs.snapshot(a)
        assert after.keys() == before[a.name].keys(), a.name
        assert all(np.array_equal(after[k], before[a.name][k]) for k in after), a.name
        assert a.get("fatigued_take_of") is None


def test_two_armatures_sharing_a_source_each_get_their_own_take(registered_addon):
    """Duplicate A as B (both play 'walk'), bake B, then A: B keeps its take and still moves."""
    a, _, mapping = walk_rig(seconds=1.0, mesh=False)
    b = a.copy()
    b.name = "Mixamo_B"
    bpy.context.scene.collection.objects.link(b)
    assert b.animation_data.action == a.animation_data.action
    anim = mod("fatigue_addon.anim")

    assert bpy.ops.fatigue.bake_take(armature=b.name) == {"FINISHED"}
    take_b = b.animation_data.action
    keys_b = rigs.snapshot(take_b)
    assert take_b.name == "walk.fatigued" and len(anim.action_fcurves(b)) > 50
    assert bpy.ops.fatigue.bake_take(armature=a.name) == {"FINISHED"}
    report = json.loads(a.fatigue_settings.last_report)
    assert report["action"] == "walk.fatigued.001" and "the take of armature 'Mixamo_B'" in report["name_notes"][0]
    assert b.animation_data.action == take_b and len(anim.action_fcurves(b)) > 50
    after = rigs.snapshot(take_b)
    assert after.keys() == keys_b.keys() and all(np.array_equal(after[k], keys_b[k]) for k in after)
    # B still plays its take: the pelvis is keyed away from the rest pose
    bpy.context.scene.frame_set(10)
    assert b.pose.bones[mapping["pelvis"]].location.length > 1e-3
    # each re-bake replaces its own take only
    assert bpy.ops.fatigue.bake_take(armature=a.name) == {"FINISHED"}
    assert bpy.ops.fatigue.bake_take(armature=b.name) == {"FINISHED"}
    assert sorted(x.name for x in bpy.data.actions) == ["walk", "walk.fatigued", "walk.fatigued.001"]
    assert a.animation_data.action.name == "walk.fatigued.001" and b.animation_data.action.name == "walk.fatigued"


def test_a_take_baked_before_the_armature_tag_is_replaced_only_by_its_one_baker(registered_addon):
    """Files baked by an earlier version have takes tagged with their source only: the armature
    that names one as its last bake re-bakes into it; once a duplicate names it too, neither may."""
    a, _, _ = walk_rig(seconds=1.0, mesh=False)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    take = bpy.data.actions["walk.fatigued"]
    del take["fatigued_take_armature"]
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    assert json.loads(a.fatigue_settings.last_report)["action"] == "walk.fatigued"
    del take["fatigued_take_armature"]
    b = a.copy()
    b.name = "Mixamo_B"
    bpy.context.scene.collection.objects.link(b)
    assert b.fatigue_settings.baked_action == take
    keys = rigs.snapshot(take)
    assert bpy.ops.fatigue.bake_take(armature=a.name) == {"FINISHED"}
    report = json.loads(a.fatigue_settings.last_report)
    assert report["action"] == "walk.fatigued.001" and "an earlier take" in report["name_notes"][0]
    after = rigs.snapshot(take)
    assert after.keys() == keys.keys() and all(np.array_equal(after[k], keys[k]) for k in keys)


# ============================================================================= source untouched, determinism, cancel

def test_the_source_action_is_never_modified(registered_addon):
    """Bake, re-bake on the assigned take, bake with another name: the source's keys bit for bit."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    source = obj.animation_data.action
    before = rigs.snapshot(source)
    for kwargs in ({}, {}, {"take_name": "walk.other", "preset": "Exhausted"}):
        assert bpy.ops.fatigue.bake_take(**kwargs) == {"FINISHED"}
        assert json.loads(obj.fatigue_settings.last_report)["source"] == "walk"
    after = rigs.snapshot(source)
    assert after.keys() == before.keys() and all(np.array_equal(after[k], before[k]) for k in before)
    assert source.get("fatigued_take_of") is None


@pytest.mark.parametrize("how", ["deleted", "unassigned", "deleted, settings without the source"])
def test_a_rebake_after_the_take_is_deleted_bakes_its_known_source(registered_addon, how):
    """The take deleted (or unassigned in the Action Editor) leaves the armature with no action:
    the rebake said 'has no action: assign one' although its source is known and sits on the
    muted 'Fatigue source' track.  Now it bakes that source again, into one take, one track
    (found on the track where the settings no longer name it)."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    source = obj.animation_data.action
    before = rigs.snapshot(source)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    if how.startswith("deleted"):
        bpy.data.actions.remove(bpy.data.actions["walk.fatigued"])
    else:
        obj.animation_data.action = None
    if how.endswith("without the source"):
        obj.fatigue_settings.source_action = None
    assert obj.animation_data.action is None
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(obj.fatigue_settings.last_report)
    assert (report["source"], report["action"], obj.animation_data.action.name) == ("walk", "walk.fatigued",
                                                                                    "walk.fatigued")
    assert [t.name for t in obj.animation_data.nla_tracks] == ["Fatigue source"]
    assert sorted(a.name for a in bpy.data.actions) == ["walk", "walk.fatigued"]
    after = rigs.snapshot(source)
    assert after.keys() == before.keys() and all(np.array_equal(after[k], before[k]) for k in before)


# ============================================================================= operator arguments

@pytest.mark.parametrize("kwargs, expected", [
    ({"fitness": -1.0}, "fitness -1: give a number in [0, 1]"),
    ({"fitness": 1e9}, "fitness 1e+09: give a number in [0, 1]"),
    ({"fitness": float("nan")}, "fitness nan: give a number in [0, 1]"),
    ({"F": -0.1, "R": 0.002, "r": 15.0}, "F -0.1: give a number in (0, 1000]"),
    ({"F": 0.02, "R": 0.002, "r": 1e6}, "r 1e+06: give a number in (0, 1000]"),
    ({"time_scale": 0.0}, "time_scale 0: give a number in (0, 10000]"),
    ({"preset": "Average", "time_scale": 1e9}, "time_scale 1e+09: give a number in (0, 10000]"),
])
def test_out_of_range_operator_values_are_refused_not_clamped(registered_addon, kwargs, expected):
    """Blender clamps a property to its min/max without a word: fitness=-1 baked as 0."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    msg = one_line_error(lambda: bpy.ops.fatigue.bake_take(**kwargs))
    assert msg == expected, msg
    nothing_written(obj)


# ============================================================================= a range far past the action

def _custom_range(obj, start, end):
    s = obj.fatigue_settings
    s.use_custom_range, s.frame_start, s.frame_end = True, start, end


def _scene_range(obj, start, end):
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = start, end


HUGE_RANGES = {          # a 31-frame walk at 30 fps: a pose may be held 300 frames (10 s) beyond its keys
    "operator": (None, {"frame_end": 1_000_000}, "Frames 1-1000000 run 999969 frames past the keys of 'walk' "
                 "(frames 1-31; a pose is held at most 300 frames beyond them): give a frame range (frame_start, "
                 "frame_end; ./fatigue bake --frames A:B) within 1-331, e.g. the keys' 1-31"),
    "panel's custom range": (lambda o: _custom_range(o, 1, 10_000_000), {}, "Frames 1-10000000 run 9999969 frames "
                             "past the keys of 'walk' (frames 1-31; a pose is held at most 300 frames beyond them): "
                             "set the Fatigue panel's custom range (Range & Output) within 1-331, e.g. the keys' 1-31"),
    "scene range": (lambda o: _scene_range(o, 1, 100_000), {}, "Frames 1-100000 run 99969 frames past the keys of "
                    "'walk' (frames 1-31; a pose is held at most 300 frames beyond them): set the scene's frame range in "
                    "the timeline within 1-331"),
    "custom range, before the keys": (lambda o: _custom_range(o, -5000, 31), {}, "Frames -5000-31 run 5001 frames "
                                      "past the keys of 'walk' (frames 1-31; a pose is held at most 300 frames beyond "
                                      "them): set the Fatigue panel's custom range (Range & Output) within -299-31"),
}


@pytest.mark.parametrize("case", list(HUGE_RANGES))
def test_a_range_far_past_the_action_is_refused_before_any_work(registered_addon, monkeypatch, case):
    """frame_end=1000000 on a short action was read for 88 s on Blender's main thread (9 GB); at
    10,000,000 the kernel killed Blender.  Refused in one line naming a range, before a frame is read."""
    edit, kwargs, expected = HUGE_RANGES[case]
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    if edit is not None:
        edit(obj)
    retarget = mod("fatigue_addon.retarget")
    monkeypatch.setattr(retarget, "read_action", lambda *a, **k: pytest.fail("the range was read"))
    msg = one_line_error(lambda: bpy.ops.fatigue.bake_take(**kwargs))
    assert msg.startswith(expected), msg
    nothing_written(obj)


def test_a_cycled_action_bakes_past_its_keys_but_not_past_the_memory_limit(registered_addon, monkeypatch):
    """A Cycles modifier plays past the keys, so no keys' end stops its range: the frames one bake
    reads do (runtime.request.MAX_SOURCE_FRAMES)."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    for fc in fcurves(obj.animation_data.action):
        fc.modifiers.new("CYCLES")
    retarget = mod("fatigue_addon.retarget")
    monkeypatch.setattr(retarget, "read_action", lambda *a, **k: pytest.fail("the range was read"))
    msg = one_line_error(lambda: bpy.ops.fatigue.bake_take(frame_end=1_000_000))
    assert msg == ("Frames 1-1000000 are 1000000 frames, more than one bake reads (50000): give a frame range "
                   "(frame_start, frame_end; ./fatigue bake --frames A:B)"), msg
    nothing_written(obj)


# ============================================================================= meaningless input

def _rows(obj):
    bpy.ops.fatigue.detect_rig()
    return {r.key: r for r in obj.fatigue_settings.mapping}


def _swap_sides(obj):
    rows = _rows(obj)
    bones = {k: r.bone for k, r in rows.items()}
    for k, r in rows.items():
        if k.startswith("left_"):
            r.bone, rows["right_" + k[5:]].bone = bones["right_" + k[5:]], bones[k]


def _head_on_toe(obj):
    rows = _rows(obj)
    rows["head"].bone, rows["left_toe"].bone = rows["left_toe"].bone, ""


def _hand_on_shoulder(obj):
    rows = _rows(obj)
    rows["left_hand"].bone = rows["left_shoulder"].bone


def _fingers_only(obj):
    """An action keyed on the fingers alone (the character's body stands still)."""
    action = rigs.new_action(obj, "fidget")
    rigs.key_curve(obj, 'pose.bones["mixamorig:LeftHandIndex1"].rotation_quaternion', 1,
                   np.sin(np.linspace(0, 3, 30)) * 0.3)


MEANINGLESS = {
    "frames outside the keys": (None, {"frame_start": 500, "frame_end": 600},
                                "Frames 500-600 lie outside the keys of 'walk' (frames 1-"),
    "no mapped bone moves": (_fingers_only, {}, "Action 'fidget' moves none of the mapped bones of 'Mixamo'"),
    "left and right swapped": (_swap_sides, {}, "Rig mapping: left and right look swapped: Left thigh "
                                                "'mixamorig:RightUpLeg' is on the character's right"),
    "head on a toe": (_head_on_toe, {}, "Rig mapping: Head is 'mixamorig:LeftToeBase', a bone of the left foot"),
    "two keys on one bone": (_hand_on_shoulder, {}, "Rig mapping: bone 'mixamorig:LeftArm' is mapped to both "
                                                    "Left upper arm and Left hand"),
}


@pytest.mark.parametrize("case", list(MEANINGLESS))
def test_meaningless_input_is_refused_in_one_line(registered_addon, case):
    """Each baked without a word before: a frozen pose, a standing take, a mirrored or broken body."""
    edit, kwargs, expected = MEANINGLESS[case]
    obj, _, _ = walk_rig(seconds=1.0, mesh=False, fingers=(case == "no mapped bone moves"))
    if edit is not None:
        edit(obj)
    source = obj.animation_data.action.name
    msg = one_line_error(lambda: bpy.ops.fatigue.bake_take(**kwargs))
    assert msg.startswith(expected), msg
    assert ": " in msg and ("Rig Mapping" in msg or "range" in msg or "assign" in msg)      # names the fix
    nothing_written(obj, source_name=source)


@pytest.mark.parametrize("value, shown", [(float("inf"), "3.4028235e+38"), (float("-inf"), "-3.4028235e+38"),
                                          (float("nan"), "nan"), (7.0, "7.0")])
def test_a_bad_fitness_key_is_named_at_its_own_frame(registered_addon, value, shown):
    """Fitness keyed 0.8, 0.4, 0.3 at frames 1, 12, 20, the middle key typed as inf (Blender keeps
    the largest float): it was reported as the curve's value at another frame ('Fitness is
    2.5565909961464793e+35 at frame 2'); now the key itself, at its own frame."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    for frame, fitness in ((1, 0.8), (12, 0.4), (20, 0.3)):
        s.fitness = fitness
        obj.keyframe_insert("fatigue_settings.fitness", frame=frame)
    fc = next(fc for fc in fcurves(obj.animation_data.action) if fc.data_path == "fatigue_settings.fitness")
    fc.keyframe_points[1].co[1] = value
    msg = one_line_error(lambda: bpy.ops.fatigue.bake_take())
    assert msg == (f"Fitness is {shown} at frame 12: key a number in [0, 1] there (Graph Editor) or in the "
                   f"Fatigue panel"), msg
    nothing_written(obj)


@pytest.mark.parametrize("rotation", [(0.0, 0.0, 2.0), (0.3, 2.0, 1.0), (3.1, 0.0, 0.0)])
def test_sides_are_judged_whatever_the_object_s_rotation(registered_addon, rotation):
    """Left and right come from the skeleton itself: a right mapping passes and a swapped one is
    refused on an object turned any way (the Mixamo rig already stands on an X 90 degree turn)."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    obj.rotation_euler = rotation
    bpy.context.view_layer.update()
    checks, bake = mod("fatigue_addon.checks"), mod("fatigue_addon.bake")
    _rows(obj)
    right = bake.settings_mapping(obj.fatigue_settings)
    checks.check_mapping_sense(obj, right)
    _swap_sides(obj)
    with pytest.raises(mod("fatigue_addon.failure").BakeInputError, match="left and right look swapped"):
        checks.check_mapping_sense(obj, bake.settings_mapping(obj.fatigue_settings))


def test_sides_of_a_rig_without_side_names_come_from_its_skeleton(registered_addon):
    """Bones named Bone.001 ... say nothing about sides: the geometry alone decides."""
    obj = rigs.nameless_rig().obj
    checks, rigmap = mod("fatigue_addon.checks"), mod("fatigue_addon.rigmap")
    right = dict(rigmap.detect_mapping(obj, strict=False).bones)
    checks.check_mapping_sense(obj, right)
    swapped = {(k.replace("left_", "right_") if k.startswith("left_") else k.replace("right_", "left_")): v
               for k, v in right.items()}
    with pytest.raises(mod("fatigue_addon.failure").BakeInputError, match="left and right look swapped"):
        checks.check_mapping_sense(obj, swapped)


# ============================================================================= worker

def _fake_python(tmp_path, body: str) -> str:
    """A 'Python' that passes the import check (delegates ``-c``) and runs ``body`` as the worker
    (``$4``: the take file it must write)."""
    p = tmp_path / "fakepython"
    p.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then exec "{sys.executable}" "$@"; fi\n{body}\n')
    p.chmod(0o755)
    return str(p)


CUT_TAKE = ("import sys, numpy as np; p = sys.argv[1]; z = dict(np.load(p)); z['fatigue_MF'] = z['fatigue_MF'][:5]; "
            "np.savez(open(p, 'wb'), **z)")
DAMAGED = {
    "not a take": "echo '@@done'; echo garbage > \"$4\"; exit 0",
    "truncated": f'"{sys.executable}" "$@" || exit $?; head -c 300 "$4" > "$4.x" && mv "$4.x" "$4"',
    "a whole file with curves cut short": f'"{sys.executable}" "$@" || exit $?; "{sys.executable}" -c "{CUT_TAKE}" "$4"',
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_worker_that_exits_0_with_a_damaged_take_fails_in_one_line(registered_addon, tmp_path, logs, case):
    obj, body, _ = walk_rig(seconds=1.0)
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    job = bake.prepare(bpy.context, obj)
    run = backend.WorkerRun(job.request, backend.worker_python(_fake_python(tmp_path, DAMAGED[case])))
    with pytest.raises(mod("fatigue_addon.failure").BackendError) as err:
        backend.run_sync(run)
    msg = str(err.value)
    assert msg.startswith("the simulation worker's take is unreadable (") and msg.endswith("nothing was written; "
                                                                                        "bake again"), msg
    assert "\n" not in msg and "Traceback" not in msg
    assert run._dir is None and not list(logs.glob("fatigue_bake_*"))          # its temporary folder is gone
    nothing_written(obj, body)


def test_a_silent_worker_is_stopped_by_the_watchdog(registered_addon, tmp_path, logs):
    """A worker that hangs would hold `blender -b` forever: silent past the preference's bound it
    is killed, in one line, nothing written."""
    from types import SimpleNamespace

    obj, body, _ = walk_rig(seconds=1.0)
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    assert backend.WATCHDOG_S == 120.0
    job = bake.prepare(bpy.context, obj)
    assert bake.make_run(job, SimpleNamespace(backend="WORKER", worker_watchdog=7.0)).watchdog_s == 7.0   # the preference
    run = backend.WorkerRun(job.request, backend.worker_python(_fake_python(tmp_path, "echo '@@progress 0.1'; exec sleep 300")),
                            watchdog_s=1.5)
    with pytest.raises(mod("fatigue_addon.failure").BackendError) as err:
        backend.run_sync(run)
    msg = str(err.value)
    assert msg.startswith("the simulation worker was silent for ") and "(limit 1.5 s) and was stopped; nothing " \
        "was written" in msg and "\n" not in msg, msg
    assert run.proc.poll() is not None and run._dir is None
    nothing_written(obj, body)


def test_a_killed_worker_says_why_without_pybullet_s_banner(registered_addon, tmp_path):
    obj, body, _ = walk_rig(seconds=1.0)
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    python = _fake_python(tmp_path, "echo 'pybullet build time: Nov 28 2023 23:51:11' >&2; kill -9 $$")
    job = bake.prepare(bpy.context, obj)
    with pytest.raises(mod("fatigue_addon.failure").BackendError) as err:
        backend.run_sync(backend.WorkerRun(job.request, backend.worker_python(python)))
    msg = str(err.value)
    assert msg == "the simulation worker stopped (killed by signal 9); nothing was written: bake again", msg
    assert "pybullet build time" not in msg
    nothing_written(obj, body)


def test_a_worker_python_that_cannot_simulate_says_so(registered_addon, tmp_path):
    """Blender's own Python runs the worker; one that is not an executable file, or cannot import
    the engine, is refused in one line before anything starts."""
    backend = mod("fatigue_addon.backend")
    with pytest.raises(mod("fatigue_addon.failure").BackendError, match=r"^Blender's Python executable was not found \("):
        backend.worker_python(str(tmp_path))
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(mod("fatigue_addon.failure").BackendError, match=r"cannot simulate: it cannot import numpy and quadprog: install the "
                                                   r"extension zip built for this platform$"):
        backend.worker_python(str(broken))


# ============================================================================= no traceback reaches a user

def _boom(*_args, **_kwargs):
    raise TypeError("argument of type 'NoneType' is not iterable")


@pytest.mark.parametrize("where", ["fatigue_addon.retarget.read_action", "fatigue_addon.heat.apply"])
def test_an_unexpected_failure_is_one_line_with_a_log_and_writes_nothing(registered_addon, logs, monkeypatch, where):
    """A bug while reading the rig, or while writing the take (which is then rolled back)."""
    obj, body, _ = walk_rig(seconds=1.0)
    module, name = where.rsplit(".", 1)
    monkeypatch.setattr(mod(module), name, _boom)
    msg = one_line_error(lambda: bpy.ops.fatigue.bake_take())
    assert msg.startswith("Bake Fatigued Take failed unexpectedly (TypeError in test_adversarial._boom: argument of "
                          "type 'NoneType' is not iterable); nothing was written; full report in "), msg
    log = Path(msg.split("full report in ")[1].split(":")[0])
    assert log.parent == logs and "Traceback (most recent call last)" in log.read_text()
    assert name in log.read_text()
    nothing_written(obj, body)


def test_an_unexpected_simulation_failure_is_one_line_with_a_log(registered_addon, logs):
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    job = bake.prepare(bpy.context, obj)
    job.request.plan = "not a body plan"        # what no caller passes: the simulator fails inside
    with pytest.raises(mod("fatigue_addon.failure").BackendError) as err:
        backend.run_sync(backend.InProcessRun(job.request, threaded=False))
    msg = str(err.value)
    assert msg.startswith("the simulation failed unexpectedly (AttributeError in ") and "\n" not in msg, msg
    assert "Traceback" not in msg and list(logs.glob("fatigue-bake-*.log"))


# ============================================================================= ./fatigue bake

def make_shot(path: Path, empty: bool = False) -> Path:
    cmd = [sys.executable, str(ROOT / "tests" / "support" / "shots.py"), str(path), "--seconds", "1.0"]
    subprocess.run(cmd + (["--empty"] if empty else []), check=True, capture_output=True, cwd=str(ROOT))
    return path


@pytest.fixture(scope="module")
def shot(tmp_path_factory, addon_package):
    return make_shot(tmp_path_factory.mktemp("adv_shots") / "shot.blend")


def run_batch(capsys, *args):
    rc = batch.main([str(a) for a in args])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return rc, out


@pytest.mark.parametrize("case", ["summary under a file", "out under a file", "output is a directory",
                                  "torque mode", "input is a directory"])
def test_batch_refuses_what_it_cannot_write_before_baking(shot, tmp_path, capsys, case):
    """Found only after every take was simulated before (exit 1, or a PermissionError traceback
    for the summary); now exit 2, one line, nothing baked."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    out = tmp_path / "out"
    args, expected = {
        "summary under a file": ([shot, "--out", out, "--summary", blocker / "s.json"],
                                 f"--summary: cannot create {blocker / 's.json'}: {blocker} is a file, not a folder"),
        "out under a file": ([shot, "--out", blocker / "baked"], f"--out: cannot create {blocker / 'baked' / 'shot.blend'}"),
        "output is a directory": ([shot, "--out", out], f"--out: {out / 'shot.blend'} is a directory, not a file"),
        "torque mode": ([shot, "--out", out, "--mode", "torque", "--engine", "pybullet"],
                        "--mode torque --engine pybullet: torque mode runs on MuJoCo only"),
        "input is a directory": ([tmp_path / "x.blend", "--out", out], "x.blend is a directory, not a .blend file"),
    }[case]
    (out / "shot.blend").mkdir(parents=True) if case == "output is a directory" else None
    (tmp_path / "x.blend").mkdir()
    rc, printed = run_batch(capsys, *args)
    assert rc == 2 and printed.out == ""
    lines = printed.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fatigue bake: ") and expected in lines[0], printed.err
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]


def test_batch_removes_only_its_own_temporary_file(shot, tmp_path, capsys):
    """A failed take of shot.blend used to remove every '.shot.*.part.blend', such as the file
    another batch was writing for shot.v2.blend."""
    broken = make_shot(tmp_path / "in" / "shot.blend", empty=True)
    out = tmp_path / "out"
    out.mkdir()
    other = out / ".shot.v2.4242.part.blend"
    other.write_bytes(b"another batch's take, still being written")
    rc, printed = run_batch(capsys, broken, "--out", out)
    assert rc == 1 and "no armature in this file" in printed.out
    assert other.read_bytes() == b"another batch's take, still being written"
    assert [p.name for p in out.iterdir()] == [other.name]


INJECT = '''"""tools/batch.py with one fault: the retarget raises what nobody expected."""
import runpy, sys
sys.path.insert(0, {tools!r})
import demo_blend

_load = demo_blend.load_addon


def load():
    _load()
    def read_action(*a, **k):
        raise TypeError("argument of type 'NoneType' is not iterable")
    demo_blend.addon_module("fatigue_addon.retarget").read_action = read_action


demo_blend.load_addon = load
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''

FAULTY_PYTHON = """#!/bin/sh
# The take processes' Python; the take of oops.blend meets a bug, that of crash.blend dies of SIGSEGV.
case "$(cat "$3")" in *'/oops.blend"'*) exec "{python}" "{inject}" "$@";; *'/crash.blend"'*) kill -SEGV $$;; esac
exec "{python}" "$@"
"""


def test_batch_failures_are_one_line_with_a_log_beside_the_output(shot, tmp_path, monkeypatch, capsys):
    """A take that meets a bug reported 'Python: Traceback (most recent call last):' and nothing
    else; now the summary and the FAILED line say what failed and where its report is.  The same
    run checks determinism: two copies of one file bake to the same keyframes bit for bit."""
    ins = tmp_path / "in"
    ins.mkdir()
    for name in ("oops.blend", "crash.blend", "copy.blend"):
        (ins / name).write_bytes(shot.read_bytes())
    inject = tmp_path / "inject.py"
    inject.write_text(INJECT.format(tools=str(ROOT / "tools")))
    python = tmp_path / "python"
    python.write_text(FAULTY_PYTHON.format(python=sys.executable, inject=inject))
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    out, summary = tmp_path / "out", tmp_path / "summary.json"
    rc, printed = run_batch(capsys, shot, ins / "oops.blend", ins / "crash.blend", ins / "copy.blend",
                            "--out", out, "--jobs", "2", "--summary", summary)
    assert rc == 1, printed
    text = summary.read_text()
    assert "Traceback" not in text
    takes = {Path(t["file"]).name: t for t in json.loads(text)["takes"]}
    oops, crash = takes["oops.blend"], takes["crash.blend"]
    assert oops["status"] == "failed" and oops["error"].startswith(
        "Bake Fatigued Take failed unexpectedly (TypeError in inject.read_action: argument of type 'NoneType' "
        "is not iterable); nothing was written; full report in "), oops["error"]
    assert Path(oops["log"]).parent == out and oops["log"] in oops["error"]
    assert "Traceback (most recent call last)" in Path(oops["log"]).read_text()
    assert f"oops.blend: FAILED: {oops['error']}" in printed.out
    assert crash["status"] == "crashed" and crash["error"].startswith("the take's process ended with signal 11")
    assert Path(crash["log"]).is_file() and Path(crash["log"]).parent == out
    assert not (out / "oops.blend").exists() and not (out / "crash.blend").exists()
    assert not list(out.glob(".*part*"))
    # the two good takes: the same file baked in two processes gives the same keyframes
    import test_batch

    a, b = test_batch.keyframes(out / "shot.blend"), test_batch.keyframes(out / "copy.blend")
    take = a["walk.fatigued"]
    assert len(take) > 50 and set(take) == set(b["walk.fatigued"])
    assert all(np.array_equal(co, b["walk.fatigued"][k]) for k, co in take.items())


# ============================================================================= linked characters

def _link(path: Path, name: str = "Mixamo"):
    """The armature ``name`` linked from ``path`` into this file's scene, active."""
    with bpy.data.libraries.load(str(path), link=True) as (_src, dst):
        dst.objects = [name]
    obj = dst.objects[0]
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    return obj


LINKED_REFUSALS = {
    "linked": "Armature 'Mixamo' is linked from 'shot.blend' and its take would be lost when the file is saved: "
              "make a library override (Object > Library Override > Make) and bake that",
    "a library override that is not editable": "Armature 'Mixamo' is a library override that is not editable: make "
                                               "it editable (select it, Object > Library Override > Make) and bake again",
}


@pytest.mark.parametrize("case", list(LINKED_REFUSALS))
def test_a_linked_armature_is_refused_in_one_line(registered_addon, shot, case):
    """A character linked from another .blend baked FINISHED and lost its take on save (Blender
    saves none of a linked object's changes: the take was orphaned); now refused, naming the fix."""
    obj = _link(shot)
    if case != "linked":
        obj = obj.override_create(remap_local_usages=True)
        obj.override_library.is_system_override = True
        bpy.context.view_layer.objects.active = obj
    msg = one_line_error(lambda: bpy.ops.fatigue.bake_take())
    assert msg == LINKED_REFUSALS[case], msg
    assert [a.name for a in bpy.data.actions] == ["walk"] and obj.animation_data.action.name == "walk"
    assert obj.fatigue_settings.last_report == "" and len(obj.animation_data.nla_tracks) == 0


@pytest.mark.parametrize("library", ["as keyed", "baked"])
def test_a_bake_on_a_library_override_survives_save_and_reopen(registered_addon, shot, tmp_path, library):
    """The fix the refusal names: a library override of the linked character bakes, and its take,
    source track and report are there after saving and reopening, as is a rebake then.  It failed
    'unexpectedly' (the rig mapping cannot grow on an override).  A take linked with the character
    (its library was baked) is never written into: it would not be saved either."""
    lib = shot
    if library == "baked":
        bpy.ops.wm.open_mainfile(filepath=str(shot))
        assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
        lib = tmp_path / "baked.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(lib))
        bpy.ops.wm.read_factory_settings(use_empty=True)
    obj = _link(lib).override_create(remap_local_usages=True)
    bpy.context.view_layer.objects.active = obj
    linked_take = {a.name: rigs.snapshot(a) for a in bpy.data.actions if a.name == "walk.fatigued"}
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    take = "walk.fatigued" if library == "as keyed" else "walk.fatigued.001"
    report = json.loads(obj.fatigue_settings.last_report)
    assert (report["action"], report["source"]) == (take, "walk")
    assert "'Mixamo' is a library override: its take has no per-bone fatigue curves or heat colour" in \
        report["warnings"][-1], report["warnings"]
    keys = rigs.snapshot(obj.animation_data.action)
    assert len(keys) > 50
    path = tmp_path / "override.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Mixamo"]
    action = obj.animation_data.action
    assert obj.override_library is not None and action.name == take and action.library is None
    after = rigs.snapshot(action)
    assert after.keys() == keys.keys() and all(np.array_equal(after[k], keys[k]) for k in keys)
    assert [(t.name, t.mute, [s.action.name for s in t.strips]) for t in obj.animation_data.nla_tracks] == \
        [("Fatigue source", True, ["walk"])]
    s = obj.fatigue_settings
    assert s.baked_action == action and s.source_action.name == "walk" and json.loads(s.last_report)["action"] == take
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}                 # a rebake replaces its own take
    assert obj.animation_data.action.name == take and [a.name for a in bpy.data.actions if a.library is None] == [take]
    for name, before in linked_take.items():                            # the library's take, untouched
        linked = next(a for a in bpy.data.actions if a.name == name and a.library is not None)
        now = rigs.snapshot(linked)
        assert now.keys() == before.keys() and all(np.array_equal(now[k], before[k]) for k in before)


# ============================================================================= an interrupted batch

STALLING_PYTHON = """#!/bin/sh
# The take processes' Python, except that a take whose spec matches the pattern stalls: it leaves
# its pid in the marks folder (so the test knows it runs) and waits to be stopped.
case "$(cat "$3")" in *{pattern}*) echo $$ > "{marks}/$$.stalled"; exec sleep 600;; esac
exec "{python}" "$@"
"""

RUN_CLI = """import sys
sys.path.insert(0, {tools!r})
import cli
sys.executable = {python!r}
sys.exit(cli.main(["bake"] + sys.argv[1:]))
"""


def _interrupted_batch(tmp_path, shot, names, pattern, stalled, args, send):
    """``./fatigue bake`` (tools/cli.py) over copies of ``shot`` named ``names`` whose takes
    matching ``pattern`` stall; once ``stalled`` of them run, ``send(proc)`` interrupts it.
    Returns (process, stdout, stderr, out dir, summary, the stalled takes' pids)."""
    ins, out, marks, tmp = (tmp_path / d for d in ("in", "out", "marks", "tmp"))
    for d in (ins, marks, tmp):
        d.mkdir()
    for name in names:
        (ins / name).write_bytes(shot.read_bytes())
    python = tmp_path / "python"
    python.write_text(STALLING_PYTHON.format(pattern=pattern, marks=marks, python=sys.executable))
    python.chmod(0o755)
    script = tmp_path / "run_cli.py"
    script.write_text(RUN_CLI.format(tools=str(ROOT / "tools"), python=str(python)))
    summary = tmp_path / "summary.json"
    proc = subprocess.Popen([sys.executable, str(script), *[str(ins / n) for n in names], "--out", str(out),
                             "--summary", str(summary), *args], cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, TMPDIR=str(tmp)))
    pids = []
    try:
        for _ in range(6000):          # a guard against a hang, not a measurement: the stalled takes start
            pids = [int(p.read_text() or 0) for p in marks.glob("*.stalled")]
            if len(pids) == stalled and all(pids) or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None and len(pids) == stalled, proc.communicate()
        send(proc)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
        alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
        for pid in alive:              # what an unfixed batch leaves running
            os.kill(pid, 9)
    assert not alive, "a stalled take outlived the batch"
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if str(tmp) in _read(p)], \
        "a take process outlived the batch"
    assert not list(tmp.iterdir()), "the batch left temporary files"
    assert "Traceback" not in stdout + stderr, stdout + stderr
    return proc, stdout, stderr, out, summary


def _read(path: Path) -> str:
    """A file that may vanish while read (a process's cmdline): its text, or ''."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _takes(summary: Path) -> dict:
    return {(Path(t["file"]).name, t["variant"]): t for t in json.loads(summary.read_text())["takes"]}


def test_a_batch_stopped_by_sigterm_writes_no_partial_file_and_a_summary(shot, tmp_path):
    """SIGTERM to a batch of two files with three variants each, while both second variants run:
    it left final-named files holding some variants, no summary and a log blaming
    BrokenPipeError.  Now: no file, no temporary file, no log, every take in the summary with
    what became of it, one line saying it was interrupted, exit 143."""
    proc, stdout, stderr, out, summary = _interrupted_batch(
        tmp_path, shot, ["a.blend", "b.blend"], """'"variant": "average"'""", 2,
        ["--variants", "fresh,average,exhausted", "--jobs", "2"], lambda p: p.send_signal(signal.SIGTERM))
    assert proc.returncode == 143, stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fatigue bake: interrupted (SIGTERM)"), stderr
    assert not out.exists() or not list(out.iterdir())           # no partial file, temporary file or log
    data = json.loads(summary.read_text())
    assert data["interrupted"] == "SIGTERM" and data["baked"] == 0 and data["not_done"] == 6
    takes = _takes(summary)
    assert set(takes) == {(f, v) for f in ("a.blend", "b.blend") for v in ("fresh", "average", "exhausted")}
    for f in ("a.blend", "b.blend"):
        fresh, average, exhausted = (takes[f, v] for v in ("fresh", "average", "exhausted"))
        assert fresh["status"] == "interrupted" and fresh["out_action"] == "walk.fatigued.fresh"
        assert fresh["error"] == f"baked, but not written: the batch was interrupted (SIGTERM) before {f} was " \
                                 f"written", fresh["error"]
        assert average["status"] == "interrupted" and average["error"] == "interrupted (SIGTERM) while baking: " \
                                                                          "nothing of it was written"
        assert exhausted["status"] == "not run" and exhausted["error"] == "not run: the batch was interrupted (SIGTERM)"
        assert all(t["log"] is None for t in (fresh, average, exhausted))


def test_ctrl_c_on_a_batch_stops_it_in_one_line(shot, tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) while the second of three files bakes:
    it printed a KeyboardInterrupt traceback, wrote no summary and still baked and wrote the third
    file after the interrupt.  Now the first file is written, nothing after, exit 130."""
    proc, stdout, stderr, out, summary = _interrupted_batch(
        tmp_path, shot, ["c.blend", "a.blend", "b.blend"], """'/a.blend"'""", 1, [],
        lambda p: os.killpg(p.pid, signal.SIGINT))
    assert proc.returncode == 130, stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fatigue bake: interrupted (SIGINT)"), stderr
    assert sorted(p.name for p in out.iterdir()) == ["c.blend"]
    takes = _takes(summary)
    assert [takes[f, None]["status"] for f in ("c.blend", "a.blend", "b.blend")] == ["ok", "interrupted", "not run"]
    assert json.loads(summary.read_text())["baked"] == 1


# ============================================================================= the promises of docs/promises.md

def test_the_readme_s_promises_name_tests_that_exist():
    readme = (ROOT / "docs" / "promises.md").read_text(encoding="utf-8")
    named = set()
    for part in readme.split("tests/addon/test_adversarial.py::")[1:]:
        named.add(part.split("`")[0].split("[")[0].strip())
    assert len(named) >= 4, named
    here = {n for n in globals() if n.startswith("test_")}
    assert named <= here, named - here


def test_a_take_that_falls_is_not_reported_finished(registered_addon, monkeypatch):
    """A fall ends a take where it happens: the rest of the source is never played, so the Last
    Bake report must not call it finished (it said so whenever the length limit was not hit)."""
    simulate = mod("runtime.simulate")
    real = simulate.simulate

    def shoved(request, progress=None, cancel=None, tuning=None):   # the real one, with a shove no body withstands
        return real(request, progress, cancel, simulate.Tuning(push=(0.3, 0.2, np.array([0.0, 4000.0, 0.0]))))

    monkeypatch.setattr(simulate, "simulate", shoved)
    obj, _, _ = walk_rig(mesh=False)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(obj.fatigue_settings.last_report)
    assert report["fell"] is True and report["finished"] is False


def test_a_take_that_fell_reports_how_far_it_got_not_a_tempo(addon_package):
    """It fell 28 frames in, having played half a frame of its 247-frame source: the summary said
    'x54.00 tempo' (its length over that half frame); the panel's line and ./fatigue bake's say where
    it fell instead.  A take that did not fall keeps its tempo."""
    from fatigued_takes.fatigue_addon import report as bake_report

    report = {"action": "walk.fatigued", "frames": 28, "duration_stretch": 54.0, "fell": True, "fall_frame": 28,
              "source_frames": [1, 247], "peak_fatigue": {"legs": 0.9}, "rests": 0, "finished": False}
    row = {"file": "/shots/a.blend", "status": "ok", "out_action": "walk.fatigued", "take_frames": [1, 28],
           "frames": [1, 247], "duration_stretch": 54.0, "fell": True, "fall_frame": 28, "finished": False,
           "peak_fatigue_by_region": {"knee": 0.9}, "realtime_x": 3.0, "engine": "PyBullet"}
    for line in (bake_report.summary(report), batch.describe(row)):
        assert "tempo" not in line and "fell before playing its 247-frame source" in line, line
    far = dict(report, duration_stretch=1.35)          # 27 frames at x1.35: 20 of the source's frames
    assert "(fell 20 frames into its 247-frame source)" in bake_report.summary(far)
    upright = dict(report, duration_stretch=1.35, fell=False, fall_frame=None)
    assert "(x1.35 tempo)" in bake_report.summary(upright)
