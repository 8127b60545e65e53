"""Fatigue schedule: the (F, R, r) an animator keyframed, sampled once per frame, per DoF.

Blender evaluates the fitness / F / R / r F-curves per frame; the simulation runs at 240 Hz and
holds each frame's parameters until the next frame, so the model is re-validated at frame rate,
not at step rate.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..body import proxy
from ..errors import FatigueParameterError
from . import params as fatigue_params
from .model import ThreeCompartmentModel, check_parameters


@dataclass(frozen=True)
class FatigueSchedule:
    fps: float
    F: np.ndarray            # (frames, dofs) 1/s
    R: np.ndarray            # (frames, dofs) 1/s
    r: np.ndarray            # (frames, dofs)
    LD: np.ndarray           # (frames, dofs) 1/s
    LR: np.ndarray           # (frames, dofs) 1/s
    initial_fatigue: np.ndarray  # (dofs,) MF at the first frame

    def played_faster(self, factor: float) -> "FatigueSchedule":
        """The same keyed fitness over a clip played ``factor`` times faster (Clip.played_faster):
        each value at the same frame of the clip."""
        return replace(self, fps=float(self.fps * factor))

    def __post_init__(self):
        if not (np.isfinite(self.fps) and self.fps > 0):
            raise FatigueParameterError(f"schedule fps = {self.fps!r}: it must be positive")
        shape = self.F.shape
        if len(shape) != 2 or shape[0] < 1:
            raise FatigueParameterError(f"schedule arrays must be (frames, dofs), got {shape}")
        for name in ("R", "r", "LD", "LR"):
            if getattr(self, name).shape != shape:
                raise FatigueParameterError(f"schedule {name} has shape {getattr(self, name).shape}, F has {shape}")
        # Validate every frame once here, so a bad keyframe is reported before any simulation.
        check_parameters(self.F.ravel(), self.R.ravel(), self.r.ravel(), self.LD.ravel(),
                         self.LR.ravel(), self.F.size)
        if not ((self.initial_fatigue >= 0).all() and (self.initial_fatigue < 1).all()):
            raise FatigueParameterError("initial fatigue must be in [0, 1)")

    @property
    def frames(self) -> int:
        return self.F.shape[0]

    @property
    def dofs(self) -> int:
        return self.F.shape[1]

    def frame_at(self, time: float) -> int:
        """Index of the frame whose parameters hold at ``time`` seconds (clamped to the ends)."""
        return min(max(int(np.floor(time * self.fps + 1e-9)), 0), self.frames - 1)

    def parameters(self, frame: int) -> tuple[np.ndarray, ...]:
        return self.F[frame], self.R[frame], self.r[frame], self.LD[frame], self.LR[frame]

    def make_model(self, formulation: str = "torque_bound") -> ThreeCompartmentModel:
        """A model at frame 0 of this schedule, starting from its initial fatigue."""
        model = ThreeCompartmentModel(self.dofs, *self.parameters(0), formulation=formulation)
        model.reset(fatigued=self.initial_fatigue)
        return model


class ScheduledModel:
    """A ThreeCompartmentModel that follows a schedule: parameters switch when the frame does."""

    def __init__(self, schedule: FatigueSchedule, formulation: str = "torque_bound"):
        self.schedule = schedule
        self.model = schedule.make_model(formulation)
        self._frame = 0

    def step_torque(self, torque, tau_max, time: float, dt: float) -> np.ndarray:
        frame = self.schedule.frame_at(time)
        if frame != self._frame:
            self.model.set_parameters(*self.schedule.parameters(frame))
            self._frame = frame
        return self.model.step_torque(torque, tau_max, dt)


def from_fitness(
    fitness,
    fps: float,
    time_scale: float = 1.0,
    initial_fatigue=0.0,
    dof_regions: list[str] | None = None,
    frames: int | None = None,
) -> FatigueSchedule:
    """Schedule from keyframed fitness: one value, a per-frame curve (frames,), or (frames, dofs)."""
    regions_ = dof_regions if dof_regions is not None else proxy.dof_regions()
    n = len(regions_)
    fit = np.asarray(fitness, dtype=np.float64)
    if fit.ndim == 0:
        fit = np.full((frames or 1, n), float(fit))
    elif fit.ndim == 1:
        fit = np.repeat(fit[:, None], n, axis=1)
    if fit.shape[1] != n:
        raise FatigueParameterError(f"fitness has {fit.shape[1]} columns, the proxy has {n} DoFs")
    p = fatigue_params.dof_parameters(fit, time_scale, regions_)
    init = np.broadcast_to(np.asarray(initial_fatigue, dtype=np.float64), (n,)).copy()
    return FatigueSchedule(fps=float(fps), F=p["F"], R=p["R"], r=p["r"], LD=p["LD"], LR=p["LR"],
                           initial_fatigue=init)


def from_parameters(F, R, r, fps: float, LD=fatigue_params.DEFAULT_LD, LR=fatigue_params.DEFAULT_LR,
                    initial_fatigue=0.0, dofs: int | None = None) -> FatigueSchedule:
    """Schedule from keyframed F, R, r directly: each a number, a per-frame curve or (frames, dofs)."""
    n = dofs if dofs is not None else len(proxy.dof_regions())
    arrays = [np.asarray(x, dtype=np.float64) for x in (F, R, r, LD, LR)]
    frames = max([a.shape[0] for a in arrays if a.ndim >= 1] or [1])

    def per_frame(a: np.ndarray) -> np.ndarray:
        if a.ndim == 1:
            a = a[:, None]
        return np.broadcast_to(a, (frames, n)).astype(np.float64)

    F_, R_, r_, LD_, LR_ = (per_frame(a) for a in arrays)
    init = np.broadcast_to(np.asarray(initial_fatigue, dtype=np.float64), (n,)).copy()
    return FatigueSchedule(fps=float(fps), F=F_, R=R_, r=r_, LD=LD_, LR=LR_, initial_fatigue=init)


def from_preset(name: str, fps: float, frames: int = 1, dof_regions: list[str] | None = None) -> FatigueSchedule:
    """Constant schedule from a named fitness preset (see fatigue_params.PRESETS)."""
    p = fatigue_params.preset(name)
    return from_fitness(p.fitness, fps, p.time_scale, p.initial_fatigue, dof_regions, frames)


# A body part's fitness multiplier m > 1 makes it fitter: it tires m times slower and recovers m
# times faster.  Below this the rates would divide by (nearly) zero.
MIN_PART_MULTIPLIER = 1e-3


def dof_multipliers(by_part: dict[str, np.ndarray]) -> np.ndarray:
    """(frames, dofs) multipliers from per-frame ones per body part (proxy.BODY_PARTS): each DoF
    takes its part's (proxy.dof_body_parts)."""
    return np.stack([by_part[part] for part in proxy.dof_body_parts()], axis=1)


