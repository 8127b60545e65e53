"""Kneeling to recover (runtime.floor.kneel): a rest the legs cannot take standing is taken on the
knees, where they recover, and the body gets back up into the source's pose and plays on."""
import numpy as np
import pytest

from runtime.body import proxy
from runtime.engines.pybullet import kinematics
from runtime.fatigue import schedule
from runtime.floor import kneel
from runtime.motion import clip as C, metrics
from runtime.srb import rest_steps
from runtime import simulate

LEGS = [d for d, part in enumerate(proxy.dof_body_parts()) if part == "legs"]


def load(name):
    return C.load_deepmimic(C.deepmimic_clip_path(name))


def draining(fps: float = 30.0):
    """Rates as given, fitness 0 at 20x from half fatigued: jump after jump asks more of the legs
    than rests on the feet give back."""
    return schedule.from_fitness(0.0, fps=fps, time_scale=20.0, initial_fatigue=0.5)


@pytest.fixture(scope="module")
def exhausted_jumps():
    """8 s of walk on legs that give out (fitness 0 at 40x, 85 % fatigued: below exhausted_rc,
    where standing cannot hold even a rest): the last resort before a fall is a kneel."""
    return simulate.simulate_clip(load("walk").repeated(8.0),
                             schedule.from_fitness(0.0, fps=30, time_scale=40.0, initial_fatigue=0.85), out_fps=30)


def test_kneeling_pose_puts_both_knees_and_feet_on_the_floor():
    kin = kinematics.Kinematics()
    try:
        clip = load("walk")
        start = tuple(np.asarray(a, dtype=float) for a in clip.sample(0.0))
        rot, joints = kneel.kneeling_pose(start[1], start[2])
        floor = kneel.sole_level(kin, start)
        path = kneel.kneel_path(kin, start, (start[0].copy(), rot, joints), rest_steps.KNEEL_DOWN_S, 1.0, floor)
        kneeling = C.Clip("k", 30.0, np.repeat(path.root_pos[-1:], 2, 0), np.repeat(path.root_rot[-1:], 2, 0),
                          np.repeat(path.joints[-1:], 2, 0), loop=False)
        ck = kin.analyse(kneeling)
        names = ck.link_names
        knees = ck.joint_pos[0, [names.index("right_knee"), names.index("left_knee")], 2]
        assert np.allclose(knees - floor, kneel.KNEE_PAD, atol=0.01)     # on the knees
        pelvis = ck.joint_pos[0, names.index("root"), 2] - floor
        assert 0.2 < pelvis < 0.45                                                   # sitting back, not standing
        # Kneeling back on the heels the legs hold nothing; getting down costs them.
        assert np.abs(path.loads[-1, LEGS]).max() == 0.0
        assert np.abs(path.loads[:, LEGS]).max() > 10.0
        # The path starts exactly where the body stood.
        np.testing.assert_allclose(path.root_pos[0], start[0], atol=1e-9)
    finally:
        kin.close()


@pytest.mark.slow
def test_exhausted_legs_kneel_recover_and_the_performance_goes_on(exhausted_jumps):
    take = exhausted_jumps
    assert not take.fell and take.finished
    spans = metrics.kneel_spans(take)
    assert spans
    start, end = spans[0]
    assert end is not None
    rc = take.fatigue["RC"][:, LEGS].min(axis=1)
    assert rc[end] > rc[start] + 0.05                     # the kneel rested the legs
    # Every kneel lies within a rest, and the body is back up when it ends.
    rests = metrics.rest_spans(take)
    assert all(any(a <= k <= (b or take.frames) for a, b in rests) for k, _ in spans)
    com = take.com[:, 2]
    assert com[start + 60] < 0.7 * com[start]             # down on its knees
    assert com[end] > 0.9 * com[start]                    # ... and up again


@pytest.mark.slow
def test_getting_down_and_up_is_smooth(exhausted_jumps):
    take = exhausted_jumps
    start, end = metrics.kneel_spans(take)[0]
    window = slice(start, min(end + 5, take.frames))
    pos = take.clip.root_pos[window]
    step = np.linalg.norm(np.diff(pos, axis=0), axis=1)
    assert step.max() < 0.05                               # m per frame: no pop in or out of the kneel
    joints = take.clip.joint_rots[window]
    turn = 2.0 * np.degrees(np.arccos(np.clip(np.abs((joints[1:] * joints[:-1]).sum(-1)), 0.0, 1.0)))
    assert turn.max() < 12.0                               # degrees per frame, any joint


def test_legs_that_give_way_catch_the_body_on_its_knees():
    """Jump after jump on legs 60 % fatigued at 20x: the body sinks in its rest's crouch faster
    than its legs can stop (rest_steps.collapsing) and goes down on its knees, where it fell."""
    take = simulate.simulate_clip(load("jump").repeated(2.5),
                             schedule.from_fitness(0.0, fps=30, time_scale=20.0, initial_fatigue=0.6), out_fps=30)
    assert not take.fell
    start, end = metrics.kneel_spans(take)[0]
    assert end is not None
    assert any(a <= start <= (b or take.frames) for a, b in metrics.rest_spans(take))


def test_fresh_bodies_never_kneel():
    take = simulate.simulate_clip(load("jump"), None, seconds=3.0, out_fps=30)
    assert not any(e["kind"] == "kneel" for e in take.events)


def test_kneeling_can_be_switched_off_and_the_switch_travels_to_the_worker(tmp_path):
    from runtime.request import SimulationRequest

    take = simulate.simulate_clip(load("jump").repeated(4.0), draining(), out_fps=30, kneeling=False)
    assert not any(e["kind"] == "kneel" for e in take.events)
    request = SimulationRequest(clip=load("jump"), schedule=draining(), kneeling=False)
    request.write(tmp_path / "r.npz")
    assert SimulationRequest.read(tmp_path / "r.npz").kneeling is False
    SimulationRequest(clip=load("jump")).write(tmp_path / "d.npz")
    assert SimulationRequest.read(tmp_path / "d.npz").kneeling is True
