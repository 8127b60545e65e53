"""What a script or batch asks of one bake (``bpy.ops.fatigue.bake_take`` arguments, ``./fatigue bake``
options): checked once, then read in place of the armature's Fatigue settings for that bake only."""
from __future__ import annotations

from dataclasses import make_dataclass

from ..runtime.fatigue import params as fatigue_params
from ..runtime.request import BAKE_OPTIONS
from .failure import BakeInputError


class _Asked:
    """What a script, ``blender -b`` or ``./fatigue bake`` asks for on top of the armature's Fatigue
    settings (one field per runtime.request.BAKE_OPTIONS entry); ``None`` keeps the setting.  The
    settings themselves are never changed, so the file stays as the animator left it and several
    variants can be baked from it."""

    def settings_overrides(self, settings) -> dict:
        """Fatigue-settings property -> value for this bake.  BakeInputError names a bad option."""
        out = {}
        for option in BAKE_OPTIONS:
            value = getattr(self, option.name)
            refusal = None if value is None else option.refusal(value)
            if refusal:
                raise BakeInputError(refusal)
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
            if given or out.get("preset") == "FRESH":
                raise BakeInputError(f"{name} directs a fitness preset's fatigue: drop it, or F, R, r / Fresh")
            out[name] = float(value)
            out["direct_tiredness"] = True
            if out.get("preset") is None and settings.preset in ("CUSTOM", "FRESH"):
                out["preset"] = fatigue_params.DEFAULT_PRESET
        for option in BAKE_OPTIONS:
            value = getattr(self, option.name)
            if option.setting and value is not None:
                out[option.name] = option.setting_value(value)
        return out


BakeOptions = make_dataclass(
    "BakeOptions", [(o.name, f"{o.kind.__name__} | None", None) for o in BAKE_OPTIONS],
    bases=(_Asked,), frozen=True)
BakeOptions.__module__, BakeOptions.__doc__ = __name__, _Asked.__doc__


class SettingsView:
    """The armature's fatigue settings with some values replaced for one bake (read only)."""

    def __init__(self, settings, overrides: dict):
        self._settings = settings
        self._overrides = overrides

    def __getattr__(self, name):
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._settings, name)
