"""Quaternion helpers, (x, y, z, w) like PyBullet, vectorised over leading axes."""
from __future__ import annotations

import math

import numpy as np

from . import repeatable

IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


def normalize(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n < 1e-9):
        raise ValueError("zero-length quaternion (corrupt rotation data)")
    return q / n


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a*b (apply b, then a)."""
    ax, ay, az, aw = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bx, by, bz, bw = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ], axis=-1)


def conjugate(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    u, w = q[..., :3], q[..., 3:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def from_axis_angle(axis, angle) -> np.ndarray:
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    half = 0.5 * np.asarray(angle, dtype=np.float64)[..., None]
    return np.concatenate([axis * repeatable.sin(half), repeatable.cos(half)], axis=-1)


def to_rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle, angle in [0, pi]) of unit quaternions."""
    q = np.asarray(q, dtype=np.float64)
    q = np.where(q[..., 3:4] < 0, -q, q)
    s = np.linalg.norm(q[..., :3], axis=-1, keepdims=True)
    angle = 2.0 * repeatable.arctan2(s, q[..., 3:4])
    scale = np.where(s > 1e-12, angle / np.maximum(s, 1e-12), 2.0)
    return q[..., :3] * scale


def from_rotvec(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    half = 0.5 * angle
    scale = np.where(angle > 1e-12, repeatable.sin(half) / np.maximum(angle, 1e-12), 0.5)
    return np.concatenate([v * scale, repeatable.cos(half)], axis=-1)


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Geodesic angle (radians) between rotations a and b."""
    d = np.abs(np.sum(np.asarray(a) * np.asarray(b), axis=-1))
    return 2.0 * repeatable.arccos(np.clip(d, -1.0, 1.0))


def hemisphere(q: np.ndarray) -> np.ndarray:
    """The one of q and -q (the same rotation) with w >= 0; where w is 0, the one with z >= 0 (a
    half turn about a hinge's z: +pi, not -pi).  Unchanged (the same array) where no sign flips."""
    q = np.asarray(q, dtype=np.float64)
    w, z = q[..., 3], q[..., 2]
    flip = (w < 0.0) | ((w == 0.0) & (z < 0.0))
    return np.where(flip[..., None], -q, q) if flip.any() else q


def hinge_angle(q: np.ndarray) -> np.ndarray:
    """Angle (rad, in (-pi, pi]) about local z of rotations q (..., 4) that turn about z only (a knee,
    an elbow): 2 atan2(z, w) of q's w >= 0 sign (hemisphere), so q and -q give the same angle.

    Why: a retargeted elbow's quaternion had w < 0 for a whole clip (the product of two w >= 0
    world rotations, kept continuous from its first frame); 2 atan2(z, w) of it is the angle less
    2 pi, and the motors drove the arm there: a boxing guard's elbows bent 3-10 degrees, not 74-130."""
    q = hemisphere(q)
    return 2.0 * repeatable.arctan2(q[..., 2], q[..., 3])


def make_continuous(q: np.ndarray, axis: int = 0) -> np.ndarray:
    """Flip signs along ``axis`` so consecutive quaternions lie in the same hemisphere."""
    q = np.moveaxis(np.array(q, dtype=np.float64), axis, 0)
    if q.shape[0] < 2:
        return np.moveaxis(q, 0, axis)
    step = np.where(np.sum(q[1:] * q[:-1], axis=-1) < 0, -1.0, 1.0)
    flips = np.concatenate([np.ones_like(step[:1]), np.cumprod(step, axis=0)], axis=0)
    return np.moveaxis(q * flips[..., None], 0, axis)


def slerp(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    """Spherical interpolation from a to b by t in [0, 1] (shortest path)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0, -b, b)
    dot = np.abs(dot)
    theta = repeatable.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = repeatable.sin(theta)
    small = sin_theta < 1e-6
    wa = np.where(small, 1.0 - t, repeatable.sin((1.0 - t) * theta) / np.where(small, 1.0, sin_theta))
    wb = np.where(small, t, repeatable.sin(t * theta) / np.where(small, 1.0, sin_theta))
    return normalize(wa * a + wb * b)


def to_matrix(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    x, y, z, w = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def yaw(q: np.ndarray) -> np.ndarray:
    """Heading angle about world Z of the rotated x axis."""
    fwd = rotate(q, np.array([1.0, 0.0, 0.0]))
    return repeatable.arctan2(fwd[..., 1], fwd[..., 0])


# -- one quaternion on Python floats ------------------------------------------------------------
# The same operations, in the same order, as the vectorised functions above (numpy sums a short
# last axis left to right), so the results are the same bits; for loops that cannot vectorise.
def multiply4(a, b) -> list[float]:
    """multiply() of two quaternions given as 4 floats."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz]


def hemisphere4(q) -> list[float]:
    """hemisphere() of one quaternion given as 4 floats."""
    x, y, z, w = (float(c) for c in q)
    if w < 0.0 or (w == 0.0 and z < 0.0):
        return [-x, -y, -z, -w]
    return [x, y, z, w]


def hinge_angle4(q) -> float:
    """hinge_angle() of one quaternion given as 4 floats (numpy's arctan2, like hinge_angle)."""
    _, _, z, w = hemisphere4(q)
    return float(2.0 * repeatable.arctan2(z, w))


def normalize4(q) -> list[float]:
    """normalize() of one quaternion given as 4 floats."""
    x, y, z, w = q
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n < 1e-9:
        raise ValueError("zero-length quaternion (corrupt rotation data)")
    return [x / n, y / n, z / n, w / n]


def slerp4(a, b, t: float) -> list[float]:
    """slerp() of two quaternions given as 4 floats, by a scalar t."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    dot = ax * bx + ay * by + az * bz + aw * bw
    if dot < 0:
        bx, by, bz, bw = -bx, -by, -bz, -bw
    dot = abs(dot)
    theta = float(repeatable.arccos(min(max(dot, -1.0), 1.0)))   # numpy's arccos: the same bits as above
    sin_theta = math.sin(theta)
    if sin_theta < 1e-6:
        wa, wb = 1.0 - t, t
    else:
        wa = math.sin((1.0 - t) * theta) / sin_theta
        wb = math.sin(t * theta) / sin_theta
    return normalize4([wa * ax + wb * bx, wa * ay + wb * by, wa * az + wb * bz, wa * aw + wb * bw])
