"""Breathing (runtime.fatigue.breathing): rate and depth follow the work done, and fresh takes never breathe."""
import numpy as np
import pytest

from runtime.fatigue import breathing, params as fatigue_params, schedule
from runtime.motion import clip as clips, gait
from runtime.body import proxy
from runtime.maths import quat
from runtime import simulate, worker


def _take(name: str, preset: str | None, seconds: float = 6.0, **kw):
    source = clips.load_deepmimic(clips.deepmimic_clip_path(name))
    sched = None
    if preset is not None:
        p = fatigue_params.preset(preset)
        sched = schedule.from_fitness(p.fitness, fps=30, time_scale=p.time_scale, initial_fatigue=p.initial_fatigue)
    return simulate.simulate_clip(source, sched, seconds=seconds, out_fps=30, **kw)


def test_a_fresh_take_never_breathes():
    assert _take("walk", None, 2.0).breath is None


def test_harder_and_more_tired_work_breathes_faster_and_deeper():
    walk, run, spent = _take("walk", "Average"), _take("run", "Average"), _take("run", "Exhausted")
    rates = [gait.breathing_rate(t) for t in (walk, run, spent)]
    assert breathing.REST_RATE < rates[0] < rates[1] < rates[2] <= breathing.PEAK_RATE
    depths = [float(t.breath.max()) for t in (walk, run, spent)]
    assert depths[0] < depths[1] < depths[2] <= 1.0


def test_breathing_settles_when_the_work_stops():
    take = _take("walk", "Average", 4.0, hold=8.0)
    assert not take.fell
    level = breathing.exertion(take)
    assert level[-1] < 0.75 * level.max()


def test_each_breath_lifts_the_chest_and_the_switch_turns_it_off():
    on = _take("walk", "Exhausted", 3.0)
    off = _take("walk", "Exhausted", 3.0, breathing=False)
    assert off.breath is None
    chest = [j.name for j in proxy.DEFAULT_JOINTS].index("chest")
    turn = np.degrees(quat.angle_between(on.clip.joint_rots[:, chest], off.clip.joint_rots[:, chest]))
    assert np.allclose(on.clip.root_pos, off.clip.root_pos)            # a layer: the physics does not feel it
    swing = on.breath - 0.5 * on.breath.max()      # about the simulated pose: in lifts, out lowers
    assert turn.max() == pytest.approx(np.degrees(breathing.CHEST_LIFT) * np.abs(swing).max(), rel=0.1)


def test_the_breath_travels_through_the_worker_file(tmp_path):
    take = _take("walk", "Exhausted", 1.0)
    worker.write_take(tmp_path / "t.npz", take)
    back = worker.read_take(tmp_path / "t.npz")
    assert np.array_equal(back.breath, take.breath)
