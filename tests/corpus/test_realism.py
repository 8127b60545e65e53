"""./fatigue realism: the gait and posture measures on hand-made takes with known answers, the
expected directions against the reference they cite, and the command on a short bench walk and a
short corpus walk (fresh against itself changes nothing; a walk has strides; the score is the
table's; the JSON is written)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from runtime.motion import gait
from runtime.body import proxy
from runtime.maths import quat
from runtime.motion.clip import Y_UP_TO_Z_UP, Clip
from runtime.motion.take import Take

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import corpus_import  # noqa: E402
import realism  # noqa: E402

FPS = 30.0
NAMES = [j.name for j in proxy.DEFAULT_JOINTS]
Z = np.array([0.0, 0.0, 1.0])


def synthetic_take(frames: int = 91, speed: float = 1.0, yaw_deg: float = 0.0, joints: dict | None = None,
                   stride_frames: int = 30) -> Take:
    """An upright body facing ``yaw_deg`` (0: +x), its root travelling forward at ``speed`` m/s, the
    feet down 60 % of each stride, each foot half a stride after the other; ``joints``: name -> a
    rotation about the link's lateral axis in degrees (negative: forward)."""
    t = np.arange(frames) / FPS
    heading = quat.from_axis_angle(Z, np.radians(yaw_deg))
    forward = quat.rotate(heading, np.array([1.0, 0.0, 0.0]))
    root_pos = np.outer(speed * t, forward) + np.array([0.0, 0.0, 0.9])
    root_rot = np.tile(quat.multiply(heading, Y_UP_TO_Z_UP), (frames, 1))
    rots = np.tile(quat.IDENTITY, (frames, len(NAMES), 1))
    for name, deg in (joints or {}).items():
        rots[:, NAMES.index(name)] = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.radians(deg))
    f = np.arange(frames)
    down = int(0.6 * stride_frames)
    contacts = np.stack([f % stride_frames < down, (f + stride_frames // 2) % stride_frames < down], axis=1)
    dofs = len(proxy.dof_table())
    zeros = np.zeros((frames, dofs))
    return Take(mode="srb", fps=FPS, clip=Clip("synthetic", FPS, root_pos, root_rot, rots), reference_time=t,
                fatigue={k: zeros for k in ("MA", "MR", "MF", "TL", "RC")}, torque=zeros, contacts=contacts,
                residual_force=np.zeros((frames, 3)), com=root_pos.copy())


def test_a_root_moving_at_one_metre_a_second_progresses_at_one_metre_a_second():
    take = synthetic_take(speed=1.0)
    assert gait.progression_speed(take) == pytest.approx(1.0, abs=1e-9)
    # a stride is a second: 1 m, two steps a second
    assert gait.stride_length(take) == pytest.approx(1.0, abs=1e-9)
    assert gait.cadence(take) == pytest.approx(120.0, abs=1e-9)
    assert gait.touchdowns(take)[:3] == [(15, 1), (30, 0), (45, 1)]


def test_a_foot_that_chatters_on_the_floor_takes_no_extra_steps():
    take = synthetic_take(speed=1.0)
    steady = (gait.stride_length(take), gait.cadence(take))
    take.contacts[3:15:2, 0] = False          # the right foot flickers off the floor in its stance
    take.contacts[20:28:2, 0] = True          # and touches for a frame in its swing
    assert (gait.stride_length(take), gait.cadence(take)) == steady


def test_a_rest_is_not_progression_and_counts_per_10_s_of_source():
    take = synthetic_take(frames=151, speed=1.0)
    # frames 60-90 stand still, showing the same moment of the source (a rest)
    take.reference_time[60:] = np.concatenate([np.full(30, 2.0), 2.0 + np.arange(61) / FPS])
    take.clip.root_pos[60:90] = take.clip.root_pos[60]
    take.clip.root_pos[90:] -= np.array([1.0, 0.0, 0.0])
    take.events = [{"time": 2.0, "kind": "rest", "frame": 60}, {"time": 3.0, "kind": "resume", "frame": 90}]
    # the rest's frames are left out of the speed; a stride across it is no stride
    assert gait.progression_speed(take) == pytest.approx(1.0, abs=1e-9)
    assert gait.stride_length(take) == pytest.approx(1.0, abs=1e-9)
    assert gait.rests_per_10s(take) == pytest.approx(10.0 / 4.0)
    f = gait.features(take, source_duration=4.0)
    assert f.stretch == pytest.approx(5.0 / 4.0) and f.finished and f.rests == 1 and not f.fell
    assert not gait.features(take, source_duration=6.0).finished


@pytest.mark.parametrize("yaw", [0.0, 90.0, -135.0])
def test_a_head_pitched_20_degrees_forward_reads_plus_20_whichever_way_the_body_faces(yaw):
    take = synthetic_take(yaw_deg=yaw, joints={"neck": -20.0})
    assert gait.head_pitch_series(take.clip) == pytest.approx(np.full(take.frames, 20.0), abs=1e-9)
    assert gait.head_chest_bend_series(take.clip) == pytest.approx(np.full(take.frames, 20.0), abs=1e-6)
    assert gait.chest_pitch_series(take.clip) == pytest.approx(np.zeros(take.frames), abs=1e-9)
    assert gait.trunk_pitch_series(take.clip) == pytest.approx(np.zeros(take.frames), abs=1e-9)
    back = synthetic_take(yaw_deg=yaw, joints={"neck": 15.0})
    assert gait.head_pitch_series(back.clip)[0] == pytest.approx(-15.0, abs=1e-9)


def test_a_chest_leaning_30_degrees_carries_the_head_and_half_the_trunk_line():
    take = synthetic_take(joints={"chest": -30.0})
    assert gait.chest_pitch_series(take.clip)[0] == pytest.approx(30.0, abs=1e-9)
    assert gait.head_pitch_series(take.clip)[0] == pytest.approx(30.0, abs=1e-9)
    assert gait.head_chest_bend_series(take.clip)[0] == pytest.approx(0.0, abs=1e-6)
    s = np.radians(30.0)
    line = np.degrees(np.arctan2(gait.CHEST_TO_NECK * np.sin(s), gait.ROOT_TO_CHEST + gait.CHEST_TO_NECK * np.cos(s)))
    assert gait.trunk_pitch_series(take.clip)[0] == pytest.approx(line, abs=1e-9)


def test_fresh_against_itself_changes_nothing():
    take = synthetic_take(joints={"neck": -10.0, "right_knee": -20.0, "left_knee": -20.0})
    f = gait.features(take, take.reference_time[-1])
    change = realism.compare(take, take, f, f)
    for key in ("speed_ratio", "stride_ratio", "cadence_ratio", "overall_speed_ratio"):
        assert change[key] == pytest.approx(1.0, abs=1e-12), key
    for key in ("trunk_pitch_change_deg", "chest_pitch_change_deg", "head_pitch_change_deg",
                "head_chest_bend_change_deg", "knee_stance_change_deg"):
        assert change[key] == pytest.approx(0.0, abs=1e-9), key


def test_the_score_reads_the_expected_table():
    applies = {"travels": True, "locomotion": True, "runs": False, "upright": True, "arms raised": False,
               "jumps": False, "not locomotion": False}
    change = {"speed_ratio": 0.7, "stride_ratio": 1.05, "cadence_ratio": 0.9, "knee_stance_change_deg": 4.0,
              "rests_per_10s": 3.0, "trunk_pitch_change_deg": 2.0, "head_pitch_change_deg": -1.0,
              "arm_elevation_change_deg": -5.0, "jump_ratio": None, "stretch": 1.4}
    rows = {r["expectation"]: r["right"] for r in realism.score(change, applies)}
    # cadence: runs only; arms: not raised; slower: locomotion is scored on its speed instead
    assert rows == {"speed down": True, "stride down": False, "knee flexion in stance up": True,
                    "rests few": False, "trunk forward": True, "head forward": False}


def test_every_expected_direction_cites_an_entry_of_the_reference():
    if not realism.REFERENCE.is_file():
        pytest.skip(f"no reference beside this checkout ({realism.REFERENCE})")
    reference = json.loads(realism.REFERENCE.read_text(encoding="utf-8"))
    for e in realism.EXPECTED:
        assert e.cites, e.name
        for section, index, words in e.cites:
            entry = reference[section] if index is None else reference[section][index]
            assert words in json.dumps(entry, ensure_ascii=False), (e.name, section, index, words)


def test_a_figure_of_eight_walk_travels_and_a_sway_does_not():
    t = np.arange(0, 10, 1 / FPS)
    eight = np.stack([3 * np.sin(2 * np.pi * t / 10), 1.5 * np.sin(4 * np.pi * t / 10), 0 * t], axis=1)
    assert np.linalg.norm(eight[-1] - eight[0]) < 0.1            # back where it started
    assert gait.window_speed(eight, FPS) > 1.0
    sway = np.stack([0.3 * np.sin(2 * np.pi * t), 0 * t, 0 * t], axis=1)
    assert gait.window_speed(sway, FPS) < 0.1
    assert gait.reach(eight) > 2.5 and gait.reach(sway) == pytest.approx(0.3, abs=0.01)
    assert gait.window_speed(eight[:45], FPS) is None      # shorter than a window


def test_a_take_without_breathing_has_no_breathing_rate():
    take = synthetic_take()
    assert gait.breathing_rate(take) is None
    take.breath = np.sin(2 * np.pi * 0.5 * take.reference_time)   # 30 breaths a minute
    assert gait.breathing_rate(take) == pytest.approx(30.0, abs=2.5)


@pytest.mark.slow
def test_a_simulated_fresh_walk_against_itself_changes_nothing():
    from runtime.motion import clip as clips
    from runtime import simulate

    clip = clips.load_deepmimic(clips.deepmimic_clip_path("walk"))
    source = realism.bench_source(clip, 3.0)
    take = simulate.simulate_clip(source, None, out_fps=30.0)
    f = gait.features(take, source.duration)
    assert f.finished and not f.fell and f.stride_m is not None and f.cadence_spm is not None
    assert 0.5 < f.speed_mps < 2.0 and 0.6 < f.stride_m < 2.0 and 60 < f.cadence_spm < 160
    change = realism.compare(take, take, f, f)
    assert change["speed_ratio"] == 1.0 and change["stride_ratio"] == 1.0 and change["cadence_ratio"] == 1.0
    assert abs(change["trunk_pitch_change_deg"]) < 1e-9 and abs(change["head_pitch_change_deg"]) < 1e-9


CORPUS_WALK = next((f for f in corpus_import.corpus_files() if f.rel.endswith("xia_old_13_000.bvh")), None)


@pytest.mark.slow
def test_realism_runs_on_a_bench_walk_and_a_corpus_walk(tmp_path, capsys):
    # "walk" also names corpus walks: --actions keeps the corpus to the one action
    args = ["--clips", "walk,xia_old", "--actions", "xia_old_13_000"] if CORPUS_WALK else ["--no-corpus"]
    rc = realism.main(args + ["--clips", "walk"] * (CORPUS_WALK is None) + [
        "--seconds", "3", "--json", str(tmp_path / "r.json"), "--strips", str(tmp_path / "strips"), "--jobs", "2"])
    assert rc == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    records = {r["clip"]: r for r in report["records"]}
    assert len(records) == (2 if CORPUS_WALK is not None else 1), records.keys()
    walk = records["walk"]
    assert walk["status"] == "baked" and walk["applies"]["locomotion"]
    fresh = walk["takes"]["fresh"]
    assert fresh["stride_m"] > 0.5 and 60 < fresh["cadence_spm"] < 160 and fresh["finished"]
    for condition in ("average", "exhausted"):
        take, change = walk["takes"][condition], walk["changes"][condition]
        assert take["source_seconds"] > 0 and take["stretch"] >= 1.0 - 1e-9
        assert 0.0 < change["speed_ratio"] < 1.5 and change["trunk_pitch_change_deg"] is not None
        assert -90 < take["head_chest_bend_p95_deg"] < 180
    assert Path(walk["strip"]).is_file()
    # the score is the table's: every applicable row with a value, counted once
    rows = [s for r in report["records"] if r.get("status") == "baked" for c in ("average", "exhausted")
            for s in r["scores"][c]]
    summary = report["summary"]
    assert summary["directions"] == len(rows) > 0
    assert summary["direction_right"] == sum(s["right"] for s in rows)
    assert f"({summary['direction_right']}/{summary['directions']})" in out
    assert "walk" in out and "exhausted" in out
    if CORPUS_WALK is not None:
        corpus_walk = next(r for name, r in records.items() if "xia_old" in name)
        assert corpus_walk["status"] == "baked", corpus_walk
        assert corpus_walk["applies"]["locomotion"] and corpus_walk["takes"]["fresh"]["speed_mps"] > 0.5
        assert corpus_walk["takes"]["fresh"]["stride_m"] is not None
        assert set(corpus_walk["changes"]) == {"average", "exhausted"}


def test_a_fall_says_what_gave_way():
    """A fall is reported with its cause: the legs' capacity, what the body stood on, a rest."""
    from runtime.motion import clip as C
    from runtime.fatigue import schedule
    from runtime import simulate

    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    fresh = simulate.simulate_clip(walk, None, seconds=1.0, out_fps=30)
    assert gait.fall_cause(fresh) is None
    shoved = simulate.simulate_clip(walk, schedule.from_fitness(0.5, fps=30, time_scale=20), seconds=3.0, out_fps=30,
                               push=(1.0, 0.2, np.array([0.0, 4000.0, 0.0])))
    cause = gait.fall_cause(shoved)
    assert shoved.fell and cause is not None
    assert cause.startswith("legs at RC ") and (" on " in cause or "in the air" in cause)
