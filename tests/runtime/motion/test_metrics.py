"""Fatigue-effect metrics of the bench on hand-made takes (known answers)."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.motion import metrics
from runtime.body import proxy
from runtime.maths import quat
from runtime.motion.clip import Clip
from runtime.motion.take import Take

J = len(proxy.DEFAULT_JOINTS)
SHOULDERS = [i for i, j in enumerate(proxy.DEFAULT_JOINTS) if j.name.endswith("_shoulder")]


def arm_take(elevation_deg: np.ndarray, reference_time: np.ndarray, fps: float = 30.0) -> Take:
    """A take whose upper arms are raised by ``elevation_deg`` (about the shoulder's z axis) per frame."""
    T = len(elevation_deg)
    rots = np.zeros((T, J, 4))
    rots[..., 3] = 1.0
    for s in SHOULDERS:
        rots[:, s] = quat.from_rotvec(np.radians(elevation_deg)[:, None] * np.array([0.0, 0.0, 1.0]))
    clip = Clip("arms", fps, np.zeros((T, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (T, 1)), rots)
    dofs = len(proxy.dof_table())
    zeros = np.zeros((T, dofs))
    return Take(mode="srb", fps=fps, clip=clip, reference_time=reference_time,
                fatigue={k: zeros for k in ("MA", "MR", "MF", "TL", "RC")}, torque=zeros,
                contacts=np.ones((T, 2), dtype=bool), residual_force=np.zeros((T, 3)), com=np.zeros((T, 3)))


def test_arm_drop_matches_moments_of_the_source_motion_not_frames():
    # fresh: arms up 90 degrees for the middle second of 3 s; tired: the same motion played at half
    # speed (6 s) with the arms 20 degrees lower while raised, then a long hold with arms down
    t_fresh = np.arange(90) / 30.0
    fresh_arm = np.where((t_fresh >= 1.0) & (t_fresh < 2.0), 90.0, 0.0)
    t_tired = np.minimum(np.arange(300) / 60.0, 3.0 - 1 / 30)
    tired_arm = np.where((t_tired >= 1.0) & (t_tired < 2.0), 70.0, 0.0)
    drop = metrics.arm_elevation_drop_deg(arm_take(tired_arm, t_tired), arm_take(fresh_arm, t_fresh))
    assert drop == pytest.approx(20.0, abs=1.0)
    # the whole-take mean would have hidden most of it (the hold dilutes it)
    whole = metrics.arm_elevation_deg(arm_take(fresh_arm, t_fresh)) - metrics.arm_elevation_deg(
        arm_take(tired_arm, t_tired))
    assert whole < 0.85 * drop


def test_arm_drop_is_none_when_the_arms_never_rise():
    t = np.arange(60) / 30.0
    low = np.full(60, 10.0)
    assert metrics.arm_elevation_drop_deg(arm_take(low, t), arm_take(low, t)) is None


KNEES = [i for i, j in enumerate(proxy.DEFAULT_JOINTS) if j.name.endswith("_knee")]


def knee_take(flexion_deg: np.ndarray, reference_time: np.ndarray, events=(), fps: float = 30.0) -> Take:
    take = arm_take(np.zeros(len(flexion_deg)), reference_time, fps)
    for k in KNEES:
        take.clip.joint_rots[:, k] = quat.from_rotvec(np.radians(flexion_deg)[:, None] * np.array([0.0, 0.0, 1.0]))
    take.events = list(events)
    return take


def test_knee_gain_compares_the_same_moments_and_leaves_rests_and_the_end_hold_out():
    # fresh: knees bend 10 -> 40 degrees over 3 s; tired: the same at half speed, 5 degrees deeper,
    # with a 1 s rest on straight legs in the middle and a straight-legged hold after the end
    t_fresh = np.arange(90) / 30.0
    fresh = knee_take(10.0 + 10.0 * t_fresh, t_fresh)
    t_tired = np.concatenate([np.arange(90) / 60.0, np.full(30, 1.5), 1.5 + np.arange(90) / 60.0, np.full(60, 89 / 30)])
    bent = 15.0 + 10.0 * t_tired
    bent[90:120] = 0.0                 # the rest
    bent[210:] = 0.0                   # the hold after the source's end
    tired = knee_take(bent, t_tired, [{"frame": 90, "kind": "rest"}, {"frame": 120, "kind": "resume"}])
    assert metrics.knee_flexion_gain_deg(tired, fresh) == pytest.approx(5.0, abs=0.3)
    # a whole-take mean difference would read the straight rest and hold as "less bent"
    assert metrics.knee_flexion_series(tired).mean() - metrics.knee_flexion_series(fresh).mean() < 0
    # a take that only rests and holds has nothing to compare
    idle = knee_take(np.zeros(30), np.full(30, 89 / 30))
    assert metrics.knee_flexion_gain_deg(idle, fresh) is None


def test_knee_gain_reads_each_knee_while_its_own_foot_is_down_so_a_run_has_one():
    # a run: one foot down at a time, the stance knee at 20 degrees, the swing knee folded to 90;
    # tired, the stance knee bends 5 degrees deeper, and for 4 frames the tired body stumbles onto
    # both feet while the fresh one has a leg swinging
    t = np.arange(90) / 30.0
    right_down = (np.arange(90) % 30) < 15
    fresh = knee_take(np.zeros(90), t)
    tired = knee_take(np.zeros(90), t)
    fresh.contacts = np.stack([right_down, ~right_down], axis=1)
    tired.contacts = fresh.contacts.copy()
    tired.contacts[40:44] = True
    for take, stance in ((fresh, 20.0), (tired, 25.0)):
        for leg, k in enumerate(KNEES):    # right, left in the joints' order
            deg = np.where(take.contacts[:, leg], stance, 90.0)
            take.clip.joint_rots[:, k] = quat.from_rotvec(np.radians(deg)[:, None] * np.array([0.0, 0.0, 1.0]))
    assert metrics.knee_flexion_gain_deg(tired, fresh) == pytest.approx(5.0)
    # both feet down in the tired take only: the stumble against a swinging fresh knee
    assert metrics.matched_gain(tired, fresh, metrics.knee_flexion_series,
                                lambda mine, theirs: mine.all(axis=1)) < -20.0
