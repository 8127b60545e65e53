"""Augmented Random Search (runtime/train/ars.py): it improves a toy objective, a resumed run takes
the same next iterate as an unbroken one, a search held to a subspace moves nothing outside it,
a bad checkpoint is one line (here and from the CLI), and the paired bootstrap says yes only to a
real gain."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runtime.errors import CheckpointError
from runtime.train import ars

ROOT = Path(__file__).resolve().parents[3]
TARGET = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6]])
SHAPE = (2, 4)          # a row per action: three observations and a bias
OBS = np.array([1.0, 2.0, -1.0])


def _obs(episode: int) -> np.ndarray:
    return OBS * (1.0 + 0.5 * np.sin(episode)) + np.cos(3.0 * episode)


def _loss(weights, mean, std, episode: int) -> float:
    z = (_obs(episode) - mean) / std
    return float(np.sum((weights[:, :-1] @ z + weights[:, -1] - TARGET @ _obs(episode)) ** 2))


def _toy(rollouts):
    """Score: minus the squared distance of the action from a target's on the episode's observation,
    plus noise that depends on the episode only (shared by a pair)."""
    out = []
    for r in rollouts:
        obs = _obs(r.episode)
        score = -_loss(r.weights, r.obs_mean, r.obs_std, r.episode) + 0.1 * np.sin(7.0 * r.episode)
        out.append(ars.Outcome(score, 1.0, obs.copy(), obs * obs))
    return out


def _mean_score(search):
    n = search.normaliser
    return -float(np.mean([_loss(search.weights, n.mean, n.std, e) for e in range(10)]))


def test_ars_improves_a_toy_objective():
    search = ars.Search.start(ars.Config(directions=8, top=8, step=0.05, noise=0.05, seed=3), SHAPE, 3)
    before = _mean_score(search)
    for _ in range(150):
        search.iterate(10, _toy)
    assert _mean_score(search) > 0.1 * before      # most of the way from the start to the optimum (0)
    assert search.iteration == 150 and len(search.curve) == 150


def test_resume_gives_the_same_next_iterate(tmp_path):
    config = ars.Config(directions=4, top=2, step=0.05, noise=0.05, seed=1)
    straight = ars.Search.start(config, SHAPE, 3)
    for _ in range(3):
        straight.iterate(10, _toy)
    broken = ars.Search.start(config, SHAPE, 3)
    for _ in range(2):
        broken.iterate(10, _toy)
    broken.save(tmp_path)
    resumed = ars.Search.load(tmp_path, SHAPE, 3)
    resumed.iterate(10, _toy)
    assert np.array_equal(resumed.weights, straight.weights)
    assert resumed.curve == straight.curve and resumed.rng_state == straight.rng_state


def test_a_search_held_to_a_subspace_moves_only_its_weights_and_resumes_held(tmp_path):
    free = np.zeros(SHAPE)
    free[1, [0, 3]] = 1.0                        # the second action, from the first observation and its bias
    search = ars.Search.start(ars.Config(directions=8, top=4, step=0.05, noise=0.05, seed=2), SHAPE, 3, free=free)
    for _ in range(20):
        search.iterate(10, _toy)
    assert np.abs(search.weights[free == 1.0]).min() > 0.0
    assert not search.weights[free == 0.0].any()
    search.save(tmp_path)
    resumed = ars.Search.load(tmp_path, SHAPE, 3)
    assert np.array_equal(resumed.free, free)
    resumed.iterate(10, _toy)
    assert not resumed.weights[free == 0.0].any()
    with pytest.raises(ValueError):
        ars.Search.start(ars.Config(), SHAPE, 3, free=np.zeros(SHAPE))


def test_the_cli_names_the_known_corrections_for_an_unknown_one(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "train.py"), "search", "--out", str(tmp_path),
                          "--corrections", "tempo kept,arm swing", "--cache", str(tmp_path / "none")],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "arm swing" in lines[0] and "rest effort" in lines[0], run.stderr


@pytest.mark.parametrize("damage", ["missing", "truncated", "wrong shape", "nan"])
def test_a_bad_checkpoint_is_one_line(tmp_path, damage):
    search = ars.Search.start(ars.Config(), SHAPE, 3)
    search.iterate(10, _toy)
    if damage != "missing":
        search.save(tmp_path)
    arrays = tmp_path / f"{ars.CHECKPOINT}.npz"
    if damage == "truncated":
        arrays.write_bytes(arrays.read_bytes()[:50])
    elif damage == "nan":
        np.savez(arrays, weights=np.full(SHAPE, np.nan), total=np.zeros(3), squares=np.zeros(3))
    shape = (3, 3) if damage == "wrong shape" else SHAPE
    with pytest.raises(CheckpointError) as exc:
        ars.Search.load(tmp_path, shape, 3)
    assert "\n" not in str(exc.value)


def test_the_cli_refuses_a_bad_checkpoint_in_one_line(tmp_path):
    (tmp_path / f"{ars.CHECKPOINT}.npz").write_bytes(b"not a checkpoint")
    (tmp_path / f"{ars.CHECKPOINT}.json").write_text("{", encoding="utf-8")
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "train.py"), "search", "--out", str(tmp_path),
                          "--resume", "--cache", str(tmp_path / "none")], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0], run.stderr


def test_paired_lower_bound_says_yes_only_to_a_real_gain():
    rng = np.random.default_rng(0)
    assert ars.paired_lower_bound(0.5 + 0.1 * rng.standard_normal(20)) > 0.0
    assert ars.paired_lower_bound(0.1 * rng.standard_normal(20)) <= 0.0
    assert ars.paired_lower_bound([]) == -np.inf
