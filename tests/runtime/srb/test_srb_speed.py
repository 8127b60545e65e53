"""The SRB speed-ups compute the same numbers: determinism, and fast helpers equal to their
straightforward (vectorised numpy) forms bit for bit.  No timing asserts (shared machines)."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.motion import clip as clips
from runtime.reference import pose_output
from runtime.maths import quat
from runtime.fatigue import schedule
from runtime.srb import simulator as srb
from runtime import simulate
from runtime.reference import rigid_body as srb_body
from runtime.reference import legs as srb_legs
from runtime.reference import reference as srb_reference
from runtime.maths import rotation
from runtime.engines.pybullet.limbs import LimbSimulator


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
    assert np.array_equal(rotation.cross(a, b), _reference_cross(a, b))
    assert np.array_equal(rotation.cross(a[:, :1], b), _reference_cross(np.broadcast_to(a[:, :1], b.shape), b))
    assert np.array_equal(rotation.cross_rows(a[0], b[0]), _reference_cross(a[0], b[0]))
    assert np.array_equal(rotation.cross3(a[0, 0], b[0, 0]), _reference_cross(a[0, 0], b[0, 0]))


def test_leg_torque_rows_equal_the_vectorised_form():
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 4):
        joints = [rng.normal(size=3) for _ in range(3)]
        knee_axis = rng.normal(size=3)
        frames = [_random_rotation(rng), knee_axis / np.linalg.norm(knee_axis), _random_rotation(rng)]
        corners = rng.normal(size=(n, 3))
        got = srb_legs.leg_torque_rows(joints, frames, corners)
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
        assert np.array_equal(srb_legs.knee_position(hip, ankle, forward, 0.4, 0.4), hip + along * u + h * bend)
        R = _random_rotation(rng)
        q = rotation.matrix_to_quat(R)
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


@pytest.mark.slow
@pytest.mark.parametrize("limbs", [False, True])
def test_same_clip_twice_gives_bit_identical_takes(limbs):
    clip = clips.load_deepmimic(clips.deepmimic_clip_path("walk"))
    sched = schedule.from_fitness(0.25, fps=30, time_scale=40.0)
    takes = [simulate.simulate_clip(clip, sched, seconds=3.0, out_fps=30, simulate_limbs=limbs) for _ in range(2)]
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


def test_shared_kinematics_is_one_client_per_size_and_thread():
    """simulate() keeps its kinematics client open between takes: one per character size and
    proportions, a few at most (the oldest closed), never shared between threads."""
    import threading

    from runtime.engines import chooser

    a = chooser.shared_kinematics(1.62)
    assert chooser.shared_kinematics(1.62) is a and a.client is not None
    sizes = [chooser.shared_kinematics(1.0 + 0.1 * k) for k in range(chooser.SHARED_CLIENTS)]
    assert a.client is None                       # the least recently used was closed
    assert all(k.client is not None for k in sizes)
    other = []
    thread = threading.Thread(target=lambda: other.append(chooser.shared_kinematics(1.0)))
    thread.start()
    thread.join()
    assert other[0] is not sizes[0]


def test_a_reused_kinematics_client_gives_the_same_analysis():
    from runtime.engines import chooser
    from runtime.engines.pybullet import kinematics

    clip = clips.load_deepmimic(clips.deepmimic_clip_path("run"))
    chooser.shared_kinematics().analyse(clips.load_deepmimic(clips.deepmimic_clip_path("jump")))
    reused = chooser.shared_kinematics().analyse(clip)
    with kinematics.Kinematics() as own:
        fresh = own.analyse(clip)
    for name in ("link_pos", "link_rot", "joint_pos", "com", "sole", "touching", "foot_contact"):
        assert np.array_equal(getattr(reused, name), getattr(fresh, name)), name
    assert reused.floor_height == fresh.floor_height


def test_batched_pose_helpers_agree_with_the_one_pose_forms():
    """poses() runs the leg IK over all frames at once: its matrix->quaternion and minimal
    rotation helpers must give the one-pose results, half turns and every Shepperd case included."""
    rng = np.random.default_rng(5)
    mats = [_random_rotation(rng) for _ in range(200)]
    mats += [quat.to_matrix(quat.from_axis_angle(axis, np.pi)) for axis in np.eye(3)]   # traces of -1
    mats = np.array(mats)
    batched = rotation.matrices_to_quats(mats)
    for R, q in zip(mats, batched):
        one = rotation.matrix_to_quat(R)
        assert np.allclose(q, one, atol=1e-12) or np.allclose(q, -one, atol=1e-12)
    a, b = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    b[0] = -a[0]                                                   # opposite directions
    rots = rotation.rotation_matrices_between(a, b)
    for R, u, v in zip(rots, a, b):
        assert np.allclose(R @ R.T, np.eye(3), atol=1e-12)
        assert np.allclose(R @ (u / np.linalg.norm(u)), v / np.linalg.norm(v), atol=1e-9)


@pytest.mark.parametrize("name", ["jump", "run"])   # run: stance feet pivot onto their toes
def test_one_pose_equals_the_batched_poses(name):
    """Torque mode asks for one full-body pose per step (pose_output.pose, on Python floats); a
    take's frames are assembled all at once (poses, numpy over frames): the same poses."""
    clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
    from runtime.engines import chooser
    from runtime.body import proxy

    kin = chooser.shared_kinematics()
    body = srb_body.body_from_proxy(kin, proxy.DEFAULT_MASS)
    ref = srb_reference.build_reference(clip, kin.analyse(clip), body)
    sim = srb.SrbSimulator(ref, body, schedule.ScheduledModel(schedule.from_fitness(0.0, fps=30, time_scale=60)))
    states = []
    while sim.phase < ref.duration - 1e-9 and len(states) < 400:
        sim.step()
        states.append(sim.state())
    assert any(not all(st.stance) for st in states) and any(st.sag > 0 for st in states)   # flights, sag
    if name == "run":
        states = states[:120]
    root_pos, root_rot, joints, _ = pose_output.poses(ref, body, states)
    for n in range(0, len(states), 7 if name == "jump" else 1):
        p, q, j = pose_output.pose(ref, body, states[n])
        assert np.allclose(p, root_pos[n], atol=1e-12) and np.allclose(q, root_rot[n], atol=1e-12)
        assert np.allclose(j, joints[n], atol=1e-9)
