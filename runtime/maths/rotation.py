"""Rotation matrices, cross products and matrix-to-quaternion conversion on small arrays.

Each helper has a vectorised form (over leading axes) and, where the simulation step calls it on
one pose, a twin on Python floats that does the same operations in the same order (the same
bits, about ten times cheaper on 3-vectors).  Element-wise sums instead of ``@`` where the BLAS
kernel's choice could change the last bit.
"""
from __future__ import annotations

import math

import numpy as np

from . import quat

EYE3 = np.eye(3)


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last axis (np.cross costs ~10x more on tiny arrays); broadcasts."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    np.multiply(a1, b2, out=out[..., 0])
    out[..., 0] -= a2 * b1
    np.multiply(a2, b0, out=out[..., 1])
    out[..., 1] -= a0 * b2
    np.multiply(a0, b1, out=out[..., 2])
    out[..., 2] -= a1 * b0
    return out


def cross3(a, b) -> np.ndarray:
    """a x b of two 3-vectors on Python floats (the same products and differences as cross)."""
    a0, a1, a2 = a.tolist() if isinstance(a, np.ndarray) else a
    b0, b1, b2 = b.tolist() if isinstance(b, np.ndarray) else b
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cross of two (n, 3) arrays on Python floats (faster for a few rows, same bits)."""
    return np.array([(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
                     for (a0, a1, a2), (b0, b1, b2) in zip(a.tolist(), b.tolist())]).reshape(-1, 3)


def quat_matrix(q) -> np.ndarray:
    """Rotation matrix of one unit quaternion (x, y, z, w), on Python floats for speed."""
    x, y, z, w = q.tolist() if isinstance(q, np.ndarray) else (float(c) for c in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def mv(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """M @ v over leading axes ((..., 3, 3) by (..., 3)), as element-wise products and sums (no
    BLAS kernel whose choice could change the last bit)."""
    return M[..., 0] * v[..., 0, None] + M[..., 1] * v[..., 1, None] + M[..., 2] * v[..., 2, None]


def mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B over leading axes ((..., 3, 3) each), element-wise like mv."""
    return (A[..., :, 0, None] * B[..., None, 0, :] + A[..., :, 1, None] * B[..., None, 1, :]
            + A[..., :, 2, None] * B[..., None, 2, :])


def mtm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A^T @ B over leading axes."""
    return mm(np.swapaxes(A, -1, -2), B)


def rotation_matrix_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Matrix of the minimal rotation taking direction a to direction b (Rodrigues)."""
    a = a / math.sqrt(a @ a)
    b = b / math.sqrt(b @ b)
    v0, v1, v2 = cross3(a, b).tolist()
    c = float(a @ b)
    if c < -0.999999:
        return quat_matrix(rotation_between(a, b))
    K = np.array([[0.0, -v2, v1], [v2, 0.0, -v0], [-v1, v0, 0.0]])   # _skew(v)
    return EYE3 + K + K @ K * (1.0 / (1.0 + c))


def rotation_matrices_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Matrices of the minimal rotations taking directions a to directions b (Rodrigues), over
    leading axes."""
    a = a / np.sqrt((a * a).sum(axis=-1))[..., None]
    b = b / np.sqrt((b * b).sum(axis=-1))[..., None]
    v = cross(a, b)
    c = (a * b).sum(axis=-1)
    zero = np.zeros_like(c)
    K = np.stack([np.stack([zero, -v[..., 2], v[..., 1]], -1), np.stack([v[..., 2], zero, -v[..., 0]], -1),
                  np.stack([-v[..., 1], v[..., 0], zero], -1)], -2)
    opposite = c < -0.999999
    out = EYE3 + K + mm(K, K) * (1.0 / np.where(opposite, 1.0, 1.0 + c))[..., None, None]
    for i in np.ndindex(opposite.shape):   # half turns: any axis normal to a
        if opposite[i]:
            out[i] = quat_matrix(rotation_between(a[i], b[i]))
    return out


def matrices_to_quats(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (x, y, z, w) of rotation matrices over leading axes (Shepperd's method:
    each from its largest of trace and diagonal, so no division by a small number)."""
    r00, r11, r22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    tr = r00 + r11 + r22
    case = np.where(tr > 0, 0, np.where((r00 > r11) & (r00 > r22), 1, np.where(r11 > r22, 2, 3)))
    radicand = np.choose(case, [tr + 1.0, 1.0 + r00 - r11 - r22, 1.0 + r11 - r00 - r22, 1.0 + r22 - r00 - r11])
    s = 2.0 * np.sqrt(np.maximum(radicand, 1e-300))
    d21, d02, d10 = R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]
    s01, s02, s12 = R[..., 0, 1] + R[..., 1, 0], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1]
    quarter = 0.25 * s
    q = np.stack([
        np.choose(case, [d21 / s, quarter, s01 / s, s02 / s]),
        np.choose(case, [d02 / s, s01 / s, quarter, s12 / s]),
        np.choose(case, [d10 / s, s02 / s, s12 / s, quarter]),
        np.choose(case, [quarter, d21 / s, d02 / s, d10 / s]),
    ], axis=-1)
    return q / np.sqrt((q * q).sum(axis=-1))[..., None]


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method)."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()
    tr = r00 + r11 + r22
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [(r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s, 0.25 * s]
    elif r00 > r11 and r00 > r22:
        s = 2.0 * math.sqrt(1.0 + r00 - r11 - r22)
        q = [0.25 * s, (r01 + r10) / s, (r02 + r20) / s, (r21 - r12) / s]
    elif r11 > r22:
        s = 2.0 * math.sqrt(1.0 + r11 - r00 - r22)
        q = [(r01 + r10) / s, 0.25 * s, (r12 + r21) / s, (r02 - r20) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r22 - r00 - r11)
        q = [(r02 + r20) / s, (r12 + r21) / s, 0.25 * s, (r10 - r01) / s]
    q = np.array(q)
    return q / math.sqrt(q.dot(q))     # == q / np.linalg.norm(q)


def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quaternion of the minimal rotation taking direction a to direction b."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    c = np.cross(a, b)
    d = float(a @ b)
    if d < -0.999999:
        axis = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0.0, 1.0, 0.0])
        return quat.from_axis_angle(axis, np.pi)
    q = np.array([c[0], c[1], c[2], 1.0 + d])
    return q / np.linalg.norm(q)


def skew(a: np.ndarray) -> np.ndarray:
    """The matrix of a x (cross product with ``a``)."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
