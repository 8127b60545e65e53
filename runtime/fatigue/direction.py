"""Directed tiredness: how tired the character is meant to be, and when, solved into the physics.

An animator thinks in the shot's terms ("exhausted from the first frame", "fresh, tired by the
end"), not in fatigue rates.  The 3CC's rates are fitted on minutes of effort, so the same rates
left a 9 s walk fresh and drained a 90 s one: the look depended on the take's length.  Here the
animator's keys (source seconds, tiredness 0 fresh .. 1 spent) are met by solving, from the loads
of the fresh motion (calibration's pass), for

* the starting fatigue: every DoF starts at the first key's tiredness (MF), and
* the speed-up of each stretch between keys: F and R of the schedule (the keyed fitness, its
  ratio of fatiguing to recovering) are multiplied by it, and, only where no speed-up reaches a
  key (the motion's loads settle short of it), how sustainable its fatigue is (F times e, R
  over e, the smallest change that reaches it),

so that the body's tiredness reaches each key.  The 3CC, the motion's loads and the rules then
decide how each joint gets there: a punch tires the arms, a walk the legs.

Tiredness of the body: 1 - RC averaged over the DoFs weighted by the square of the work each
does (its mean load over the fresh motion), so the joints carrying the motion set it, not the
idle ones.  Why squared: weighted by the load alone, lightly loaded joints pulled the average
down, so the working joints went far past it (an Untrained 30 s walk asked 0.5 drained its knees
and shoulders to 0.15 and knelt twice).

Why the path between keys counts: a fast speed-up reaches a key early and then sits at what the
motion's loads settle to (a 30 s walk drained in its first seconds and knelt); the animator's
line between two keys is a gradual change.  Why then the largest speed-up that keeps to it: a
stretch that should stay as tired as it began (Exhausted) is met by any small speed-up; the
largest keeps the body answering the motion (a sprint drains, a pause recovers) instead of
freezing its fatigue.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..body import proxy
from ..errors import FatigueParameterError
from . import params as fatigue_params
from ..maths import repeatable
from .model import MAX_RATE, ThreeCompartmentModel
from .schedule import FatigueSchedule, from_preset

SLOWEST = 0.05          # speed-up range searched: 0.05x (fatigue all but frozen) ...
FASTEST = 100.0         # ... to 100x real time, only where a key needs it:
CALM = 50.0             # above this the rules answer the motion's every load with lurches
GRID = 28               # speed-ups tried at once per stretch, log-spaced, before refining
# Where no speed-up reaches a key (the motion's loads settle short of it at the keyed fitness),
# fatigue is made this many times less (or more) sustainable: F times it, R over it.
# Both bounded: a take of a second or two has not the time to tire far, and rates faster still
# drained an idle neck to nothing in a 1 s walk (the solve reports such a key as not reached).
ENDURANCE = (1.0, 1.5, 2.25, 3.4, 5.0, 1 / 1.5, 1 / 2.25, 1 / 3.4, 1 / 5.0)
REFINE = 12             # bisection steps on the admissible edge
END_TOLERANCE = 0.02    # a stretch ends within this of its key ...
PATH_TOLERANCE = 0.06   # ... and strays at most this far from the line between its keys ...
GIVING_OUT = 0.3        # ... while no working joint falls below this capacity ...
EFFORT_CAP = 0.65       # ... nor below what its load needs to be at most this share of what it has left
                        # (tempo's rest at 0.85, less the margin tired loads take above fresh ones) ...
BEGAN_SLACK = 0.03      # ... or, where its load asks more than where it began, at most this far below that
LOAD_MEMORY = 0.5       # s: a joint's load is judged averaged over about this long (the simulator's load_avg)
WORKING = 0.02          # a joint whose mean fresh load is above this is working (tempo.LOADED)
REACHED = 0.1           # a key missed by more than this is reported as not reached
MAX_TIREDNESS = 0.9     # keys above this are refused: a body with nothing left cannot move
SOLVE_FPS = 30.0        # loads are averaged over frames of this rate for the solve
RETRY = 0.04            # a take missing a key by more than this is simulated again, aiming past it ...
PASSES = (0.9, 0.95, 1.0)  # ... at most this many times; where each pass ends on the bake's progress bar


def tiredness_problem(value) -> str | None:
    """None when ``value`` is a tiredness a take can be asked for; else what to give (every entry
    point, the panel, the operator and ./fatigue bake, refuses the same values)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if math.isfinite(v) and 0.0 <= v <= MAX_TIREDNESS:
        return None
    return f"give a number from 0 (fresh) to {MAX_TIREDNESS:g} (spent)"


