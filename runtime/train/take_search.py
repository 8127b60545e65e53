"""Whole-take episodes for the residual's search: which takes, under which fatigue, and what a take
shows (its tracking after time-warping, falls, kneels, rests, effort past what the muscles have).

Why whole takes through the bake's own entry point (runtime.simulate.simulate): what the
residual trades (pacing early against a rest later, lean against knee load) plays out over the whole
take, and a take baked here is the take a user gets, upper body, kneels and breathing included.

Episodes are (source, preset) pairs: the training side of the fixed split (runtime/train/split.json:
the bench's training clips, the cached corpus training actions, runtime.train.clip_cache) under a
preset that directs tiredness (runtime.fatigue.params.FitnessPreset.tiredness).  A fixed share of the
sources (``held_back``, by a rule on their names alone) never trains: paired evaluations on them
decide whether new weights are accepted.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from ..fatigue import direction
from ..motion import clip as clips, metrics
from ..motion.take import Take
from ..request import SimulationRequest
from ..simulate import Tuning, simulate
from ..srb import residual
from . import clip_cache

PRESETS = ("Average", "Untrained", "Tired", "Exhausted")   # directed presets that tire the body visibly
LOOP_SECONDS = 12.0        # a looping bench clip plays this long (a whole take of a loop has no end)
HELD_BACK_EVERY = 4        # one source in this many (by its name's sha256) only decides acceptance
OVER_SLACK = 1.001         # asking more than RC * strength by more than this counts


@dataclass(frozen=True)
class Source:
    label: str
    request: SimulationRequest    # fresh (schedule None): the clip, the character, seconds and hold

    @property
    def played(self) -> float:
        clip = self.request.clip
        return float(self.request.seconds) if clip.loop and self.request.seconds else clip.duration

    def reference(self) -> clips.Clip:
        """The source as a take's tracking is measured against (a loop repeated for its seconds)."""
        clip = self.request.clip
        return clip.repeated(self.played) if clip.loop else clip


def bench_source(name: str, seconds: float = LOOP_SECONDS) -> Source:
    """A DeepMimic clip at the default body, as ./fatigue bench plays it."""
    clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
    hold = 0.0 if clip.loop else 1.0
    return Source(f"bench {name}", SimulationRequest(clip=clip, seconds=seconds if clip.loop else None, hold=hold,
                                                     out_fps=30.0))


def corpus_source(action: clip_cache.CachedAction) -> Source:
    """A cached corpus action's fresh request, as the bake reads it."""
    return Source(action.label, replace(clip_cache.load(action.requests["fresh"]), schedule=None, tiredness=None))


def held_back(label: str) -> bool:
    """Whether a training source only decides acceptance: a rule on its name, knowing nothing of how
    anything does on it."""
    return int(hashlib.sha256(label.encode("utf-8")).hexdigest(), 16) % HELD_BACK_EVERY == 0


def tired_request(source: Source, preset: str) -> SimulationRequest:
    """The source under ``preset`` as a take asks for it (direction.preset_schedule)."""
    sched, keys = direction.preset_schedule(preset, 30.0, source.played)
    return replace(source.request, schedule=sched, tiredness=keys)


class Recording(residual.ResidualPolicy):
    """A residual that also sums what it observes (ARS's normaliser), where its gate lets it act."""

    def __init__(self, linear: residual.Linear, gate=residual.DEFAULT_GATE):
        super().__init__(linear, {"name": "searching"}, gate)
        n = residual.observation_size()
        self.count, self.total, self.squares = 0.0, np.zeros(n), np.zeros(n)

    def act(self, obs: np.ndarray) -> np.ndarray:
        self.count += 1.0
        self.total += obs
        self.squares += obs * obs
        return super().act(obs)


def run(request: SimulationRequest, policy) -> Take:
    return simulate(request, tuning=Tuning(policy=policy))


@dataclass(frozen=True)
class Terms:
    """What a take shows, each worse the larger (realism is scored above runtime: tools/realism.py)."""
    joint_err_deg: float      # mean, at the source's moment each frame shows (slowing is not an error)
    root_err_m: float
    height_err_m: float       # the root's height only: a tired take's shorter strides leave it behind, not wrong
    fell: bool
    kneels: int
    rests: int                # rests and halts (a take does not record which were forced)
    over_share: float         # share of frames some joint asks more than RC * strength


def terms(take: Take, reference: clips.Clip) -> Terms:
    kneels = sum(e["kind"] == "kneel" for e in take.events)
    rests = sum(e["kind"] in ("rest", "halt") for e in take.events)
    over = 0.0
    if take.strength is not None and "RC" in take.fatigue:
        cap = take.fatigue["RC"] * take.strength * OVER_SLACK
        over = float(np.mean(np.any(np.abs(take.torque) > cap, axis=1)))
    ref_pos, _, _ = reference.sample_many(take.reference_time)
    height = float(np.abs(take.clip.root_pos[:, 2] - ref_pos[:, 2]).mean())
    return Terms(metrics.joint_error_deg(take, reference), metrics.root_error_m(take, reference), height,
                 bool(take.fell), int(kneels), int(rests), over)