def from_fitness_by_part(fitness: np.ndarray, multipliers: np.ndarray, fps: float, time_scale: np.ndarray,
                         initial_fatigue: float = 0.0) -> FatigueSchedule:
    """Schedule from a keyed fitness curve (frames,) scaled per DoF by ``multipliers`` (frames, dofs;
    clipped to [0, 1]) and a keyed speed-up ``time_scale`` (frames,)."""
    fit_dof = np.clip(fitness[:, None] * multipliers, 0.0, 1.0)
    if np.all(time_scale == time_scale[0]):
        return from_fitness(fit_dof, fps, float(time_scale[0]), initial_fatigue)
    p = fatigue_params.dof_parameters(fit_dof, 1.0)
    return from_parameters(p["F"] * time_scale[:, None], p["R"] * time_scale[:, None], p["r"], fps,
                           LD=p["LD"], LR=p["LR"], initial_fatigue=initial_fatigue)


def from_rates_by_part(F: np.ndarray, R: np.ndarray, r: np.ndarray, multipliers: np.ndarray, fps: float,
                       time_scale: np.ndarray, initial_fatigue: float = 0.0) -> FatigueSchedule:
    """Schedule from keyed F, R, r curves (frames,) sped up by ``time_scale`` (frames,), each DoF's
    F divided and R multiplied by its part's multiplier (frames, dofs; at least MIN_PART_MULTIPLIER)."""
    m = np.maximum(multipliers, MIN_PART_MULTIPLIER)
    return from_parameters((F * time_scale)[:, None] / m, (R * time_scale)[:, None] * m, r, fps,
                           initial_fatigue=initial_fatigue)
