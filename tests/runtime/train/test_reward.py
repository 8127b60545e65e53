"""The SRB policy's reward: tracking the pose (legs and pelvis) pays, so a landing shift that
moves the legs off the animation costs; a tired body's leg effort costs, a fresh one's is not
counted; playing on pays, so a slower tempo or a rest earns less; the gate keeps a fresh body's
episode the rule's; the weights are written out where the model card reads them."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.fatigue import schedule
from runtime.srb import policy as pol
from runtime.srb import simulator as srb
from runtime.train import srb_env

_WALK = srb_env.prepare("walk", seconds=2.0)


class _Held:
    """A policy that keeps the corrections the test sets."""

    @staticmethod
    def control(sim) -> None:
        return None


def _walked(action, fatigue=None, steps=45):
    sim = srb.SrbSimulator(_WALK.ref, _WALK.body, fatigue, srb.SrbSettings())
    sim.need_torques = False
    pol.attach(sim, _Held)
    for _ in range(steps * sim.control_every):
        pol.apply(sim, action)
        sim.step()
    return sim


def test_the_rule_tracks_the_pose_and_shifted_landings_cost_pose_and_reward():
    calm = np.zeros(pol.ACTION_SIZE)
    shifted = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 0.0])
    rule, moved = _walked(calm), _walked(shifted)
    assert not rule.fallen and not moved.fallen
    assert srb_env.pose_error(rule) < np.radians(5.0) ** 2
    assert srb_env.pose_error(moved) > 2.0 * srb_env.pose_error(rule)
    assert srb_env.reward(moved, calm) < srb_env.reward(rule, calm)


def test_effort_counts_only_under_fatigue_and_grows_as_capacity_falls():
    assert srb_env.effort(_walked(np.zeros(pol.ACTION_SIZE))) == 0.0
    fresh_start = schedule.ScheduledModel(schedule.from_fitness(0.5, fps=30.0, time_scale=5.0))
    tired_start = schedule.ScheduledModel(schedule.from_fitness(0.5, fps=30.0, time_scale=5.0, initial_fatigue=0.4))
    a = srb_env.effort(_walked(np.zeros(pol.ACTION_SIZE), fresh_start))
    b = srb_env.effort(_walked(np.zeros(pol.ACTION_SIZE), tired_start))
    assert 0.0 < a < b


def test_playing_on_pays_and_being_late_costs_only_the_progress():
    calm = np.zeros(pol.ACTION_SIZE)
    sim = _walked(calm)
    assert srb_env.reward(sim, calm, 1.0) - srb_env.reward(sim, calm, 0.7) == pytest.approx(0.3 * srb_env.PROGRESS_WEIGHT)
    assert srb_env.reward(sim, calm, 0.0) == srb_env.reward(sim, calm, -0.5)      # a rest earns no progress
    assert srb_env.reward(sim, calm, 2.0) == srb_env.reward(sim, calm, 1.0)       # hurrying earns nothing more


def test_the_env_gates_a_fresh_episode_to_the_rule():
    """Gated, a fresh episode's actions change nothing: the episode is the rule's, bit for bit."""
    a, b = (srb_env.SrbEnv([_WALK], "window", seed=1, gate=(0.9, 0.6)) for _ in range(2))
    while True:                                # find a fresh episode (FRESH_SHARE of them)
        a.reset(), b.reset()
        if a.sim.fatigue is None:
            break
    slow = np.r_[np.full(pol.LANDING_VELOCITY, 0.7), -1.0]
    for _ in range(20):
        oa, ra, *_ = a.step(slow)
        ob, rb, *_ = b.step(np.zeros(pol.ACTION_SIZE))
    assert np.array_equal(oa, ob) and ra == rb


def test_the_reward_terms_name_every_weight():
    for w in (srb_env.POSE_WEIGHT, srb_env.COM_WEIGHT, srb_env.COM_VEL_WEIGHT, srb_env.ALIVE_WEIGHT,
              srb_env.EFFORT_WEIGHT, srb_env.POSE_SIGMA, srb_env.PROGRESS_WEIGHT):
        assert f"{w:g}" in srb_env.REWARD_TERMS
