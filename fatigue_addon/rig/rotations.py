"""Rotations the retarget needs beside runtime.maths (which has matrices to quaternions and the
minimal rotation between two directions): the nearest rotation to a scaled matrix, Blender's Euler
orders, the part of a rotation off a hinge's axis (numpy, no bpy)."""
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
