"""Published 3CC parameter sets, animator fitness presets, and the fitness -> (F, R, r) map.

The numbers live in ``runtime/data/fatigue_parameters.json`` with their citations; this module
turns them into per-DoF arrays for the proxy.  Published rates describe an average adult and
tire a knee in minutes, so every preset states a ``time_scale``: F and R are multiplied by it
(r is a ratio and stays), which makes a take tire within seconds while keeping the shape of the
published endurance curves.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..body import proxy
from ..maths import repeatable
from .model import MAX_RATE, MAX_REST_MULTIPLIER

_DATA = Path(__file__).resolve().parent.parent / "data" / "fatigue_parameters.json"

# Frey-Law's F, R are fitted with LD = LR = 10; the project uses the same unless a set says so.
DEFAULT_LD = 10.0
DEFAULT_LR = 10.0
# Looft 2018 has no rest multiplier for shoulder and trunk: they take the "general" one.
_REST_MULTIPLIER_FALLBACK = "general"
# Fitness 0 fatigues this many times faster and recovers this many times slower than the
# published average adult (fitness 0.5); fitness 1 the reverse.  Log-linear in between.
FITNESS_RANGE = 2.0
# How far a tired joint (limbs; knees under the body) yields per unit of load (rad; 0: never):
# runtime.fatigue.effort reads it, srb.SrbSettings starts from the default.
DEFAULT_EFFORT_ECONOMY = 1.0
MAX_EFFORT_ECONOMY = 5.0         # beyond this a tired limb flops at the first sign of fatigue


@lru_cache(maxsize=1)
def literature() -> dict:
    """The shipped parameter tables (parsed once)."""
    with open(_DATA, encoding="utf-8") as fh:
        return json.load(fh)


def regions() -> tuple[str, ...]:
    """Body regions with published F and R (Frey-Law 2012, Table 1)."""
    return tuple(literature()["frey_law_2012"]["regions"])


@dataclass(frozen=True)
class RegionParameters:
    F: float
    R: float
    r: float
    LD: float = DEFAULT_LD
    LR: float = DEFAULT_LR


def published_region(region: str) -> RegionParameters:
    """Frey-Law 2012 F, R with Looft 2018's rest multiplier r for one region."""
    lit = literature()
    table = lit["frey_law_2012"]["regions"]
    if region not in table:
        raise KeyError(f"no published 3CC parameters for region {region!r}; known: {', '.join(table)}")
    rest = lit["looft_2018_rest_multiplier"]["regions"]
    r = rest.get(region, rest[_REST_MULTIPLIER_FALLBACK])
    return RegionParameters(F=table[region]["F"], R=table[region]["R"], r=float(r))


def seed_parameters(name: str) -> RegionParameters:
    """One triplet for the whole character from a seed paper ("discovering_fatigued_movements", "musclevae")."""
    s = literature()["seeds"][name]
    return RegionParameters(F=s["F"], R=s["R"], r=s["r"], LD=s["LD"], LR=s["LR"])


def fitness_multipliers(fitness):
    """Smooth map of fitness in [0, 1] (number or array) to multipliers of (F, R, r).

    0.5 is the published adult.  Log-linear, so equal steps of the slider feel alike and the
    map has no kinks for keyframes.
    """
    f = np.asarray(fitness, dtype=np.float64)
    if not (np.isfinite(f).all() and (f >= 0.0).all() and (f <= 1.0).all()):
        bad = f[~(np.isfinite(f) & (f >= 0.0) & (f <= 1.0))].ravel()[0]
        raise ValueError(f"fitness = {bad!r}: it must be a number from 0 (exhausted) to 1 (athlete)")
    exponent = 2.0 * (f - 0.5)
    return repeatable.power(FITNESS_RANGE, -exponent), repeatable.power(FITNESS_RANGE, exponent), np.ones_like(f)


@dataclass(frozen=True)
class FitnessPreset:
    name: str
    fitness: float
    time_scale: float        # F and R are multiplied by this (fatigue shown this many times faster)
    initial_fatigue: float   # MF at the first frame
    description: str
    # How tired the body is at the first frame and by the end of the source (0 fresh .. 1 spent),
    # solved into the starting fatigue and the speed-up (runtime.fatigue.direction); None: the
    # rates run as given (time_scale).
    tiredness: tuple[float, float] | None = None


