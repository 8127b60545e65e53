"""Bake Fatigued Take end to end with the bpy module (no mocks): a Mixamo-named rig walking a
DeepMimic walk (written onto the rig with clip_to_action), a skinned mesh, the operator, and
every way it must refuse or stop without writing anything.

Operators called from Python raise RuntimeError("Error: <report>") when they report an ERROR;
that message is the user-facing line.
"""
from __future__ import annotations

import importlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import panel_text  # noqa: E402
import rigs  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import demo_blend  # noqa: E402

from bakes import ADDON, fcurves, mod, nothing_written, walk_rig  # noqa: E402


def tired(obj):
    s = obj.fatigue_settings
    s.fitness = 0.1
    s.time_scale = 60.0


def curve_values(action, path):
    fc = next(fc for fc in fcurves(action) if fc.data_path == path)
    co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    return co[0::2], co[1::2]


# --------------------------------------------------------------------------- the bake


def test_bake_writes_take_curves_heat_and_keeps_source(registered_addon):
    obj, body, mapping = walk_rig()
    tired(obj)
    source = obj.animation_data.action
    before = rigs.snapshot(source)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    s = obj.fatigue_settings
    report = json.loads(s.last_report)
    assert report["support"] == "its feet: balance simulated"

    # the new action, assigned (with its slot), one key per take frame from the first frame
    new = bpy.data.actions["walk.fatigued"]
    assert obj.animation_data.action == new and s.baked_action == new and s.source_action == source
    if hasattr(obj.animation_data, "action_slot"):
        assert obj.animation_data.action_slot.identifier == "OB" + obj.name
    T = report["frames"]
    assert T >= bpy.context.scene.frame_end - bpy.context.scene.frame_start + 1
    pelvis_path = f'pose.bones["{mapping["pelvis"]}"].location'
    frames, _ = curve_values(new, pelvis_path)
    assert len(frames) == T and frames[0] == 1 and frames[-1] == T

    # the source action: bit-identical, still in the file on a muted NLA track
    after = rigs.snapshot(source)
    assert after.keys() == before.keys()
    assert all(np.array_equal(after[k], before[k]) for k in before)
    tracks = obj.animation_data.nla_tracks
    assert len(tracks) == 1 and tracks[0].mute and tracks[0].strips[0].action == source

    # per-bone fatigue / capacity curves in [0, 1], and a tired take tires
    legs = []
    for key in ("chest", "neck", "right_hip", "right_knee", "left_ankle", "left_shoulder", "right_elbow"):
        bone = mapping[key]
        _, fat = curve_values(new, f'pose.bones["{bone}"]["fatigue"]')
        _, cap = curve_values(new, f'pose.bones["{bone}"]["capacity"]')
        assert len(fat) == T and len(cap) == T
        assert fat.min() >= 0.0 and fat.max() <= 1.0 and cap.min() >= 0.0 and cap.max() <= 1.0
        if key in ("right_hip", "right_knee", "left_ankle"):
            legs.append(fat)
    legs = np.max(legs, axis=0)
    n = max(T // 10, 1)
    assert legs[-n:].mean() > legs[:n].mean() + 0.05, (legs[:n].mean(), legs[-n:].mean())
    assert report["peak_fatigue"]["legs"] > 0.05
    assert set(report["peak_fatigue"]) == {"legs", "arms", "trunk", "neck"}
    assert report["duration_stretch"] >= 0.99 and report["action"] == "walk.fatigued"

    # the heat colour: a GN modifier driven by the bones' fatigue properties
    assert body.modifiers.get("Fatigue Heat") is not None
    scene = bpy.context.scene
    values = {}
    for f in (2, T - 1):
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        me = body.evaluated_get(dg).data
        attr = me.attributes["fatigue"]
        assert attr.domain == "POINT" and attr.data_type == "FLOAT"
        v = np.empty(len(me.vertices), dtype=np.float32)
        attr.data.foreach_get("value", v)
        col = me.attributes["fatigue_color"]
        assert col.domain == "POINT" and col.data_type == "FLOAT_COLOR"
        c = np.empty(4 * len(me.vertices), dtype=np.float32)
        col.data.foreach_get("color", c)
        values[f] = (v, c.reshape(-1, 4))
    v0, c0 = values[2]
    v1, c1 = values[T - 1]
    assert v0.min() >= 0.0 and v1.max() <= 1.0
    assert v1.max() > v0.max() + 0.05                      # the legs heat up
    assert np.abs(c1 - c0).max() > 0.05                     # and change colour
    # a vertex of the thigh carries the thigh's fatigue
    thigh = body.vertex_groups[mapping["right_hip"]].index
    vi = next(v.index for v in body.data.vertices if any(g.group == thigh for g in v.groups))
    scene.frame_set(T - 1)
    assert body.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.attributes["fatigue"].data[vi].value == \
        pytest.approx(obj.pose.bones[mapping["right_hip"]]["fatigue"], abs=1e-5)


def test_a_tired_take_keys_its_breathing_and_a_fresh_or_unticked_one_does_not(registered_addon):
    obj, _, _ = walk_rig(mesh=False)
    tired(obj)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(obj.fatigue_settings.last_report)
    frames, breath = curve_values(bpy.data.actions["walk.fatigued"], '["breath"]')
    assert len(frames) == report["frames"] and breath.min() >= 0.0 and breath.max() <= 1.0
    assert breath.max() - breath.min() > 0.1                    # it breathes in and out
    peak, end = report["breathing"]
    assert 14.0 <= end <= peak <= 36.0
    assert any(line.startswith("Breathing: up to") for line in panel_text.draw_panels(bpy, obj))
    obj.fatigue_settings.breathing = False
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    assert json.loads(obj.fatigue_settings.last_report)["breathing"] is None
    assert not [fc for fc in fcurves(bpy.data.actions["walk.fatigued"]) if fc.data_path == '["breath"]']
    obj.fatigue_settings.breathing = True
    assert bpy.ops.fatigue.bake_take(preset="Fresh") == {"FINISHED"}
    assert json.loads(obj.fatigue_settings.last_report)["breathing"] is None
    # The operator takes the kneeling switch too (its own test: tests/runtime/floor/test_kneel.py).
    assert bpy.ops.fatigue.bake_take(kneeling=False) == {"FINISHED"}
    assert json.loads(obj.fatigue_settings.last_report)["kneels"] == 0


@pytest.mark.parametrize("fps, fps_base", [(24, 1.0), (30, 1.001), (120, 1.0)])
def test_a_fresh_take_keeps_the_scene_s_timing(registered_addon, fps, fps_base):
    """Film, NTSC and capture rates: a fresh take has one key per scene frame and its pelvis is
    where the source's is on the same frame (at 120 fps the take had one frame per 60 Hz step
    and played twice as fast)."""
    obj, _, mapping = walk_rig(mesh=False, fps=fps, fps_base=fps_base)
    obj.fatigue_settings.preset = "FRESH"
    scene = bpy.context.scene
    source = obj.animation_data.action
    path = f'pose.bones["{mapping["pelvis"]}"].location'
    src_frames, _ = curve_values(source, path)
    pelvis = obj.pose.bones[mapping["pelvis"]]
    probe = np.linspace(scene.frame_start, scene.frame_end, 7).round().astype(int)

    def pelvis_at_probe():
        out = []
        for f in probe:
            scene.frame_set(int(f))
            out.append(np.array(obj.matrix_world @ pelvis.head))
        return np.array(out)

    before = pelvis_at_probe()
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    frames, _ = curve_values(bpy.data.actions["walk.fatigued"], path)
    assert len(frames) == scene.frame_end - scene.frame_start + 1
    assert np.array_equal(frames, src_frames)
    # the pelvis is where the source's is on the same frame (a fresh take tracks within a few cm;
    # played at the wrong rate it would be half a walk cycle away by the end)
    assert np.linalg.norm(pelvis_at_probe() - before, axis=1).max() < 0.05


def test_a_take_too_tired_to_finish_says_so(registered_addon, monkeypatch):
    """A take may last at most 3x its source; one that stops short must not pass for finished."""
    obj, _, _ = walk_rig(mesh=False)
    tired(obj)
    monkeypatch.setattr(mod("runtime.simulate"), "MAX_STRETCH", 0.1)     # stops after 1.15 s of 1.5
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(obj.fatigue_settings.last_report)
    assert report["finished"] is False
    assert any("were not played" in w for w in report["warnings"])
    assert "UNFINISHED" in mod("fatigue_addon.report").summary(report)
    # A walk slows its steps (it does not fall behind the source's path); a tired run that takes
    # shorter strides ends short of it, and the summary says how far.
    assert report["behind_source_m"] < 0.1 and "short of" not in mod("fatigue_addon.report").summary(report)
    report["behind_source_m"] = 1.234
    assert "ends 1.2 m short of the source's path" in mod("fatigue_addon.report").summary(report)
    # A fall says where on the timeline it happened.
    assert report["fell"] is False and report["fall_frame"] is None
    report.update(fell=True, fall_frame=57)
    assert ", FELL at frame 57" in mod("fatigue_addon.report").summary(report)


def test_torque_mode_bakes_the_whole_body_with_no_root_help(registered_addon):
    """Torque mode is the sampler (runtime.torque.samcon) behind the same button: a new take, fatigue
    curves, nothing on the root, and the Last Bake panel says how it was done and what it cost."""
    obj, _, mapping = walk_rig(seconds=0.5, mesh=False)
    tired(obj)
    obj.fatigue_settings.mode = "TORQUE"
    with pytest.raises(RuntimeError) as err:          # a script asking for PyBullet: one line, nothing written
        bpy.ops.fatigue.bake_take(engine="pybullet")
    assert str(err.value).strip() == ("Error: torque mode runs on MuJoCo only: leave the engine Automatic "
                                      "or choose MuJoCo")
    nothing_written(obj)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(obj.fatigue_settings.last_report)
    assert report["mode"] == "torque" and report["engine"] == "MuJoCo" and not report["fell"]
    assert report["residual_force_max_n"] == 0.0 and report["residual_moment_nm_mean"] == 0.0
    assert "no force or moment on the root" in report["notes"]["pelvis_and_legs"]
    assert obj.animation_data.action.name == "walk.fatigued" and "walk" in bpy.data.actions
    _, capacity = curve_values(bpy.data.actions["walk.fatigued"], f'pose.bones["{mapping["right_knee"]}"]["capacity"]')
    assert 0.0 < capacity.min() < 1.0
    text = panel_text.draw_panels(bpy, obj)
    assert "Torque mode: the whole body sampled, no root help" in text
    assert any(line.startswith("Cost: ") and "of compute per second of motion" in line for line in text)


def test_a_seated_character_bakes_held_by_its_seat(registered_addon):
    """A dialogue at a desk: the chair is not part of the rig.  The bake sits it on what the clip
    does not show instead of standing it on its feet in a squat (a tired sitter fell in 4 s)."""
    from made_clips import seated_typist

    obj, _, mapping = walk_rig(mesh=False, edit=lambda _walk: seated_typist(4.0))
    tired(obj)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(obj.fatigue_settings.last_report)
    assert report["mode"] == "srb-reference-follow" and not report["fell"]
    assert "does not show" in report["notes"]["pelvis_and_legs"]
    assert report["support"].startswith("an unseen seat")
    _, capacity = curve_values(bpy.data.actions["walk.fatigued"],
                               f'pose.bones["{mapping["right_elbow"]}"]["capacity"]')
    assert capacity.min() < 0.99                   # the forearms held over the keys tire (a little:
                                                   # their hold is near the endurance limit)


def test_rebake_replaces_and_reads_the_source(registered_addon):
    obj, body, _ = walk_rig(seconds=1.0)
    source = obj.animation_data.action
    before = rigs.snapshot(source)
    obj.fatigue_settings.preset = "Athlete"
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    first = json.loads(obj.fatigue_settings.last_report)
    obj.fatigue_settings.preset = "Exhausted"   # the take is assigned now: a re-bake reads the source
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    second = json.loads(obj.fatigue_settings.last_report)
    assert second["source"] == "walk"
    assert [a.name for a in bpy.data.actions if a.name.startswith("walk")] == ["walk", "walk.fatigued"]
    assert len(obj.animation_data.nla_tracks) == 1
    assert [m.name for m in body.modifiers].count("Fatigue Heat") == 1
    assert second["peak_fatigue"]["legs"] > first["peak_fatigue"]["legs"]
    after = rigs.snapshot(source)
    assert all(np.array_equal(after[k], before[k]) for k in before)
    assert bpy.ops.fatigue.switch_action() == {"FINISHED"}
    assert obj.animation_data.action == source


def test_bake_is_one_undo_step(registered_addon):
    op = bpy.types.FATIGUE_OT_bake_take
    assert {"REGISTER", "UNDO"} <= set(op.bl_options)
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    try:
        bpy.ops.ed.undo_push(message="before bake")
    except RuntimeError:
        pass
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    assert "walk.fatigued" in bpy.data.actions
    try:
        bpy.ops.ed.undo()
    except RuntimeError as exc:         # no window: the bpy module has no undo stack to step
        pytest.skip(f"bpy.ops.ed.undo() is unavailable in the bpy module ({exc}); the bake is one "
                    f"operator call with the UNDO flag")
    assert "walk.fatigued" not in bpy.data.actions


def test_keyed_fitness_and_body_parts_shape_the_schedule(registered_addon):
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bake, proxy = mod("fatigue_addon.bake"), mod("runtime.body.proxy")
    s = obj.fatigue_settings
    s.fitness = 1.0
    obj.keyframe_insert("fatigue_settings.fitness", frame=1)
    s.fitness = 0.0
    obj.keyframe_insert("fatigue_settings.fitness", frame=bpy.context.scene.frame_end)
    s.fitness_arms = 0.5
    job = bake.prepare(bpy.context, obj)
    sched = job.request.schedule
    parts = np.array(proxy.dof_body_parts())
    legs, arms = np.flatnonzero(parts == "legs"), np.flatnonzero(parts == "arms")
    end = bpy.context.scene.frame_end - 1
    assert sched.F[end, legs[0]] > 3.0 * sched.F[0, legs[0]]          # fitness 1 -> 0: tires faster
    assert sched.F.shape[0] >= 3 * end                                  # room for a stretched take
    # arms at half the fitness of the body tire faster than with the body's fitness
    s.fitness_arms = 1.0
    ref = bake.prepare(bpy.context, obj).request.schedule
    assert sched.F[0, arms[0]] > ref.F[0, arms[0]] and sched.F[0, legs[0]] == ref.F[0, legs[0]]
    # Custom: F, R, r are used as keyed, times the speed-up
    s.preset = "CUSTOM"
    s.F, s.R, s.r, s.time_scale = 0.02, 0.003, 10.0, 10.0
    cj = bake.prepare(bpy.context, obj).request.schedule
    assert np.allclose(cj.F[:, legs], 0.2) and np.allclose(cj.R[:, legs], 0.03) and np.allclose(cj.r, 10.0)


def test_a_directed_bake_asks_for_tiredness_and_reports_what_it_reached(registered_addon):
    """A preset says how tired, when: the request carries the keys (Tired at start / by the end,
    or the keyed Tiredness channel, on the source's timeline) and the rates at real time; the
    Last Bake report says what was asked, what was reached and what was solved."""
    obj, _, _ = walk_rig(seconds=3.0, mesh=False)
    bake, report = mod("fatigue_addon.bake"), mod("fatigue_addon.report")
    s = obj.fatigue_settings
    s.preset = "Exhausted"
    job = bake.prepare(bpy.context, obj)
    keys = job.request.tiredness
    end = (bpy.context.scene.frame_end - bpy.context.scene.frame_start) / job.fps
    assert keys.times == pytest.approx((0.0, end)) and keys.values == pytest.approx((0.5, 0.5))
    assert job.request.schedule.initial_fatigue.max() == 0.0      # the solve sets it
    s.tiredness = 0.0
    obj.keyframe_insert("fatigue_settings.tiredness", frame=1)
    s.tiredness = 0.6
    obj.keyframe_insert("fatigue_settings.tiredness", frame=46)
    keyed = bake.prepare(bpy.context, obj).request.tiredness
    assert keyed.times[:2] == pytest.approx((0.0, 45 / job.fps)) and keyed.values[:2] == pytest.approx((0.0, 0.6))
    assert keyed.values[-1] == pytest.approx(0.6)                  # held after its last key
    s.preset = "Realistic"                  # rates as published: nothing directed
    assert bake.prepare(bpy.context, obj).request.tiredness is None
    s.preset = "Exhausted"
    for frame in (1, 46):
        obj.keyframe_delete("fatigue_settings.tiredness", frame=frame)
    assert bpy.ops.fatigue.bake_take(preset="Exhausted") == {"FINISHED"}
    r = json.loads(s.last_report)
    assert r["tiredness"]["asked"] == [0.5, 0.5]
    assert abs(r["tiredness"]["reached"][1] - 0.5) <= 0.1 and set(r["tiredness"]["parts"]) >= {"legs", "arms"}
    assert r["kneels"] == 0 and not r["fell"]
    assert "tired 0.50 ->" in report.summary(r)
    assert any("Tiredness: asked 0.50 -> 0.50" in line for line in panel_text.draw_panels(bpy, obj))


# --------------------------------------------------------------------------- cancel and errors


def test_cancel_writes_nothing(registered_addon):
    obj, body, _ = walk_rig(seconds=1.0)
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    calls = [0]

    def cancel():
        calls[0] += 1
        return calls[0] > 20

    with pytest.raises(mod("fatigue_addon.failure").BakeCancelled, match="nothing was written"):
        bake.bake(bpy.context, obj, cancel=cancel)
    assert calls[0] == 21
    nothing_written(obj, body)


def _quadruped():
    rig = rigs.quadruped_rig()
    rigs.animate(rig.obj, [b.name for b in rig.obj.pose.bones], "spine", 10)
    return rig.obj


def _zero_length():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bpy.ops.object.mode_set(mode="EDIT")
    eb = obj.data.edit_bones["mixamorig:LeftHand"]
    eb.tail = eb.head
    bpy.ops.object.mode_set(mode="OBJECT")
    if "mixamorig:LeftHand" not in obj.data.bones:
        pytest.skip("this Blender removes a zero-length bone on leaving Edit Mode: such a rig cannot be made")
    return obj


def _nan_fitness():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    obj.keyframe_insert("fatigue_settings.fitness", frame=1)
    obj.keyframe_insert("fatigue_settings.fitness", frame=10)
    fc = next(fc for fc in fcurves(obj.animation_data.action) if fc.data_path == "fatigue_settings.fitness")
    fc.keyframe_points[1].co[1] = float("nan")
    fc.keyframe_points[1].handle_left[1] = float("nan")
    fc.keyframe_points[1].handle_right[1] = float("nan")
    return obj


def _absurd_F():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    s.preset = "CUSTOM"
    obj.keyframe_insert("fatigue_settings.F", frame=1)
    fc = next(fc for fc in fcurves(obj.animation_data.action) if fc.data_path == "fatigue_settings.F")
    fc.keyframe_points[0].co[1] = 5000.0
    return obj


def _empty_range():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    s.use_custom_range = True
    s.frame_start, s.frame_end = 20, 20
    return obj


def _bad_mapping():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bpy.ops.fatigue.detect_rig()
    row = next(r for r in obj.fatigue_settings.mapping if r.key == "left_knee")
    row.bone = "NoSuchBone"
    return obj


def _unmapped():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bpy.ops.fatigue.detect_rig()
    for r in obj.fatigue_settings.mapping:
        if r.key in ("left_knee", "right_elbow"):
            r.bone = ""
    return obj


def _no_action():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    obj.animation_data.action = None
    return obj


def _mesh_active():
    obj, body, _ = walk_rig(seconds=1.0)
    bpy.context.view_layer.objects.active = body
    return obj


def _teleport():
    """Two takes spliced: the root jumps 2 m forward between frames 15 and 16 (clip frames 14, 15)."""
    from dataclasses import replace

    def splice(clip):
        pos = clip.root_pos.copy()
        pos[15:, 0] += 2.0
        return replace(clip, root_pos=pos)
    obj, _, _ = walk_rig(seconds=1.0, mesh=False, edit=splice)
    return obj


def _no_active():
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bpy.context.view_layer.objects.active = None
    return obj


ERRORS = {
    "no_active": (_no_active, "No active object: select the character's armature"),
    "mesh_active": (_mesh_active, "not an armature: select the character's armature"),
    "no_action": (_no_action, "has no action: assign one"),
    "non_humanoid": (_quadruped, "does not look like a humanoid"),
    "zero_length_bone": (_zero_length, "has zero length: give it a tail"),
    "empty_range": (_empty_range, "Custom frame range 20-20 is empty: set End after Start"),
    "nan_fitness": (_nan_fitness, "Fitness is nan at frame"),
    "absurd_F": (_absurd_F, "F (fatigue rate) is 5000.0 at frame 1"),
    "bad_mapping": (_bad_mapping, "'NoSuchBone' is not in"),
    "unmapped": (_unmapped, "no bone mapped"),
    "teleport": (_teleport, "m between frames 15 and 16: a cut, teleport or stepped key in 'walk'"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_one_line_nothing_written(registered_addon, case):
    build, expected = ERRORS[case]
    obj = build()
    source = obj.animation_data.action.name if obj.animation_data and obj.animation_data.action else None
    with pytest.raises(RuntimeError) as err:
        bpy.ops.fatigue.bake_take()
    msg = str(err.value).strip()
    assert msg.startswith("Error: ") and "\n" not in msg and "Traceback" not in msg
    assert expected in msg, msg
    assert ":" in msg[len("Error: "):]          # "<what is wrong>: <the fix>"
    nothing_written(obj, source_name=source)


def test_simulation_error_is_one_line(registered_addon):
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    job = bake.prepare(bpy.context, obj)
    job.request.mass = 5.0            # past the panel's limits: the simulator refuses it
    with pytest.raises(mod("fatigue_addon.failure").BackendError) as err:
        backend.run_sync(backend.InProcessRun(job.request, threaded=False))
    assert "mass" in str(err.value) and "\n" not in str(err.value)
    nothing_written(obj)


def test_background_threaded_run_matches_inline(registered_addon):
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    job = bake.prepare(bpy.context, obj)
    a = backend.run_sync(backend.InProcessRun(job.request, threaded=False))
    seen = []
    b = backend.run_sync(backend.InProcessRun(job.request, threaded=True), progress=seen.append)
    assert np.array_equal(a.clip.joint_rots, b.clip.joint_rots)
    assert seen and seen[-1] <= 1.0


# --------------------------------------------------------------------------- speed


def test_sixty_bone_rig_ten_seconds_bakes_and_prints_its_timings(registered_addon, capsys):
    obj, body, _ = walk_rig(seconds=10.0, fingers=True)
    assert 60 <= len(obj.data.bones) <= 70
    bake = mod("fatigue_addon.bake")
    t0 = time.perf_counter()
    report = bake.bake(bpy.context, obj)
    total = time.perf_counter() - t0
    t = report["timings"]
    blender = t["check"] + t["read"] + t["schedule"] + t["write"]
    with capsys.disabled():
        print(f"\n{len(obj.data.bones)}-bone rig, {bpy.context.scene.frame_end} frames at 30 fps "
              f"({report['frames']} take frames): Blender side {blender:.3f} s (check {t['check']:.3f}, "
              f"read {t['read']:.3f}, schedule {t['schedule']:.3f}, write {t['write']:.3f}); "
              f"simulation {t['simulate']:.2f} s; total {total:.2f} s")
    assert report["frames"] > 0     # timings are printed, not asserted: ./fatigue bench-bake measures them


# --------------------------------------------------------------------------- UI pieces


def test_invoke_in_background_bakes_synchronously_and_prints_every_10_percent(registered_addon, capfd):
    obj, body, _ = walk_rig(seconds=1.0)
    s = obj.fatigue_settings
    s.heat_material = True
    assert bpy.app.background
    assert bpy.ops.fatigue.bake_take("INVOKE_DEFAULT") == {"FINISHED"}
    out = capfd.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith("Fatigue bake: ")]
    assert lines == [f"Fatigue bake: {p}%" for p in range(0, 101, 10)], lines
    # the heat material is an object-linked override; the mesh keeps its own slots
    assert all(slot.link == "OBJECT" and slot.material.name == "Fatigue Heat" for slot in body.material_slots)
    nt = bpy.data.materials["Fatigue Heat"].node_tree
    assert any(n.type == "ATTRIBUTE" and n.attribute_name == "fatigue_color" for n in nt.nodes)


def test_mapping_rows_detect_save_load_and_panels_draw(registered_addon, tmp_path):
    obj, _, mapping = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    rigmap = mod("fatigue_addon.rigmap")
    assert bpy.ops.fatigue.detect_rig() == {"FINISHED"}
    rows = {r.key: r.bone for r in s.mapping}
    assert set(rows) == set(rigmap.ALL_KEYS)
    assert all(rows[k] == mapping[k] for k in rigmap.HUMANOID_KEYS)
    path = tmp_path / "my_rig.json"
    assert bpy.ops.fatigue.save_mapping(filepath=str(path)) == {"FINISHED"}
    assert json.loads(path.read_text())["bones"]["left_knee"] == mapping["left_knee"]
    assert bpy.ops.fatigue.clear_mapping() == {"FINISHED"} and len(s.mapping) == 0
    assert bpy.ops.fatigue.load_mapping(filepath=str(path)) == {"FINISHED"}
    assert {r.key: r.bone for r in s.mapping if r.bone} == {k: v for k, v in rows.items() if v}
    s.mapping.clear()
    assert bpy.ops.fatigue.load_shipped_mapping(preset="mixamo") == {"FINISHED"}
    assert {r.key: r.bone for r in s.mapping}["right_elbow"] == mapping["right_elbow"]
    # an edited row is what the bake uses
    next(r for r in s.mapping if r.key == "neck").bone = mapping["chest"]
    with pytest.raises(RuntimeError, match="mapped twice"):
        bpy.ops.fatigue.bake_take()

    # every panel and the UIList draw without errors, before and after a bake
    next(r for r in s.mapping if r.key == "neck").bone = mapping["neck"]

    def draw_all():
        return panel_text.draw_panels(bpy, obj, mapping_rows=True)

    before = draw_all()
    assert "Pelvis / hips" in before and not any(x.startswith("Tempo") for x in before)
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    after = draw_all()
    assert any(x.startswith("Tempo: x") for x in after) and any(x.startswith("Legs: ") for x in after)
    assert not any(x.startswith("Shorter strides") for x in after)     # a fresh walk keeps its path
    report = json.loads(s.last_report)
    s.last_report = json.dumps(dict(report, behind_source_m=1.26))
    assert "Shorter strides: ends 1.3 m short of the source's path" in draw_all()
    assert "Rests: 0" in after
    assert "Held up by its feet: balance simulated" in after
    s.last_report = json.dumps(dict(report, fell=True, fall_frame=42))
    assert "Rests: 0   FELL at frame 42" in draw_all()


class _WM:
    def __init__(self):
        self.fatigue_bake_status = ""
        self.progress = []

    def progress_begin(self, a, b):
        self.progress.append(("begin", a, b))

    def progress_update(self, v):
        self.progress.append(v)

    def progress_end(self):
        self.progress.append("end")

    def event_timer_add(self, *a, **k):
        return "timer"

    def event_timer_remove(self, t):
        self.progress.append("timer removed")

    def modal_handler_add(self, op):
        pass


def _modal_operator(obj, prefs=None):
    """The bake operator's invoke/modal methods on a stand-in (the bpy module has no event loop)."""
    from types import SimpleNamespace

    op_cls = bpy.types.FATIGUE_OT_bake_take
    reports = []

    class Op:
        _timer = "timer"
        _run = None
        _job = None
        modal = op_cls.modal
        _modal = op_cls._modal
        _finish = op_cls._finish
        _write = op_cls._write

        def report(self, kind, msg):
            reports.append((set(kind), msg))

    wm = _WM()
    ctx = SimpleNamespace(window_manager=wm, scene=bpy.context.scene, active_object=obj, window=object(),
                          screen=None, preferences=bpy.context.preferences)
    return Op(), ctx, wm, reports


@pytest.mark.parametrize("backend_kind", ["IN_PROCESS", "WORKER"])
def test_modal_path_progress_then_one_write(registered_addon, monkeypatch, backend_kind):
    from types import SimpleNamespace

    # 3 s of walk and 10 ms polls: the bake must outlast several polls on a fast machine too
    obj, body, _ = walk_rig(seconds=3.0)
    tired(obj)
    ops = sys.modules[f"{ADDON}.operators.bake"]
    monkeypatch.setattr(ops, "prefs", lambda context: SimpleNamespace(backend=backend_kind))
    op, ctx, wm, reports = _modal_operator(obj)
    # under the bpy module (bpy.app.background, read-only) invoke falls back to execute, so the
    # modal set-up that invoke does is repeated here and modal() is driven with timer events
    bake = mod("fatigue_addon.bake")
    op._job = bake.prepare(bpy.context, obj)
    op._run = bake.make_run(op._job, ops.prefs(ctx), threaded=True)
    op._run.start()
    op._t0 = time.perf_counter()
    timer = SimpleNamespace(type="TIMER")
    state = {"RUNNING_MODAL"}
    polls = 0
    while state == {"RUNNING_MODAL"}:
        assert "walk.fatigued" not in bpy.data.actions          # nothing written while simulating
        time.sleep(0.01)
        state = op.modal(ctx, timer)
        polls += 1
    assert state == {"FINISHED"}, reports
    assert polls > 2 and any(isinstance(p, int) for p in wm.progress) and wm.progress[-1] == "end"
    assert wm.fatigue_bake_status == ""
    assert "walk.fatigued" in bpy.data.actions and body.modifiers.get("Fatigue Heat") is not None
    assert reports[-1][0] == {"INFO"} and reports[-1][1].startswith("Baked 'walk.fatigued'")
    assert json.loads(obj.fatigue_settings.last_report)["backend"] == backend_kind


def test_modal_esc_cancels_and_writes_nothing(registered_addon):
    from types import SimpleNamespace

    obj, body, _ = walk_rig(seconds=1.0)
    bake = mod("fatigue_addon.bake")
    op, ctx, wm, reports = _modal_operator(obj)
    op._job = bake.prepare(bpy.context, obj)
    op._run = bake.make_run(op._job, SimpleNamespace(backend="WORKER"), threaded=True)
    op._run.start()
    op._t0 = time.perf_counter()
    assert op.modal(ctx, SimpleNamespace(type="MOUSEMOVE")) == {"PASS_THROUGH"}
    assert op.modal(ctx, SimpleNamespace(type="ESC")) == {"CANCELLED"}
    assert op._run.proc.poll() is not None
    assert reports == [({"WARNING"}, "Bake cancelled: nothing was written")]
    nothing_written(obj, body)


def test_keyed_fitness_travels_with_the_take_and_is_editable_there(registered_addon):
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    s.time_scale = 60.0
    end = bpy.context.scene.frame_end
    for frame, value in ((1, 1.0), (end, 0.6)):
        s.fitness = value
        obj.keyframe_insert("fatigue_settings.fitness", frame=frame)
    source = obj.animation_data.action
    src_keys = curve_values(source, "fatigue_settings.fitness")
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    first = json.loads(s.last_report)["peak_fatigue"]["legs"]
    take = obj.animation_data.action
    keys = curve_values(take, "fatigue_settings.fitness")
    assert np.array_equal(keys[0], src_keys[0]) and np.array_equal(keys[1], src_keys[1])   # as keyed
    # the animator edits the fitness curve on the take: the re-bake follows it, the source is untouched
    fc = next(fc for fc in fcurves(take) if fc.data_path == "fatigue_settings.fitness")
    for kp in fc.keyframe_points:
        kp.co[1] = kp.handle_left[1] = kp.handle_right[1] = 0.0
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    assert json.loads(s.last_report)["peak_fatigue"]["legs"] > first + 0.02
    assert np.array_equal(curve_values(source, "fatigue_settings.fitness")[1], src_keys[1])
    assert np.array_equal(curve_values(obj.animation_data.action, "fatigue_settings.fitness")[1], [0.0, 0.0])


def test_legs_too_tired_to_recover_standing_kneel_and_the_panel_says_so(registered_addon):
    """Fitness 0 at 90x, starting 82 % fatigued: the walker's legs give out (below exhausted_rc),
    so it rests on its knees, the last resort; the Last Bake panel counts those rests.  (Less
    spent, at 58-65 %, the legs now rest on their feet: the trunk leans over them as soon as they
    tire, and standing recovers them.)"""
    obj, _, _ = walk_rig(seconds=8.0, mesh=False)      # (a shorter walk has no time left for a kneel)
    s = obj.fatigue_settings
    s.fitness, s.time_scale, s.initial_fatigue = 0.0, 90.0, 0.82
    assert bpy.ops.fatigue.bake_take() == {"FINISHED"}
    report = json.loads(s.last_report)
    assert report["kneels"] >= 1 and not report["fell"] and report["finished"], report["summary"] if "summary" in report else {k: report[k] for k in ("rests", "duration_stretch", "frames", "peak_fatigue_by_region")}
    assert any("on its knees" in line for line in panel_text.draw_panels(bpy, obj))


def _unkey(action, bone: str) -> None:
    """Remove ``bone``'s rotation curves from ``action``: a source that leaves that bone alone."""
    path = f'pose.bones["{bone}"].rotation_quaternion'
    bags = [bag for layer in getattr(action, "layers", ()) for strip in layer.strips for bag in strip.channelbags]
    for bag in bags or [action]:
        for fc in [fc for fc in bag.fcurves if fc.data_path == path]:
            bag.fcurves.remove(fc)
    assert not [fc for fc in fcurves(action) if fc.data_path == path]


def _take_after(registered_addon, preset: str, before: str | None) -> dict:
    """The keys of a ``preset`` take of a walk whose source does not key the neck, baked alone or
    after a ``before`` take of the same source (the timeline scrubbed in between, as an animator
    would)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    registered_addon.unregister()
    registered_addon.register()
    obj, _, mapping = walk_rig(seconds=1.0, mesh=False)
    _unkey(obj.animation_data.action, mapping["neck"])
    if before is not None:
        assert bpy.ops.fatigue.bake_take(preset=before) == {"FINISHED"}
        bpy.context.scene.frame_set(bpy.context.scene.frame_end)
    assert bpy.ops.fatigue.bake_take(preset=preset, take_name="walk.second") == {"FINISHED"}
    out = {}
    for fc in fcurves(bpy.data.actions["walk.second"]):
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[(fc.data_path, fc.array_index)] = co
    return out


@pytest.mark.parametrize("preset, before", [("Exhausted", "Fresh"), ("Fresh", "Exhausted")])
def test_a_take_does_not_depend_on_the_take_baked_before_it(registered_addon, preset, before):
    """A source that keys no rotation for the neck plays it at whatever the pose holds, and a take
    assigned writes its own neck there: a take baked after it read (and wrote its keys over) that
    neck as the source's (an Exhausted take after a Fresh one differed from the same take baked
    alone, and ./fatigue bake's second variant from the farm's).  The pose the source played on is
    kept on the take: the same keys, bit for bit."""
    alone = _take_after(registered_addon, preset, None)
    after = _take_after(registered_addon, preset, before)
    assert alone.keys() == after.keys()
    differ = [k for k in alone if not np.array_equal(alone[k], after[k])]
    assert not differ, differ[:4]
