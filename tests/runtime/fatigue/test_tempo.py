"""The tempo and rest rule (runtime.fatigue.tempo) through its public calls: the tempo for a capacity, a
rest's start, end and reason, the motion owed between rests, and the clock of flights."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from runtime.srb import simulator as srb
from runtime.fatigue import tempo
from runtime.motion.take import Event


def rule(duration: float = 100.0) -> tempo.TempoRule:
    return tempo.TempoRule(srb.SrbSettings(), [], duration)


def settle(r: tempo.TempoRule, capacity: float, effort: float = 0.0, seconds: float = 20.0) -> float:
    """The tempo once the rule has eased towards it (early in a long source: no budget floor)."""
    for _ in range(int(seconds * 60)):
        r.pace(capacity, effort, phase=0.0, time=0.0, dt=1.0 / 60.0)
    return r.tempo


def test_the_tempo_is_full_when_fresh_slows_with_capacity_and_stops_slowing_at_its_minimum():
    s = srb.SrbSettings()
    assert settle(rule(), 1.0) == settle(rule(), s.full_tempo_rc) == 1.0
    assert settle(rule(), s.exhausted_rc) == pytest.approx(s.min_tempo)
    assert settle(rule(), 0.0) == pytest.approx(s.min_tempo)
    middle = 0.5 * (s.exhausted_rc + s.full_tempo_rc)
    assert settle(rule(), middle) == pytest.approx(0.5 * (1.0 + s.min_tempo))
    rates = [settle(rule(), c) for c in np.linspace(0.0, 1.0, 11)]
    assert rates == sorted(rates)                     # never faster for a weaker joint


def test_the_tempo_eases_rather_than_jumps():
    r = rule()
    r.pace(1.0, 0.0, phase=0.0, time=0.0, dt=1.0 / 60.0)        # sets off fresh ...
    assert r.tempo == 1.0
    r.pace(0.0, 0.0, phase=0.0, time=0.0, dt=1.0 / 60.0)        # ... then tires: eased
    assert 0.98 < r.tempo < 1.0


def test_effort_is_the_largest_share_of_what_a_loaded_joint_has_left():
    load, rc = np.array([0.3, 0.2, 0.01]), np.array([0.6, 0.25, 0.001])
    assert tempo.relative_effort(load, rc) == pytest.approx(0.8)         # the third carries nothing
    assert tempo.relative_effort(np.zeros(3), rc) == 0.0


def test_a_body_cannot_go_on_when_the_motion_asks_all_it_has_or_almost_nothing_is_left():
    r, s = rule(), srb.SrbSettings()
    r.pace(0.5, 0.6, phase=0.0, time=0.0, dt=1.0 / 60.0)
    assert not r.cannot_go_on(0.5)                   # a tired walk: carries on
    assert r.cannot_go_on(0.9 * s.exhausted_rc)
    r.pace(0.5, s.rest_effort, phase=0.0, time=0.0, dt=1.0 / 60.0)
    assert r.cannot_go_on(0.5)


def test_a_rest_ends_recovered_or_stalled_and_each_end_is_an_event():
    r, s = rule(), srb.SrbSettings()
    r.pace(0.3, 1.0, phase=0.0, time=0.0, dt=1.0 / 60.0)
    r.begin_rest(0.3, time=2.0)
    assert r.resting and r.events == [Event(2.0, "rest")]
    assert r.rest_over(0.32, ended=False, time=2.5) is None          # recovering
    # The motion asked all of 0.3: at 0.3 / resume_effort it would ask resume_effort of it.
    assert r.rest_over(0.3 / s.resume_effort + 0.01, ended=False, time=3.0) == "recovered"
    r.end_rest("recovered", time=3.0, phase=4.0)
    assert not r.resting and r.events[-1] == Event(3.0, "resume", "recovered")
    assert r.events[-1].at(30.0) == {"time": 3.0, "kind": "resume", "frame": 90, "reason": "recovered"}

    r = rule()
    r.begin_rest(0.3, time=0.0, until_recovered=True)          # before a take-off: only resume_rc ends it recovered
    assert r.rest_over(0.6, ended=False, time=1.0) is None
    assert r.rest_over(s.resume_rc, ended=False, time=1.0) == "recovered"
    r = rule()
    r.begin_rest(0.3, time=0.0, until_recovered=True)
    t = s.rest_stall + 0.1
    assert r.rest_over(0.305, ended=False, time=t) == "recovery stalled"   # gained less than 0.01
    assert r.rest_over(0.305, ended=True, time=t) is None                 # after the source: rests on


def test_rests_that_do_not_help_come_further_apart_and_one_that_helps_resets_that():
    r, s = rule(), srb.SrbSettings()
    assert r.may_rest(0.0, ended=False, time=0.0)
    r.begin_rest(0.3, time=1.0)
    r.end_rest("recovered", time=2.0, phase=5.0)
    assert not r.may_rest(5.0 + 0.5 * s.min_motion_between_rests, ended=False, time=3.0)
    assert r.may_rest(5.0 + 0.5 * s.min_motion_between_rests, ended=True, time=3.0)
    assert r.may_rest(5.0 + s.min_motion_between_rests, ended=False, time=3.0)
    r.begin_rest(0.3, time=3.0)
    r.end_rest("recovery stalled", time=5.0, phase=6.0)
    assert not r.may_rest(6.0 + 1.5 * s.min_motion_between_rests, ended=False, time=6.0)
    assert r.may_rest(6.0 + 2.0 * s.min_motion_between_rests, ended=False, time=6.0)
    r.begin_rest(0.3, time=7.0)
    r.end_rest("recovered", time=8.0, phase=8.0)
    assert r.may_rest(8.0 + s.min_motion_between_rests, ended=False, time=9.0)


def test_the_whole_performance_fits_its_budget():
    s = srb.SrbSettings()
    r = rule(duration=10.0)
    budget = tempo.PERFORMANCE_STRETCH * 10.0
    assert r.finishing_tempo(phase=0.0, time=0.0) == pytest.approx(10.0 / budget)
    assert r.finishing_tempo(phase=5.0, time=budget - 5.0) == 1.0      # no slack left: full tempo
    assert r.finishing_tempo(phase=10.0, time=budget) == 0.0           # the source is over
    # Late and far behind, the tempo is held up whatever the legs say, and no rest is taken.
    late = budget - 4.0
    settle(r, 0.0)
    assert r.tempo == pytest.approx(s.min_tempo)
    r.pace(0.0, 0.0, phase=7.0, time=late, dt=1.0 / 60.0)
    assert r.tempo == pytest.approx(3.0 / 4.0)
    assert not r.may_rest(7.0, ended=False, time=late)
    assert r.may_rest(7.0, ended=False, time=budget - tempo.REST_ALLOWANCE - 3.0 / s.min_tempo - 0.1)
    # A rest that would leave too little time ends so the performance can go on.
    r.pace(0.3, 1.0, phase=7.0, time=late, dt=1.0 / 60.0)
    r.begin_rest(0.3, time=late)
    assert r.rest_over(0.3, ended=False, time=late, phase=7.0) == "the performance goes on"


def test_legs_giving_out_may_rest_into_the_last_resort_budget():
    """Past its budget a take played on at full speed on exhausted legs and fell with 12 s of a
    49 s dance left; legs giving out (below exhausted_rc) may still rest, the performance
    finishing later (within LAST_RESORT_STRETCH, under the hard stop)."""
    s = srb.SrbSettings()
    r = rule(duration=10.0)
    late = tempo.PERFORMANCE_STRETCH * 10.0 - 4.0
    assert not r.may_rest(7.0, ended=False, time=late)
    assert r.may_rest(7.0, ended=False, time=late, giving_out=True)
    assert not r.may_rest(7.0, ended=False, time=tempo.LAST_RESORT_STRETCH * 10.0 - 4.0, giving_out=True)
    r.begin_rest(0.9 * s.exhausted_rc, time=late)
    assert r.rest_over(0.9 * s.exhausted_rc, ended=False, time=late, phase=7.0) is None
    assert not r.performance_goes_on(7.0, late)
    # Once even that is spent, the tempo aims to finish by the last resort, not at full speed.
    spent = tempo.PERFORMANCE_STRETCH * 10.0 + 1.0
    assert r.tempo_floor(7.0, spent) == pytest.approx(3.0 / (tempo.LAST_RESORT_STRETCH * 10.0 - spent))
    assert tempo.LAST_RESORT_STRETCH < tempo.MAX_STRETCH


def _flight(land: float, target_z: float):
    """A reference whose feet next touch down at phase ``land``, the body's target then at height
    ``target_z``."""
    ref = SimpleNamespace(next_contact_start=lambda k, phase: land, sample=lambda phase: None)
    return ref, (lambda sample: np.array([0.0, 0.0, target_z]))


def test_a_flight_keeps_the_clock_unless_the_body_will_land_sooner_than_the_source():
    # Falling from 0.2 m above its landing height at rest: it lands in sqrt(2 * 0.2 / 9.81) s.
    falls = np.sqrt(2 * 0.2 / 9.81)
    ref, target = _flight(land=1.0 + falls, target_z=1.0)
    p, v = np.array([0.0, 0.0, 1.2]), np.zeros(3)
    assert tempo.flight_rate(ref, 1.0, p, v, target) == (1.0, False)          # lands with the source
    ref, target = _flight(land=1.0 + 2.0 * falls, target_z=1.0)
    rate, sped = tempo.flight_rate(ref, 1.0, p, v, target)
    assert sped and rate == pytest.approx(2.0)                                 # plays twice as fast
    ref, target = _flight(land=1.5, target_z=1.3)                              # already below it
    assert tempo.flight_rate(ref, 1.0, p, np.array([0.0, 0.0, -1.0]), target) == (tempo.MAX_FLIGHT_RATE, True)
    ref, _ = _flight(land=None, target_z=0.0)
    assert tempo.flight_rate(ref, 1.0, p, v, target) == (1.0, False)          # no landing ahead


def test_on_one_foot_the_clock_gives_way_to_gravity_only_as_the_capture_point_runs_ahead():
    p_r, v_r = np.array([0.0, 0.0, 0.9]), np.array([0.5, 0.0, 0.0])
    slack = tempo.CAPTURE_SLACK
    assert tempo.single_support_rate(0.5, p_r, v_r, p_r, v_r, 0.0, 1.0) == 0.5
    ahead = p_r + np.array([2.0 * slack, 0.0, 0.0])
    assert tempo.single_support_rate(0.5, ahead, v_r, p_r, v_r, 0.0, 1.0) == 1.0
    partly = p_r + np.array([1.5 * slack, 0.0, 0.0])
    assert tempo.single_support_rate(0.5, partly, v_r, p_r, v_r, 0.0, 1.0) == pytest.approx(0.75)


def test_a_clock_ahead_of_real_time_plays_slower_until_it_is_back_and_waits_standing_still():
    dt = 1.0 / 60.0
    # on time or behind (a fresh take that kept time, every tired take): the pace as it is
    assert tempo.catch_up_pace(1.0, 0.0, dt, still=False) == 1.0
    assert tempo.catch_up_pace(0.7, -0.5, dt, still=True) == 0.7
    # ahead while moving: at most CATCH_UP slower, never slower than what brings it back this step
    assert tempo.catch_up_pace(1.0, 0.2, dt, still=False) == pytest.approx(1.0 - tempo.CATCH_UP)
    assert tempo.catch_up_pace(1.0, 0.25 * tempo.CATCH_UP * dt, dt, still=False) == pytest.approx(
        1.0 - 0.25 * tempo.CATCH_UP)
    assert tempo.catch_up_pace(0.5, 0.2, dt, still=False) == 0.5        # a slower tempo already gives it back
    # standing still the source waits: a still pose played later shows nothing
    assert tempo.catch_up_pace(1.0, 0.2, dt, still=True) == 0.0
    assert tempo.catch_up_pace(1.0, 0.5 * dt, dt, still=True) == pytest.approx(0.5)
    # a clock that ran 0.2 s ahead is back within 0.2 / CATCH_UP s of moving
    phase, time = 0.2, 0.0
    for _ in range(int(round(0.2 / tempo.CATCH_UP / dt)) + 1):
        phase += tempo.catch_up_pace(1.0, phase - time, dt, still=False) * dt
        time += dt
    assert phase - time == pytest.approx(0.0, abs=1e-9)
