"""Effort economy: what a torque costs a tired joint, and how far tired joints yield to their loads.

Why: the fatigue bound alone lets a joint hold any load below RC * tau_max at full accuracy;
people trade accuracy for effort, more the less capacity is left.  One cost (1 / RC^2 - 1) weighs
the legs' QP effort, the knees' sag and the limbs' give.
"""
from __future__ import annotations


import numpy as np



ECCENTRIC_STRENGTH = 1.3  # a leg lowering the body holds this much more than it can push (see _yielding_strength)


YIELD_SPEED = 0.1         # m/s (1.62 m body) of sinking at which a stance counts as fully yielding


LIMB_LOAD_SMOOTHING = 0.25  # s: the load a tired limb yields to is averaged this long (motor spikes)


MAX_GIVE_RATE = 0.5        # rad/s: how fast a tired joint's yield can change


MAX_GIVE = 0.5             # rad (about 30 deg): the most a tired joint yields to its load (a hanging arm)


MAX_KNEE_GIVE = 0.25       # rad (about 15 deg): ... a knee under the body (deeper costs it more, not less)


MAX_UPRIGHT_GIVE = 0.25    # rad: ... a trunk or neck carrying what is above it (likewise)


UPRIGHT_JOINTS = ("chest", "neck")


def fatigue_cost(capacity):
    """How much dearer than fresh a joint's torque is at residual capacity RC: 1 / RC^2 - 1
    (RC floored at 0.05).  Nothing when fresh, a little when tired, a lot when exhausted: the
    effort economy of tired limbs and knees (_limb_give, _update_sag) and the legs' QP effort
    cost (leg_effort) all weigh loads by it."""
    rc = np.maximum(capacity, 0.05)
    return 1.0 / (rc * rc) - 1.0


def leg_effort(capacity: np.ndarray, strength: np.ndarray) -> np.ndarray:
    """Per leg DoF, the scale whose squared product with the torque is the QP's effort cost:
    (tau / strength)^2 * (1 / RC^2 - 1).

    Why: a torque costs more the less capacity is left, so a tired body loads its fresher joints
    and leg (how a tired person shifts weight onto the fresher leg) and pushes a little less
    where the motion allows; like the limbs' economy it costs nothing fresh, so a take that
    starts fresh starts exactly like a fresh one."""
    return np.sqrt(fatigue_cost(capacity)) / strength


def smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)
