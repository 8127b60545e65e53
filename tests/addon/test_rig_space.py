"""Where a rig stands (fatigue_addon.rig.space) and what a jumping root means (root_motion): pure
numpy on joint positions (no bpy), checked against hand-made skeletons in every orientation and unit."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from addon_package import PACKAGE_NAME, load_addon_package


@pytest.fixture(scope="module")
def rs():
    load_addon_package()
    return importlib.import_module(f"{PACKAGE_NAME}.fatigue_addon.rig.space")


@pytest.fixture(scope="module")
def rm():
    load_addon_package()
    return importlib.import_module(f"{PACKAGE_NAME}.fatigue_addon.rig.root_motion")


def standing(scale=1.0):
    """A person 1.62 m tall (the proxy's chains), standing on z = 0 facing -Y, left at +X."""
    j = {"pelvis": (0, 0, 0.93), "neck": (0, 0, 0.93 + 0.46),
         "right_hip": (-0.085, 0, 0.93), "left_hip": (0.085, 0, 0.93),
         "right_knee": (-0.085, 0, 0.93 - 0.4215), "left_knee": (0.085, 0, 0.93 - 0.4215),
         "right_ankle": (-0.085, 0, 0.93 - 0.831), "left_ankle": (0.085, 0, 0.93 - 0.831),
         "right_shoulder": (-0.18, 0, 1.34), "left_shoulder": (0.18, 0, 1.34)}
    return {k: np.array(v, dtype=float) * scale for k, v in j.items()}


def turned(joints, R, t=(0, 0, 0)):
    return {k: R @ v + np.asarray(t, dtype=float) for k, v in joints.items()}


def rot(axis, deg):
    a = math.radians(deg)
    c, s = math.cos(a), math.sin(a)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R = np.eye(3)
    R[i, i] = R[j, j] = c
    R[i, j], R[j, i] = -s, s
    return R


@pytest.mark.parametrize("scale, in_metres", [(1.0, True), (100.0, False), (39.37, False), (10.0, False),
                                               (0.01, False)])
def test_size_is_the_same_in_any_units_and_orientation(rs, scale, in_metres):
    for R in (np.eye(3), rot(0, 90), rot(0, 180), rot(1, -90), rot(2, 37) @ rot(0, -90)):
        m = rs.measure(turned(standing(scale), R, (3, -2, 5)))
        assert m.stature == pytest.approx(1.62 * scale, rel=1e-3)
        assert m.in_metres is in_metres
        # pelvis above the sole: hips + legs + the ankle's height, as the proxy has it
        assert m.pelvis_standing == pytest.approx((0.831 + rs.PROXY_ANKLE_ABOVE_SOLE) * scale, rel=1e-3)


@pytest.mark.parametrize("R", [np.eye(3), rot(0, 90), rot(0, -90), rot(0, 180), rot(1, 90), rot(2, 90)])
def test_body_axes_follow_the_rest_pose_whatever_its_orientation(rs, R):
    """Forward, left and up of a rest pose lying down, on its head or turned, snapped to the axes."""
    frame = rs.body_frame(turned(standing(), R))
    expected = R @ np.column_stack([[0, -1, 0], [1, 0, 0], [0, 0, 1]])      # faces -Y, left +X, up +Z
    assert np.allclose(frame, expected, atol=1e-9)


def test_a_leaning_trunk_still_snaps_up_to_the_nearest_axis(rs):
    j = standing()
    j["neck"] = j["pelvis"] + np.array([0.0, -0.15, 0.44])      # 19 degrees forward
    assert np.allclose(rs.body_frame(j)[:, 2], [0, 0, 1])


def test_motion_up_only_when_rest_and_motion_lie_along_the_same_axis(rs):
    lying = rs.body_frame(turned(standing(), rot(0, -90)))           # rest pose lies along +Y
    along_y = np.tile([0.0, 1.0, 0.1], (50, 1))
    upright = np.tile([0.0, 0.1, 1.0], (50, 1))
    axis, name = rs.motion_up(lying, along_y)
    assert name == "+Y" and np.allclose(axis, [0, 1, 0])
    # the animation stands the lying rest pose up (glTF, capture rigs): world Z stays up
    assert rs.motion_up(lying, upright)[0] is None
    # a standing rest pose whose clip lies down (a nap on the floor): world Z stays up
    assert rs.motion_up(rs.body_frame(standing()), along_y)[0] is None
    # lying along the axis in only half the frames (a roll, a breakdance): world Z stays up
    assert rs.motion_up(lying, np.concatenate([along_y[:25], upright[:25]]))[0] is None
    # a rest pose on its head, a motion along -Y throughout (a skeleton left out of its Y-up parent)
    on_head = rs.body_frame(turned(standing(), rot(0, 180)))
    axis, name = rs.motion_up(on_head, -along_y)
    assert name == "-Y" and np.allclose(axis, [0, -1, 0])


@pytest.mark.parametrize("axis", [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])
def test_rotation_onto_z_is_a_rotation_taking_the_axis_up(rs, axis):
    R = rs.rotation_onto_z(np.array(axis, dtype=float))
    assert np.allclose(R @ np.array(axis, dtype=float), [0, 0, 1])
    assert np.allclose(R.T @ R, np.eye(3)) and np.linalg.det(R) == pytest.approx(1.0)


def test_facing_from_left(rs):
    assert rs.facing_yaw(np.array([0.0, 1.0, 0.0])) == pytest.approx(0.0)            # left +Y: faces +X
    assert rs.facing_yaw(np.array([1.0, 0.0, 0.0])) == pytest.approx(-math.pi / 2)   # left +X: faces -Y
    assert rs.facing_yaw(np.array([0.05, 0.0, 1.0])) is None                          # lying on its side


def test_units_note_names_the_size_and_the_fix(rs):
    note = rs.units_note("Hero", 173.2, 1.75)
    assert "173 units" in note and "1.75 m" in note and "Height" in note
    assert "\n" not in note and "Ctrl A" not in note and "apply" not in note.lower()


# --------------------------------------------------------------------------- root jumps

def walk(T=240, fps=24.0):
    t = np.arange(T) / fps
    return np.stack([1.2 * t, 0.02 * np.sin(4 * t), 0.9 + 0.02 * np.sin(8 * t)], axis=1)


def test_smooth_motion_is_left_alone(rm):
    assert rm.plan(walk(), 24.0, 1.75).kind == "ok"


def test_calibration_frames_at_either_end_are_skipped(rm):
    pos = walk()
    pos[:2] += [5.0, 3.0, 0.0]          # two frames of T-pose somewhere else
    pos[-1] = [0.0, 0.0, 0.0]           # snapped back to the origin at the end
    p = rm.plan(pos, 24.0, 1.75)
    assert p.kind == "trim" and (p.first, p.last) == (2, len(pos) - 2)


def test_a_cut_in_the_middle_is_refused(rm):
    pos = walk()
    pos[120:] += [4.0, 0.0, 0.0]
    p = rm.plan(pos, 24.0, 1.75)
    assert p.kind == "cut" and p.jumps == (119,) and p.metres == pytest.approx(4.0 + 1.2 / 24, abs=0.01)


def test_a_root_channel_that_is_not_a_position_bakes_in_place(rm):
    pos = walk()
    pos[2::2] = [1460.0, 1460.0, -1460.0]         # a flipping code, not a place
    p = rm.plan(pos, 24.0, 1.75)
    assert p.kind == "in_place" and len(p.jumps) > 100
    fixed = rm.in_place(pos, 0.95)
    assert np.allclose(fixed[:, :2], pos[0, :2]) and np.allclose(fixed[:, 2], 0.95)
    assert rm.plan(fixed, 24.0, 1.75).kind == "ok"
