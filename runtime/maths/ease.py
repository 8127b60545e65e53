"""Easing: a blend that starts and ends at rest, for motion that must not jerk."""
from __future__ import annotations

import numpy as np


def smoothstep(x: float) -> float:
    """3x^2 - 2x^3 of ``x`` clamped to [0, 1]: 0 and 1 with zero slope at both ends."""
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


def smoothsteps(x: np.ndarray) -> np.ndarray:
    """smoothstep of every element of ``x``."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)
