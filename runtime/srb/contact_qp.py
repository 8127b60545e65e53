"""The contact QP: corner forces that best realise the desired centroidal acceleration.

Why a QP: a small convex problem finds forces inside a linearised friction cone (and, under
fatigue, inside the legs' fatigued torque bounds) that come closest to the acceleration the
controller wants; what it cannot supply shows as a residual instead of as a fall.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..reference.rigid_body import Body, GRAVITY


@dataclass
class QpSettings:
    friction: float = 0.8
    angular_weight: float = 0.05     # weight of angular vs linear acceleration error
    regulariser: float = 1e-6        # on forces (N^2 scaled): keeps the QP strictly convex
    max_normal_bw: float = 6.0       # per-foot cap on the normal force, body weights
    effort_weight: float = 0.05      # weight of sum((tau / (RC*tau_max))^2) against tracking
    moment_cost: float = 6.0         # m/s^2 (0.6 g): the most centre-of-mass acceleration the moment may cost (see _centre_of_mass_first)


TOTAL_TOLERANCE = 1e-3   # N: how far the re-solve's total force may stray from the centre of mass's (_centre_of_mass_first)

_FRICTION_CACHE: dict[tuple[int, float, float], tuple[np.ndarray, np.ndarray]] = {}


def _friction_constraints(n: int, mu: float, max_normal: float) -> tuple[np.ndarray, np.ndarray]:
    """Columns C and bounds b of C^T f >= b: pyramid |f_t| <= mu f_n, 0 <= f_n <= max_normal."""
    key = (n, mu, max_normal)
    if key not in _FRICTION_CACHE:
        rows, lows = [], []
        for c in range(n):
            for row, low in (((0, 0, 1), 0.0), ((-1, 0, mu), 0.0), ((1, 0, mu), 0.0),
                             ((0, -1, mu), 0.0), ((0, 1, mu), 0.0), ((0, 0, -1), -max_normal)):
                v = np.zeros(3 * n)
                v[3 * c:3 * c + 3] = row
                rows.append(v)
                lows.append(low)
        _FRICTION_CACHE[key] = (np.array(rows).T.copy(), np.array(lows))
    return _FRICTION_CACHE[key]


def solve_contact_forces(body: Body, com, rot_matrix, acc_des, moment_des, corners,
                         torque_rows=None, torque_bounds=None, settings: QpSettings = QpSettings(),
                         effort_scale=None, strength=None):
    """Corner forces (n, 3) minimising the error to the desired COM acceleration and moment about
    the COM (both weighted in acceleration units) within a friction pyramid.

    ``torque_rows`` (k, 3n) and ``torque_bounds`` (k, 2) add lo <= rows @ f <= hi (fatigue), and
    an effort cost sum((effort_scale * torque)^2) (see leg_effort); without them, forces whose
    moment costs the centre of mass more than ``settings.moment_cost`` are re-solved centre of
    mass first (_centre_of_mass_first), within the legs' strength where ``strength`` gives it (a
    callable returning (rows, bounds) as torque_rows' and torque_bounds': made only for a re-solve).
    """
    n = len(corners)
    if n == 0:
        return np.zeros((0, 3))
    r = (corners - com).T
    A = _wrench_template(n).copy()
    A[3, 1::3] = -r[2]
    A[3, 2::3] = r[1]
    A[4, 0::3] = r[2]
    A[4, 2::3] = -r[0]
    A[5, 0::3] = -r[1]
    A[5, 1::3] = r[0]
    b = np.empty(6)
    b[:3] = body.mass * (acc_des - GRAVITY)
    b[3:] = moment_des
    # Residual in acceleration units: linear rows / m, angular rows through I^-1.
    Minv = np.zeros((6, 6))
    Minv[0, 0] = Minv[1, 1] = Minv[2, 2] = 1.0 / body.mass
    Minv[3:, 3:] = rot_matrix @ body.inertia_inv @ rot_matrix.T * math.sqrt(settings.angular_weight)
    MA = Minv @ A
    Mb = Minv @ b
    G = MA.T @ MA
    G.ravel()[::3 * n + 1] += settings.regulariser     # the diagonal (G is a fresh C-order array)
    a = MA.T @ Mb
    C, lows = _friction_constraints(n, settings.friction, settings.max_normal_bw * body.mass * 9.81 / 4)
    if torque_rows is not None and len(torque_rows):
        if effort_scale is not None:
            scaled = torque_rows * effort_scale[:, None]
            G += settings.effort_weight * (scaled.T @ scaled)
        C, lows = _within(C, lows, torque_rows, torque_bounds)
    import quadprog    # compiled wheel: imported when a take runs, never at register

    try:
        f = quadprog.solve_qp(G, a, C, lows, 0)[0]
    except ValueError:
        # Infeasible (cannot happen while the bounds admit f = 0): no force this step.
        return np.zeros((n, 3))
    if torque_rows is None and np.linalg.norm(A[:3] @ f - b[:3]) > settings.moment_cost * body.mass:
        if strength is not None:
            C, lows = _within(C, lows, *strength())
        f = _centre_of_mass_first(f, G, a, C, lows, A[:3], body.mass, b[:3], settings.regulariser)
    return f.reshape(n, 3)


def _within(C, lows, rows, bounds) -> tuple[np.ndarray, np.ndarray]:
    """Constraints C^T f >= lows with bounds[:, 0] <= rows @ f <= bounds[:, 1] added."""
    return np.hstack([C, rows.T, -rows.T]), np.concatenate([lows, bounds[:, 0], -bounds[:, 1]])


def _centre_of_mass_first(f, G, a, C, lows, A_lin, mass: float, want, regulariser: float) -> np.ndarray:
    """Forces ``f`` of a body without fatigue bounds that missed the centre of mass's
    acceleration by more than moment_cost, re-solved with the centre of mass first: the total
    force that comes closest to ``want`` (N; the moment left out), then, with that total, the
    moment as near as it allows, both within the constraints ``C``, ``lows`` (friction, and the
    legs' strength: the forces the weights chose may ask more than it, the re-solve never does).
    Asked to fall faster than gravity, the feet push nothing: any push lifts the wrong way.

    Why: the orientation follows the source whatever the contacts supply (the moment they miss is
    reported as residual), but the centre of mass moves on the forces: bought with friction, the
    source's rate of angular momentum cost a fresh kick, dance or run 3-10 m/s^2 of the centre
    of mass's acceleration (median over steps), the body drifted off its path and the planted
    feet with it (ankles 0.15-0.23 m off the source's relative to the hips), and a root that
    drops 2.6 cm in a frame threw the body 0.29 m up.  Where the moment costs little (a walk)
    the forces are as weighted.  Not under fatigue: there the moment the source asks is what the
    legs carry and tire from (the centre of mass first there too, or in the fresh pass that
    measures strength, left a tired jump 0.94 of the fresh one's height, a tired run at 0.96 of
    its speed and a tired dancer without a rest)."""
    import quadprog

    if want[2] <= 0.0:
        return np.zeros_like(f)
    rows = A_lin / mass              # in acceleration units, as the weighted problem's
    G_lin = rows.T @ rows
    G_lin.ravel()[::G.shape[0] + 1] += regulariser
    try:
        first = quadprog.solve_qp(G_lin, rows.T @ (want / mass), C, lows, 0)[0]
    except ValueError:
        return f
    total = A_lin @ first
    # The total held within TOTAL_TOLERANCE rather than exactly: rounding where it lies on the
    # friction cone's edge cannot make the moment's problem infeasible.
    C_eq = np.hstack([A_lin.T, -A_lin.T, C])
    lows_eq = np.concatenate([total - TOTAL_TOLERANCE, -total - TOTAL_TOLERANCE, lows])
    try:
        return quadprog.solve_qp(G, a, C_eq, lows_eq, 0)[0]
    except ValueError:
        return first


_WRENCH_TEMPLATES: dict[int, np.ndarray] = {}


def _wrench_template(n: int) -> np.ndarray:
    """(6, 3n) wrench map of n point forces with the force rows filled (the moment rows are zero)."""
    A = _WRENCH_TEMPLATES.get(n)
    if A is None:
        A = np.zeros((6, 3 * n))
        A[0, 0::3] = A[1, 1::3] = A[2, 2::3] = 1.0
        _WRENCH_TEMPLATES[n] = A
    return A
