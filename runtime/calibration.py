"""Strength calibration: tau_max per DoF from a fresh pass over the clip.

Why: a fresh character must be able to do what the animator keyed; fatigue then takes strength
away from there, so its effect is graded instead of an arbitrary cliff.
"""
from __future__ import annotations

from dataclasses import replace
import math

import numpy as np

from .body import proxy
from .engines.chooser import importable, limb_simulator
from .engines.limbs import limb_rate_for
from .floor.stretches import MixedSimulator
from .floor.work import FloorSimulator
from .motion.clip import Clip
from .reference.reference import Reference
from .reference.rigid_body import Body
from .srb.simulator import SrbSettings, SrbSimulator

FLOOR_MARGIN = 1.05      # floor work's calibrated strength over the largest sustained load
# The engine whose upper body measures strength, whichever engine then simulates the take (the
# zips carry it on every platform): see strength_engine.
STRENGTH_ENGINE = "mujoco"


def calibrate_tau_max(ref: Reference, body: Body, settings: "SrbSettings | None" = None,
                      margin: float = 1.05, limbs=None, until: float | None = None,
                      floor_stretches=None, record: "list | None" = None) -> np.ndarray:
    """Strength per DoF from the fresh motion (seed "Discovering Fatigued Movements", eq. 10):
    the largest torque met while performing the clip unfatigued (a leg lowering the body: over
    its yielding strength, see effort.yielding_strength), times ``margin``, never below
    the proxy's default; left and right take the larger of the pair so the body stays symmetric.
    With ``limbs`` (a fresh LimbSimulator) the upper body is measured too, its motors allowed
    three times the default while measuring.  The feet bear where the pose holds them (they do
    not roll under their load: feet.bearing_corners), so strength is that of the motion as
    keyed, whatever balance the take finds.  ``until``: stop at this phase (default the end).
    ``floor_stretches``: (per-frame mask, static loads) where floor work holds the body up
    (runtime.floor.stretches): there the loads of holding it up count instead of the SRB's.
    ``record``: a list that receives (phase, |torque| per DoF) at every step (the fresh
    motion's loads, for directed tiredness: runtime.fatigue.direction).

    Why: a fresh character must be able to do what the animator keyed; fatigue then takes
    strength away from there, so its effect is graded instead of an arbitrary cliff."""
    measuring = body
    if limbs is not None:
        generous = body.tau_max.copy()
        generous[limbs.dofs] *= 3.0
        measuring = replace(body, tau_max=generous)
        limbs.reset(ref.clip.root_pos[0], ref.clip.root_rot[0], ref.clip.joint_rots[0])
    # The keyed motion's demands, its moment included: the contact forces as a tired body's
    # (contact_qp._centre_of_mass_first is for a fresh take, not for what the legs must carry).
    keyed = settings or SrbSettings()
    keyed = replace(keyed, qp=replace(keyed.qp, moment_cost=math.inf))
    sim = SrbSimulator(ref, measuring, None, keyed, limbs=limbs)
    sim.feet_roll = False
    if floor_stretches is not None:
        mask, loads = floor_stretches
        sim = MixedSimulator(sim, FloorSimulator(ref, measuring, loads, None, settings), mask)
    peak = np.zeros(len(body.tau_max))
    end = ref.duration if until is None else min(until, ref.duration)
    while sim.phase < end - 1e-9 and not sim.fallen and sim.time < 3.0 * end + 1.0:
        sim.step()
        met = np.abs(sim.torque) / sim.strength_factor
        np.maximum(peak, met, out=peak)
        if record is not None:
            record.append((sim.phase, met))
    return strength_over(body.tau_max, peak, margin)


def take_strength(clip: Clip, source: Clip, ref: Reference, body: Body, settings, with_limbs: bool,
                  plan=None, floor_stretches=None, engine: str = "pybullet",
                  record: "list | None" = None) -> np.ndarray:
    """calibrate_tau_max for a take: a fresh pass over ``ref`` (the take's own reference of
    ``source``, which plays ``clip``), the upper body simulated too when ``with_limbs``.  Loop
    cycles repeat, so two cycles tell as much as twenty: a looping source stops there.
    ``floor_stretches``, ``record``: as calibrate_tau_max's."""
    until = 2.0 * clip.duration if clip.loop and source.duration > 2.0 * clip.duration + 1e-9 else None
    limbs = (limb_simulator(strength_engine(engine), body.height, rate=limb_rate_for((settings or SrbSettings()).rate),
                            mass=body.mass, plan=plan) if with_limbs else None)
    try:
        return calibrate_tau_max(ref, body, settings, limbs=limbs, until=until, floor_stretches=floor_stretches,
                                 record=record)
    finally:
        if limbs is not None:
            limbs.close()


def strength_engine(engine: str) -> str:
    """The engine that measures a take's strength: STRENGTH_ENGINE where it imports, else the
    take's own ``engine``.  Why one for all: strength is the character's, not the engine's.  Two
    engines' motors share one joint's moment among its three axes differently at a peak
    (dance_a's right shoulder: 69 N m on one axis in PyBullet, 53 in MuJoCo, the joint's whole
    moment within 10 %), so strength measured in each made one character's shoulders 15-25 %
    stronger on one axis and weaker on another, and its tired arms dropped half as far again on
    one engine.  Measured in one, both engines' takes share the strength and agree."""
    return STRENGTH_ENGINE if importable(STRENGTH_ENGINE) else engine


def floor_strength(default: np.ndarray, loads: np.ndarray) -> np.ndarray:
    """Strength per DoF for floor work: the default, raised to FLOOR_MARGIN times the largest
    sustained load (floor.static_torques), left and right alike (as calibrate_tau_max does for the
    SRB's loads: the fresh motion is exactly within strength, fatigue takes it from there)."""
    return strength_over(default, loads.max(axis=0) if len(loads) else np.zeros_like(default), FLOOR_MARGIN)


def strength_over(default: np.ndarray, peak: np.ndarray, margin: float) -> np.ndarray:
    """Strength per DoF: ``margin`` times the largest torque ``peak`` met (left and right alike,
    the larger of the pair: the body stays symmetric), never below ``default``."""
    peak = peak.copy()
    for right, left in proxy.mirrored_dofs():
        peak[right] = peak[left] = max(peak[right], peak[left])
    return np.maximum(default, margin * peak)
