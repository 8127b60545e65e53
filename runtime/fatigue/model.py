"""Three-compartment muscle fatigue (3CC) per actuated degree of freedom, vectorised over actuators.

Each actuator's motor units are split into active (MA), resting (MR) and fatigued (MF)
fractions that sum to 1.  A brain-like controller C moves units between resting and active to
follow the target load TL; active units fatigue at rate F; fatigued units recover at rate R
(r*R while the muscle is at or above its target, following the seed "Discovering Fatigued
Movements", eqs. 1-4, 11-13, and while it holds no more than its endurance limit, see below):

    dMA/dt = C - F*MA      dMR/dt = -C + Rr*MF      dMF/dt = F*MA - Rr*MF

Two formulations share the state and one interface (``step(demand, dt) -> delivered``, both
fractions of the actuator's maximum):

* ``"torque_bound"`` (3CC): the residual capacity RC = 1 - MF caps the delivered load, so a
  joint torque is clipped to +-RC*tau_max.
* ``"activation_clip"`` (3CC-r, seed "MuscleVAE", appendix A.3.1): the next activation must lie in
  [max(0, K*a - dt*LR*a), min(1, K*a + dt*LD*MR)] with K = 1 - dt*F; the demand is clipped into
  that interval and the resulting C drives the resting compartment.  Recovery is r*R at rest
  (demand 0, as in Looft 2018) and while relaxing.

Why an endurance limit: a muscle holding a light load (standing holds the legs at about 5 % of
their strength) settles with MA just under its target, so the seed's rule recovers it at R, not
r*R, and its steady state RC = 1 - (F/R) TL fell below zero for a tired, sped-up body: standing
drained the legs to the floor.  People hold such loads for an hour: Bjorksten & Jonsson (1977)
found an endurance limit of 7.9 % of maximum for sustained static contractions (14 % for
intermittent ones), below which a contraction was kept up without exhaustion.  A target at or
below ``endurance_limit`` therefore recovers at r*R, as at rest.  The limit sits below every load
the endurance curves were fitted on (Frey-Law 2012: 10-90 %), so those stay as published.

Why sub-steps: explicit Euler keeps every compartment in [0, 1] only while dt*L <= 1 for every
rate L involved.  Users reach dt from 1/2400 s to 1/24 s with LD, LR up to 50, so a step is split
into equal sub-steps with dt_sub * L <= 0.5.  MR is the complement of MA and MF, so the sum is
1 to rounding (1e-15) at every dt.
"""
from __future__ import annotations

import math

import numpy as np
from ..errors import FatigueParameterError

FORMULATIONS = ("torque_bound", "activation_clip")

# Largest rate (1/s) and rest multiplier we accept: beyond these no human muscle is meant.
MAX_RATE = 1000.0
MAX_REST_MULTIPLIER = 1000.0
# A held load at or below this share of maximum recovers like rest (Bjorksten & Jonsson 1977,
# sustained static contractions; see the module docstring).
ENDURANCE_LIMIT = 0.079
_SUBSTEP_STIFFNESS = 0.5  # dt_sub * (largest rate) may not exceed this


