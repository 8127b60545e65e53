"""Breathing: how fast and how deep a tired take breathes, and the chest, shoulders and head it moves.

Why: after hard work a person breathes about 36 times a minute, deeply (the chest and shoulders
rise with each breath), and slows back toward 12-15 a minute as they recover
(`shared/reference/fatigue_kinematics.json`: Blackie et al. 1991; textbook rest values).  A take
that works hard and does not breathe reads as a machine.

The body's exertion is read from the take itself, so it follows the work done: what the muscles
are doing now (their mechanical power, sum |tau * omega|, and what they hold, the target load TL,
both over the body's strength) drives it up, and what they have spent (the strength-weighted
fatigued share, MF) keeps part of it up while they recover.  Exertion follows that drive with a lag (faster up than down), and sets the rate and the
depth of each breath.  Each breath is a layer on the simulated pose (the physics does not feel
it): the chest extends, the shoulders lift the arms a little and the head rises with the chest.
The take carries the breath itself (``Take.breath``, 0 at the end of an exhalation, the depth at
the top of an inhalation) for the bake to key as a ``breath`` property.

A take simulated without fatigue does not breathe: it is the source as the body can perform it,
unchanged bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..body import proxy
from ..maths import quat, repeatable
from ..motion.take import Take

REST_RATE = 14.0     # breaths/min at rest (12-15; textbook)
PEAK_RATE = 36.0     # breaths/min at the end of maximal exercise (Blackie et al. 1991: 36.1 +- 9.2)
REST_DEPTH = 0.2     # a breath at rest over the deepest (about 0.5 L of 2.5 L; Blackie et al. 1991)
POWER_FULL = 0.2     # 1/s: joint power over the body's summed strength of hard work (a run 0.2-0.3, a walk 0.05)
HOLD_FULL = 0.6      # the strength-weighted load that alone is hard work (standing holds 0.05-0.1)
SPENT_FULL = 0.5     # the body's strength-weighted fatigued share that, alone, breathes halfway up
SPENT_SHARE = 0.4    # how much of the drive what was spent can keep up on its own (the rest is the work now)
RISE_S = 3.0         # s: exertion follows harder work this fast ...
SETTLE_S = 4.0       # s: ... and settles after it this slowly
CHEST_LIFT = math.radians(4.0)      # the chest extends this far from the deepest breath out to the deepest in
SHOULDER_LIFT = math.radians(1.5)   # each upper arm lifts this far sideways with it
HEAD_KEEP = 0.5                     # of the chest's lift the neck takes back (the head rises half as much)


def joint_rates(take: Take) -> np.ndarray:
    """Per frame and DoF (the torques' layout), the joint's angular velocity (rad/s) from the
    take's poses: a ball joint's in its own frame, a hinge's about its axis."""
    joints = take.clip.joint_rots
    if take.frames < 2:
        return np.zeros_like(take.torque)
    turn = quat.to_rotvec(quat.multiply(quat.conjugate(joints[:-1]), joints[1:])) * take.fps
    rates = np.concatenate([turn[:, i] if j.dofs == 3 else turn[:, i, 2:3]
                            for i, j in enumerate(proxy.DEFAULT_JOINTS)], axis=1)
    return np.vstack([rates[:1], rates])


def exertion(take: Take) -> np.ndarray:
    """Per frame, the body's exertion in [0, 1]: the lagged drive of the work it does now and of
    what it has spent (see the module's docstring)."""
    strength = np.asarray(take.tau_max if take.tau_max is not None else np.ones(take.torque.shape[1]), dtype=float)
    weight = strength / strength.sum()
    power = np.abs(np.asarray(take.torque, dtype=float) * joint_rates(take)).sum(axis=1) / strength.sum()
    held = np.asarray(take.fatigue["TL"], dtype=float) @ weight
    spent = np.asarray(take.fatigue["MF"], dtype=float) @ weight
    drive = ((1.0 - SPENT_SHARE) * np.minimum(power / POWER_FULL + held / HOLD_FULL, 1.0)
             + SPENT_SHARE * np.minimum(spent / SPENT_FULL, 1.0))
    dt = 1.0 / take.fps
    up, down = 1.0 - math.exp(-dt / RISE_S), 1.0 - math.exp(-dt / SETTLE_S)
    out = np.empty(take.frames)
    # The shot begins mid-performance: a body tired at its first frame has been working to get
    # so, so it starts at the drive of its first RISE_S, not from rest.
    level = float(drive[:max(1, int(round(RISE_S / dt)))].mean())
    for i, d in enumerate(drive.tolist()):
        level += (d - level) * (up if d > level else down)
        out[i] = level
    return out


def breath_depth(rate: np.ndarray) -> np.ndarray:
    """How deep (over the deepest) a breath at ``rate`` breaths/min is: deeper as it quickens."""
    return REST_DEPTH + (1.0 - REST_DEPTH) * (rate - REST_RATE) / (PEAK_RATE - REST_RATE)


def breath_series(take: Take) -> tuple[np.ndarray, np.ndarray]:
    """Per frame: the breath (0 at the end of an exhalation, the breath's depth at the top of an
    inhalation) and the breathing rate (breaths/min)."""
    level = exertion(take)
    rate = REST_RATE + (PEAK_RATE - REST_RATE) * level
    depth = breath_depth(rate)
    phase = 2.0 * math.pi * np.concatenate([[0.0], np.cumsum(rate[:-1] / 60.0 / take.fps)])
    return depth * 0.5 * (1.0 - repeatable.cos(phase)), rate


def breathe(take: Take, still: np.ndarray | None = None) -> Take:
    """``take`` (simulated under fatigue) breathing: its chest, shoulders and neck turned by each
    breath, ``breath`` set.  ``still`` (per frame): frames whose pose must stay as it is (floor
    work: hands, knees or back on the floor where the source puts them); they breathe in
    ``breath`` only."""
    if take.frames == 0:
        return take
    breath, rate = breath_series(take)
    # About the simulated pose, not on top of it: a breath in lifts the chest as far as the breath
    # out lowers it, so the take's posture (what the physics chose) stays its mean.
    swing = breath - 0.5 * breath_depth(rate)
    if still is not None:
        swing = np.where(np.asarray(still, dtype=bool), 0.0, swing)
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    joints = take.clip.joint_rots.copy()
    lateral = np.zeros((take.frames, 3))
    lateral[:, 2] = swing * CHEST_LIFT
    chest, neck = names.index("chest"), names.index("neck")
    joints[:, chest] = quat.multiply(joints[:, chest], quat.from_rotvec(lateral))
    joints[:, neck] = quat.multiply(joints[:, neck], quat.from_rotvec(-HEAD_KEEP * lateral))
    for side, sign in (("right", -1.0), ("left", 1.0)):
        i = names.index(f"{side}_shoulder")
        lift = np.zeros((take.frames, 3))
        lift[:, 0] = sign * SHOULDER_LIFT * swing
        joints[:, i] = quat.multiply(quat.from_rotvec(lift), joints[:, i])
    stats = {**take.stats, "breaths_per_min_peak": float(rate.max()), "breaths_per_min_end": float(rate[-1])}
    return replace(take, clip=replace(take.clip, joint_rots=joints), breath=breath, stats=stats)
