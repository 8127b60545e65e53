"""The fatigue schedule of a bake: the keyed fitness (or F, R, r) and per-body-part multipliers,
sampled per source frame, refused in one line where a keyed value is out of range.  Only reading
Blender's properties and keys is here; what the values mean is runtime.fatigue.schedule's."""
from __future__ import annotations

import math

import numpy as np

from ..runtime.body import proxy
from ..runtime.fatigue import params
from . import anim
from .failure import BakeInputError


def _keyed(curves: dict, settings, prop: str, frames: np.ndarray, label: str, lo: float, hi: float,
           lo_open=False) -> np.ndarray:
    """Per-frame values of ``settings.<prop>``: its F-curve in the source action, else the value.
    BakeInputError when one is not a number in range, naming the bad key at its own frame and value
    (not the curve interpolated towards it at another frame) where a key is the cause."""
    def bad(values):
        return ~np.isfinite(values) | (values > hi) | ((values <= lo) if lo_open else (values < lo))

    fc = curves.get(f"fatigue_settings.{prop}")
    if fc is None:
        values = np.full(len(frames), float(getattr(settings, prop)))
    else:
        ev = fc.evaluate
        values = np.fromiter((ev(f) for f in frames.tolist()), dtype=np.float64, count=len(frames))
    wrong = bad(values)
    if not wrong.any():
        return values
    i = int(np.flatnonzero(wrong)[0])
    shown, frame = repr(values[i]), f"{int(frames[i])}"
    keys = np.array([tuple(k.co) for k in fc.keyframe_points] if fc is not None else [], dtype=np.float64)
    culprits = keys.reshape(-1, 2)[bad(keys.reshape(-1, 2)[:, 1])]
    if len(culprits):                      # the bad key nearest the first bad frame
        key_frame, key_value = culprits[int(np.argmin(np.abs(culprits[:, 0] - frames[i])))]
        shown, frame = str(np.float32(key_value)), f"{key_frame:g}"
    rng = f"({lo:g}, {hi:g}]" if lo_open else f"[{lo:g}, {hi:g}]"
    raise BakeInputError(f"{label} is {shown} at frame {frame}: key a number in {rng} there (Graph Editor) or in "
                         f"the Fatigue panel")


def settings_curves(source, active=None, active_slot=None):
    """The keyed ``fatigue_settings.*`` F-curves that drive the schedule: those of the action
    ``active`` (assigned when the bake began, not the source: a take, its slot ``active_slot``)
    when it has any (the animator edits what they see, also on a baked take), else those of
    ``source`` (anim.SourceAction)."""
    def driving(curves):
        return [fc for fc in curves if fc.data_path.startswith("fatigue_settings.") and not fc.mute]

    found = driving(anim.action_curves(active, active_slot)) if active is not None else []
    return found or driving(source.curves)


def directs(settings) -> bool:
    """The bake is told how tired, when (runtime.fatigue.direction), not at what rates."""
    return bool(settings.direct_tiredness) and settings.preset not in ("CUSTOM", "FRESH")


def tiredness_keys(settings, curves, frame_start: int, frame_end: int, fps: float):
    """How tired the body should be over the source range, as TirednessKeys in seconds from
    ``frame_start``: the keyed Tiredness channel's keys in the range (and its value at both ends),
    else Tired at start and Tired by the end; None when the bake is not directed."""
    from ..runtime.fatigue.direction import MAX_TIREDNESS, TirednessKeys, tiredness_problem

    if not directs(settings):
        return None
    duration = max(frame_end - frame_start, 1) / fps
    fc = next((c for c in curves if c.data_path == "fatigue_settings.tiredness" and c.array_index == 0), None)
    if fc is None or not len(fc.keyframe_points):
        start, end = float(settings.tiredness_start), float(settings.tiredness_end)
        for label, value in (("Tired at start", start), ("Tired by the end", end)):
            if tiredness_problem(value):
                raise BakeInputError(f"{label} is {value!r}: {tiredness_problem(value)} in the Fatigue panel")
        return TirednessKeys.start_end(start, end, duration)
    inside = sorted({float(k.co[0]) for k in fc.keyframe_points if frame_start < k.co[0] < frame_end})
    frames = np.array([float(frame_start), *inside, float(frame_end)])
    values = _keyed({fc.data_path: fc}, settings, "tiredness", frames, "Tiredness", 0.0, MAX_TIREDNESS)
    return TirednessKeys(tuple(((frames - frame_start) / fps).tolist()), tuple(values.tolist()))


def build_schedule(obj, settings, curves, frame_start: int, frames: int, fps: float):
    """FatigueSchedule for a take starting at ``frame_start``: the keyed values (``curves``, F-curves
    of ``fatigue_settings.*``) for ``frames`` take frames (the source range stretched by up to
    MAX_STRETCH, since a tired take is longer)."""
    from ..runtime.fatigue import schedule as rschedule
    from ..runtime.errors import FatigueParameterError

    if settings.preset == "FRESH":
        return None                 # fatigue off: the physics alone
    curves = {fc.data_path: fc for fc in curves if fc.array_index == 0}
    f = frame_start + np.arange(frames, dtype=np.float64)
    M = rschedule.dof_multipliers({part: _keyed(curves, settings, f"fitness_{part}", f,
                                                f"{part.capitalize()} fitness multiplier", *params.PART_FITNESS_RANGE)
                                   for part in proxy.BODY_PARTS})
    if directs(settings):      # the speed-up and the starting fatigue are solved (tiredness_keys)
        ts, init = np.ones(len(f)), 0.0
    else:
        ts = _keyed(curves, settings, "time_scale", f, "Fatigue speed-up", *params.OPTION_RANGES["time_scale"][:2],
                    lo_open=True)
        init = float(settings.initial_fatigue)
    if not (math.isfinite(init) and 0.0 <= init < 1.0):
        raise BakeInputError(f"Starting fatigue is {init!r}: set a number from 0 to 0.95 in the Fatigue panel")
    try:
        if settings.preset == "CUSTOM":
            F = _keyed(curves, settings, "F", f, "F (fatigue rate)", *params.OPTION_RANGES["F"][:2], lo_open=True)
            R = _keyed(curves, settings, "R", f, "R (recovery rate)", *params.OPTION_RANGES["R"][:2], lo_open=True)
            r = _keyed(curves, settings, "r", f, "r (rest multiplier)", *params.OPTION_RANGES["r"][:2], lo_open=True)
            return rschedule.from_rates_by_part(F, R, r, M, fps, ts, init)
        fit = _keyed(curves, settings, "fitness", f, "Fitness", 0.0, 1.0)
        return rschedule.from_fitness_by_part(fit, M, fps, ts, init)
    except (FatigueParameterError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BakeInputError(f"{msg}: fix the fatigue settings in the Fatigue panel") from None
