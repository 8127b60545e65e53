"""The PPO update on its own: a one-step problem whose best action is known (reward falls with the
squared distance of the action from a target) must move the mean action to the target.  It is the
check that the update's parts (advantages, the critic's per-step returns, separate gradient
clipping, the gate mask) point the policy the right way, without a simulator."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from runtime.srb import policy as pol  # noqa: E402
from runtime.train import ppo  # noqa: E402

TARGET = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0, -0.3])


def _learn(iterations: int, share: float, decay: float = 0.0) -> np.ndarray:
    cfg = ppo.Config(clips=["none"], gamma=0.995, mean_decay=decay)
    size = pol.observation_size("window")
    torch.manual_seed(0)
    net = ppo.ActorCritic(size, pol.ACTION_SIZE, (64, 64), cfg.init_log_std)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    norm = ppo.Normaliser(size)
    rng = np.random.default_rng(0)
    T, N = 64, 16
    obs = np.zeros((T, N, size))
    for it in range(iterations):
        mlp = net.to_numpy(norm.mean, norm.std)
        std = np.exp(net.log_std.detach().numpy())
        mean = mlp(obs[0, 0])
        act = mean + std * rng.standard_normal((T, N, pol.ACTION_SIZE))
        rew = 1.0 - 0.3 * np.sum((np.clip(act, -1, 1) - TARGET) ** 2, axis=-1) * share
        over = np.zeros((T, N))
        over[-1] = 1.0
        batch = {"obs": obs, "act": act, "rew": rew[..., None], "fell": np.zeros((T, N, 1)),
                 "over": over[..., None], "next_obs": obs, "share": np.full((T, N, 1), share)}
        ppo._update(cfg, net, opt, norm, batch, obs.reshape(T * N, -1), it)
    return net.to_numpy(norm.mean, norm.std)(obs[0, 0])


def test_the_update_moves_the_mean_action_to_the_rewarded_one():
    assert np.abs(_learn(40, 1.0) - TARGET).max() < 0.1


def test_steps_where_the_gate_kept_the_policy_out_teach_it_nothing():
    assert np.abs(_learn(10, 0.0)).max() < 0.02      # the actor is not moved: its action changed nothing


def test_the_mean_decay_pulls_a_correction_back_toward_the_rule():
    free, decayed = _learn(40, 1.0), _learn(40, 1.0, decay=2.0)
    assert np.abs(decayed).sum() < np.abs(free).sum()
