"""Augmented Random Search (Mania, Guy and Recht 2018, V2-t) over a linear policy, numpy only.

Why random search and not PPO here: the residual's gain over the rule is small and plays out over
whole takes (a pace kept early spares a rest tens of seconds later).  ARS scores whole episodes,
needs no value function or discount, and with antithetic pairs run on the same episode (clip,
seed, fatigue) the difference of a pair is the policy's effect alone, not the episode's luck.

One iteration (``Search.iterate``): ``directions`` Gaussian perturbations delta of the weights; each
is tried as +noise * delta and -noise * delta on one episode shared by the pair; the ``top`` pairs
by max(r+, r-) step the weights by step / (top * sigma_R) * sum (r+ - r-) delta, sigma_R the std
of those 2 * top scores (V2-t); the observation normaliser (V2) merges the states every rollout
saw, in a fixed order, so the same seed gives the same iterates whatever the number of workers.

``Search.save`` / ``Search.load`` write everything the next iterate depends on (weights, the
normaliser's sums, the generator's state, the curve), so a resumed run continues bit for bit.
A search may be held to a subspace (``Search.free``: a 0/1 mask over the weights; perturbations
outside it are zero, so are the steps): with a signal as small as a residual's against chaotic
takes (a rest that begins a step earlier), fewer free weights mean fewer iterations per gain,
and the subspace names the hypothesis searched (pace from the legs' drain, say).
Which weights ship is decided elsewhere (accepted only where a paired evaluation on held-back clips
beats the current ones: ``paired_lower_bound``).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import CheckpointError

FORMAT = 1
CHECKPOINT = "search_checkpoint"      # .npz (arrays) + .json (the rest)


@dataclass(frozen=True)
class Config:
    directions: int = 8        # perturbation pairs per iteration
    top: int = 4               # ... of which the best this many step the weights
    step: float = 0.02         # step size (alpha)
    noise: float = 0.03        # perturbation scale (nu)
    seed: int = 0

    def problem(self) -> str | None:
        if self.directions < 1 or not 1 <= self.top <= self.directions:
            return "give --directions >= 1 and 1 <= --top <= --directions"
        if not (self.step > 0.0 and self.noise > 0.0):
            return "give a positive --step and --noise"
        return None


@dataclass
class Normaliser:
    """Running mean and std of observations from their sums (merged in a fixed order)."""

    count: float
    total: np.ndarray
    squares: np.ndarray

    @classmethod
    def empty(cls, size: int) -> "Normaliser":
        return cls(0.0, np.zeros(size), np.zeros(size))

    def merge(self, count: float, total: np.ndarray, squares: np.ndarray) -> None:
        self.count += float(count)
        self.total = self.total + total
        self.squares = self.squares + squares

    @property
    def mean(self) -> np.ndarray:
        return self.total / self.count if self.count > 0 else np.zeros_like(self.total)

    @property
    def std(self) -> np.ndarray:
        """Per observation; 1 until two states are seen, never below 1e-3 (a constant input)."""
        if self.count < 2:
            return np.ones_like(self.total)
        var = np.maximum(self.squares / self.count - self.mean ** 2, 0.0)
        return np.maximum(np.sqrt(var), 1e-3)


@dataclass(frozen=True)
class Rollout:
    """One episode to run: the weights (already perturbed), the normaliser's mean and std, and the
    episode (``episode``: an index the caller maps to a clip, fatigue and seed)."""
    weights: np.ndarray
    obs_mean: np.ndarray
    obs_std: np.ndarray
    episode: int


@dataclass(frozen=True)
class Outcome:
    score: float
    count: float = 0.0                     # states seen, their sum and sum of squares (the normaliser's)
    total: np.ndarray | None = None
    squares: np.ndarray | None = None


@dataclass
class Search:
    config: Config
    weights: np.ndarray
    normaliser: Normaliser
    rng_state: dict
    iteration: int = 0
    curve: list = field(default_factory=list)   # per iteration: {"iteration", "mean", "best", "sigma", ...}
    meta: dict = field(default_factory=dict)    # the caller's: what it trains on, what it accepted
    free: np.ndarray | None = None              # 0/1 per weight: the subspace searched (None: all)

    @classmethod
    def start(cls, config: Config, shape: tuple[int, int], observations: int, meta: dict | None = None,
              free: np.ndarray | None = None) -> "Search":
        """A new run from zero weights of ``shape`` (a row per action) over ``observations`` inputs,
        searching only where ``free`` is 1 (None: everywhere)."""
        rng = np.random.default_rng(config.seed)
        if free is not None:
            free = np.asarray(free, dtype=np.float64)
            if _mask_problem(free, tuple(shape)):
                raise ValueError(f"free: {_mask_problem(free, tuple(shape))}")
        return cls(config, np.zeros(shape), Normaliser.empty(observations), rng.bit_generator.state, meta=meta or {},
                   free=free)

    def _rng(self) -> np.random.Generator:
        rng = np.random.default_rng()
        rng.bit_generator.state = self.rng_state
        return rng

    def plan(self, episodes: int) -> tuple[np.ndarray, np.ndarray, list[Rollout]]:
        """This iteration's perturbations (directions x weights), the episode of each pair (drawn
        from ``episodes``) and the rollouts, + then - for each pair; the generator moves on."""
        rng, c = self._rng(), self.config
        deltas = rng.standard_normal((c.directions, *self.weights.shape))
        if self.free is not None:
            deltas = deltas * self.free
        chosen = rng.integers(episodes, size=c.directions)
        self.rng_state = rng.bit_generator.state
        mean, std = self.normaliser.mean, self.normaliser.std
        rollouts = [Rollout(self.weights + sign * c.noise * d, mean, std, int(e))
                    for d, e in zip(deltas, chosen) for sign in (1.0, -1.0)]
        return deltas, chosen, rollouts

    def update(self, deltas: np.ndarray, outcomes: list[Outcome]) -> dict:
        """Step the weights from the pairs' scores (V2-t) and merge their states; returns the curve row."""
        c = self.config
        plus = np.array([o.score for o in outcomes[0::2]])
        minus = np.array([o.score for o in outcomes[1::2]])
        best = np.argsort(-np.maximum(plus, minus), kind="stable")[:c.top]
        sigma = float(np.std(np.concatenate([plus[best], minus[best]])))
        if sigma > 1e-12:
            step = np.tensordot(plus[best] - minus[best], deltas[best], axes=1)
            self.weights = self.weights + c.step / (c.top * sigma) * step
        for o in outcomes:
            if o.count:
                self.normaliser.merge(o.count, o.total, o.squares)
        self.iteration += 1
        row = {"iteration": self.iteration, "mean": float(np.mean(np.concatenate([plus, minus]))),
               "best": float(np.max(np.maximum(plus, minus))), "sigma": sigma,
               "weight_norm": float(np.linalg.norm(self.weights))}
        self.curve.append(row)
        return row

    def iterate(self, episodes: int, run: Callable[[list[Rollout]], list[Outcome]]) -> dict:
        deltas, _, rollouts = self.plan(episodes)
        return self.update(deltas, run(rollouts))

    # -- checkpoints ----------------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        """Both files written beside and then moved into place: a run stopped mid-write keeps the last."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = folder / f"{CHECKPOINT}.npz"
        card = folder / f"{CHECKPOINT}.json"
        part_arrays, part_card = arrays.with_name(arrays.name + ".part"), card.with_name(card.name + ".part")
        with open(part_arrays, "wb") as fh:
            free = {} if self.free is None else {"free": self.free}
            np.savez(fh, weights=self.weights, total=self.normaliser.total, squares=self.normaliser.squares, **free)
        part_card.write_text(json.dumps(
            {"format": FORMAT, "config": asdict(self.config), "count": self.normaliser.count,
             "rng_state": self.rng_state, "iteration": self.iteration, "curve": self.curve, "meta": self.meta},
            indent=1, default=_plain), encoding="utf-8")
        os.replace(part_arrays, arrays)
        os.replace(part_card, card)

    @classmethod
    def load(cls, folder: Path, shape: tuple[int, int], observations: int) -> "Search":
        """The run checkpointed in ``folder``; CheckpointError (one line naming the fix) when it
        cannot be resumed."""
        folder = Path(folder)
        arrays, card = folder / f"{CHECKPOINT}.npz", folder / f"{CHECKPOINT}.json"
        fix = f"start a new run in another folder, or delete {folder}"
        if not arrays.is_file() or not card.is_file():
            raise CheckpointError(f"--resume: no checkpoint in {folder} ({CHECKPOINT}.npz and .json): run without --resume")
        try:
            data = json.loads(card.read_text(encoding="utf-8"))
            with np.load(arrays) as z:
                weights, total, squares = (np.asarray(z[k], dtype=np.float64) for k in ("weights", "total", "squares"))
                free = np.asarray(z["free"], dtype=np.float64) if "free" in z.files else None
            config = Config(**data["config"])
            rng = np.random.default_rng()
            rng.bit_generator.state = data["rng_state"]
            search = cls(config, weights, Normaliser(float(data["count"]), total, squares), rng.bit_generator.state,
                         int(data["iteration"]), list(data["curve"]), dict(data.get("meta", {})), free)
        except Exception as exc:      # any damage reads the same to the user: this file cannot resume
            raise CheckpointError(f"checkpoint in {folder} is damaged ({type(exc).__name__}): {fix}") from exc
        if data.get("format") != FORMAT:
            raise CheckpointError(f"checkpoint in {folder} is format {data.get('format')!r}, this version {FORMAT}: {fix}")
        if weights.shape != tuple(shape) or total.shape != (observations,) or squares.shape != (observations,):
            raise CheckpointError(f"checkpoint in {folder} holds weights {weights.shape}, this version {tuple(shape)}: {fix}")
        if not all(np.isfinite(a).all() for a in (weights, total, squares)):
            raise CheckpointError(f"checkpoint in {folder} holds NaN or infinite numbers: {fix}")
        if free is not None and _mask_problem(free, weights.shape):
            raise CheckpointError(f"checkpoint in {folder}: its subspace is {_mask_problem(free, weights.shape)}: {fix}")
        return search


def _mask_problem(free: np.ndarray, shape: tuple) -> str | None:
    """Why ``free`` is not a subspace of weights of ``shape`` (a 0/1 mask with some 1), or None."""
    if free.shape != shape or not np.isin(free, (0.0, 1.0)).all() or not free.any():
        return f"not a 0/1 mask of shape {shape} with some 1 ({free.shape})"
    return None


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def paired_lower_bound(differences, resamples: int = 2000, level: float = 0.05, seed: int = 0) -> float:
    """The bootstrap's lower ``level`` quantile of the mean of paired ``differences`` (new minus
    current, same episodes): above 0, the new weights are better with 1 - level confidence."""
    d = np.asarray(differences, dtype=np.float64)
    if d.size == 0:
        return -np.inf
    rng = np.random.default_rng(seed)
    means = d[rng.integers(d.size, size=(resamples, d.size))].mean(axis=1)
    return float(np.quantile(means, level))
