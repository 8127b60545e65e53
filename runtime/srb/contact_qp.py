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
                         effort_scale=None):
    """Corner forces (n, 3) minimising the error to the desired COM acceleration and moment about
    the COM (both weighted in acceleration units) within a friction pyramid.

    ``torque_rows`` (k, 3n) and ``torque_bounds`` (k, 2) add lo <= rows @ f <= hi (fatigue), and
    an effort cost sum((effort_scale * torque)^2) (see leg_effort).
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
        C = np.hstack([C, torque_rows.T, -torque_rows.T])
        lows = np.concatenate([lows, torque_bounds[:, 0], -torque_bounds[:, 1]])
    import quadprog    # compiled wheel: imported when a take runs, never at register

    try:
        f = quadprog.solve_qp(G, a, C, lows, 0)[0]
    except ValueError:
        # Infeasible (cannot happen while the bounds admit f = 0): no force this step.
        f = np.zeros(3 * n)
    return f.reshape(n, 3)


_WRENCH_TEMPLATES: dict[int, np.ndarray] = {}


def _wrench_template(n: int) -> np.ndarray:
    """(6, 3n) wrench map of n point forces with the force rows filled (the moment rows are zero)."""
    A = _WRENCH_TEMPLATES.get(n)
    if A is None:
        A = np.zeros((6, 3 * n))
        A[0, 0::3] = A[1, 1::3] = A[2, 2::3] = 1.0
        _WRENCH_TEMPLATES[n] = A
    return A
