"""Transcendental functions whose bits do not depend on where numpy put the arrays.

Why: numpy (1.26 on AVX-512 CPUs) chooses per call between its SIMD loop and the C library's
scalar loop for tan, arcsin, arccos, arctan, arctan2, exp, log, log1p, power, ... by asking
whether the input and output memory ranges overlap.  For a strided input (``q[..., 3]``) that
range is computed as stride x length and runs past the array's last element, so an output that
malloc happened to place just behind the input is taken for an overlap and the call goes to the
other loop: same numbers in, last bit different out.  Where malloc places an array depends on
the heap's history (a bake in a background thread, a previous bake), so the same take was not
bit-identical run to run.  A contiguous input's range is exact, and a fresh output never
overlaps it, so every call takes the same loop.  The simulation and the retarget call these
instead of numpy's ufuncs (a test keeps it so).
"""
from __future__ import annotations

import numpy as np


def _contiguous(x):
    """``x`` as an array whose memory range is exact (0-d stays 0-d, unlike ascontiguousarray)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy()


def sin(x):
    return np.sin(_contiguous(x))


def cos(x):
    return np.cos(_contiguous(x))


def arccos(x):
    return np.arccos(_contiguous(x))


def arcsin(x):
    return np.arcsin(_contiguous(x))


def arctan2(y, x):
    return np.arctan2(_contiguous(y), _contiguous(x))


def exp(x):
    return np.exp(_contiguous(x))


def log1p(x):
    return np.log1p(_contiguous(x))


def power(base, exponent):
    return np.power(_contiguous(base), _contiguous(exponent))


def tanh(x):
    return np.tanh(_contiguous(x))
