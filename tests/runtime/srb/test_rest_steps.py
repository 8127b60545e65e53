"""SRB mode's rests (runtime.srb.rest_steps) through their public calls on a simulator that has not
stepped: where a resting body stands, how high, how a free foot is carried, and when a rest
begins and ends."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from runtime.motion import clip as C
from runtime.engines import chooser
from runtime.srb import rest_steps, simulator as srb
from runtime.fatigue import schedule, tempo
from runtime.reference.rigid_body import body_from_proxy
from runtime.maths.ease import smoothstep
from runtime.reference.reference import build_reference


@pytest.fixture(scope="module")
def walk_ref():
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk")).repeated(2.0)
    kin = chooser.shared_kinematics()
    body = body_from_proxy(kin)
    return build_reference(walk, kin.analyse(walk), body), body


def tired_sim(ref, body, leg_capacity: float | None) -> srb.SrbSimulator:
    """A simulator at the start of ``ref`` whose leg DoFs have ``leg_capacity`` left (None: no fatigue)."""
    model = None
    if leg_capacity is not None:
        model = schedule.ScheduledModel(schedule.from_fitness(0.5, fps=30))
        legs = body.leg_dofs.ravel()
        model.model.fatigued[legs], model.model.resting[legs] = 1.0 - leg_capacity, leg_capacity
    return srb.SrbSimulator(ref, body, model, srb.SrbSettings())


def both_feet_down(ref) -> int:
    return int(np.flatnonzero(ref.contact.all(axis=1))[0])


def test_weak_ankles_rest_with_the_body_nearer_them_than_fresh_ones(walk_ref):
    ref, body = walk_ref
    r = ref.sample(both_feet_down(ref) / ref.clip.fps)
    fresh = rest_steps.rest_points(tired_sim(ref, body, None), r)
    weak = rest_steps.rest_points(tired_sim(ref, body, 0.05), r)
    for k in range(2):
        ankle = r.ankle[k]
        assert np.linalg.norm((weak[k] - ankle)[:2]) < np.linalg.norm((fresh[k] - ankle)[:2])
    centre = rest_steps.rest_centre(tired_sim(ref, body, None), r)
    np.testing.assert_allclose(centre, np.mean(fresh, axis=0))


def test_a_rest_stands_as_high_as_nearly_straight_legs_reach_and_lower_with_the_feet_apart(walk_ref):
    ref, body = walk_ref
    sim = tired_sim(ref, body, None)
    r = ref.sample(both_feet_down(ref) / ref.clip.fps)
    centre = rest_steps.rest_centre(sim, r)
    apart = rest_steps.rest_height(sim, r, centre)
    beside = r.ankle[1] + np.array([0.0, (body.hip[0] - body.hip[1])[1], 0.0])   # the right foot next to the left
    sim.feet[0].offset[:] = beside - r.ankle[0]
    together = rest_steps.rest_height(sim, r, rest_steps.rest_centre(sim, r))
    assert together > apart
    assert together - ref.floor < body.thigh + body.shin + 0.2        # hips within the legs' reach


def test_a_carried_foot_follows_a_smoothstep_and_clears_the_floor_mid_way(walk_ref):
    ref, body = walk_ref
    sim = tired_sim(ref, body, None)
    foot = sim.feet[0]
    start, anchor = np.array([0.0, 0.0, 0.0]), np.array([0.4, 0.0, 0.0])
    zero = np.zeros(3)
    sim.time = 0.5 - sim.dt                      # half-way through a 1 s carry at the end of this step
    assert not rest_steps.carry_foot(sim, foot, start, anchor, 0.0, 1.0, zero, zero, clearance=0.05)
    np.testing.assert_allclose(foot.offset, [0.4 * smoothstep(0.5), 0.0, 0.05], atol=1e-12)
    sim.time = 1.0
    assert rest_steps.carry_foot(sim, foot, start, anchor, 0.0, 1.0, zero, zero)   # there


def test_a_closing_step_settles_shift_time_after_it_lands():
    step = rest_steps.ClosingStep(0, np.zeros(3), began=1.0, start_xy=np.zeros(2))
    assert not step.settled(10.0)                                     # not landed yet
    step.landed = 2.0
    assert not step.settled(2.0 + 0.5 * rest_steps.CLOSE_SHIFT_TIME)
    assert step.settled(2.0 + rest_steps.CLOSE_SHIFT_TIME + 1e-9)


def test_exhausted_legs_rest_where_both_feet_are_down_and_fresh_ones_walk_on(walk_ref):
    ref, body = walk_ref
    frame = both_feet_down(ref)
    for capacity, rests in ((1.0, False), (0.05, True)):
        sim = tired_sim(ref, body, capacity)
        sim.phase = frame / ref.clip.fps
        sim.load_avg[body.leg_dofs.ravel()] = 0.5                      # the legs carry load
        for foot in sim.feet:
            foot.stance = True
        rest_steps.decide_rest(sim)
        assert sim.resting == rests
        assert [e.kind for e in sim.events] == (["rest"] if rests else [])
        assert sim.tempo == 1.0 if not rests else sim.tempo < 1.0      # slowing, eased


def test_a_take_off_to_gather_for_is_a_jump_not_a_foot_switch(walk_ref):
    """Reference.next_takeoff with a shortest flight: a one-frame gap between a dancer's steps is
    skipped, a jump's flight found (tired legs gather only before that, tempo.LAUNCH_FLIGHT)."""
    ref, _ = walk_ref
    contact = np.ones_like(ref.contact)
    fps = ref.clip.fps
    jump = int(round(0.5 * fps))
    contact[5] = False                                       # a foot-switch with both feet up
    contact[jump:jump + int(round(0.3 * fps))] = False        # a jump
    r = dataclasses.replace(ref, contact=contact)
    assert r.next_takeoff(0.0, 1.5) == pytest.approx(5 / fps)
    assert r.next_takeoff(0.0, 1.5, tempo.LAUNCH_FLIGHT) == pytest.approx(jump / fps)
    assert r.next_takeoff((jump + 1) / fps, 1.5, tempo.LAUNCH_FLIGHT) == pytest.approx((jump + 1) / fps)
    assert r.next_takeoff(0.0, 0.3, tempo.LAUNCH_FLIGHT) is None
