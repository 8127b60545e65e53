"""The legs: two-link IK onto simulated feet, the joint torques of contact forces, and the feet's
floor contact (flat while resting, rising onto the toes out of reach).
"""
from __future__ import annotations

import math

import numpy as np

from ..maths import quat, repeatable
from ..maths.rotation import cross, cross3, matrices_to_quats, matrix_to_quat, mm, mtm, mv, quat_matrix, rotation_matrices_between, rotation_matrix_between
from .rigid_body import Body


LEG_DOWN = np.array([0.0, -1.0, 0.0])   # thigh and shin direction in their link frames (URDF Y-up)
TOE_PIVOT_REACH = 0.999     # hip-ankle distance over leg length a stance foot keeps within (toe pivot)
MAX_TOE_PIVOT = 1.0   # rad (about 57 deg): the furthest a stance heel rises to keep the toes down


def knee_position(hip: np.ndarray, ankle: np.ndarray, forward: np.ndarray, thigh: float, shin: float) -> np.ndarray:
    """Knee centre of a two-link leg bending forward (towards ``forward``)."""
    # Element-wise arithmetic on Python floats (the same operations as on arrays); the dot
    # products stay numpy's (BLAS) so the results are the same bits as the vectorised form.
    h0, h1, h2 = hip.tolist()
    a0, a1, a2 = ankle.tolist()
    d = np.array((a0 - h0, a1 - h1, a2 - h2))
    norm = math.sqrt(d.dot(d))          # == np.linalg.norm(d) (same dot, same sqrt), cheaper
    dist = min(max(norm, 1e-6), thigh + shin - 1e-9)
    scale = max(norm, 1e-9)
    d0, d1, d2 = d.tolist()
    u = np.array((d0 / scale, d1 / scale, d2 / scale))
    along = (thigh ** 2 - shin ** 2 + dist ** 2) / (2 * dist)
    h = math.sqrt(max(thigh ** 2 - along ** 2, 0.0))
    fu = float(forward @ u)
    u0, u1, u2 = u.tolist()
    f0, f1, f2 = forward.tolist()
    bend = np.array((f0 - fu * u0, f1 - fu * u1, f2 - fu * u2))
    nb = math.sqrt(bend.dot(bend))
    if nb > 1e-9:
        b0, b1, b2 = bend.tolist()
        b0, b1, b2 = b0 / nb, b1 / nb, b2 / nb
    else:
        b0, b1, b2 = 1.0, 0.0, 0.0
    return np.array((h0 + along * u0 + h * b0, h1 + along * u1 + h * b1, h2 + along * u2 + h * b2))


def leg_torque_rows(joints: list[np.ndarray], frames: list[np.ndarray], corners: np.ndarray) -> np.ndarray:
    """(7, 3n) rows mapping corner forces to hip(3), knee(1), ankle(3) torques of one leg.

    The torque of force f at point x about joint o along axis u is u . ((x - o) x f)
    = f . (u x (x - o)).  ``frames`` give the axes: hip and ankle 3x3 (columns), knee its axis.
    """
    hip, knee, ankle = (np.asarray(j, dtype=np.float64).tolist() for j in joints)
    # On Python floats: the same products and differences as the vectorised
    # cross(axes, corners - origins), at a fraction of the cost for 7 x 4 points.
    hip_axes = list(zip(*np.asarray(frames[0], dtype=np.float64).tolist()))       # columns
    ankle_axes = list(zip(*np.asarray(frames[2], dtype=np.float64).tolist()))
    axes = hip_axes + [tuple(np.asarray(frames[1], dtype=np.float64).tolist())] + ankle_axes
    origins = (hip, hip, hip, knee, ankle, ankle, ankle)
    points = np.asarray(corners, dtype=np.float64).tolist()
    rows = []
    for (a0, a1, a2), (o0, o1, o2) in zip(axes, origins):
        row = []
        for c0, c1, c2 in points:
            l0, l1, l2 = c0 - o0, c1 - o1, c2 - o2
            row += (a1 * l2 - a2 * l1, a2 * l0 - a0 * l2, a0 * l1 - a1 * l0)
        rows.append(row)
    return np.array(rows).reshape(7, 3 * len(points))


