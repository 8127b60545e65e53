"""How a resting body stands: bent forward at the hips with its hands braced on its thighs.

Why: a tired person who stops to recover bends forward and braces the hands on the thighs (or
knees): the arms carry the trunk, the back and legs unload, and recovery is faster than upright
(Michaelson et al. 2019: heart rate -53 vs -31 bpm in the first minute; see
``shared/reference/fatigue_kinematics.json``).  A rest that kept the source's pose (arms out
mid-gesture) read as a freeze, not a rest.

The posture comes from the body's state.  It is taken only by a body whose legs or trunk are
what is tired and whose arms can still brace (their capacity at least BRACE_ARMS_RC); otherwise
the body rests upright with its arms hanging.  It blends in over BEND_IN_S once a rest begins
and back out over BEND_OUT_S when it ends, so the motion takes up from the source again.  While
braced, the arms carry the trunk onto the thighs: the trunk's motors get the strength the
bracing gives (their full strength, scaled by the blend) and book only the unbraced share of
their torque, so a braced trunk recovers.
"""
from __future__ import annotations

import math

import numpy as np

from ..engines.limbs import LIMB_JOINTS
from ..maths import quat
from ..maths.ease import smoothstep

PELVIS_LEAN = math.radians(25.0)  # the pelvis tips forward at the hips to this pitch ...
CHEST_BEND = math.radians(15.0)   # ... and the chest bends this much more
HEAD_HANG = math.radians(15.0)    # the head hangs toward the chest
ARM_REACH = math.radians(30.0)    # the upper arms swing forward of the trunk's line, down the thighs
ELBOW_BEND = math.radians(10.0)   # nearly straight: the arms are props
BEND_IN_S = 0.8                   # s: the body bends into the braced rest this fast ...
BEND_OUT_S = 0.6                  # ... and straightens out of it
BRACE_ARMS_RC = 0.3               # the arms brace only with at least this much of their strength left
_LATERAL = np.array([0.0, 0.0, 1.0])   # the proxy's right-pointing axis (its frames are y up, x forward)
_UP = np.array([0.0, 1.0, 0.0])
_WORLD_UP = np.array([0.0, 0.0, 1.0])


def braced_joint_rotations() -> dict[str, np.ndarray]:
    """The braced rest's upper-body joint rotations (x, y, z, w), by LIMB_JOINTS name: forward
    flexion is a negative turn about the lateral axis for trunk and neck, positive for a shoulder."""
    def about_lateral(angle: float) -> np.ndarray:
        return quat.from_rotvec(_LATERAL * angle)

    return {"chest": about_lateral(-CHEST_BEND), "neck": about_lateral(-HEAD_HANG),
            "right_shoulder": about_lateral(ARM_REACH), "left_shoulder": about_lateral(ARM_REACH),
            "right_elbow": about_lateral(ELBOW_BEND), "left_elbow": about_lateral(ELBOW_BEND)}


class RestPosture:
    """The braced rest's blend (``bend``, 0 upright .. 1 braced) and what it does to the pose."""

    def __init__(self, dt: float):
        self.dt = dt
        self.bend = 0.0
        self.braced = False         # this rest is taken with hands on thighs
        self._pose = braced_joint_rotations()

    def update(self, resting: bool, arms_rc: float) -> float:
        """Advance the blend one step (rests are for the legs: see runtime.fatigue.tempo); ``arms_rc`` the
        arms' least capacity when the rest begins decides whether they brace.  Returns the blend."""
        if resting and self.bend == 0.0:
            self.braced = arms_rc >= BRACE_ARMS_RC
        aim = 1.0 if (resting and self.braced) else 0.0
        if aim > self.bend:
            self.bend = min(aim, self.bend + self.dt / BEND_IN_S)
        elif aim < self.bend:
            self.bend = max(aim, self.bend - self.dt / BEND_OUT_S)
        return self.bend

    def hinge(self, root_rot: np.ndarray) -> float:
        """How far (rad) the pelvis at ``root_rot`` tips forward now: toward PELVIS_LEAN from
        its own pitch, by the blend (none where it leans that far already)."""
        up = quat.rotate(root_rot, _UP)
        right = quat.rotate(root_rot, _LATERAL)
        forward = np.cross(right, _WORLD_UP)
        pitch = math.atan2(float(up @ forward), float(up[2])) if forward @ forward > 1e-12 else 0.0
        return max(PELVIS_LEAN - pitch, 0.0) * smoothstep(self.bend)

    def targets(self, joints: np.ndarray, slots: list[int]) -> np.ndarray:
        """``joints`` (12 x 4, proxy order) with the limb joints at ``slots`` (LIMB_JOINTS order)
        turned toward the braced rest by the blend."""
        out = np.array(joints, dtype=float)
        w = smoothstep(self.bend)
        for name, slot in zip(LIMB_JOINTS, slots):
            out[slot] = quat.slerp(out[slot], self._pose[name], w)
        return out


def hinged(com: np.ndarray, root_pos: np.ndarray, root_rot: np.ndarray, angle) -> tuple[np.ndarray, np.ndarray]:
    """The pelvis (``root_pos``, ``root_rot``; one or N of each) tipped forward by ``angle`` rad
    about its own lateral axis, turning about the centre of mass ``com``: the hips go back as the
    trunk goes forward, and the body stays over its feet."""
    axis = quat.rotate(root_rot, np.broadcast_to(_LATERAL, np.shape(root_pos)))
    turn = quat.from_rotvec(axis * -np.asarray(angle, dtype=float)[..., None])
    return com + quat.rotate(turn, root_pos - com), quat.multiply(turn, root_rot)
