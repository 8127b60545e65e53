"""Rotations the retarget needs beside runtime.maths: the nearest rotation to a scaled matrix,
Blender's Euler orders, the swing off a hinge's axis (numpy, no bpy).

``mat_to_quat`` and ``swing`` do what runtime.maths.rotation's ``matrices_to_quats`` and
``rotation_matrix_between`` do by other arithmetic (the largest of trace and diagonal picked by
argmax and one normalisation; an axis-angle quaternion): the same rotations to 1e-15 and 1e-13,
not the same bits (29 % and 2 % of random rotations agree bit for bit), and every take the
retarget feeds changes with either (30 of the 36 corpus_blend, blend and demo fingerprints), so the
retarget keeps its own until a fingerprint rebase."""
from __future__ import annotations

import math

import numpy as np

from ...runtime.maths import quat, repeatable


def array64(m) -> np.ndarray:
    return np.array(m, dtype=np.float64)


def polar(m: np.ndarray) -> np.ndarray:
    """Nearest rotation to each (..., 3, 3) matrix (drops scale)."""
    u, _, vt = np.linalg.svd(np.asarray(m, dtype=np.float64))
    d = np.asarray(np.sign(np.linalg.det(u @ vt)))
    u = u.copy()
    u[..., :, 2] *= d[..., None]
    return u @ vt


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices -> (..., 4) quaternions x, y, z, w (w >= 0)."""
    m = np.asarray(m, dtype=np.float64)
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    tr = m00 + m11 + m22
    cands = np.stack([
        np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1], 1 + tr], -1),
        np.stack([1 + m00 - m11 - m22, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0], m[..., 2, 1] - m[..., 1, 2]], -1),
        np.stack([m[..., 0, 1] + m[..., 1, 0], 1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1], m[..., 0, 2] - m[..., 2, 0]], -1),
        np.stack([m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22, m[..., 1, 0] - m[..., 0, 1]], -1),
    ], -2)
    pick = np.argmax(np.stack([tr, m00, m11, m22], -1), axis=-1)
    q = np.take_along_axis(cands, pick[..., None, None], axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., 3:4] < 0, -q, q)


def swing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Minimal rotation (3x3) turning unit vector a onto unit vector b."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    axis = np.cross(a, b)
    s = np.linalg.norm(axis)
    c = float(np.dot(a, b))
    if s < 1e-9:
        if c > 0:
            return np.eye(3)
        perp = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(perp) < 1e-6:
            perp = np.cross(a, [0.0, 1.0, 0.0])
        return quat.to_matrix(quat.from_axis_angle(perp, np.pi))
    return quat.to_matrix(quat.from_axis_angle(axis, math.atan2(s, c)))


def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _axis_rot(axis: int, angle: np.ndarray) -> np.ndarray:
    c, s = repeatable.cos(angle), repeatable.sin(angle)
    r = np.zeros(angle.shape + (3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    r[..., axis, axis] = 1.0
    r[..., i, i] = c
    r[..., j, j] = c
    r[..., i, j] = -s
    r[..., j, i] = s
    return r


def euler_to_mat(e: np.ndarray, order: str) -> np.ndarray:
    """Blender Euler (order 'XYZ' = X applied first) -> (..., 3, 3)."""
    r = None
    for ch in order:
        k = "XYZ".index(ch)
        m = _axis_rot(k, e[..., k])
        r = m if r is None else m @ r
    return r


def twist_off_axis(q: np.ndarray) -> np.ndarray:
    """Angle (rad) of the part of local rotations q (x,y,z,w) that is not about local Z."""
    twist = np.zeros_like(q)
    twist[..., 2] = q[..., 2]
    twist[..., 3] = q[..., 3]
    n = np.linalg.norm(twist, axis=-1, keepdims=True)
    twist = np.where(n > 1e-9, twist / np.maximum(n, 1e-12), quat.IDENTITY)
    swing = quat.multiply(q, quat.conjugate(twist))
    return quat.angle_between(swing, np.broadcast_to(quat.IDENTITY, swing.shape))
