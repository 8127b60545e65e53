"""The tempo and rest rule (runtime.tempo) through its public calls: the tempo for a capacity, a
rest's start, end and reason, the motion owed between rests, and the clock of flights."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from runtime import srb, tempo
from runtime.take import Event


def rule() -> tempo.TempoRule:
    return tempo.TempoRule(srb.SrbSettings(), [])


def test_the_tempo_is_full_when_fresh_slows_with_capacity_and_stops_slowing_at_its_minimum():
    r, s = rule(), srb.SrbSettings()
    assert r.tempo_for(1.0) == r.tempo_for(s.full_tempo_rc) == 1.0
    assert r.tempo_for(s.rest_rc) == r.tempo_for(0.0) == s.min_tempo
    middle = 0.5 * (s.rest_rc + s.full_tempo_rc)
    assert r.tempo_for(middle) == pytest.approx(0.5)
    rates = [r.tempo_for(c) for c in np.linspace(0.0, 1.0, 21)]
    assert rates == sorted(rates)                     # never faster for a weaker joint


def test_a_rest_ends_recovered_or_stalled_and_each_end_is_an_event():
    r, s = rule(), srb.SrbSettings()
    r.begin_rest(0.3, time=2.0)
    assert r.resting and r.events == [Event(2.0, "rest")]
    assert r.rest_over(0.32, ended=False, time=2.5) is None          # recovering
    assert r.rest_over(s.resume_rc, ended=False, time=3.0) == "recovered"
    r.end_rest("recovered", time=3.0, phase=4.0)
    assert not r.resting and r.events[-1] == Event(3.0, "resume", "recovered")
    assert r.events[-1].at(30.0) == {"time": 3.0, "kind": "resume", "frame": 90, "reason": "recovered"}

    r = rule()
    r.begin_rest(0.3, time=0.0)
    t = s.rest_stall + 0.1
    assert r.rest_over(0.305, ended=False, time=t) == "recovery stalled"   # gained less than 0.01
    assert r.rest_over(0.305, ended=True, time=t) is None                 # after the source: rests on


def test_after_a_rest_some_motion_comes_before_the_next_unless_the_source_has_ended():
    r, s = rule(), srb.SrbSettings()
    assert r.may_rest(0.0, ended=False)
    r.begin_rest(0.3, time=1.0)
    r.end_rest("recovered", time=2.0, phase=5.0)
    assert not r.may_rest(5.0 + 0.5 * s.min_motion_between_rests, ended=False)
    assert r.may_rest(5.0 + 0.5 * s.min_motion_between_rests, ended=True)
    assert r.may_rest(5.0 + s.min_motion_between_rests, ended=False)


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
