"""Quaternion helpers: a rotation's quaternion sign (q or -q) never changes an angle read off it."""
from __future__ import annotations

import numpy as np

from runtime.maths import quat


def _hinges(n: int = 400) -> np.ndarray:
    """Rotations about z over the whole circle, both ends included."""
    return quat.from_axis_angle([0.0, 0.0, 1.0], np.linspace(-np.pi, np.pi, n))


def test_a_hinge_angle_is_the_same_for_either_quaternion_sign():
    """Before: 2 atan2(z, w) of -q is the angle less (or plus) 2 pi: a retargeted elbow whose
    quaternions had w < 0 was driven 2 pi away from where the animator put it."""
    angles = np.linspace(-np.pi, np.pi, 400)[1:]           # (-pi, pi]
    q = quat.from_axis_angle([0.0, 0.0, 1.0], angles)
    for sign in (1.0, -1.0):
        got = quat.hinge_angle(sign * q)
        assert np.allclose(got, angles, atol=1e-12)
        assert np.all((got > -np.pi) & (got <= np.pi))
    assert np.array_equal(quat.hinge_angle(q), quat.hinge_angle(-q))
    # A half turn is +pi whichever sign holds it.
    assert quat.hinge_angle(np.array([0.0, 0.0, -1.0, 0.0])) == np.pi == quat.hinge_angle(np.array([0.0, 0.0, 1.0, 0.0]))


def test_the_scalar_twin_gives_the_vectorised_bits():
    q = _hinges()
    for sign in (1.0, -1.0):
        vector = quat.hinge_angle(sign * q)
        assert [quat.hinge_angle4(r) for r in (sign * q).tolist()] == vector.tolist()
        assert np.array_equal(np.array([quat.hemisphere4(r) for r in (sign * q).tolist()]), quat.hemisphere(sign * q))


def test_hemisphere_keeps_the_rotation_and_leaves_w_positive_quaternions_alone():
    rng = np.random.default_rng(5)
    q = quat.normalize(rng.normal(size=(200, 4)))
    h = quat.hemisphere(q)
    assert np.all(h[:, 3] >= 0.0)
    assert np.allclose(quat.to_matrix(h), quat.to_matrix(q))
    positive = quat.hemisphere(h)
    assert positive is h or np.array_equal(positive, h)
