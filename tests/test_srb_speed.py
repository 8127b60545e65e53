"""The SRB speed-ups compute the same numbers: determinism, and fast helpers equal to their
straightforward (vectorised numpy) forms bit for bit.  No timing asserts (shared machines)."""
from __future__ import annotations

import numpy as np
import pytest

from runtime import clip as clips
from runtime import quat, schedule, srb, simulate
from runtime.limbs import LimbSimulator


def _reference_cross(a, b):
    return np.stack((a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]), axis=-1)


def _reference_leg_torque_rows(joints, frames, corners):
    hip, knee, ankle = joints
    axes = np.vstack([frames[0].T, frames[1][None], frames[2].T])
    origins = np.array([hip, hip, hip, knee, ankle, ankle, ankle])
    lever = corners[None, :, :] - origins[:, None, :]
    return _reference_cross(np.broadcast_to(axes[:, None, :], lever.shape), lever).reshape(7, -1)


def _random_rotation(rng):
    return quat.to_matrix(quat.normalize(rng.normal(size=4)))


def test_cross_helpers_equal_the_vectorised_form():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(7, 4, 3)), rng.normal(size=(7, 4, 3))
    assert np.array_equal(srb._cross(a, b), _reference_cross(a, b))
    assert np.array_equal(srb._cross(a[:, :1], b), _reference_cross(np.broadcast_to(a[:, :1], b.shape), b))
    assert np.array_equal(srb._cross_rows(a[0], b[0]), _reference_cross(a[0], b[0]))
    assert np.array_equal(srb._cross3(a[0, 0], b[0, 0]), _reference_cross(a[0, 0], b[0, 0]))


def test_leg_torque_rows_equal_the_vectorised_form():
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 4):
        joints = [rng.normal(size=3) for _ in range(3)]
        knee_axis = rng.normal(size=3)
        frames = [_random_rotation(rng), knee_axis / np.linalg.norm(knee_axis), _random_rotation(rng)]
        corners = rng.normal(size=(n, 3))
        got = srb.leg_torque_rows(joints, frames, corners)
        assert got.shape == (7, 3 * n)
        assert np.array_equal(got, _reference_leg_torque_rows(joints, frames, corners))


def test_knee_position_and_matrix_to_quat_equal_the_straightforward_forms():
    rng = np.random.default_rng(2)
    for _ in range(200):
        hip, ankle = rng.normal(size=3), rng.normal(size=3) * 0.4
        forward = _random_rotation(rng)[:, 0]
        d = ankle - hip
        dist = min(max(float(np.linalg.norm(d)), 1e-6), 0.8 - 1e-9)
        u = d / max(np.linalg.norm(d), 1e-9)
        along = (0.4 ** 2 - 0.4 ** 2 + dist ** 2) / (2 * dist)
        h = np.sqrt(max(0.4 ** 2 - along ** 2, 0.0))
        bend = forward - (forward @ u) * u
        bend = bend / np.linalg.norm(bend)
        assert np.array_equal(srb.knee_position(hip, ankle, forward, 0.4, 0.4), hip + along * u + h * bend)
        R = _random_rotation(rng)
        q = srb._matrix_to_quat(R)
        assert np.allclose(quat.to_matrix(q), R, atol=1e-12)


def test_scalar_quaternion_helpers_equal_the_vectorised_ones():
    rng = np.random.default_rng(3)
    for _ in range(500):
        a, b = quat.normalize(rng.normal(size=4)), quat.normalize(rng.normal(size=4))
        t = float(rng.uniform())
        assert quat.multiply4(a.tolist(), b.tolist()) == quat.multiply(a, b).tolist()
        assert quat.normalize4((3.0 * a).tolist()) == quat.normalize(3.0 * a).tolist()
        assert quat.slerp4(a.tolist(), b.tolist(), t) == quat.slerp(a, b, t).tolist()
    near = quat.normalize(np.array([0.0, 0.0, 1e-9, 1.0]))
    assert quat.slerp4(quat.IDENTITY.tolist(), near.tolist(), 0.3) == quat.slerp(quat.IDENTITY, near, 0.3).tolist()


def test_ball_cap_list_equals_ball_cap():
    rng = np.random.default_rng(4)
    for _ in range(200):
        caps = rng.uniform(1.0, 50.0, size=3)
        last = rng.normal(size=3) * rng.choice([0.0, 1e-8, 1.0, 30.0])
        assert LimbSimulator._ball_cap_list(caps.tolist(), last.tolist(), last) == LimbSimulator._ball_cap(caps, last)


@pytest.mark.parametrize("limbs", [False, True])
def test_same_clip_twice_gives_bit_identical_takes(limbs):
    clip = clips.load_deepmimic(clips.deepmimic_clip_path("walk"))
    sched = schedule.from_fitness(0.25, fps=30, time_scale=40.0)
    takes = [simulate.simulate(clip, sched, seconds=3.0, out_fps=30, simulate_limbs=limbs) for _ in range(2)]
    a, b = takes
    assert np.array_equal(a.clip.root_pos, b.clip.root_pos)
    assert np.array_equal(a.clip.root_rot, b.clip.root_rot)
    assert np.array_equal(a.clip.joint_rots, b.clip.joint_rots)
    assert np.array_equal(a.torque, b.torque)
    assert np.array_equal(a.com, b.com)
    assert np.array_equal(a.tau_max, b.tau_max)
    for k in a.fatigue:
        assert np.array_equal(a.fatigue[k], b.fatigue[k])
    assert [e["kind"] for e in a.events] == [e["kind"] for e in b.events]


def test_analysis_reuses_link_frames_only_for_the_same_poses():
    """The calibration's clip shares its first frames with the take's: the Kinematics cache must
    give exactly what a fresh client computes, for the shared and for new frames."""
    from runtime.kinematics import Kinematics

    clip = clips.load_deepmimic(clips.deepmimic_clip_path("run"))
    long, short = clip.repeated(3.0 * clip.duration), clip.repeated(2.0 * clip.duration)
    with Kinematics() as kin:
        kin.analyse(long)
        cached = kin.analyse(short)
    with Kinematics() as fresh_kin:
        fresh = fresh_kin.analyse(short)
    for name in ("link_pos", "link_rot", "joint_pos", "com", "sole", "touching", "foot_contact"):
        assert np.array_equal(getattr(cached, name), getattr(fresh, name)), name
    assert cached.floor_height == fresh.floor_height
