"""runtime.reference.balance: whether flat feet can carry a clip as given (planted-foot tilt, where the
centre of pressure must be)."""
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from runtime.reference import balance
from runtime.body import proxy
from runtime.maths import quat
from runtime.reference import reference as srb_reference
from made_clips import idle_clip


def _reference(kin, body, clip):
    return srb_reference.build_reference(clip, kin.analyse(clip), body)


def test_standing_still_on_flat_feet_is_balanced(kin, body):
    ref = _reference(kin, body, idle_clip(2.0))
    report = balance.report(ref, body)
    assert report["stance_foot_tilt_deg"] < 8.0    # the proxy's rest pose on the walk's first root
    assert report["cop_outside_pct"] == 0.0
    # Standing still, the centre of pressure is under the centre of mass.
    cop = balance.reference_cop(ref, body.mass)
    np.testing.assert_allclose(cop, ref.com[:, :2], atol=1e-6)


def test_swaying_faster_than_feet_allow_is_outside(kin, body):
    """The whole body shaken sideways 5 cm at 2 Hz (8 m/s^2): no sole can push that hard
    sideways without the pressure leaving it."""
    idle = idle_clip(2.0)
    t = np.arange(idle.frames) / idle.fps
    root = idle.root_pos.copy()
    root[:, 1] += 0.05 * np.sin(2 * np.pi * 2.0 * t)
    ref = _reference(kin, body, replace(idle, root_pos=root))
    report = balance.report(ref, body)
    assert report["cop_outside_pct"] > 50.0
    assert report["cop_outside_p90_m"] > 0.2
    # Where the body accelerates to the left (+y), the pressure is to the right of the COM.
    cop = balance.reference_cop(ref, body.mass)
    pushing_left = ref.com_acc[:, 1] > 2.0
    assert np.all(cop[pushing_left, 1] < ref.com[pushing_left, 1])


def test_planted_feet_rolled_onto_their_edges_are_tilted(kin, body):
    idle = idle_clip(1.0)
    joints = idle.joint_rots.copy()
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    roll = quat.from_rotvec(np.array([np.radians(20.0), 0.0, 0.0]))
    for side in ("right_ankle", "left_ankle"):
        joints[:, names.index(side)] = roll
    ref = _reference(kin, body, replace(idle, joint_rots=joints))
    tilt = balance.stance_foot_tilt_deg(ref)
    flat = np.nanmedian(balance.stance_foot_tilt_deg(_reference(kin, body, idle)))
    assert 15.0 < np.nanmedian(tilt) - flat < 25.0


def test_the_centre_of_pressure_supplies_the_momentum_rate():
    """The floor's force m (c'' + g) acting at the centre of pressure has, about the COM, the
    horizontal moment the motion's rate of angular momentum needs (any motion, random here)."""
    rng = np.random.default_rng(4)
    T, mass = 50, 60.0
    ref = SimpleNamespace(com=rng.normal([0, 0, 0.9], 0.1, (T, 3)), com_acc=rng.normal(0, 2.0, (T, 3)),
                          momentum_rate=rng.normal(0, 20.0, (T, 3)), floor=0.02)
    cop = balance.reference_cop(ref, mass)
    force = mass * (ref.com_acc + [0.0, 0.0, balance.GRAVITY])
    lever = np.column_stack([cop, np.full(T, ref.floor)]) - ref.com
    np.testing.assert_allclose(np.cross(lever, force)[:, :2], ref.momentum_rate[:, :2], atol=1e-9)
