"""Clips in proxy space: DeepMimic loading, sampling, looping, derivatives, contacts."""
import json
from dataclasses import replace

import numpy as np
import pytest

from runtime import errors
from runtime.motion import clip as C
from runtime.engines.pybullet import kinematics
from runtime.motion import contacts
from runtime.body import proxy
from runtime.maths import quat


@pytest.fixture(scope="module")
def kin():
    with kinematics.Kinematics() as k:
        yield k


@pytest.mark.parametrize("name", C.DEEPMIMIC_CLIPS)
def test_every_deepmimic_clip_loads_z_up_with_unit_quaternions(name):
    c = C.load_deepmimic(C.deepmimic_clip_path(name))
    assert c.joint_rots.shape == (c.frames, 12, 4)
    np.testing.assert_allclose(np.linalg.norm(c.joint_rots, axis=-1), 1.0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(c.root_rot, axis=-1), 1.0, atol=1e-9)
    assert 10 <= c.fps <= 60
    # Z-up: the pelvis of a standing clip is well above the floor and points its local up to +Z.
    if name in ("walk", "run", "jump", "punch"):
        assert 0.7 < c.root_pos[:, 2].mean() < 1.0
        up = quat.rotate(c.root_rot, np.array([0.0, 1.0, 0.0]))  # the URDF pelvis is Y-up
        assert up[:, 2].mean() > 0.8


def test_looping_clip_continues_forward_with_root_offset():
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    assert walk.loop
    delta, _ = walk.cycle_offset()
    assert np.linalg.norm(delta) > 0.5  # a walk cycle travels
    p0, _, j0 = walk.sample(0.3)
    p1, _, j1 = walk.sample(0.3 + walk.duration)
    np.testing.assert_allclose(quat.angle_between(j0, j1), 0.0, atol=1e-6)
    assert np.linalg.norm((p1 - p0)[:2]) == pytest.approx(np.linalg.norm(delta[:2]), rel=0.01)  # plus a small heading drift
    # No jump at the wrap point.
    eps = 1e-4
    a, _, _ = walk.sample(walk.duration - eps)
    b, _, _ = walk.sample(walk.duration + eps)
    assert np.linalg.norm(a - b) < 0.01


def test_non_looping_clip_holds_its_last_pose():
    kick = C.load_deepmimic(C.deepmimic_clip_path("kick"))
    assert not kick.loop
    end = kick.sample(kick.duration)
    later = kick.sample(kick.duration + 3.0)
    np.testing.assert_allclose(end[0], later[0])
    longer = kick.repeated(kick.duration + 2.0)
    assert longer.frames == int(round((kick.duration + 2.0) * kick.fps)) + 1
    np.testing.assert_allclose(longer.root_pos[-1], kick.root_pos[-1])


def test_resampling_preserves_the_motion():
    jump = C.load_deepmimic(C.deepmimic_clip_path("jump"))
    half = jump.resampled(30.0)
    assert half.fps == 30.0 and half.duration == pytest.approx(jump.duration, abs=1 / 30)
    for t in (0.1, 0.5, 1.2):
        a, b = jump.sample(t), half.sample(t)
        assert np.linalg.norm(a[0] - b[0]) < 0.02
        assert np.degrees(quat.angle_between(a[2], b[2])).max() < 5.0


def test_angular_velocity_of_a_steady_spin():
    T, fps, rate = 61, 30.0, 2.0  # 2 rad/s about world Z
    yaw = np.arange(T) / fps * rate
    root_rot = quat.from_axis_angle(np.tile([0, 0, 1.0], (T, 1)), yaw)
    c = C.Clip("spin", fps, np.zeros((T, 3)) + [0, 0, 0.9], root_rot, np.tile(quat.IDENTITY, (T, 12, 1)))
    np.testing.assert_allclose(c.root_angular_velocity(), np.tile([0, 0, rate], (T, 1)), atol=1e-9)
    np.testing.assert_allclose(c.joint_angular_velocities(), 0.0, atol=1e-12)


def test_bad_motion_is_rejected_with_the_fix(tmp_path):
    T = 5
    good = dict(name="x", fps=30.0, root_pos=np.zeros((T, 3)), root_rot=np.tile(quat.IDENTITY, (T, 1)),
                joint_rots=np.tile(quat.IDENTITY, (T, 12, 1)))
    bad_pos = good["root_pos"].copy()
    bad_pos[3, 1] = np.nan
    with pytest.raises(errors.ClipError, match="frame 3"):
        C.Clip(**(good | {"root_pos": bad_pos}))
    with pytest.raises(errors.ClipError, match="at least 2"):
        C.Clip(**(good | {"root_pos": good["root_pos"][:1], "root_rot": good["root_rot"][:1],
                          "joint_rots": good["joint_rots"][:1]}))
    with pytest.raises(errors.ClipError, match="fps"):
        C.Clip(**(good | {"fps": 0.0}))
    f = tmp_path / "broken.txt"
    f.write_text(json.dumps({"Loop": "none", "Frames": [[0.1, 0, 0, 0]]}))
    with pytest.raises(errors.ClipError, match="44 columns"):
        C.load_deepmimic(f)
    f.write_text("not json")
    with pytest.raises(errors.ClipError, match="cannot read"):
        C.load_deepmimic(f)


