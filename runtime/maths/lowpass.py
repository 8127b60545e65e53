"""Rates of change of sampled motion that do not amplify capture noise.

Why: the simulation reads velocities and accelerations of the source (centre-of-mass
acceleration, angular momentum and its rate, how still a foot is).  Differencing frame to frame
multiplies noise by the frame rate once per derivative: a 120 fps capture with 1 degree of joint
jitter or 3 mm of root jitter (ordinary for raw optical capture) gave centre-of-mass accelerations
of tens of m/s^2, feet that never counted as still, and walks that drifted 0.2-0.8 m off their
path.  Biomechanics low-passes such data at 6-10 Hz before inverse dynamics; so do we, with a
zero-phase Gaussian whose width is set in seconds, so a clip means the same motion at any frame
rate.  Human movement that matters for balance and load lies below that band (a landing's
deceleration takes about 0.1 s); at 30 fps the kernel barely spans a frame.
"""
from __future__ import annotations

import math

import numpy as np

from . import repeatable

SIGMA = 0.02   # s: Gaussian width; half power at about 9 Hz


def smooth(x: np.ndarray, fps: float, axis: int = 0, width: float = SIGMA) -> np.ndarray:
    """``x`` low-passed along ``axis`` (samples at ``fps``; a Gaussian ``width`` seconds wide),
    zero-phase.  The ends are extended point-symmetrically (a motion under way at the first frame
    keeps its velocity there), so a constant stays constant and a ramp stays the same ramp."""
    x = np.asarray(x, dtype=np.float64)
    sigma = width * fps
    radius = int(math.ceil(3.0 * sigma))
    if radius < 1 or x.shape[axis] <= radius:
        return x.copy()
    taps = np.arange(-radius, radius + 1, dtype=np.float64)
    weights = repeatable.exp(-0.5 * (taps / sigma) ** 2)
    weights /= weights.sum()
    moved = np.moveaxis(x, axis, 0)
    n = moved.shape[0]
    padded = np.concatenate([2.0 * moved[:1] - moved[radius:0:-1], moved,
                             2.0 * moved[-1:] - moved[-2:-radius - 2:-1]], axis=0)
    out = np.zeros_like(moved)
    for k, w in enumerate(weights.tolist()):
        out += w * padded[k:k + n]
    return np.moveaxis(out, 0, axis)


def derivative(x: np.ndarray, fps: float, axis: int = 0) -> np.ndarray:
    """Rate of change of ``x`` per second along ``axis``: central differences of the low-passed
    signal."""
    return np.gradient(smooth(x, fps, axis), 1.0 / fps, axis=axis)
