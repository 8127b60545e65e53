"""Can a body on flat feet balance this clip as given?  Two measurements of the source motion.

Why: torque mode (runtime.control) drives the articulated proxy with no help but a penalised
root wrench, so it can follow a clip only where the clip's own balance is possible on the
proxy's soles.  Two properties of the source decide much of that, and neither shows in the
source's poses:

- ``stance_foot_tilt_deg``: how far a foot the source marks as planted is tilted off the floor.
  A tilted planted foot stands on an edge or a corner, whose support cannot carry a moment.
- ``cop_outside``: where the centre of pressure must be for the source's centre-of-mass
  acceleration and rate of angular momentum (cart-table model with the momentum term):

      cop = c + (floor - c_z) / (g + c_z'') * c''_xy + (-Ldot_y, Ldot_x) / (m (g + c_z''))

  and how far that lies outside the flat soles of the feet the source has down.  Where it lies
  outside, no contact force can produce the motion: the SRB simulator records the difference as
  its residual moment, an articulated body without that moment tips over.

Both are about the feet alone.  ``./fatigue bench`` reports them per clip (fields
``stance_foot_tilt_deg``, ``cop_outside_pct``, ``cop_outside_p90_m``; none for floor work); see
docs/simulation.md for what they explain.
"""
from __future__ import annotations

import numpy as np

from ..maths import quat, repeatable
from .legs import flatten_foot
from .rigid_body import kin_scale
from .support import outside_support

GRAVITY = 9.81
OUTSIDE = 0.01   # m (1.62 m body): a centre of pressure further out than this counts as outside


def flat_soles(ref, body, t: int) -> np.ndarray:
    """(n, 2) sole corners of the feet the source has down at frame ``t``, laid flat on the floor
    with the foot's heading kept."""
    R = quat.to_matrix(ref.foot_rot[t])
    pts = [(ref.ankle[t, k] + body.sole @ flatten_foot(R[k]).T)[:, :2] for k in range(2) if ref.contact[t, k]]
    return np.vstack(pts) if pts else np.zeros((0, 2))


def stance_foot_tilt_deg(ref) -> np.ndarray:
    """(T, 2) tilt of each foot's sole off the horizontal (degrees), NaN where the foot is up."""
    up = quat.to_matrix(ref.foot_rot)[..., :, 1]          # the foot link's y axis points up off the sole
    tilt = np.degrees(repeatable.arccos(np.clip(up[..., 2], -1.0, 1.0)))
    return np.where(ref.contact, tilt, np.nan)


def cart_table_cop(com: np.ndarray, com_acc: np.ndarray, floor: float, least: float):
    """Centre of pressure (xy) of a body whose centre of mass is at ``com`` with acceleration
    ``com_acc`` (..., 3), without the momentum term, and the floor's vertical push per unit of
    mass (g + acceleration; 1 where it is not counted).  NaN where the floor carries less than
    ``least`` of the body's weight (the body falls at or near g: nothing presses)."""
    support = GRAVITY + com_acc[..., 2]
    ok = support > least * GRAVITY
    s = np.where(ok, support, 1.0)
    height = com[..., 2] - floor
    cop = com[..., :2] - (height / s)[..., None] * com_acc[..., :2]
    return np.where(ok[..., None], cop, np.nan), s


def reference_cop(ref, mass: float) -> np.ndarray:
    """(T, 2) centre of pressure the source's motion calls for; NaN where nothing presses on the
    floor (the body falls at g or faster)."""
    cop, s = cart_table_cop(ref.com, ref.com_acc, ref.floor, 0.05)
    cop[:, 0] -= ref.momentum_rate[:, 1] / (mass * s)
    cop[:, 1] += ref.momentum_rate[:, 0] / (mass * s)
    return cop


def cop_outside(ref, body) -> np.ndarray:
    """(T,) how far the called-for centre of pressure lies outside the flat soles of the feet
    that are down (m); NaN where no foot is down or nothing presses."""
    cop = reference_cop(ref, body.mass)
    out = np.full(len(cop), np.nan)
    for t in range(len(cop)):
        if ref.contact[t].any() and np.isfinite(cop[t]).all():
            out[t] = outside_support(cop[t], flat_soles(ref, body, t))
    return out


def report(ref, body) -> dict:
    """Per-clip summary for the bench: median planted-foot tilt, share of stance frames whose
    centre of pressure lies outside the feet (more than OUTSIDE), and the 90th percentile of how
    far outside (scaled to the 1.62 m body)."""
    tilt = stance_foot_tilt_deg(ref)
    outside = cop_outside(ref, body)
    outside = outside[np.isfinite(outside)] / kin_scale(body)
    return {
        "stance_foot_tilt_deg": float(np.nanmedian(tilt)) if np.isfinite(tilt).any() else None,
        "cop_outside_pct": float(100.0 * np.mean(outside > OUTSIDE)) if outside.size else None,
        "cop_outside_p90_m": float(np.percentile(outside, 90)) if outside.size else None,
    }
