"""Knees and elbows the proxy can bend (runtime.motion.hinges): what a source's knee or elbow turns
off the proxy's one-axis hinge is taken by the hip or shoulder and the ankle, so hands and feet land
where the source puts them (issue 51: an SMPL skeleton's knees and forearms twist 40-58 degrees off
the hinge, and the simulation kept only the hinge part)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from runtime import simulate
from runtime.body import proxy
from runtime.maths import quat
from runtime.motion import clip as C
from runtime.motion import hinges, pose_error

NAMES = tuple(j.name for j in proxy.DEFAULT_JOINTS)
X, Y, Z = np.eye(3)
HEIGHT = proxy.DEFAULT_HEIGHT


def twisted_guard(seconds: float = 1.5, twist: float = 0.9, roll: float = 0.0) -> C.Clip:
    """Standing in a guard, SMPL-like: each elbow pumps (70-130 degrees) with its forearm swung
    ``twist`` rad about the upper arm (the source's elbow turns about another axis than the proxy's),
    the knees bend 20-50 degrees turned the same way; ``roll`` rad of every upper arm and thigh's
    own twist moved from the shoulder or hip into the elbow or knee below (the same motion read
    through another bone roll)."""
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    frames = int(round(seconds * 30)) + 1
    t = np.arange(frames) / 30.0
    joints = np.tile(quat.IDENTITY, (frames, len(NAMES), 1))
    pump = np.sin(2.0 * np.pi * t)
    for side, sign in (("right", 1.0), ("left", -1.0)):
        shoulder = quat.multiply(quat.from_axis_angle(Z, np.full(frames, 0.5)),
                                 quat.from_axis_angle(X, np.full(frames, sign * 0.3)))
        elbow = quat.multiply(quat.from_axis_angle(Y, np.full(frames, sign * twist)),
                              quat.from_axis_angle(Z, 1.75 + 0.5 * pump))
        knee = quat.multiply(quat.from_axis_angle(Y, np.full(frames, -sign * 0.5 * twist)),
                             quat.from_axis_angle(Z, -0.6 - 0.25 * pump))
        hip = quat.from_axis_angle(Z, 0.3 + 0.12 * pump)
        turn = quat.from_axis_angle(Y, np.full(frames, roll))
        joints[:, NAMES.index(f"{side}_shoulder")] = quat.multiply(shoulder, turn)
        joints[:, NAMES.index(f"{side}_elbow")] = quat.multiply(quat.conjugate(turn), elbow)
        joints[:, NAMES.index(f"{side}_hip")] = quat.multiply(hip, turn)
        joints[:, NAMES.index(f"{side}_knee")] = quat.multiply(quat.conjugate(turn), knee)
    return replace(walk, name="guard", fps=30.0, loop=False, root_pos=np.tile(walk.root_pos[0], (frames, 1)),
                   root_rot=np.tile(walk.root_rot[0], (frames, 1)), joint_rots=joints)


def world_rotation(clip: C.Clip, chain) -> np.ndarray:
    q = clip.root_rot
    for name in chain:
        q = quat.multiply(q, clip.joint_rots[:, NAMES.index(name)])
    return q


def test_fitted_hinges_turn_about_their_axis_and_keep_hands_feet_and_soles():
    clip = twisted_guard()
    fitted = hinges.fit_hinges(clip)
    for name in ("right_knee", "left_knee", "right_elbow", "left_elbow"):
        q = fitted.joint_rots[:, NAMES.index(name)]
        assert np.abs(q[:, :2]).max() == 0.0                       # about Z alone
        assert np.all(hinges.flexion_sign(name) * quat.hinge_angle(q) > 0.0)   # on the side it flexes
    before = pose_error.joint_positions(clip.root_rot, clip.joint_rots, NAMES, HEIGHT)
    after = pose_error.joint_positions(fitted.root_rot, fitted.joint_rots, NAMES, HEIGHT)
    assert np.abs(after - before).max() < 1e-9                      # every joint, wrists and ankles too
    for side in ("right", "left"):
        chain = (f"{side}_hip", f"{side}_knee", f"{side}_ankle")
        turned = quat.angle_between(world_rotation(fitted, chain), world_rotation(clip, chain))
        assert turned.max() < 1e-6                                  # the foot as the source holds it


def test_a_clip_whose_hinges_are_hinges_is_left_as_it_is():
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    assert hinges.fit_hinges(walk) is walk


def test_a_straight_limb_keeps_the_twist_of_the_frames_around_it():
    """An elbow passing through straight: its plane is noise there, so the upper arm does not spin."""
    clip = twisted_guard(seconds=2.0)
    t = np.arange(clip.frames) / 30.0
    joints = clip.joint_rots.copy()
    bend = 1.2 * np.abs(np.sin(np.pi * t))                 # straight at 0, 1 and 2 s
    joints[:, NAMES.index("right_elbow")] = quat.multiply(quat.from_axis_angle(Y, np.full(clip.frames, 0.9)),
                                                          quat.from_axis_angle(Z, bend))
    fitted = hinges.fit_hinges(replace(clip, joint_rots=joints))
    shoulder = fitted.joint_rots[:, NAMES.index("right_shoulder")]
    step = np.degrees(quat.angle_between(shoulder[1:], shoulder[:-1]))
    assert step.max() < 3.0


@pytest.mark.parametrize("engine", ["pybullet", "mujoco"])
def test_a_fresh_take_puts_twisted_forearms_and_shins_hands_and_feet_where_the_source_does(engine):
    """Before: the simulation kept the hinge part alone, and the hands ended 0.2 m off."""
    pytest.importorskip(engine)
    clip = twisted_guard()
    take = simulate.simulate_clip(clip, None, out_fps=30, engine=engine)
    err = pose_error.end_effector_error(take, clip, HEIGHT, fresh=True)
    assert err.worst_m < 0.05, err


def test_the_same_motion_through_two_bone_rolls_simulates_the_same_take():
    """The twist of an upper arm or thigh read into the elbow or knee below it (a rig whose limb
    bones roll otherwise) is the same motion: the same hands and feet, within 1 mm."""
    pytest.importorskip("pybullet")
    one = simulate.simulate_clip(twisted_guard(), None, out_fps=30, engine="pybullet")
    other = simulate.simulate_clip(twisted_guard(roll=0.7), None, out_fps=30, engine="pybullet")
    a = pose_error.joint_positions(one.clip.root_rot, one.clip.joint_rots, NAMES, HEIGHT)
    b = pose_error.joint_positions(other.clip.root_rot, other.clip.joint_rots, NAMES, HEIGHT)
    assert np.abs(a - b).max() < 1e-3


def test_an_arm_a_few_degrees_past_straight_keeps_its_hand():
    """A robot's arms at rest, 6 degrees past straight and 22 degrees off the hinge's plane: nearly
    straight, so no plane to flex in is sure, yet the hand stays where the source has it (the
    forearm bent back the few degrees, not turned round): it had ended 0.024 m off."""
    clip = twisted_guard()
    joints = clip.joint_rots.copy()
    past = quat.multiply(quat.from_axis_angle(Y, np.full(clip.frames, np.radians(158.0))),
                         quat.from_axis_angle(Z, np.full(clip.frames, np.radians(6.0))))
    joints[:, NAMES.index("right_elbow")] = past
    clip = replace(clip, joint_rots=joints)
    fitted = hinges.fit_hinges(clip)
    before = pose_error.joint_positions(clip.root_rot, clip.joint_rots, NAMES, HEIGHT)
    after = pose_error.joint_positions(fitted.root_rot, fitted.joint_rots, NAMES, HEIGHT)
    assert np.abs(after - before).max() < 1e-3
    angle = np.degrees(quat.hinge_angle(fitted.joint_rots[:, NAMES.index("right_elbow")]))
    assert np.all(np.abs(angle) < 7.0)


def test_frames_that_jump_between_poses_are_not_fitted():
    """A file whose first frames alternate between two poses (an encoding's test frames): a fit
    across those jumps flipped the shoulders as far as the elbows every frame and the upper body's
    simulation blew up.  The frames beside a jump keep the source's shoulder; the rest are fitted."""
    clip = twisted_guard()
    rots = clip.joint_rots.copy()
    other = twisted_guard(twist=-0.9).joint_rots[0]
    rots[1:6:2] = other                               # frames 1, 3, 5: the other pose
    clip = replace(clip, joint_rots=rots)
    fitted = hinges.fit_hinges(clip)
    s = NAMES.index("right_shoulder")
    assert np.allclose(fitted.joint_rots[:7, s], clip.joint_rots[:7, s])
    # The fit eases back in after the jumps (no jump of its own), and is as before beyond.
    step = np.degrees(quat.angle_between(fitted.joint_rots[1:], fitted.joint_rots[:-1]))[:, s]
    assert step.max() < 15.0, step
    calm = hinges.fit_hinges(twisted_guard())
    later = 6 + int(round(hinges.EASE_IN * clip.fps))
    assert np.array_equal(fitted.joint_rots[later:, s], calm.joint_rots[later:, s])