def test_a_cut_in_the_root_is_found_and_real_motion_is_not():
    """A root that jumps between frames faster than anyone moves is a cut or teleport (two takes
    spliced): found at its first frame; no DeepMimic clip (up to 5.1 m/s: a roll) has one."""
    for name in C.DEEPMIMIC_CLIPS:
        assert C.load_deepmimic(C.deepmimic_clip_path(name)).root_cut() is None, name
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    pos = walk.root_pos.copy()
    pos[20:, 1] += 1.5
    cut = replace(walk, root_pos=pos).root_cut()
    assert cut is not None and cut[0] == 19 and abs(cut[1] - np.linalg.norm(pos[20] - pos[19])) < 1e-12
    # The limit scales with the body: 0.45 m per frame at 30 fps is a sprint for a giant, a cut
    # for a child.
    pos = walk.root_pos.copy()
    pos[20:, 0] += 0.45
    stepped = replace(walk, root_pos=pos)
    assert stepped.root_cut(height=0.8) is not None and stepped.root_cut(height=2.9) is None


def test_rest_pose_has_the_documented_height(kin):
    kin.set_pose([0, 0, 1.0], C.Y_UP_TO_Z_UP, np.tile(quat.IDENTITY, (12, 1)))
    pos, rot = kin.link_frames()
    sole = kin.sole_corners(pos, rot)
    crown = pos[kin.link_names.index("neck"), 2] + 0.102 * kin.scale  # head sphere radius
    assert crown - sole[..., 2].min() == pytest.approx(proxy.DEFAULT_HEIGHT, abs=0.01)
    # Right foot on the right (-Y in a Z-up, X-forward frame).
    assert sole[0, :, 1].mean() < 0 < sole[1, :, 1].mean()


def test_walk_alternates_feet_and_keeps_them_planted(kin):
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk")).repeated(3.0)
    ck = kin.analyse(walk)
    contact = ck.foot_contact
    assert contact.any(axis=1).mean() > 0.95          # always something on the floor
    assert (contact[:, 0] ^ contact[:, 1]).mean() > 0.3  # single support phases exist
    assert abs(ck.floor_height) < 0.03
    assert ck.non_foot_contact_fraction() == 0.0
    # While a foot is in stance it barely moves.
    for side in (0, 1):
        centre = ck.sole[:, side].mean(axis=1)
        speed = np.linalg.norm(np.diff(centre[:, :2], axis=0), axis=1) * walk.fps
        assert np.median(speed[contact[1:, side] & contact[:-1, side]]) < 0.3


def test_floor_work_is_detected_from_geometry(kin):
    crawl = kin.analyse(C.load_deepmimic(C.deepmimic_clip_path("crawl")))
    jump = kin.analyse(C.load_deepmimic(C.deepmimic_clip_path("jump")))
    assert crawl.non_foot_contact_fraction() > 0.5
    assert jump.non_foot_contact_fraction() == 0.0
    # A raised floor (clip captured on a stage) is found, not assumed at z = 0.
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    from dataclasses import replace
    lifted = kin.analyse(replace(walk, root_pos=walk.root_pos + [0, 0, 0.5]))
    assert lifted.floor_height == pytest.approx(kin.analyse(walk).floor_height + 0.5, abs=1e-6)


def test_a_body_held_up_is_never_airborne_and_a_ballistic_flight_is():
    """Newton decides flight: with no foot down the COM falls at g.  A glide the still-foot test
    misses (COM held level, foot sliding 2 cm above the floor) goes to the lower foot; a real
    flight (COM on a parabola) stays a flight."""
    fps, T = 60.0, 60
    t = np.arange(T) / fps
    contact = np.zeros((T, 2), dtype=bool)
    contact[:10] = contact[50:] = True
    clearance = np.tile([0.02, 0.10], (T, 1))          # right foot low, left foot high
    held = contacts._supported_flights(contact, np.full(T, 0.9), clearance, fps, 0.1)
    assert held[:, 0].all() and not held[10:50, 1].any()
    ballistic = 0.9 + 2.0 * (t - t[10]) - 0.5 * 9.81 * (t - t[10]) ** 2
    flight = contacts._supported_flights(contact, ballistic, clearance, fps, 0.1)
    assert not flight[15:45].any()


def test_a_gliding_dancer_keeps_a_foot_down_and_a_jumper_still_flies(kin):
    # dance_b glides and pivots with its feet a few cm above the floor at 1-2 m/s: read as stance
    # by the still-foot test alone it had 0.65 s "flights" that its COM never fell through
    dance = kin.analyse(C.load_deepmimic(C.deepmimic_clip_path("dance_b")))
    jump = kin.analyse(C.load_deepmimic(C.deepmimic_clip_path("jump")))

    def longest_flight(ck):
        air, best, run = ~ck.foot_contact.any(axis=1), 0, 0
        for a in air:
            run = run + 1 if a else 0
            best = max(best, run)
        return best / ck.fps

    assert longest_flight(dance) < 0.3
    assert 0.25 < longest_flight(jump) < 0.8


def test_a_mirrored_clip_moves_its_left_side_as_the_original_moves_its_right(kin):
    kick = C.load_deepmimic(C.deepmimic_clip_path("kick"))
    mirror = kick.mirrored()
    a, b = kin.analyse(kick), kin.analyse(mirror)
    flip = np.array([1.0, -1.0, 1.0])
    for side, other in (("right", "left"), ("left", "right")):
        for part in ("ankle", "knee", "wrist" if "wrist" in a.link_names else "elbow"):
            i, j = a.link_names.index(f"{side}_{part}"), a.link_names.index(f"{other}_{part}")
            assert np.allclose(b.joint_pos[:, j], a.joint_pos[:, i] * flip, atol=1e-6)
    assert np.allclose(b.com, a.com * flip, atol=1e-6)
    assert np.allclose(b.foot_contact, a.foot_contact[:, ::-1])
    # twice is the original
    assert np.allclose(mirror.mirrored().joint_rots, kick.joint_rots, atol=1e-12)