def stance_leg_rows(body: "Body", k: int, root_pos: np.ndarray, root_R: np.ndarray, ankle: np.ndarray,
                    foot_R: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """leg_torque_rows of leg ``k`` standing on ``corners``: hip from the root, knee where the
    leg's IK puts it (its axis normal to the leg's plane; the root's lateral axis if straight)."""
    hip = root_pos + root_R @ body.hip[k]
    knee = knee_position(hip, ankle, root_R[:, 0], body.thigh, body.shin)
    knee_axis = cross3(knee - hip, ankle - knee)
    norm = math.sqrt(knee_axis @ knee_axis)
    knee_axis = knee_axis / norm if norm > 1e-9 else root_R[:, 1]
    return leg_torque_rows([hip, knee, ankle], [root_R, knee_axis, foot_R], corners)


def leg_ik(body: Body, side: int, root_pos, root_R, q_hip_ref, ankle_target, foot_R_target):
    """Hip, knee angle and ankle local rotation putting the ankle at ``ankle_target`` with the foot
    oriented ``foot_R_target``.  The knee angle follows from the hip-ankle distance; the hip keeps
    the reference's twist and knee plane and swings minimally onto the target.  Vectorised over
    leading axes (one pose or a whole take's frames)."""
    root_R = np.asarray(root_R, dtype=np.float64)
    hip = np.asarray(root_pos, dtype=np.float64) + mv(root_R, body.hip[side])
    to_target = np.asarray(ankle_target, dtype=np.float64) - hip
    l1, l2 = body.thigh, body.shin
    d = np.clip(np.sqrt((to_target * to_target).sum(axis=-1)), abs(l1 - l2) + 1e-6, l1 + l2 - 1e-6)
    interior = repeatable.arccos(np.clip((l1 * l1 + l2 * l2 - d * d) / (2 * l1 * l2), -1.0, 1.0))
    knee = -(np.pi - interior)                       # DeepMimic knees flex to negative angles
    W_hip_ref = mm(root_R, quat.to_matrix(q_hip_ref))
    c, s_ = repeatable.cos(knee), repeatable.sin(knee)
    zero, one = np.zeros_like(c), np.ones_like(c)
    Rk = np.stack([np.stack([c, -s_, zero], -1), np.stack([s_, c, zero], -1),
                   np.stack([zero, zero, one], -1)], -2)   # about the knee's local z
    shin = l2 * Rk[..., :, 1] * LEG_DOWN[1]          # Rk @ (l2 * LEG_DOWN): LEG_DOWN is -y
    ankle_now = mv(W_hip_ref, shin + l1 * LEG_DOWN)
    W_hip = mm(rotation_matrices_between(ankle_now, to_target), W_hip_ref)
    q_hip = matrices_to_quats(mtm(root_R, W_hip))
    q_ankle = matrices_to_quats(mtm(mm(W_hip, Rk), np.asarray(foot_R_target, dtype=np.float64)))
    return q_hip, knee, q_ankle


def leg_ik_one(body: Body, side: int, root_pos, root_R, q_hip_ref, ankle_target, foot_R_target):
    """leg_ik for one pose on Python floats (about ten times faster than the vectorised form on a
    single pose: torque mode asks for one pose every step)."""
    hip = root_pos + root_R @ body.hip[side]
    to_target = ankle_target - hip
    d = float(np.sqrt(to_target @ to_target))
    l1, l2 = body.thigh, body.shin
    d = min(max(d, abs(l1 - l2) + 1e-6), l1 + l2 - 1e-6)
    # numpy's arccos (its bits differ from math.acos); math.cos / math.sin match numpy's.
    interior = float(repeatable.arccos(min(max((l1 * l1 + l2 * l2 - d * d) / (2 * l1 * l2), -1.0), 1.0)))
    knee = -(np.pi - interior)                       # DeepMimic knees flex to negative angles
    W_hip_ref = root_R @ quat_matrix(q_hip_ref)
    c, s_ = math.cos(knee), math.sin(knee)
    Rk = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])   # about the knee's local z
    ankle_now = W_hip_ref @ (l1 * LEG_DOWN + Rk @ (l2 * LEG_DOWN))
    W_hip = rotation_matrix_between(ankle_now, to_target) @ W_hip_ref
    q_hip = matrix_to_quat(root_R.T @ W_hip)
    q_ankle = matrix_to_quat((W_hip @ Rk).T @ foot_R_target)
    return q_hip, knee, q_ankle


def flatten_foot(R: np.ndarray) -> np.ndarray:
    """The foot frame turned flat on the floor, keeping its heading (link x forward, y up)."""
    fwd = np.array([R[0, 0], R[1, 0], 0.0])
    n = np.linalg.norm(fwd)
    fwd = fwd / n if n > 1e-9 else np.array([1.0, 0.0, 0.0])
    up = np.array([0.0, 0.0, 1.0])
    return np.column_stack([fwd, up, np.cross(fwd, up)])


def pivot_on_toes(body: "Body", hip: np.ndarray, ankle: np.ndarray, foot_R: np.ndarray):
    """A stance foot the leg cannot reach (hip to ankle beyond the straight leg): the heel rises
    about the toes, as in a push-off, until the ankle is within reach (at most MAX_TOE_PIVOT).
    Returns the ankle and foot rotation; unchanged when the ankle is within reach.

    Why: the body's centre of mass runs a little ahead of the source's at the end of a run's
    stance, and the leg IK, stretched straight, lifted the whole foot 7-13 cm off the floor for
    the stance's last frame or two.  Rising onto the toes is what a leg does there."""
    reach = TOE_PIVOT_REACH * (body.thigh + body.shin)
    if float(np.linalg.norm(ankle - hip)) <= reach:
        return ankle, foot_R
    toe = ankle + foot_R @ np.array([body.sole[:, 0].max(), body.sole_drop, 0.0])
    axis = foot_R[:, 2]                               # the foot's lateral axis (link z)
    lever = ankle - toe                               # normal to the axis: the ankle circles the toes
    across = cross3(axis, lever)
    # |toe + lever cos t + across sin t - hip|^2 = reach^2  <=>  A cos t + B sin t = C
    d = toe - hip
    A, B = 2.0 * float(d @ lever), 2.0 * float(d @ across)
    C = reach * reach - float(d @ d) - float(lever @ lever)
    r = math.hypot(A, B)
    turn = -MAX_TOE_PIVOT                             # negative turns about the lateral axis lift the heel
    if r > 1e-12 and abs(C) <= r:
        phi, spread = math.atan2(B, A), math.acos(C / r)
        for t in (phi - spread, phi + spread):
            t = math.remainder(t, 2.0 * math.pi)
            if -MAX_TOE_PIVOT <= t <= 0.0:
                turn = max(turn, t)                   # the smallest rise that reaches
    c, s_ = math.cos(turn), math.sin(turn)
    R = quat_matrix(quat.from_axis_angle(axis, turn))
    return toe + c * lever + s_ * across, R @ foot_R


def leg_length(body: "Body", knee_bend: float) -> float:
    """Hip-to-ankle distance of a leg with its knee bent ``knee_bend`` radians."""
    t, s = body.thigh, body.shin
    return math.sqrt(max(t * t + s * s + 2.0 * t * s * repeatable.cos(knee_bend), 0.0))
