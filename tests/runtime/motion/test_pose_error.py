"""Joint and end-effector error of a take against its source (runtime.motion.pose_error) on hand-made
takes with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from runtime.body import proxy
from runtime.maths import quat
from runtime.motion import pose_error
from runtime.motion.clip import Clip
from runtime.motion.take import Take

NAMES = [j.name for j in proxy.DEFAULT_JOINTS]
Z = np.array([0.0, 0.0, 1.0])
HEIGHT = 1.75
FOREARM_M = 1.035788 * HEIGHT / (4.0 * proxy.DEFAULT_HEIGHT)     # elbow to wrist, humanoid.urdf


def swinging_arm(frames: int, fps: float = 30.0) -> Clip:
    """Standing, the right elbow bending and straightening once a second (0 to 90 deg)."""
    t = np.arange(frames) / fps
    joints = np.tile(quat.IDENTITY, (frames, len(NAMES), 1))
    bend = 0.5 * math.pi * 0.5 * (1.0 - np.cos(2.0 * math.pi * t))
    joints[:, NAMES.index("right_elbow")] = quat.from_rotvec(-bend[:, None] * Z)
    return Clip("arm", fps, np.zeros((frames, 3)), np.tile(quat.IDENTITY, (frames, 1)), joints)


def take_of(clip: Clip, reference_time: np.ndarray) -> Take:
    T = clip.frames
    zeros = np.zeros((T, len(proxy.dof_table())))
    return Take(mode="srb", fps=clip.fps, clip=clip, reference_time=reference_time,
                fatigue={k: zeros for k in ("MA", "MR", "MF", "TL", "RC")}, torque=zeros,
                contacts=np.ones((T, 2), dtype=bool), residual_force=np.zeros((T, 3)), com=np.zeros((T, 3)))


def test_a_take_that_is_its_source_has_no_end_effector_error():
    source = swinging_arm(61)
    err = pose_error.end_effector_error(take_of(source, np.arange(61) / 30.0), source, HEIGHT, fresh=True)
    assert err.worst_m == pytest.approx(0.0, abs=1e-9)
    assert len(err.percentile_m) == len(pose_error.END_EFFECTORS)


def test_a_straightened_elbow_moves_the_hand_by_the_chord_of_its_angle():
    source = swinging_arm(61)
    straight = swinging_arm(61)
    straight.joint_rots[:, NAMES.index("right_elbow")] = quat.IDENTITY
    err = pose_error.end_effector_error(take_of(straight, np.arange(61) / 30.0), source, HEIGHT, fresh=True)
    assert err.worst == "right_wrist"
    assert err.frame == 15                                           # the elbow's 90 deg, half a second in
    # the hand is off by the chord of the elbow's angle; the 95th percentile is near its peak
    peak = 2.0 * FOREARM_M * math.sin(math.radians(90.0) / 2.0)
    assert 0.9 * peak < err.worst_m <= peak + 1e-9
    others = dict(zip(pose_error.END_EFFECTORS, err.percentile_m))
    assert others["left_wrist"] == others["head"] == others["right_ankle"] == pytest.approx(0.0, abs=1e-9)


def test_a_fresh_take_is_held_against_the_same_frame_a_tired_one_against_the_moment_it_shows():
    """A take whose clock skipped 5 frames ahead at frame 20 (an early landing) shows the right
    poses at the wrong frames: a fresh take should have matched the source frame by frame (a
    viewer sees the hand arrive early); a tired take plays the source at its own pace and is
    judged on the poses it shows."""
    source = swinging_arm(61)
    frames = np.arange(61)
    ahead = np.minimum(np.where(frames < 20, frames, frames + 5), 60) / 30.0
    _, rot, joints = source.sample_many(ahead)
    take = take_of(Clip("early", 30.0, np.zeros((61, 3)), rot, joints), ahead)
    fresh = pose_error.end_effector_error(take, source, HEIGHT, fresh=True)
    tired = pose_error.end_effector_error(take, source, HEIGHT, fresh=False)
    assert tired.worst_m == pytest.approx(0.0, abs=1e-6)
    assert fresh.worst == "right_wrist" and fresh.worst_m > 0.05


def test_the_percentile_ignores_a_frame_or_two_of_a_landing():
    source = swinging_arm(61)
    glitch = swinging_arm(61)
    glitch.joint_rots[30, NAMES.index("left_knee")] = quat.from_rotvec(-1.5 * Z)
    err = pose_error.end_effector_error(take_of(glitch, np.arange(61) / 30.0), source, HEIGHT, fresh=True)
    assert err.worst_m < 0.01


def test_the_joint_error_is_unchanged_by_the_head():
    """The mean joint error reads the same joints as before the head was added to the chain."""
    source = swinging_arm(61)
    straight = swinging_arm(61)
    straight.joint_rots[:, NAMES.index("right_elbow")] = quat.IDENTITY
    take = take_of(straight, np.arange(61) / 30.0)
    positions = pose_error.joint_positions(straight.root_rot, straight.joint_rots, tuple(NAMES), HEIGHT)
    assert positions.shape == (61, 14, 3)
    wrist = np.linalg.norm(positions - pose_error.joint_positions(source.root_rot, source.joint_rots,
                                                                 tuple(NAMES), HEIGHT), axis=-1)
    assert pose_error.joint_position_error_m(take, source, HEIGHT) == pytest.approx(wrist.mean())