@dataclass(frozen=True)
class TirednessKeys:
    """How tired the body should be: ``values`` (0 fresh .. 1 spent) at ``times`` (seconds of
    the source motion, increasing), linear in between and held beyond the ends."""
    times: tuple[float, ...]
    values: tuple[float, ...]

    def __post_init__(self):
        t = np.asarray(self.times, dtype=np.float64)
        v = np.asarray(self.values, dtype=np.float64)
        if t.ndim != 1 or t.shape != v.shape or t.size < 1:
            raise FatigueParameterError("tiredness keys: give as many times as values, at least one")
        if not (np.isfinite(t).all() and np.isfinite(v).all()):
            raise FatigueParameterError("tiredness keys must be numbers")
        if (np.diff(t) <= 0).any():
            raise FatigueParameterError("tiredness keys must be at increasing times")
        for value in v.tolist():
            if tiredness_problem(value):
                raise FatigueParameterError(f"tiredness {value:g}: {tiredness_problem(value)}")

    @classmethod
    def start_end(cls, start: float, end: float, duration: float) -> "TirednessKeys":
        """Tired ``start`` at the first frame, ``end`` by the end of the source (``duration`` s)."""
        return cls((0.0, max(float(duration), 1e-3)), (float(start), float(end)))

    def played_faster(self, factor: float) -> "TirednessKeys":
        """The same keys over a source played ``factor`` times faster (Clip.played_faster)."""
        return TirednessKeys(tuple(t / factor for t in self.times), self.values)

    def at(self, t) -> np.ndarray:
        return np.interp(np.asarray(t, dtype=np.float64), self.times, self.values)


@dataclass(frozen=True)
class DirectedFatigue:
    """What the solve found: the schedule to simulate and how it meets the keys."""
    schedule: FatigueSchedule
    starting_fatigue: float
    stretch_ends: tuple[float, ...]        # source seconds where each stretch's speed-up ends
    speed_ups: tuple[float, ...]           # F and R multiplied by this over each stretch
    endurance: tuple[float, ...]           # ... and F times, R over, this (1: the keyed fitness)
    asked: tuple[float, ...]               # the key at each stretch's end
    predicted: tuple[float, ...]           # the tiredness the solve predicts there
    work_weights: np.ndarray               # (dofs,) each DoF's share of the body's tiredness

    @property
    def unreachable(self) -> tuple[int, ...]:
        """Stretches whose key the motion has not the work (or the rest) to reach."""
        return tuple(i for i, (a, p) in enumerate(zip(self.asked, self.predicted)) if abs(a - p) > REACHED)


def work_weights(loads: np.ndarray) -> np.ndarray:
    """Each DoF's share of the body's tiredness: the square of its mean load over the fresh
    motion, normalised (uniform when the motion loads nothing)."""
    w = np.square(np.asarray(loads, dtype=np.float64).mean(axis=0))
    total = float(w.sum())
    return w / total if total > 1e-12 else np.full(w.shape, 1.0 / w.size)