def _directed(name: str, fitness: float, start: float, end: float, description: str) -> FitnessPreset:
    return FitnessPreset(name, fitness, 1.0, start, description, (start, end))


PRESETS: dict[str, FitnessPreset] = {
    p.name: p
    for p in (
        _directed("Athlete", 1.0, 0.0, 0.1, "Fresh look: barely tires over the shot"),
        _directed("Average", 0.5, 0.0, 0.35, "Starts fresh, visibly tired by the end of the shot"),
        _directed("Untrained", 0.25, 0.0, 0.5, "Starts fresh, worn out by the end of the shot"),
        _directed("Tired", 0.25, 0.35, 0.4, "Tired from the first frame, a little more by the end"),
        _directed("Exhausted", 0.0, 0.5, 0.5, "Exhausted from the first frame to the last: slow, bent forward, "
                                               "breathing hard, and keeps going"),
        FitnessPreset("Realistic", 0.5, 1.0, 0.0, "Published adult values in real time (minutes to tire)"),
    )
}
DEFAULT_PRESET = "Average"


# What a bake accepts for each fitness option, wherever it is given (operator arguments,
# ./fatigue bake): name -> (low, high, low excluded).
OPTION_RANGES = {
    "fitness": (0.0, 1.0, False),
    "F": (0.0, MAX_RATE, True),
    "R": (0.0, MAX_RATE, True),
    "r": (0.0, MAX_REST_MULTIPLIER, True),
    "time_scale": (0.0, 10000.0, True),
    "effort_economy": (0.0, MAX_EFFORT_ECONOMY, False),
}


# Each body part's fitness multiplier (the armature's Legs, Arms, Trunk, Neck): 1 = the body's.
PART_FITNESS_RANGE = (0.0, 10.0)


def option_problem(name: str, value) -> str | None:
    """None when ``value`` is a number OPTION_RANGES allows for ``name``; else what to give
    ("give a number in [0, 1]"), so that every entry point refuses the same values."""
    return range_problem(value, *OPTION_RANGES[name])


def range_problem(value, lo: float, hi: float, lo_open: bool = False) -> str | None:
    """None when ``value`` is a number in lo..hi (above lo when ``lo_open``); else what to give."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if math.isfinite(v) and v <= hi and (v > lo if lo_open else v >= lo):
        return None
    return f"give a number in {'(' if lo_open else '['}{lo:g}, {hi:g}]"


def preset(name: str) -> FitnessPreset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown fitness preset {name!r}; choose one of {', '.join(PRESETS)}") from None


def dof_parameters(
    fitness=0.5,
    time_scale: float = 1.0,
    dof_regions: list[str] | None = None,
    base: str = "frey_law_2012",
) -> dict[str, np.ndarray]:
    """Per-DoF F, R, r, LD, LR arrays for the proxy.

    ``fitness`` is a number, one number per DoF, or a (frames, DoF) array (a keyframed
    schedule); the arrays broadcast to its shape.  ``base`` is "frey_law_2012" (per region) or a
    seed name (one triplet for every DoF).
    """
    if not (math.isfinite(time_scale) and time_scale > 0):
        raise ValueError(f"time_scale = {time_scale!r}: it must be a positive number (1 = real time)")
    regions_ = dof_regions if dof_regions is not None else proxy.dof_regions()
    if base == "frey_law_2012":
        per_dof = [published_region(region) for region in regions_]
    else:
        per_dof = [seed_parameters(base)] * len(regions_)
    base_arrays = {k: np.array([getattr(p, k) for p in per_dof]) for k in ("F", "R", "r", "LD", "LR")}
    kF, kR, kr = fitness_multipliers(fitness)
    return {
        "F": base_arrays["F"] * kF * time_scale,
        "R": base_arrays["R"] * kR * time_scale,
        "r": base_arrays["r"] * kr,
        "LD": base_arrays["LD"] * np.ones_like(kF),
        "LR": base_arrays["LR"] * np.ones_like(kF),
    }
