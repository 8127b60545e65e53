"""What a script or batch asks of one bake (``bpy.ops.fatigue.bake_take`` arguments, ``./fatigue bake``
options): checked once, then read in place of the armature's Fatigue settings for that bake only."""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.fatigue import params as fatigue_params
from ..runtime.fatigue.direction import tiredness_problem
from ..runtime.request import effort_economy_problem
from .failure import BakeInputError


@dataclass(frozen=True)
class BakeOptions:
    """What a script, ``blender -b`` or ``./fatigue bake`` asks for on top of the armature's Fatigue
    settings; ``None`` keeps the setting.  The settings themselves are never changed, so the file
    stays as the animator left it and several variants can be baked from it."""
    action: str | None = None        # bake this action instead of the assigned one
    frame_start: int | None = None
    frame_end: int | None = None
    preset: str | None = None        # a fitness preset name or "Fresh" (case-insensitive)
    fitness: float | None = None
    F: float | None = None
    R: float | None = None
    r: float | None = None
    time_scale: float | None = None  # default 1 (rates as given) when F, R, r are given
    tiredness_start: float | None = None  # how tired at the first frame (0 fresh .. 0.9 spent): directs the bake
    tiredness_end: float | None = None    # ... and by the end of the range
    mode: str | None = None          # "srb" or "torque"
    foot_placement: str | None = None  # "policy" (the shipped SRB policy) or "rule"
    effort_economy: float | None = None  # how far tired joints (limbs, knees) yield to their loads (0 = never)
    breathing: bool | None = None    # a tired take breathes (default: the armature's setting)
    kneeling: bool | None = None     # exhausted legs rest kneeling (default: the armature's setting)
    take_name: str | None = None     # the new action's name (default <source>.fatigued)
    engine: str | None = None        # "auto", "pybullet" or "mujoco" (default: the add-on preference)

    def settings_overrides(self, settings) -> dict:
        """Fatigue-settings property -> value for this bake.  BakeInputError names a bad option."""
        out = {}
        for name in fatigue_params.OPTION_RANGES:        # the same ranges as ./fatigue bake
            value = getattr(self, name)
            problem = None if value is None else fatigue_params.option_problem(name, value)
            if problem:
                shown = f"{value:.6g}" if isinstance(value, float) else repr(value)   # operator floats are 32-bit
                raise BakeInputError(f"{name} {shown}: {problem}")
        rates = {k: getattr(self, k) for k in ("F", "R", "r")}
        given = [k for k, v in rates.items() if v is not None]
        if given and len(given) < 3:
            raise BakeInputError(f"only {', '.join(given)} given: give F, R and r together")
        if given and (self.preset is not None or self.fitness is not None):
            raise BakeInputError("give either a preset / fitness or F, R and r, not both")
        if self.preset is not None:
            names = {n.lower(): n for n in fatigue_params.PRESETS}
            key = str(self.preset).strip().lower()
            if key == "fresh":
                out["preset"] = "FRESH"
            elif key in names:
                p = fatigue_params.preset(names[key])
                out.update(preset=p.name, fitness=p.fitness, time_scale=p.time_scale,
                           initial_fatigue=p.initial_fatigue, direct_tiredness=p.tiredness is not None)
                if p.tiredness is not None:
                    out.update(tiredness_start=p.tiredness[0], tiredness_end=p.tiredness[1])
            else:
                raise BakeInputError(f"unknown preset '{self.preset}': use one of "
                                     f"{', '.join(['Fresh', *fatigue_params.PRESETS])}")
        if self.fitness is not None:
            if out.get("preset") == "FRESH":
                raise BakeInputError("the Fresh preset has no fitness: drop one of preset and fitness")
            out["fitness"] = float(self.fitness)
            if out.get("preset") is None and settings.preset in ("CUSTOM", "FRESH"):
                out["preset"] = fatigue_params.DEFAULT_PRESET
        if given:
            out.update(preset="CUSTOM", time_scale=1.0, **{k: float(v) for k, v in rates.items()})
        if self.time_scale is not None:
            out["time_scale"] = float(self.time_scale)
            if self.tiredness_start is None and self.tiredness_end is None:
                out["direct_tiredness"] = False      # a speed-up asked for runs as given
        for name in ("tiredness_start", "tiredness_end"):
            value = getattr(self, name)
            if value is None:
                continue
            problem = tiredness_problem(value)
            if problem:
                raise BakeInputError(f"{name} {float(value):.6g}: {problem}")
            if given or out.get("preset") == "FRESH":
                raise BakeInputError(f"{name} directs a fitness preset's fatigue: drop it, or F, R, r / Fresh")
            out[name] = float(value)
            out["direct_tiredness"] = True
            if out.get("preset") is None and settings.preset in ("CUSTOM", "FRESH"):
                out["preset"] = fatigue_params.DEFAULT_PRESET
        if self.mode is not None:
            mode = str(self.mode).strip().upper()
            if mode not in ("SRB", "TORQUE"):
                raise BakeInputError(f"unknown mode '{self.mode}': use srb or torque")
            out["mode"] = mode
        if self.foot_placement is not None:
            placement = str(self.foot_placement).strip().upper()
            if placement not in ("POLICY", "RULE"):
                raise BakeInputError(f"unknown foot placement '{self.foot_placement}': use policy or rule")
            out["foot_placement"] = placement
        if self.effort_economy is not None:
            value = float(self.effort_economy)
            problem = effort_economy_problem(value)
            if problem is not None:
                raise BakeInputError(problem)
            out["effort_economy"] = value
        if self.breathing is not None:
            out["breathing"] = bool(self.breathing)
        if self.kneeling is not None:
            out["kneeling"] = bool(self.kneeling)
        return out


class SettingsView:
    """The armature's fatigue settings with some values replaced for one bake (read only)."""

    def __init__(self, settings, overrides: dict):
        self._settings = settings
        self._overrides = overrides

    def __getattr__(self, name):
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._settings, name)