def body_tiredness(fatigued: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """1 - RC of the body: MF averaged with ``weights`` over the last axis."""
    return np.asarray(fatigued) @ weights


def part_tiredness(fatigued: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    """The body's tiredness per body part (legs, arms, trunk, neck) for one state ``fatigued``
    (dofs,): the parts' own work-weighted MF."""
    parts = np.array(proxy.dof_body_parts())
    out = {}
    for part in proxy.BODY_PARTS:
        mask = parts == part
        w = weights[mask]
        out[part] = float(fatigued[mask] @ w / w.sum()) if w.sum() > 1e-12 else float(fatigued[mask].mean())
    return out


def frame_loads(phase: np.ndarray, loads: np.ndarray, duration: float, period: float | None = None) -> np.ndarray:
    """Loads (share of strength per DoF) averaged over SOLVE_FPS frames of the source, from
    samples at ``phase`` (seconds of source).  ``period``: the samples cover one stretch that
    repeats (a looping source measured over two cycles) and are tiled over ``duration``."""
    phase = np.asarray(phase, dtype=np.float64)
    loads = np.asarray(loads, dtype=np.float64)
    frames = max(1, int(np.ceil(duration * SOLVE_FPS - 1e-9)))
    t = phase % period if period else phase
    index = np.minimum((t * SOLVE_FPS).astype(np.int64), frames - 1)
    if period:
        index = np.minimum(index, int(np.ceil(period * SOLVE_FPS)) - 1)
    sums = np.zeros((frames, loads.shape[1]))
    counts = np.zeros(frames)
    np.add.at(sums, index, loads)
    np.add.at(counts, index, 1.0)
    seen = counts > 0
    out = np.zeros_like(sums)
    out[seen] = sums[seen] / counts[seen][:, None]
    if period:                          # later frames repeat the measured stretch
        cycle = max(1, int(np.ceil(period * SOLVE_FPS)))
        for k in range(frames):
            if not seen[k]:
                out[k] = out[k % cycle]
    else:                               # frames without a sample hold the last measured one
        last = np.zeros(loads.shape[1])
        for k in range(frames):
            if seen[k]:
                last = out[k]
            else:
                out[k] = last
    return np.minimum(out, 1.0)


def needed_capacity(loads: np.ndarray) -> np.ndarray:
    """(frames, dofs) the capacity each working joint needs at each frame to carry the motion
    without a rest: GIVING_OUT, or its load (averaged over LOAD_MEMORY, as the simulator judges
    it) over EFFORT_CAP; 0 for joints that do not work.

    Why the load: the tempo rule rests when the motion asks nearly all a joint has left, so a
    joint the solve let drain to GIVING_OUT under a heavy load (an old man's crouched knee, a
    forward-held head) made an exhausted walk stop twice in 8 s."""
    loads = np.asarray(loads, dtype=np.float64)
    blend = min(1.0, 1.0 / (SOLVE_FPS * LOAD_MEMORY))
    held = np.empty_like(loads)
    avg = np.zeros(loads.shape[1])
    for k in range(loads.shape[0]):
        avg += (loads[k] - avg) * blend
        held[k] = avg
    working = loads.mean(axis=0) > WORKING
    return np.where(working, np.maximum(GIVING_OUT, held / EFFORT_CAP), 0.0)


class _Rollout:
    """The 3CC over the frame loads for several speed-ups at once (one actuator per DoF and
    speed-up), from one state."""

    def __init__(self, schedule: FatigueSchedule, loads: np.ndarray, weights: np.ndarray):
        self.schedule = schedule
        self.loads = loads
        self.weights = weights
        self.dofs = loads.shape[1]
        self.working = loads.mean(axis=0) > WORKING
        self.needed = needed_capacity(loads)

    def run(self, speed_ups: np.ndarray, endurance: np.ndarray, state: tuple[np.ndarray, np.ndarray], first: int,
            last: int) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Tiredness (len(speed_ups), last - first) over frames [first, last), the most a working
        joint falls short of the capacity it needs over them (len(speed_ups),; <= 0: none falls
        short; see needed_capacity, never above BEGAN_SLACK below where it began) and the final
        (active, fatigued) states (len(speed_ups), dofs), for each pair of speed-up and endurance."""
        k = len(speed_ups)
        sF = np.repeat(np.asarray(speed_ups, dtype=np.float64) * endurance, self.dofs)
        sR = np.repeat(np.asarray(speed_ups, dtype=np.float64) / endurance, self.dofs)
        model = None
        out = np.zeros((k, last - first))
        short = np.full(k, -np.inf)
        began = 1.0 - np.asarray(state[1], dtype=np.float64) - BEGAN_SLACK
        sched = self.schedule
        active = np.tile(state[0], k)
        fatigued = np.tile(state[1], k)
        current = -1
        for j, frame in enumerate(range(first, last)):
            row = sched.frame_at(frame / SOLVE_FPS)
            if row != current:
                F, R, r, LD, LR = (np.tile(a, k) for a in sched.parameters(row))
                if model is None:
                    model = ThreeCompartmentModel(k * self.dofs, np.minimum(F * sF, MAX_RATE),
                                                  np.minimum(R * sR, MAX_RATE), r, LD, LR)
                    model.reset(fatigued=fatigued, active=active)
                else:
                    model.set_parameters(np.minimum(F * sF, MAX_RATE), np.minimum(R * sR, MAX_RATE), r, LD, LR)
                current = row
            model.step(np.tile(self.loads[frame], k), 1.0 / SOLVE_FPS)
            spent = model.fatigued.reshape(k, self.dofs)
            out[:, j] = body_tiredness(spent, self.weights)
            if self.working.any():
                need = np.minimum(self.needed[frame], began)[self.working]
                np.maximum(short, (need - (1.0 - spent[:, self.working])).max(axis=1), out=short)
        if model is None:
            return out, short, (active.reshape(k, self.dofs), fatigued.reshape(k, self.dofs))
        return out, short, (model.active.reshape(k, self.dofs), model.fatigued.reshape(k, self.dofs))


def _solve_stretch(roll: _Rollout, state, first: int, last: int, line: np.ndarray) -> tuple[float, float]:
    """(speed-up, endurance) for a stretch meant to follow ``line`` (the keys' tiredness at each
    of its frames): at the first ENDURANCE letting some speed-up end within END_TOLERANCE of the
    line's end and stay within PATH_TOLERANCE of it, no working joint short of the capacity its
    load needs (_Rollout.run), the largest such speed-up up to CALM (else the smallest such one
    above it); failing that, the pair whose joints fall least short, then that ends in tolerance
    straying least, then ending closest.

    Why the joints: the body's tiredness is an average, and a speed-up that keeps it on the line
    can still drain the hardest-working joint to nothing in a dance's hardest passage (samba and
    cha-cha takes knelt in their Exhausted takes)."""
    grid = SLOWEST * repeatable.power(FASTEST / SLOWEST, np.arange(GRID) / (GRID - 1.0))
    # The keyed fitness first (it is what most keys need); the other endurances only without it.
    tried, ok, score = [], [], []
    for group in (ENDURANCE[:1], ENDURANCE[1:]):
        paths, short, _ = roll.run(np.tile(grid, len(group)), np.repeat(np.asarray(group), GRID), state, first,
                                   last)
        end_miss = np.abs(paths[:, -1] - line[-1]).reshape(len(group), GRID)
        stray = np.abs(paths - line).max(axis=1).reshape(len(group), GRID)
        short = short.reshape(len(group), GRID)
        kept = short <= 0.0
        tried += list(group)
        ok += list((end_miss <= END_TOLERANCE) & (stray <= PATH_TOLERANCE) & kept)
        score += list(np.where(end_miss <= END_TOLERANCE, stray, 1.0 + end_miss)
                      + np.where(kept, 0.0, 2.0 + 10.0 * np.maximum(short, 0.0)))
        if np.any(ok):
            break
    ok, score = np.array(ok), np.array(score)
    if not ok.any():
        j, i = np.unravel_index(int(np.argmin(score)), score.shape)
        return float(grid[i]), float(tried[j])
    j = int(np.flatnonzero(ok.any(axis=1))[0])
    e = float(tried[j])
    calm = ok[j] & (grid <= CALM)
    if not calm.any():
        return float(grid[int(np.flatnonzero(ok[j])[0])]), e
    i = int(np.flatnonzero(calm)[-1])
    if i == GRID - 1 or grid[i + 1] > CALM:
        return float(grid[i]), e
    # In log speed-up: admissible at lo, not at hi.
    lo, hi = float(repeatable.log1p(grid[i] - 1.0)), float(repeatable.log1p(grid[i + 1] - 1.0))
    for _ in range(REFINE):
        mid = 0.5 * (lo + hi)
        paths, short, _ = roll.run(np.array([float(repeatable.exp(mid))]), np.array([e]), state, first, last)
        path = paths[0]
        if (abs(path[-1] - line[-1]) <= END_TOLERANCE and np.abs(path - line).max() <= PATH_TOLERANCE
                and short[0] <= 0.0):
            lo = mid
        else:
            hi = mid
    return float(repeatable.exp(lo)), e


def solve(keys: TirednessKeys, schedule: FatigueSchedule, loads: np.ndarray, duration: float) -> DirectedFatigue:
    """The schedule that takes the body through ``keys``: ``schedule`` (the keyed fitness, its
    rates at real time) with the starting fatigue and each stretch's speed-up solved on
    ``loads`` (frame_loads of the fresh motion, (frames, dofs) at SOLVE_FPS) over ``duration``
    source seconds."""
    loads = np.asarray(loads, dtype=np.float64)
    frames = loads.shape[0]
    weights = work_weights(loads)
    start = float(keys.at(0.0))
    ends = [t for t in keys.times if 0.0 < t < duration - 0.5 / SOLVE_FPS] + [duration]
    roll = _Rollout(schedule, loads, weights)
    state = (np.zeros(roll.dofs), np.full(roll.dofs, start))
    first = 0
    speed_ups, endurance, asked, predicted = [], [], [], []
    for end_t in ends:
        last = min(frames, max(first + 1, int(round(end_t * SOLVE_FPS))))
        target = float(keys.at(end_t))
        s, e = _solve_stretch(roll, state, first, last, keys.at((np.arange(first, last) + 1) / SOLVE_FPS))
        path, _, (active, fatigued) = roll.run(np.array([s]), np.array([e]), state, first, last)
        state = (active[0], fatigued[0])
        speed_ups.append(s)
        endurance.append(e)
        asked.append(target)
        predicted.append(float(path[0, -1]))
        first = last
    return DirectedFatigue(
        schedule=_sped_up(schedule, ends, speed_ups, endurance, start),
        starting_fatigue=start, stretch_ends=tuple(float(e) for e in ends), speed_ups=tuple(speed_ups),
        endurance=tuple(endurance),
        asked=tuple(asked), predicted=tuple(predicted), work_weights=weights)


def _sped_up(schedule: FatigueSchedule, ends: list[float], speed_ups: list[float], endurance: list[float],
             start: float) -> FatigueSchedule:
    """``schedule`` with F and R of each frame multiplied by its stretch's speed-up, F times and R
    over its endurance (a frame's time read as source time; the last stretch's hold beyond the
    source, over a longer take) and every DoF starting at fatigue ``start``."""
    t = np.arange(schedule.frames) / schedule.fps
    which = np.minimum(np.searchsorted(np.asarray(ends), t - 1e-9, side="left"), len(ends) - 1)
    s = np.asarray(speed_ups)[which][:, None]
    e = np.asarray(endurance)[which][:, None]
    return FatigueSchedule(fps=schedule.fps, F=np.minimum(schedule.F * s * e, MAX_RATE),
                           R=np.minimum(schedule.R * s / e, MAX_RATE), r=schedule.r,
                           LD=schedule.LD, LR=schedule.LR,
                           initial_fatigue=np.full(schedule.dofs, start))


def reached(fatigued: np.ndarray, reference_time: np.ndarray, direction: DirectedFatigue) -> tuple[float, ...]:
    """The body's tiredness a take reached at each stretch's end: its first frame showing that
    source time (the take's last frame where it never got there)."""
    out = []
    for t in direction.stretch_ends:
        i = int(np.searchsorted(reference_time, min(t, reference_time[-1]) - 1e-9))
        out.append(float(body_tiredness(fatigued[min(i, len(fatigued) - 1)], direction.work_weights)))
    return tuple(out)


def miss(direction: DirectedFatigue, got: tuple[float, ...]) -> float:
    """The largest distance between a key asked and what was reached."""
    return max(abs(a - g) for a, g in zip(direction.asked, got))


def next_aims(asked: tuple[float, ...], tried: list[tuple[tuple[float, ...], tuple[float, ...]]]) -> TirednessKeys | None:
    """Where to aim each key next, from the (aims, reached) of the takes ``tried`` so far (the
    tired body's loads differ from the fresh ones the solve reads): past the key by what the last
    take missed it by, or, after two takes, along the line through the last two; None when the
    aims would not change."""
    aims, got = tried[-1]
    new = []
    for k, a in enumerate(asked):
        slope = 1.0
        if len(tried) >= 2:
            (a0, g0), (a1, g1) = (tried[-2][0][k], tried[-2][1][k]), (aims[k], got[k])
            if abs(a1 - a0) > 1e-6 and (g1 - g0) / (a1 - a0) > 0.2:
                slope = (g1 - g0) / (a1 - a0)
        new.append(min(max(aims[k] + (a - got[k]) / slope, 0.0), MAX_TIREDNESS))
    if all(abs(n - m) < 1e-4 for n, m in zip(new, aims)):
        return None
    return tuple(new)


def aimed(direction: DirectedFatigue, aims: tuple[float, ...]) -> TirednessKeys:
    """The keys of ``direction`` with each stretch's end at ``aims``."""
    return TirednessKeys((0.0,) + direction.stretch_ends, (direction.starting_fatigue,) + tuple(aims))


def asking(direction: DirectedFatigue, asked: tuple[float, ...]) -> DirectedFatigue:
    """``direction`` judged against the keys ``asked`` (an aimed solve reports the animator's keys)."""
    return replace(direction, asked=tuple(asked))


def preset_schedule(name: str, fps: float, duration: float, frames: int = 1
                    ) -> tuple[FatigueSchedule, TirednessKeys | None]:
    """A fitness preset as a take asks for it: its schedule and, for a preset that directs how
    tired the body is (params.FitnessPreset.tiredness), its keys over ``duration`` source seconds."""
    p = fatigue_params.preset(name)
    sched = from_preset(name, fps, frames)
    if p.tiredness is None:
        return sched, None
    return sched, TirednessKeys.start_end(p.tiredness[0], p.tiredness[1], duration)