def _as_actuator_array(name: str, value, n: int) -> np.ndarray:
    arr = np.array(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise FatigueParameterError(f"{name} must be a number or {n} numbers, got shape {arr.shape}")
    return arr


def check_parameters(F, R, r, LD, LR, n: int) -> tuple[np.ndarray, ...]:
    """Validate a parameter set for ``n`` actuators; returns the five float arrays.

    Raises FatigueParameterError naming the parameter and the valid range, because a zero or
    negative rate silently turns the model into "never tires" or makes it diverge.
    """
    arrays = []
    for name, value, lo_exclusive, hi in (
        ("F (fatigue rate, 1/s)", F, 0.0, MAX_RATE),
        ("R (recovery rate, 1/s)", R, 0.0, MAX_RATE),
        ("r (rest recovery multiplier)", r, 0.0, MAX_REST_MULTIPLIER),
        ("LD (activation rate, 1/s)", LD, 0.0, MAX_RATE),
        ("LR (relaxation rate, 1/s)", LR, 0.0, MAX_RATE),
    ):
        arr = _as_actuator_array(name, value, n)
        bad = ~np.isfinite(arr) | (arr <= lo_exclusive) | (arr > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise FatigueParameterError(
                f"{name} = {arr[i]!r} at actuator {i}: it must be a finite number in (0, {hi:g}]"
            )
        arrays.append(arr)
    return tuple(arrays)


class ThreeCompartmentModel:
    """Fatigue state of ``n`` actuators with per-actuator, per-step changeable parameters."""

    def __init__(self, n: int, F, R, r=1.0, LD=10.0, LR=10.0, formulation: str = "torque_bound",
                 endurance_limit: float = ENDURANCE_LIMIT):
        if formulation not in FORMULATIONS:
            raise FatigueParameterError(
                f"unknown fatigue formulation {formulation!r}: use one of {', '.join(FORMULATIONS)}"
            )
        self.n = int(n)
        self.formulation = formulation
        if not (math.isfinite(endurance_limit) and 0.0 <= endurance_limit < 1.0):
            raise FatigueParameterError(f"endurance limit {endurance_limit!r}: it must be in [0, 1)")
        self.endurance_limit = float(endurance_limit)
        self._ones = np.ones(self.n)
        self.set_parameters(F, R, r, LD, LR)
        self.active = np.zeros(self.n)
        self.resting = np.ones(self.n)
        self.fatigued = np.zeros(self.n)
        self.target_load = np.zeros(self.n)

    # -- parameters -----------------------------------------------------------------------
    def set_parameters(self, F, R, r=1.0, LD=10.0, LR=10.0) -> None:
        """Change F, R, r, LD, LR (scalars or per-actuator arrays); validated, then cached."""
        self.F, self.R, self.r, self.LD, self.LR = check_parameters(F, R, r, LD, LR, self.n)
        self._rest_recovery = self.r * self.R
        stiffest = np.maximum.reduce([self.LD, self.LR + self.F, self._rest_recovery, self.R])
        self._largest_rate = float(stiffest.max())
        self._cached_dt = None

    def _prepare(self, dt: float) -> None:
        """Cache the sub-step count and rate*h products for this dt (called when dt changes)."""
        if not (math.isfinite(dt) and dt > 0.0):
            raise FatigueParameterError(f"time step dt = {dt!r} s: it must be a positive number")
        substeps = max(1, math.ceil(dt * self._largest_rate / _SUBSTEP_STIFFNESS - 1e-12))
        h = dt / substeps
        self._cached_dt = dt
        self._substeps = substeps
        self._hF = h * self.F
        self._hLD = h * self.LD
        self._hLR = h * self.LR
        self._hR = h * self.R
        self._hrR = h * self._rest_recovery
        self._keep = 1.0 - self._hF                 # K of the 3CC-r clip
        self._floor = 1.0 - self._hF - self._hLR    # fastest allowed relaxation (3CC-r)

    # -- state ------------------------------------------------------------------------------
    def reset(self, fatigued=0.0, active=0.0) -> None:
        """Start from a given fatigued / active fraction (rested muscle: both zero)."""
        self.fatigued = _as_actuator_array("fatigued", fatigued, self.n).copy()
        self.active = _as_actuator_array("active", active, self.n).copy()
        if (self.fatigued < 0).any() or (self.active < 0).any() or (self.fatigued + self.active > 1).any():
            raise FatigueParameterError("initial active and fatigued fractions must be >= 0 and sum to <= 1")
        self.resting = 1.0 - self.active - self.fatigued
        self.target_load = np.zeros(self.n)

    @property
    def residual_capacity(self) -> np.ndarray:
        """RC = 1 - MF: the fraction of maximum strength still available."""
        return 1.0 - self.fatigued

    def snapshot(self) -> dict[str, np.ndarray]:
        """Copies of MA, MR, MF, TL, RC (for a Take's per-frame record)."""
        return {
            "MA": self.active.copy(),
            "MR": self.resting.copy(),
            "MF": self.fatigued.copy(),
            "TL": self.target_load.copy(),
            "RC": 1.0 - self.fatigued,
        }

    def held_capacity(self, load: float) -> np.ndarray:
        """RC per actuator after holding ``load`` (share of maximum) long enough to settle:
        fatigue F*TL balances recovery (r*R within the endurance limit, R above it), so
        RC = 1 - F*TL / recovery.  What a rest on the feet can recover to."""
        recovery = self._rest_recovery if load <= self.endurance_limit else self.R
        return 1.0 - self.F * load / recovery

    # -- dynamics ---------------------------------------------------------------------------
    def step(self, demand, dt: float) -> np.ndarray:
        """Advance by dt under a demanded load (fraction of max; its magnitude, clipped to 1).

        Returns the load the muscles deliver this step: min(demand, RC) for the torque bound
        (RC before the step, so a joint cannot borrow strength it is about to regain), the
        clipped activation for 3CC-r.
        """
        demand = np.minimum(np.abs(demand), self._ones)
        if math.isnan(np.dot(demand, demand)):
            raise FatigueParameterError("fatigue demand contains NaN (the simulation diverged)")
        if dt != self._cached_dt:
            self._prepare(dt)
        self.target_load = demand
        if self.formulation == "torque_bound":
            delivered = np.minimum(demand, 1.0 - self.fatigued)
            for _ in range(self._substeps):
                self._substep_torque_bound(demand)
            return delivered
        for _ in range(self._substeps):
            self._substep_activation_clip(demand)
        return self.active.copy()

    def step_torque(self, torque, tau_max, dt: float) -> np.ndarray:
        """Book a demanded joint torque and return the torque the fatigued joint can apply.

        TL = min(|tau|/tau_max, 1); applied = sign(tau) * delivered * tau_max, so under the
        torque bound the torque is clip(tau, -RC*tau_max, +RC*tau_max).
        """
        torque = np.asarray(torque, dtype=np.float64)
        delivered = self.step(torque / tau_max, dt)
        return np.copysign(delivered * tau_max, torque)

    def _substep_torque_bound(self, target: np.ndarray) -> None:
        active, fatigued = self.active, self.fatigued
        gap = target - active
        # At or above target (gap <= 0): relax at LR, recover at r*R.  Below it: recruit at LD,
        # no more than MR holds (min(gap, MR) is gap itself when gap <= 0), recover at R.
        relaxing = gap <= 0.0
        flow = np.where(relaxing, self._hLR, self._hLD) * np.minimum(gap, self.resting)
        fatigue_flow = self._hF * active
        # A load within the endurance limit recovers like rest (r*R), recruiting or not.
        recovery = np.where(relaxing | (target <= self.endurance_limit), self._hrR, self._hR)
        self.active = active + (flow - fatigue_flow)
        self.fatigued = fatigued + (fatigue_flow - recovery * fatigued)
        self.resting = np.maximum(1.0 - self.active - self.fatigued, 0.0)

    def _substep_activation_clip(self, demand: np.ndarray) -> None:
        active, resting, fatigued = self.active, self.resting, self.fatigued
        kept = self._keep * active
        feasible_low = self._floor * active
        feasible_high = np.minimum(kept + self._hLD * resting, 1.0)
        new_active = np.minimum(np.maximum(demand, feasible_low), feasible_high)
        # r*R at rest, within the endurance limit and while relaxing, R while holding or
        # recruiting.  (The torque bound's "MA >= TL" rule means the same there: its MA settles
        # just below a held target; here the clip delivers the target exactly, so ">=" would
        # grant r*R during every hold.)
        resting_or_relaxing = (demand < active) | (demand <= self.endurance_limit)
        recovery_flow = np.where(resting_or_relaxing, self._hrR, self._hR) * fatigued
        self.fatigued = fatigued + self._hF * active - recovery_flow
        self.active = new_active
        self.resting = np.maximum(1.0 - new_active - self.fatigued, 0.0)
