"""Strength calibration: tau_max per DoF from a fresh pass over the clip.

Why: a fresh character must be able to do what the animator keyed; fatigue then takes strength
away from there, so its effect is graded instead of an arbitrary cliff.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import proxy
from .body import Body
from .reference import Reference
from .srb import SrbSimulator, SrbSettings


def calibrate_tau_max(ref: Reference, body: Body, settings: "SrbSettings | None" = None,
                      margin: float = 1.05, limbs=None, until: float | None = None,
                      floor_stretches=None) -> np.ndarray:
    """Strength per DoF from the fresh motion (seed "Discovering Fatigued Movements", eq. 10):
    the largest torque met while performing the clip unfatigued (a leg lowering the body: over
    its yielding strength, see effort.yielding_strength), times ``margin``, never below
    the proxy's default; left and right take the larger of the pair so the body stays symmetric.
    With ``limbs`` (a fresh LimbSimulator) the upper body is measured too, its motors allowed
    three times the default while measuring.  ``until``: stop at this phase (default the end).
    ``floor_stretches``: (per-frame mask, static loads) where floor work holds the body up
    (runtime.stretches): there the loads of holding it up count instead of the SRB's.

    Why: a fresh character must be able to do what the animator keyed; fatigue then takes
    strength away from there, so its effect is graded instead of an arbitrary cliff."""
    measuring = body
    if limbs is not None:
        generous = body.tau_max.copy()
        generous[limbs.dofs] *= 3.0
        measuring = replace(body, tau_max=generous)
        limbs.reset(ref.clip.root_pos[0], ref.clip.root_rot[0], ref.clip.joint_rots[0])
    sim = SrbSimulator(ref, measuring, None, settings, limbs=limbs)
    if floor_stretches is not None:
        from .floor import FloorSimulator
        from .stretches import MixedSimulator

        mask, loads = floor_stretches
        sim = MixedSimulator(sim, FloorSimulator(ref, measuring, loads, None, settings), mask)
    peak = np.zeros(len(body.tau_max))
    end = ref.duration if until is None else min(until, ref.duration)
    while sim.phase < end - 1e-9 and not sim.fallen and sim.time < 3.0 * end + 1.0:
        sim.step()
        np.maximum(peak, np.abs(sim.torque) / sim.strength_factor, out=peak)
    for right, left in proxy.mirrored_dofs():
        peak[right] = peak[left] = max(peak[right], peak[left])
    return np.maximum(body.tau_max, margin * peak)
