"""runtime.control: the articulated proxy's dynamics against PyBullet itself, and the experimental
whole-body torque mode."""
import numpy as np
import pytest

from runtime import articulated, control, proxy, quat, schedule, simulate
from runtime.clip import Clip, deepmimic_clip_path, load_deepmimic


@pytest.fixture()
def floating():
    """The proxy far above its floor (no contacts), in a random pose with random velocities."""
    body = articulated.Articulated(proxy.DEFAULT_HEIGHT, proxy.DEFAULT_MASS, floor=-10.0)
    rng = np.random.default_rng(3)
    rots = rng.normal(size=(len(body.joint_index), 4))
    rots /= np.linalg.norm(rots, axis=1, keepdims=True)
    for k, sph in enumerate(body.spherical):   # hinges inside their limits
        if not sph:
            angle = (-0.6 if "knee" in proxy.DEFAULT_JOINTS[k].name else 0.6)
            rots[k] = [0.0, 0.0, np.sin(angle / 2), np.cos(angle / 2)]
    root_rot = rng.normal(size=4)
    body.reset([0.1, 0.2, 1.0], root_rot / np.linalg.norm(root_rot), rots, rng.normal(size=3),
               rng.normal(size=3), rng.normal(size=(len(body.joint_index), 3)))
    yield body, rng
    body.close()


def _acceleration(body, torque, wrench, substeps=1):
    root_pos, _, _, v = body.state()
    body.apply(torque, wrench, substeps)
    return (body.state()[3] - v) / (substeps * body.dt)


def test_mass_matrix_and_bias_predict_pybullet_accelerations(floating):
    body, rng = floating
    root_pos, root_rot, joints, v = body.state()
    M = body.mass_matrix(root_pos, root_rot, joints)
    h = body.bias(M, root_pos, root_rot, joints, v)
    assert M.shape == (34, 34) and np.allclose(M, M.T, atol=1e-9)
    torque = rng.normal(size=28) * 5.0
    wrench = np.concatenate([rng.normal(size=3) * 50.0, rng.normal(size=3) * 5.0])
    predicted = np.linalg.solve(M, np.concatenate([wrench, torque]) - h)
    got = _acceleration(body, torque, wrench)
    assert np.abs(got - predicted).max() < 0.05 * np.abs(got).max()


def test_point_jacobian_gives_the_link_velocity(floating):
    body, _ = floating
    root_pos, _, _, v = body.state()
    frames = body.link_frames()
    for link in body.foot_links + [body.links["right_elbow"], body.links["neck"]]:
        J = body.point_jacobian(link, frames.com[link], root_pos, frames.origins, frames.rots)
        truth = body.p.getLinkState(body.body, link, computeLinkVelocity=1, physicsClientId=body.client)[6]
        assert np.allclose(J @ v, truth, atol=1e-9)


def test_com_jacobian_gives_the_centre_of_mass_velocity(floating):
    """Built per joint from subtree centres of mass; the same as the mass-weighted link Jacobians."""
    body, _ = floating
    root_pos, _, _, v = body.state()
    frames = body.link_frames()
    J = body.com_jacobian(root_pos, frames)
    _, com_vel = body.centre_of_mass(frames)
    assert np.allclose(J @ v, com_vel, atol=1e-9)
    summed = sum(m * body.point_jacobian(link, frames.com[link], root_pos, frames.origins, frames.rots)
                 for link, m in enumerate(body.masses) if m > 1e-3) / body.masses.sum()
    assert np.allclose(J, summed, atol=1e-12)


def test_torques_hold_for_every_physics_step_of_a_control_step(floating):
    """Ball-joint TORQUE_CONTROL lasts one PyBullet step: set once, the second step ran without it."""
    body, rng = floating
    root_pos, root_rot, joints, _ = body.state()
    body.reset(root_pos, root_rot, joints, np.zeros(3), np.zeros(3), np.zeros((len(joints), 3)))
    root_pos, root_rot, joints, v = body.state()
    M = body.mass_matrix(root_pos, root_rot, joints)
    h = body.bias(M, root_pos, root_rot, joints, v)
    torque = rng.normal(size=28) * 5.0
    predicted = np.linalg.solve(M, np.concatenate([np.zeros(6), torque]) - h)
    got = _acceleration(body, torque, None, substeps=2)
    assert np.abs(got - predicted).max() < 0.1 * np.abs(predicted).max()


def _still(name="walk", seconds=2.0):
    clip = load_deepmimic(deepmimic_clip_path(name))
    n = int(seconds * clip.fps)
    return Clip(name="still", fps=clip.fps, root_pos=np.repeat(clip.root_pos[:1], n, 0),
                root_rot=np.repeat(clip.root_rot[:1], n, 0), joint_rots=np.repeat(clip.joint_rots[:1], n, 0),
                loop=False)


@pytest.mark.slow
def test_torque_mode_stands_on_its_own_torques():
    take = simulate.simulate(_still(), None, mode="torque", out_fps=30)
    assert take.mode == "torque" and not take.fell
    weight = proxy.DEFAULT_MASS * 9.81
    assert np.linalg.norm(take.residual_force, axis=1).mean() < 0.01 * weight
    assert take.stats["residual_moment_nm_mean"] < 10.0
    assert np.linalg.norm(take.clip.root_pos - take.clip.root_pos[0], axis=1).max() < 0.03
    assert np.degrees(quat.angle_between(take.clip.root_rot, take.clip.root_rot[0])).max() < 5.0


@pytest.mark.slow
def test_tired_torque_mode_walks_on_fatigue_bounded_torques_and_says_what_helped():
    walk = load_deepmimic(deepmimic_clip_path("walk"))
    tired = schedule.from_fitness(0.25, fps=30, time_scale=40)
    # 2 s: the tired torque-mode walk stands that long with margin; from about 2.3 s it is on a
    # knife edge (last-bit changes in the pose targets decide whether this exact condition falls
    # at 2.3 s; 8 of 9 neighbouring fitness / speed-up conditions stand 2.5 s): torque mode's
    # balance is the open part of its issue.
    take = simulate.simulate(walk, tired, mode="torque", seconds=2.0, out_fps=30)
    assert not take.fell
    rc = take.fatigue["RC"]
    assert take.fatigue["MF"].max() > 0.1 and rc.min() < 0.9           # booked from its own torques
    assert np.all(np.abs(take.torque[1:]) <= rc[:-1] * take.strength[1:] + 0.02 * take.tau_max)
    assert take.stats["residual_moment_nm_mean"] > 0.0 and "root moment" in take.notes["orientation"]
    again = simulate.simulate(walk, tired, mode="torque", seconds=2.0, out_fps=30)
    assert np.array_equal(take.clip.joint_rots, again.clip.joint_rots) and np.array_equal(take.torque, again.torque)
