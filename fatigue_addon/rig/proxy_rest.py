"""The proxy's rest pose as the retarget reads a rig against it: its segments' directions and
chain order, the knee and elbow hinges turned to bend the way the rig's bend, the axes that stand a
motion up and face it along +X, and RetargetInfo, what undoes a retarget (numpy, no bpy)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...runtime.body import proxy
from ...runtime.maths import quat, rotation
from ...runtime.motion import clip as rclip
from . import space
from .keys import KEY_PARENT
from .rotations import array64, polar, rot_z

R0 = quat.to_matrix(rclip.Y_UP_TO_Z_UP)          # every proxy link's world rotation at rest
# Root (pelvis) above the sole in the URDF rest pose, DeepMimic humanoid scaled to 1.62 m:
# thigh + shank + foot box centre below the ankle (URDF units, x 0.25), plus the foot box half height.
PROXY_PELVIS_HEIGHT = ((proxy.THIGH_URDF + proxy.SHANK_URDF + proxy.FOOT_BELOW_ANKLE_URDF) * proxy.URDF_SCALE
                       + proxy.FOOT_HALF_EXTENTS[1])
_UP = np.array([0.0, 0.0, 1.0])
_DOWN = -_UP
# Rest-pose world direction of every proxy segment (arms hang down), proxy facing +X.
SEGMENT_DIRECTION = {
    "chest": _UP, "neck": _UP,
    "right_hip": _DOWN, "right_knee": _DOWN, "left_hip": _DOWN, "left_knee": _DOWN,
    "right_shoulder": _DOWN, "right_elbow": _DOWN, "left_shoulder": _DOWN, "left_elbow": _DOWN,
}
# Keys in an order where every proxy parent comes first.
CHAIN_ORDER = ("chest", "neck", "right_hip", "right_knee", "right_ankle", "left_hip", "left_knee", "left_ankle",
               "right_shoulder", "right_elbow", "left_shoulder", "left_elbow")
JOINT_KEYS = tuple(j.name for j in proxy.DEFAULT_JOINTS)     # the Clip's joint order = key names
REVOLUTE_KEYS = tuple(j.name for j in proxy.DEFAULT_JOINTS if j.dofs == 1)


@dataclass
class RetargetInfo:
    """Everything ``clip_to_action`` needs to undo ``action_to_clip`` (JSON-able via to_dict)."""
    armature: str
    action: str
    slot_handle: int | None
    frame_start: int
    frame_end: int
    fps: float
    bones: dict                  # key -> bone name (required keys)
    align: np.ndarray            # (3, 3) A: yaw turning the rig's facing onto +X
    scale: float                 # s: proxy metres per rig world metre
    root_offset: np.ndarray      # (3,)
    rig_height: float
    proxy_height: float
    rest_world: dict             # key -> (3, 3) W_b(rest)
    proxy_rest: dict             # key -> (3, 3) C_j
    method: str                  # "fcurves" or "scene"
    off_axis_deg: dict = field(default_factory=dict)   # knee/elbow: max rotation off the hinge axis
    object_matrix: np.ndarray | None = None            # (4, 4) the object's world matrix the bones were read under
    reference_frame: int | None = None                 # the animated frame the body was measured on (None: rest pose)
    warnings: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)        # seconds per stage

    @property
    def align_quat(self) -> np.ndarray:
        """A as a runtime quaternion (x, y, z, w)."""
        return quat.hemisphere(rotation.matrices_to_quats(self.align))

    def to_dict(self) -> dict:
        def conv(v):
            if isinstance(v, np.ndarray):
                return v.tolist()
            if isinstance(v, dict):
                return {k: conv(x) for k, x in v.items()}
            return v
        return {k: conv(v) for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "RetargetInfo":
        d = dict(d)
        d["align"] = np.asarray(d["align"], dtype=float)
        d["root_offset"] = np.asarray(d["root_offset"], dtype=float)
        d["rest_world"] = {k: np.asarray(v, dtype=float) for k, v in d["rest_world"].items()}
        d["proxy_rest"] = {k: np.asarray(v, dtype=float) for k, v in d["proxy_rest"].items()}
        if d.get("object_matrix") is not None:
            d["object_matrix"] = np.asarray(d["object_matrix"], dtype=float)
        return cls(**d)


HINGE_OF = {"right_hip": "right_knee", "left_hip": "left_knee",
             "right_shoulder": "right_elbow", "left_shoulder": "left_elbow"}


def _flexion_sign(key: str) -> float:
    """+1 where a positive turn about the proxy's hinge axis (the parent link's local Z) flexes
    the joint (the forearm forward), -1 where it extends it (a knee flexes backward)."""
    hinge = R0 @ rclip.REVOLUTE_AXIS
    forward = float(np.cross(hinge, _DOWN) @ np.array([1.0, 0.0, 0.0]))
    return float(np.sign(forward)) * (1.0 if key.endswith("shoulder") else -1.0)


def hinge_twist(key: str, C: np.ndarray, d: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """The thigh or upper arm link ``C`` (body axes, pointing along ``d``) turned about ``d`` so that
    the proxy's knee or elbow axis lies along the rig's own (``axis``: the way it bends, body axes):
    a pose with bent or turned limbs does not say how the segment is twisted, the way it bends does."""
    d = d / np.linalg.norm(d)
    target = axis - (axis @ d) * d
    if np.linalg.norm(target) < 1e-6:
        return C
    target = _flexion_sign(key) * target / np.linalg.norm(target)
    a = C @ rclip.REVOLUTE_AXIS
    angle = math.atan2(float(d @ np.cross(a, target)), float(a @ target))
    return quat.to_matrix(quat.from_axis_angle(d, angle)) @ C


def hinge_axes(bones: dict, O: np.ndarray, readings: list, pose: dict) -> dict:
    """Thigh / upper-arm key -> the world axis its knee / elbow bends about at ``pose``: the bend
    (upper x lower segment) of every reading, carried into the upper bone's own frame and summed,
    so the frames that bend most decide.  Absent where the limb never bends."""
    O3 = O[:3, :3]

    def seg(r, a, b):
        v = np.asarray(r[b][0], dtype=float) - np.asarray(r[a][0], dtype=float)
        n = np.linalg.norm(v)
        return v / n if n > 1e-12 else v

    out = {}
    for upper, lower in HINGE_OF.items():
        tip = bones.get(lower.replace("elbow", "hand").replace("knee", "ankle"))
        total = np.zeros(3)
        for r in readings:
            a = seg(r, bones[upper], bones[lower])
            if tip and tip in r:
                b = seg(r, bones[lower], tip)
            else:
                v = np.asarray(r[bones[lower]][1], dtype=float) - np.asarray(r[bones[lower]][0], dtype=float)
                b = v / max(np.linalg.norm(v), 1e-12)
            W = polar(O3 @ array64(r[bones[upper]][2])[:3, :3])
            total += W.T @ (O3 @ np.cross(a, b))
        if np.linalg.norm(total) > 0.05 * len(readings):
            W = polar(O3 @ array64(pose[bones[upper]][2])[:3, :3])
            out[upper] = W @ (total / np.linalg.norm(total))
    return out


POSE_READINGS = 24       # frames of the action read to find planted feet and how knees and elbows bend


def planted(bones: dict, O: np.ndarray, readings: list) -> dict:
    """Ankle key -> the reading (rigmap.read_pose) where that ankle is lowest along the trunk's
    usual up (the nearest world axis to pelvis -> neck): the foot is planted, so flat on the
    floor, there."""
    O3 = O[:3, :3]
    trunk = sum(O3 @ (np.asarray(r[bones["neck"]][0], dtype=float) - np.asarray(r[bones["pelvis"]][0], dtype=float))
                for r in readings)
    up, _ = space.nearest_axis(trunk)
    out = {}
    for side in ("right", "left"):
        key = f"{side}_ankle"
        out[key] = min(readings, key=lambda r: float(up @ (O3 @ np.asarray(r[bones[key]][0], dtype=float))))
    return out


def motion_axes(name: str, world: dict, geo: dict) -> tuple[np.ndarray, list]:
    """A: the world rotation that stands the motion up (see space.motion_up) and turns its
    facing in the first frame onto +X.  Returns (A, warnings)."""
    pos = {k: world[k][:, :3, 3] for k in ("pelvis", "neck", "right_hip", "left_hip", "right_shoulder", "left_shoulder")}
    axis, axis_name = space.motion_up(geo["Fr"], pos["neck"] - pos["pelvis"])
    warnings = []
    U = np.eye(3)
    if axis is not None:
        U = space.rotation_onto_z(axis)
        warnings.append(f"'{name}' stands along {axis_name}, not Z, all through its motion (a file imported "
                        f"with another up axis): simulated standing up along {axis_name}")
    # Facing: the rest pose's when it stands (or stands on its head), so every action of a rig
    # gets the same axes; the first frame's when the rest pose lies down and has no heading.
    yaw = space.facing_yaw(U @ geo["Fr"][:, 1]) if abs((U @ geo["Fr"][:, 2])[2]) > 0.5 else None
    if yaw is None:
        left = (pos["left_hip"] - pos["right_hip"]) + (pos["left_shoulder"] - pos["right_shoulder"])
        yaw = next((y for y in (space.facing_yaw(v) for v in left @ U.T) if y is not None), 0.0)
    return rot_z(-yaw) @ U, warnings



def proxy_world_rotations(clip) -> dict:
    """key -> (T, 3, 3) world rotation of every proxy link (forward kinematics of the Clip)."""
    q = {"pelvis": quat.normalize(clip.root_rot)}
    for key in CHAIN_ORDER:
        q[key] = quat.multiply(q[KEY_PARENT[key]], clip.joint_rots[:, clip.joints.index(key)])
    return {k: quat.to_matrix(quat.normalize(v)) for k, v in q.items()}
