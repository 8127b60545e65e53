"""Effort economy (runtime.effort) and the setup chain (runtime.prepare) through their public calls."""
from __future__ import annotations

import numpy as np
import pytest

from runtime import clip as C
from runtime import effort, kinematics, prepare, proxy
from runtime.body import body_from_proxy
from runtime.limbs import LIMB_JOINTS


def test_a_torque_costs_nothing_extra_fresh_and_more_the_less_capacity_is_left():
    assert effort.fatigue_cost(1.0) == 0.0
    costs = effort.fatigue_cost(np.array([0.9, 0.5, 0.1, 0.0]))
    assert np.all(np.diff(costs) > 0) and costs[-1] == effort.fatigue_cost(0.05)   # floored at 0.05


def test_legs_hold_more_while_the_body_sinks_than_while_it_rises():
    assert effort.yielding_strength(0.5, 1.0) == 1.0                  # rising
    assert effort.yielding_strength(0.0, 1.0) == 1.0
    assert effort.yielding_strength(-effort.YIELD_SPEED, 1.0) == effort.ECCENTRIC_STRENGTH
    assert 1.0 < effort.yielding_strength(-0.5 * effort.YIELD_SPEED, 1.0) < effort.ECCENTRIC_STRENGTH


def test_fresh_knees_do_not_sag_and_tired_ones_sag_at_a_bounded_rate():
    body = body_from_proxy(kinematics.shared())
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    knees = effort.KneeSag([names.index("right_knee"), names.index("left_knee")])
    joints = np.tile([0.0, 0.0, 0.0, 1.0], (len(names), 1))
    load = np.full(len(body.tau_max), 0.5)
    assert knees.sag(body, 1.0, load, np.ones(len(body.tau_max)), joints, 1 / 60) == 0.0
    tired = np.full(len(body.tau_max), 0.3)
    first = knees.sag(body, 1.0, load, tired, joints, 1 / 60)
    assert first > 0.0 and np.all(knees.give == pytest.approx(effort.MAX_GIVE_RATE / 60))
    for _ in range(600):
        last = knees.sag(body, 1.0, load, tired, joints, 1 / 60)
    assert np.all(knees.give <= effort.MAX_KNEE_GIVE) and last > first


def test_tired_limbs_yield_within_their_caps_and_not_at_all_without_economy():
    spherical = [name not in ("right_elbow", "left_elbow") for name in LIMB_JOINTS]
    give = effort.LimbGive(spherical, dt=1 / 60)
    n = len(give.load)
    give.book(np.full(n, 50.0))
    assert give.yields(0.0, np.full(n, 0.2), np.full(n, 0.01), 1 / 60) is None
    for _ in range(600):
        out = give.yields(1.0, np.full(n, 0.2), np.full(n, 0.01), 1 / 60)
    k = 0
    for sph, cap in zip(spherical, give.caps):
        width = 3 if sph else 1
        assert np.linalg.norm(out[k:k + width]) <= cap + 1e-12
        k += width


def test_the_setup_chain_says_what_holds_the_body_up():
    kin = kinematics.shared()
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    crawl = C.load_deepmimic(C.deepmimic_clip_path("crawl"))
    walking = prepare.prepare(walk, kin)
    assert not walking.support.floor_work and walking.ref.clip is walk and walking.body.mass == proxy.DEFAULT_MASS
    assert prepare.prepare(crawl, kin, 70.0).support.floor_work
