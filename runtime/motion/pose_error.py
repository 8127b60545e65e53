"""How far a take's joints are from the source's, in metres: the tracking error an animator sees,
and how far its end effectors (hands, feet, head) are, at the moments a viewer sees them.

Joint angles (``metrics.joint_error_deg``) weigh a wrist and a hip alike; positions weigh what
shows.  Both poses are put through the same forward kinematics (the default proxy's joint
offsets, numpy only), relative to their own root position and heading, so the error is the pose
alone; the root's own error is ``metrics.root_error_m``.  Compared at the same phase of the
source, like every take metric (a slower take is compared with the motion it shows).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..maths import quat
from .clip import Clip
from .take import Take

# Joint origins in the parent link's frame, DeepMimic URDF units (scaled by 0.25 to 1.62 m).
_OFFSETS = {
    "chest": ("root", (0.0, proxy.CHEST_ABOVE_ROOT_URDF, 0.0)),
    "neck": ("chest", (0.0, proxy.NECK_ABOVE_CHEST_URDF, 0.0)),
    "right_hip": ("root", (0.0, 0.0, 0.339548)),
    "right_knee": ("right_hip", (0.0, -proxy.THIGH_URDF, 0.0)),
    "right_ankle": ("right_knee", (0.0, -proxy.SHANK_URDF, 0.0)),
    "right_shoulder": ("chest", (-0.0962, 0.974, 0.73244)),
    "right_elbow": ("right_shoulder", (0.0, -1.099152, 0.0)),
    "right_wrist": ("right_elbow", (0.0, -1.035788, 0.0)),
    "left_hip": ("root", (0.0, 0.0, -0.339548)),
    "left_knee": ("left_hip", (0.0, -proxy.THIGH_URDF, 0.0)),
    "left_ankle": ("left_knee", (0.0, -proxy.SHANK_URDF, 0.0)),
    "left_shoulder": ("chest", (-0.0962, 0.974, -0.73244)),
    "left_elbow": ("left_shoulder", (0.0, -1.099152, 0.0)),
    "left_wrist": ("left_elbow", (0.0, -1.035788, 0.0)),
}
_HEAD_CENTRE = ("neck", (0.0, 0.7, 0.0))     # the head's centre on the neck link (humanoid.urdf)
_URDF_UNITS_PER_M = 4.0 * proxy.DEFAULT_HEIGHT
END_EFFECTORS = ("head", "right_wrist", "left_wrist", "right_ankle", "left_ankle")   # head, hands, feet
EFFECTOR_PERCENTILE = 95.0


def _forward(root_rot: np.ndarray, joint_rots: np.ndarray, joints: tuple, height: float) -> dict[str, np.ndarray]:
    """(T, 3) position of every joint of _OFFSETS and of the head's centre ("head") relative to the
    root, in a frame that turns with the root's heading (yaw), for a body ``height`` metres tall."""
    scale = height / _URDF_UNITS_PER_M
    T = root_rot.shape[0]
    heading = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), -quat.yaw(root_rot))
    rot = {"root": quat.multiply(heading, quat.normalize(root_rot))}
    pos = {"root": np.zeros((T, 3))}
    for name, (parent, offset) in [*_OFFSETS.items(), ("head", _HEAD_CENTRE)]:
        off = np.broadcast_to(np.asarray(offset) * scale, (T, 3))
        pos[name] = pos[parent] + quat.rotate(rot[parent], off)
        if name in joints:
            rot[name] = quat.multiply(rot[parent], quat.normalize(joint_rots[:, joints.index(name)]))
    return pos


def joint_positions(root_rot: np.ndarray, joint_rots: np.ndarray, joints: tuple, height: float) -> np.ndarray:
    """(T, K, 3) positions of the proxy's joints and wrists relative to the root, in a frame that
    turns with the root's heading (yaw), for a body ``height`` metres tall."""
    pos = _forward(root_rot, joint_rots, joints, height)
    return np.stack([pos[n] for n in _OFFSETS], axis=1)


def joint_position_error_m(take: Take, reference: Clip, height: float) -> float:
    """Mean distance (m) between the take's joints and the source's at the same phase, each
    relative to its own root, for a body ``height`` metres tall."""
    _, ref_rot, ref_joints = reference.sample_many(take.reference_time)
    joints = tuple(take.clip.joints)
    a = joint_positions(take.clip.root_rot, take.clip.joint_rots, joints, height)
    b = joint_positions(ref_rot, ref_joints, tuple(reference.joints), height)
    return float(np.linalg.norm(a - b, axis=-1).mean())


@dataclass(frozen=True)
class EffectorError:
    """How far a take's end effectors are from the source's: per END_EFFECTORS entry the distance
    at the EFFECTOR_PERCENTILE-th percentile over frames (``percentile_m``), the worst of them
    (``worst``, its ``worst_m``) and the take frame where that one is farthest off (``frame``);
    per entry the frame where it is farthest off (``farthest``)."""
    percentile_m: tuple[float, ...]
    worst: str
    worst_m: float
    frame: int
    farthest: tuple[int, ...]


def viewer_source_time(take: Take, fresh: bool) -> np.ndarray:
    """The moment of the source a viewer holds each take frame against: a ``fresh`` take should
    show the source's frame at its own frame (the take's time from its first source moment), so a
    clock that ran ahead or fell behind counts; a tired one plays slower by design and is held
    against the moment of the source it shows (``reference_time``).  A fresh take held past its
    source's end is held against the last moment it shows."""
    if not fresh:
        return take.reference_time
    return np.minimum(take.reference_time[0] + np.arange(take.frames) / take.fps, take.reference_time.max())


def end_effector_error(take: Take, reference: Clip, height: float, fresh: bool) -> EffectorError:
    """Hands (wrists), feet (ankles) and head of the take against the source's at
    viewer_source_time, each relative to its own hips (the root, turned to its heading, so a
    trunk that leans or turns differently counts), for a body ``height`` metres tall.

    Why the 95th percentile of the worst end effector: a mean joint error of 2 cm hid a hand
    30 cm off for a second, and a straightened elbow or a foot through the floor is what a viewer
    sees; the percentile ignores a frame or two of a landing."""
    _, ref_rot, ref_joints = reference.sample_many(viewer_source_time(take, fresh))
    a = _forward(take.clip.root_rot, take.clip.joint_rots, tuple(take.clip.joints), height)
    b = _forward(ref_rot, ref_joints, tuple(reference.joints), height)
    dist = np.stack([np.linalg.norm(a[n] - b[n], axis=-1) for n in END_EFFECTORS], axis=1)   # (T, E)
    per = np.percentile(dist, EFFECTOR_PERCENTILE, axis=0)
    worst = int(per.argmax())
    farthest = tuple(int(f) for f in dist.argmax(axis=0))
    return EffectorError(tuple(float(x) for x in per), END_EFFECTORS[worst], float(per[worst]), farthest[worst],
                         farthest)
