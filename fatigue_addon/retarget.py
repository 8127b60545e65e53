"""Action <-> Clip: the one place where Blender's rig space meets the proxy's space.

Conventions converted here and nowhere else: Blender is Z-up, metres, quaternions (w, x, y, z)
and 4x4 matrices; ``runtime`` is Z-up, metres, quaternions (x, y, z, w).

Method (independent of the rig's rest pose, units and orientation; see rig_space):

* ``O``: the object's world matrix, read once (at the first baked frame): the bones are
  simulated in the armature's own space under it, so an animated parent or object keys are not
  part of the performance and are not counted twice (they play on top of the take).
* ``W_b(t)``: world rotation of mapped bone b at frame t (``O @ pose_bone.matrix``, scale
  removed), ``W_b(rest)`` the same in the rest pose.  ``D_b(t) = W_b(t) W_b(rest)^-1`` is the
  bone's world motion away from its rest pose.
* ``Fr``: the rest pose's body axes (forward, left, up; rig_space.body_frame: up along the trunk
  snapped to a world axis, left from the hips and shoulders), so a rest pose lying down or on its
  head is read like a standing one.
* A rest pose that is not a human shape (rigmap.body_pose) is not used: "rest" below is then the
  animated frame standing straightest (``W_b(rest)`` its posed world rotations, the joints its
  posed heads), each foot's own planted frame (the lowest ankle), and the thigh and upper arm
  turned about their length so the proxy's knee and elbow hinges lie along the axis the rig's
  knee and elbow bend about over the action (a posed limb does not show its twist, its bend does).
* ``A``: stands the motion up (world Z, or the one axis a file imported with another up axis
  stands along all through its motion: rig_space.motion_up) and turns the rig's facing (its rest
  pose's, or the first frame's when the rest pose lies down) onto the proxy's +X.
* ``C_j``: the proxy link's world orientation when the proxy stands LIKE THE RIG'S REST POSE:
  starting from the proxy rest pose (facing +X, up +Z, ``runtime.motion.clip.Y_UP_TO_Z_UP`` at the root,
  every joint identity, arms hanging down) each segment is swung, down the chain, by the minimal
  rotation that points it along the rig bone's rest direction in ``Fr`` (segment ends come from
  the next joint's head: importers make bone tails any length), then turned by ``A Fr``.  Feet
  only turn about the body's up (toe-out): a rig standing in its rest pose has flat feet.
* Proxy link world rotation ``P_j(t) = A D_b(t) A^-1 C_j``; Clip root rotation = ``P_pelvis``;
  joint rotation = ``P_parent^-1 P_j`` (proxy tree: pelvis->chest->neck, pelvis->hip->knee->ankle,
  chest->shoulder->elbow).  Knees and elbows are revolute about their local Z in the proxy: the
  Clip keeps the full quaternion and ``RetargetInfo.off_axis_deg`` reports the part the hinge
  cannot follow (the simulation hands it to the hip or shoulder: runtime.motion.hinges).
* Root position ``= s A p(t) + offset``: p is the pelvis bone's world head, ``s = proxy_height /
  stature`` (rig_space.measure: the rig's size from its joint chains, in its own units), and the
  vertical offset puts the rig's standing pelvis (straight legs on world z = 0) at the proxy's
  own (``pelvis_height``), so legs of other proportions still reach the floor; a motion whose
  floor lies elsewhere keeps it (the simulation measures the floor under the clip's soles).

``clip_to_action`` is the exact inverse: every mapped bone gets back the world rotation
``A^-1 P_j C_j^-1 A W_b(rest)`` and the pelvis its world head position, solved through the rig's
own hierarchy; all other bones (fingers, twist bones, spine middles) keep their source local
channels, sampled per frame.  rig -> Clip -> rig reproduces the mapped bones' world rotations and
the root to float precision.

Sampling: without constraints, drivers, NLA or object animation the source channels are read by
``FCurve.evaluate`` and pushed through the hierarchy in numpy ("fcurves": no depsgraph, so a heavy
character mesh costs nothing); otherwise every frame is evaluated with ``scene.frame_set``
("scene").  ``method`` forces either.  Measured (bpy 5.0.1, 2 cores, tests/addon/test_retarget.py): a
63-bone Mixamo rig, 300 frames: action_to_clip 0.05 s + clip_to_action 0.14 s; the "scene" path
takes 0.43 s for the forward pass of the same rig without a mesh.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import bpy
import numpy as np

from ..runtime.motion import clip as rclip
from ..runtime.body import proxy
from ..runtime.maths import quat, repeatable
from . import anim, rig_space, rigmap
from .failure import RetargetError, RigMappingError


# ============================================================================= the proxy's rest pose

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
_ROTATION_PROPS = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")
_BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.([A-Za-z_]+)$')
_OBJECT_TRANSFORM = re.compile(r"^(?:delta_)?(?:location|rotation_\w+|scale)$")


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
        return mat_to_quat(self.align)

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


# ============================================================================= small maths (numpy)

def _np(m) -> np.ndarray:
    return np.array(m, dtype=np.float64)


def polar(m: np.ndarray) -> np.ndarray:
    """Nearest rotation to each (..., 3, 3) matrix (drops scale)."""
    u, _, vt = np.linalg.svd(np.asarray(m, dtype=np.float64))
    d = np.asarray(np.sign(np.linalg.det(u @ vt)))
    u = u.copy()
    u[..., :, 2] *= d[..., None]
    return u @ vt


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices -> (..., 4) quaternions x, y, z, w (w >= 0)."""
    m = np.asarray(m, dtype=np.float64)
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    tr = m00 + m11 + m22
    cands = np.stack([
        np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1], 1 + tr], -1),
        np.stack([1 + m00 - m11 - m22, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0], m[..., 2, 1] - m[..., 1, 2]], -1),
        np.stack([m[..., 0, 1] + m[..., 1, 0], 1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1], m[..., 0, 2] - m[..., 2, 0]], -1),
        np.stack([m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22, m[..., 1, 0] - m[..., 0, 1]], -1),
    ], -2)
    pick = np.argmax(np.stack([tr, m00, m11, m22], -1), axis=-1)
    q = np.take_along_axis(cands, pick[..., None, None], axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., 3:4] < 0, -q, q)


def _swing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Minimal rotation (3x3) turning unit vector a onto unit vector b."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    axis = np.cross(a, b)
    s = np.linalg.norm(axis)
    c = float(np.dot(a, b))
    if s < 1e-9:
        if c > 0:
            return np.eye(3)
        perp = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(perp) < 1e-6:
            perp = np.cross(a, [0.0, 1.0, 0.0])
        return quat.to_matrix(quat.from_axis_angle(perp, np.pi))
    return quat.to_matrix(quat.from_axis_angle(axis, math.atan2(s, c)))


def _rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _axis_rot(axis: int, angle: np.ndarray) -> np.ndarray:
    c, s = repeatable.cos(angle), repeatable.sin(angle)
    r = np.zeros(angle.shape + (3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    r[..., axis, axis] = 1.0
    r[..., i, i] = c
    r[..., j, j] = c
    r[..., i, j] = -s
    r[..., j, i] = s
    return r


def euler_to_mat(e: np.ndarray, order: str) -> np.ndarray:
    """Blender Euler (order 'XYZ' = X applied first) -> (..., 3, 3)."""
    r = None
    for ch in order:
        k = "XYZ".index(ch)
        m = _axis_rot(k, e[..., k])
        r = m if r is None else m @ r
    return r


def _twist_off_axis(q: np.ndarray) -> np.ndarray:
    """Angle (rad) of the part of local rotations q (x,y,z,w) that is not about local Z."""
    twist = np.zeros_like(q)
    twist[..., 2] = q[..., 2]
    twist[..., 3] = q[..., 3]
    n = np.linalg.norm(twist, axis=-1, keepdims=True)
    twist = np.where(n > 1e-9, twist / np.maximum(n, 1e-12), quat.IDENTITY)
    swing = quat.multiply(q, quat.conjugate(twist))
    return quat.angle_between(swing, np.broadcast_to(quat.IDENTITY, swing.shape))


# ============================================================================= reading the source

def _unescape(name: str) -> str:
    return name.replace('\\"', '"').replace("\\\\", "\\")


def _sample_curves(curves, frames: np.ndarray) -> dict:
    """(data_path, index) -> (values (T,), group name) for every live curve."""
    out = {}
    flist = frames.tolist()
    for fc in curves:
        if fc.mute:
            continue
        kp = fc.keyframe_points
        n = len(kp)
        if n == 0 and len(fc.modifiers) == 0:
            continue
        if n == 1 and len(fc.modifiers) == 0:
            vals = np.full(len(flist), kp[0].co[1])
        else:
            ev = fc.evaluate
            vals = np.fromiter((ev(f) for f in flist), dtype=np.float64, count=len(flist))
        out[(fc.data_path, fc.array_index)] = (vals, fc.group.name if fc.group is not None else "")
    return out


def _bone_channels(samples: dict) -> dict:
    """bone -> {(prop, index): values}."""
    out: dict = {}
    for (path, index), (vals, _) in samples.items():
        m = _BONE_PATH.match(path)
        if m:
            out.setdefault(_unescape(m.group(1)), {})[(m.group(2), index)] = vals
    return out


def _bases(obj, chans: dict, names, T: int) -> dict:
    """bone -> (T, 4, 4) matrix_basis from sampled channels (static values where not animated)."""
    out = {}
    for name in names:
        pb = obj.pose.bones[name]
        ch = chans.get(name, {})

        def comp(prop, static):
            arr = np.empty((T, len(static)))
            for i, v in enumerate(static):
                arr[:, i] = ch.get((prop, i), v)
            return arr

        loc = comp("location", tuple(pb.location))
        mode = pb.rotation_mode
        if mode == "QUATERNION":
            q = comp("rotation_quaternion", tuple(pb.rotation_quaternion))
            n = np.linalg.norm(q, axis=1, keepdims=True)
            q = np.where(n > 1e-12, q / np.maximum(n, 1e-12), np.array([1.0, 0, 0, 0]))
            rot = quat.to_matrix(q[:, [1, 2, 3, 0]])
        elif mode == "AXIS_ANGLE":
            aa = comp("rotation_axis_angle", tuple(pb.rotation_axis_angle))
            n = np.linalg.norm(aa[:, 1:], axis=1)
            axis = np.where(n[:, None] > 1e-12, aa[:, 1:] / np.maximum(n, 1e-12)[:, None], [0.0, 1.0, 0.0])
            rot = quat.to_matrix(quat.from_axis_angle(axis, np.where(n > 1e-12, aa[:, 0], 0.0)))
        else:
            rot = euler_to_mat(comp("rotation_euler", tuple(pb.rotation_euler)), mode)
        sc = comp("scale", tuple(pb.scale))
        b = np.zeros((T, 4, 4))
        b[:, :3, :3] = rot * sc[:, None, :]
        if not pb.bone.use_connect:
            b[:, :3, 3] = loc
        b[:, 3, 3] = 1.0
        out[name] = b
    return out


def _closure(obj, names) -> list:
    """``names`` and all their ancestors, parents first."""
    need = set()
    for n in names:
        b = obj.data.bones[n]
        while b is not None and b.name not in need:
            need.add(b.name)
            b = b.parent
    depth = {}
    for n in need:
        d, b = 0, obj.data.bones[n].parent
        while b is not None:
            d, b = d + 1, b.parent
        depth[n] = d
    return sorted(need, key=lambda n: (depth[n], n))


def _rel(obj, name) -> np.ndarray:
    bone = obj.data.bones[name]
    loc = _np(bone.matrix_local)
    if bone.parent is None:
        return loc
    return np.linalg.inv(_np(bone.parent.matrix_local)) @ loc


def _fk(obj, bases: dict, order) -> dict:
    """bone -> (T, 4, 4) armature-space pose matrices (standard inheritance only)."""
    mats = {}
    for name in order:
        bone = obj.data.bones[name]
        rel = _rel(obj, name)
        if bone.parent is None:
            mats[name] = rel @ bases[name]
        else:
            mats[name] = mats[bone.parent.name] @ rel @ bases[name]
    return mats


def scene_path_reasons(obj, bones) -> list:
    """Why F-curve sampling would not match Blender's evaluation for these bones (empty = it will)."""
    reasons = []
    if obj.parent is not None:
        reasons.append(f"'{obj.name}' has a parent")
    if len(obj.constraints):
        reasons.append(f"'{obj.name}' has object constraints")
    ad = obj.animation_data
    if ad is not None:
        if ad.use_nla and any(not t.mute and len(t.strips) for t in ad.nla_tracks):
            reasons.append("NLA tracks are active")
        for fc in ad.drivers:
            if fc.data_path.startswith("pose.bones[") or _OBJECT_TRANSFORM.match(fc.data_path):
                reasons.append(f"driver on {fc.data_path}")
                break
        for fc in anim.action_fcurves(obj):
            if _OBJECT_TRANSFORM.match(fc.data_path):
                reasons.append("the object itself is animated")
                break
    for name in _closure(obj, bones):
        pb = obj.pose.bones[name]
        b = pb.bone
        if any(not c.mute and c.influence > 0 for c in pb.constraints):
            reasons.append(f"bone '{name}' has constraints")
        if not b.use_inherit_rotation or b.inherit_scale != "FULL" or not b.use_local_location or b.use_relative_parent:
            reasons.append(f"bone '{name}' does not inherit its parent's transform fully")
    return reasons


# ============================================================================= rest-pose geometry

def _mapping_bones(obj, mapping) -> dict:
    if isinstance(mapping, rigmap.Mapping):
        bones = dict(mapping.bones)
    else:
        bones = dict(mapping)
    missing = [k for k in rigmap.HUMANOID_KEYS if not bones.get(k)]
    if missing:
        labels = ", ".join(rigmap.KEY_LABELS[k] for k in missing)
        raise RigMappingError(f"'{obj.name}': no bone mapped for {labels}: {rigmap.FIX_HINT}")
    absent = [b for k, b in bones.items() if b not in obj.data.bones]
    if absent:
        raise RigMappingError(f"bone '{absent[0]}' of the rig mapping is not in '{obj.name}': {rigmap.FIX_HINT}")
    return bones


def _subtree_heads(obj, name: str, pose=None) -> list:
    return [c.head_local if pose is None else pose[c.name][0] for c in obj.data.bones[name].children_recursive]


def _segment_end(obj, name: str, world, along=None, pose=None):
    """Where bone ``name``'s segment ends in the rest pose (or in ``pose``, a rigmap.read_pose): the
    head of its first child (or, with ``along``, the child head farthest along that direction),
    else its tail.  Tails only as a last resort: importers give leaf bones arbitrary lengths."""
    bone = obj.data.bones[name]
    if along is not None:
        heads = _subtree_heads(obj, name, pose)
    else:
        heads = [c.head_local if pose is None else pose[c.name][0] for c in bone.children]
    if not heads:
        return world(bone.tail_local if pose is None else pose[name][1])
    pts = [world(h) for h in heads]
    if along is None:
        return pts[0]
    return max(pts, key=lambda p: float(p @ along))


def _rest_geometry(obj, bones: dict, O: np.ndarray, pose: dict | None = None, feet: dict | None = None,
                   hinges: dict | None = None) -> dict:
    """The rig's rest pose in its own body axes: bone rest rotations, the proxy posed like it
    (``C_body``, in body axes: forward +X, left +Y, up +Z), the body axes ``Fr`` in the world and
    the rig's size.  Joint positions only (bone heads), never the world's Z: rest poses lie,
    stand on their heads or hang from rotated parents.

    ``pose`` (a rigmap.read_pose) replaces the rest pose where that is not a human shape: the
    body is measured on the animated frame rigmap.body_pose chose, and ``feet`` (ankle key ->
    read_pose) gives each foot the frame it is planted in (the proxy's feet are flat there), and
    ``hinges`` (thigh / upper-arm key -> world axis) the way each knee and elbow bends."""
    O3 = O[:3, :3]
    feet = feet or {}

    def world(p):
        return O3 @ np.asarray(p, dtype=float) + O[:3, 3]

    def at(key):
        return feet.get(key, pose)

    def head(key):
        reading = at(key)
        name = bones[key]
        return world(obj.data.bones[name].head_local if reading is None else reading[name][0])

    def rotation(key):
        reading = at(key)
        name = bones[key]
        return _np(obj.data.bones[name].matrix_local if reading is None else reading[name][2])[:3, :3]

    rest_world = {k: polar(O3 @ rotation(k)) for k in rigmap.HUMANOID_KEYS}
    joints = {k: world(obj.data.bones[bones[k]].head_local if pose is None else pose[bones[k]][0])
              for k in rigmap.HUMANOID_KEYS}
    try:
        Fr = rig_space.body_frame(joints)
    except ValueError:
        raise RetargetError(f"cannot tell which way '{obj.name}' faces (its left and right bones coincide): "
                            f"check the left/right entries of the Rig Mapping list") from None
    size = rig_space.measure(joints, up=Fr[:, 2])
    if size.stature < 1e-6:
        raise RetargetError(f"'{obj.name}' has no size in its rest pose: check the armature's scale")
    up = Fr[:, 2]
    pelvis_head = joints["pelvis"]
    ends = {"chest": joints["neck"], "neck": _segment_end(obj, bones["neck"], world, along=up, pose=pose)}
    base = {"chest": pelvis_head}     # the proxy's chest link spans the whole trunk
    for side in ("right", "left"):
        ends[f"{side}_hip"] = joints[f"{side}_knee"]
        ends[f"{side}_knee"] = joints[f"{side}_ankle"]
        ends[f"{side}_shoulder"] = joints[f"{side}_elbow"]
        for key, tip in ((f"{side}_elbow", f"{side}_hand"), (f"{side}_ankle", f"{side}_toe")):
            b = bones.get(tip)
            reading = at(key)
            if b and b in obj.data.bones:
                ends[key] = world(obj.data.bones[b].head_local if reading is None else reading[b][0])
            else:
                ends[key] = _segment_end(obj, bones[key], world, pose=reading)
    C = {"pelvis": R0.copy()}
    warnings = []
    for key in CHAIN_ORDER:
        parent = rigmap.KEY_PARENT[key]
        d = Fr.T @ (ends[key] - base.get(key, head(key)))     # a foot from the frame it is planted in
        if key.endswith("_ankle"):
            d[2] = 0.0
            yaw = math.atan2(d[1], d[0]) if np.linalg.norm(d) > 1e-3 * size.stature else 0.0
            C[key] = _rot_z(yaw) @ R0
            continue
        if np.linalg.norm(d) < 1e-6 * size.stature:
            warnings.append(f"{rigmap.KEY_LABELS[key]} '{bones[key]}' has no length in the rest pose")
            C[key] = C[parent].copy()
            continue
        d_proxy = C[parent] @ R0.T @ SEGMENT_DIRECTION[key]
        C[key] = _swing(d_proxy, d) @ C[parent]
        if key in (hinges or {}):
            C[key] = _hinge_twist(key, C[key], d, Fr.T @ hinges[key])
    return {"rest_world": rest_world, "C_body": C, "Fr": Fr, "size": size, "warnings": warnings}


_HINGE_OF = {"right_hip": "right_knee", "left_hip": "left_knee",
             "right_shoulder": "right_elbow", "left_shoulder": "left_elbow"}


def _flexion_sign(key: str) -> float:
    """+1 where a positive turn about the proxy's hinge axis (the parent link's local Z) flexes
    the joint (the forearm forward), -1 where it extends it (a knee flexes backward)."""
    hinge = R0 @ rclip.REVOLUTE_AXIS
    forward = float(np.cross(hinge, _DOWN) @ np.array([1.0, 0.0, 0.0]))
    return float(np.sign(forward)) * (1.0 if key.endswith("shoulder") else -1.0)


def _hinge_twist(key: str, C: np.ndarray, d: np.ndarray, axis: np.ndarray) -> np.ndarray:
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


def _hinge_axes(obj, bones: dict, O: np.ndarray, readings: list, pose: dict) -> dict:
    """Thigh / upper-arm key -> the world axis its knee / elbow bends about at ``pose``: the bend
    (upper x lower segment) of every reading, carried into the upper bone's own frame and summed,
    so the frames that bend most decide.  Absent where the limb never bends."""
    O3 = O[:3, :3]

    def seg(r, a, b):
        v = np.asarray(r[b][0], dtype=float) - np.asarray(r[a][0], dtype=float)
        n = np.linalg.norm(v)
        return v / n if n > 1e-12 else v

    out = {}
    for upper, lower in _HINGE_OF.items():
        tip = bones.get(lower.replace("elbow", "hand").replace("knee", "ankle"))
        total = np.zeros(3)
        for r in readings:
            a = seg(r, bones[upper], bones[lower])
            if tip and tip in r:
                b = seg(r, bones[lower], tip)
            else:
                v = np.asarray(r[bones[lower]][1], dtype=float) - np.asarray(r[bones[lower]][0], dtype=float)
                b = v / max(np.linalg.norm(v), 1e-12)
            W = polar(O3 @ _np(r[bones[upper]][2])[:3, :3])
            total += W.T @ (O3 @ np.cross(a, b))
        if np.linalg.norm(total) > 0.05 * len(readings):
            W = polar(O3 @ _np(pose[bones[upper]][2])[:3, :3])
            out[upper] = W @ (total / np.linalg.norm(total))
    return out


POSE_READINGS = 24       # frames of the action read to find planted feet and how knees and elbows bend


def _planted(bones: dict, O: np.ndarray, readings: list) -> dict:
    """Ankle key -> the reading (rigmap.read_pose) where that ankle is lowest along the trunk's
    usual up (the nearest world axis to pelvis -> neck): the foot is planted, so flat on the
    floor, there."""
    O3 = O[:3, :3]
    trunk = sum(O3 @ (np.asarray(r[bones["neck"]][0], dtype=float) - np.asarray(r[bones["pelvis"]][0], dtype=float))
                for r in readings)
    up, _ = rig_space.nearest_axis(trunk)
    out = {}
    for side in ("right", "left"):
        key = f"{side}_ankle"
        out[key] = min(readings, key=lambda r: float(up @ (O3 @ np.asarray(r[bones[key]][0], dtype=float))))
    return out


def _motion_axes(obj, world: dict, geo: dict) -> tuple[np.ndarray, list]:
    """A: the world rotation that stands the motion up (see rig_space.motion_up) and turns its
    facing in the first frame onto +X.  Returns (A, warnings)."""
    pos = {k: world[k][:, :3, 3] for k in ("pelvis", "neck", "right_hip", "left_hip", "right_shoulder", "left_shoulder")}
    axis, axis_name = rig_space.motion_up(geo["Fr"], pos["neck"] - pos["pelvis"])
    warnings = []
    U = np.eye(3)
    if axis is not None:
        U = rig_space.rotation_onto_z(axis)
        warnings.append(f"'{obj.name}' stands along {axis_name}, not Z, all through its motion (a file imported "
                        f"with another up axis): simulated standing up along {axis_name}")
    # Facing: the rest pose's when it stands (or stands on its head), so every action of a rig
    # gets the same axes; the first frame's when the rest pose lies down and has no heading.
    yaw = rig_space.facing_yaw(U @ geo["Fr"][:, 1]) if abs((U @ geo["Fr"][:, 2])[2]) > 0.5 else None
    if yaw is None:
        left = (pos["left_hip"] - pos["right_hip"]) + (pos["left_shoulder"] - pos["right_shoulder"])
        yaw = next((y for y in (rig_space.facing_yaw(v) for v in left @ U.T) if y is not None), 0.0)
    return _rot_z(-yaw) @ U, warnings


# ============================================================================= forward: action -> Clip

def _sample_world_fcurves(obj, action, slot_handle, bones: dict, frames: np.ndarray, O: np.ndarray):
    curves = anim.action_curves(action, slot_handle)
    names = sorted(set(bones[k] for k in rigmap.HUMANOID_KEYS))
    order = _closure(obj, names)
    needed = set(order)
    keep = []
    for fc in curves:
        m = _BONE_PATH.match(fc.data_path)
        if m and _unescape(m.group(1)) in needed:
            keep.append(fc)
    chans = _bone_channels(_sample_curves(keep, frames))
    mats = _fk(obj, _bases(obj, chans, order, len(frames)), order)
    world = {k: O @ mats[bones[k]] for k in rigmap.HUMANOID_KEYS}
    return world


def _sample_world_scene(obj, bones: dict, frames: np.ndarray):
    """Evaluated pose matrices per frame (constraints, drivers, NLA), placed by the object matrix
    ``O`` of the first frame: the object's own motion (an animated parent, object keys) is not
    part of the performance the body simulates; it still moves the baked take at playback.
    Returns (world matrices, O, how far the object moved over the frames)."""
    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    T = len(frames)
    world = {k: np.empty((T, 4, 4)) for k in rigmap.HUMANOID_KEYS}
    pbs = {k: obj.pose.bones[bones[k]] for k in rigmap.HUMANOID_KEYS}
    moved, O = 0.0, None
    try:
        for i, f in enumerate(frames):
            fi = int(math.floor(f))
            scene.frame_set(fi, subframe=float(f - fi))
            if O is None:
                O = rig_space.object_matrix(obj.matrix_world)
            moved = max(moved, float(np.abs(rig_space.object_matrix(obj.matrix_world) - O).max()))
            for k, pb in pbs.items():
                world[k][i] = O @ _np(pb.matrix)
    finally:
        scene.frame_set(keep[0], subframe=keep[1])
    return world, O, moved


def action_to_clip(obj, mapping, frame_start: int, frame_end: int, proxy_height: float | None = None,
                   method: str = "auto", pelvis_height: float | None = None, reference_frame="auto"):
    """Sample ``obj``'s assigned action over [frame_start, frame_end] into a proxy-space Clip.

    ``mapping``: a ``rigmap.Mapping`` or a dict key -> bone name.  ``proxy_height`` defaults to
    ``runtime.body.proxy.DEFAULT_HEIGHT``.  ``method``: "auto", "fcurves" or "scene".  ``pelvis_height``:
    the simulated body's pelvis above its soles standing straight (m; default: the default
    proportions' at ``proxy_height``), where the rig's standing pelvis is put.
    ``reference_frame``: the animated frame the body is measured on instead of its rest pose
    (None: the rest pose; "auto": rigmap.body_pose decides, the rest pose wherever it is a human
    shape).
    Returns ``(Clip, RetargetInfo)``; raises RetargetError / RigMappingError (one line) on bad input.
    """
    import time

    t0 = time.perf_counter()
    if obj is None or getattr(obj, "type", None) != "ARMATURE":
        raise RetargetError("No armature: select the character's armature")
    bones = _mapping_bones(obj, mapping)
    action = anim.active_action(obj)
    if action is None:
        raise RetargetError(f"Armature '{obj.name}' has no action: assign one in the Action Editor")
    frame_start, frame_end = int(frame_start), int(frame_end)
    if frame_end <= frame_start:
        raise RetargetError(f"Frame range {frame_start}-{frame_end} is empty: set End after Start in the timeline")
    if method not in ("auto", "fcurves", "scene"):
        raise ValueError(f"method must be 'auto', 'fcurves' or 'scene', not {method!r}")
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    proxy_height = float(proxy_height or proxy.DEFAULT_HEIGHT)
    if not (0.3 <= proxy_height <= 3.0):
        raise RetargetError(f"proxy height {proxy_height:.2f} m is not a human's: use 0.3 to 3 m")
    frames = np.arange(frame_start, frame_end + 1, dtype=np.float64)
    reasons = scene_path_reasons(obj, [bones[k] for k in rigmap.HUMANOID_KEYS])
    if method == "auto":
        method = "scene" if reasons else "fcurves"
    warnings = []
    t1 = time.perf_counter()
    if method == "fcurves":
        O = rig_space.object_matrix(obj.matrix_world)
        slot = getattr(obj.animation_data, "action_slot", None)
        world = _sample_world_fcurves(obj, action, slot.handle if slot is not None else None, bones, frames, O)
    else:
        world, O, moved = _sample_world_scene(obj, bones, frames)
        if moved > 1e-6:
            warnings.append(f"'{obj.name}' itself moves (a parent, object keys or constraints): that motion is "
                            f"kept as it is, the body simulates the bones' motion under it")
    t2 = time.perf_counter()
    if reference_frame == "auto":
        reference_frame = rigmap.body_pose(obj, bones)[0]
    if reference_frame is None:
        geo = _rest_geometry(obj, bones, O)
    else:
        pose = rigmap.read_pose(obj, reference_frame)
        readings = [rigmap.read_pose(obj, f) for f in rigmap.action_frames(obj, POSE_READINGS)]
        geo = _rest_geometry(obj, bones, O, pose, _planted(bones, O, readings),
                             _hinge_axes(obj, bones, O, readings, pose))
    warnings[:0] = geo["warnings"]
    A, motion_notes = _motion_axes(obj, world, geo)
    warnings.extend(motion_notes)
    size = geo["size"]
    s = proxy_height / size.stature
    C = {k: A @ geo["Fr"] @ c for k, c in geo["C_body"].items()}
    P = {}
    for key in rigmap.HUMANOID_KEYS:
        W = polar(world[key][:, :3, :3])
        D = W @ geo["rest_world"][key].T
        P[key] = A @ D @ A.T @ C[key]
    qP = {k: mat_to_quat(v) for k, v in P.items()}
    root_rot = quat.make_continuous(qP["pelvis"])
    joint_rots = np.stack([quat.multiply(quat.conjugate(qP[rigmap.KEY_PARENT[k]]), qP[k]) for k in JOINT_KEYS], axis=1)
    # Each joint continuous from a first frame with w >= 0: a joint's rotation relative to its
    # parent's had w < 0 on some rigs (a DAZ left arm) for the whole clip; an elbow's then reads
    # 2 pi off wherever an angle is taken without quat.hinge_angle.
    joint_rots = quat.make_continuous(quat.hemisphere(quat.normalize(joint_rots)))
    pelvis_head = world["pelvis"][:, :3, 3]
    # The proxy's pelvis stands at its own height where the rig's stands at its own (straight legs
    # on world z = 0), so legs of other proportions still reach the floor.  A motion whose floor is
    # elsewhere keeps it: the simulation measures the floor under the clip's soles itself.
    if pelvis_height is None:
        pelvis_height = PROXY_PELVIS_HEIGHT * proxy_height / proxy.DEFAULT_HEIGHT
    offset = np.array([0.0, 0.0, pelvis_height - s * size.pelvis_standing])
    root_pos = s * pelvis_head @ A.T + offset
    off_axis = {k: float(np.degrees(_twist_off_axis(joint_rots[:, JOINT_KEYS.index(k)]).max())) for k in REVOLUTE_KEYS}
    for k, deg in off_axis.items():
        if deg > 20.0:
            above, end = ("hip", "foot") if k.endswith("knee") else ("shoulder", "hand")
            warnings.append(f"{rigmap.KEY_LABELS[k]} bends {deg:.0f} degrees off the proxy's hinge axis "
                            f"(the {above} turns to carry the rest: the {end} lands where the source puts it)")
    if reasons and method == "fcurves":
        warnings.append("sampled from F-curves although " + reasons[0] + ": the result may differ from the viewport")
    clip = rclip.Clip(name=action.name, fps=float(fps), root_pos=root_pos, root_rot=root_rot, joint_rots=joint_rots)
    slot = getattr(obj.animation_data, "action_slot", None)
    info = RetargetInfo(
        armature=obj.name, action=action.name, slot_handle=slot.handle if slot is not None else None,
        frame_start=frame_start, frame_end=frame_end, fps=float(fps),
        bones={k: bones[k] for k in rigmap.HUMANOID_KEYS}, align=A, scale=float(s), root_offset=offset,
        rig_height=float(size.stature), proxy_height=proxy_height, rest_world=geo["rest_world"],
        proxy_rest=C, method=method, off_axis_deg=off_axis, warnings=warnings, object_matrix=O,
        reference_frame=reference_frame,
    )
    extra = {k: bones[k] for k in rigmap.OPTIONAL_KEYS if bones.get(k)}
    info.bones.update(extra)
    info.timings = {"rest": t1 - t0, "sample": t2 - t1, "convert": time.perf_counter() - t2}
    return clip, info


# ============================================================================= inverse: Clip -> action

def proxy_world_rotations(clip) -> dict:
    """key -> (T, 3, 3) world rotation of every proxy link (forward kinematics of the Clip)."""
    q = {"pelvis": quat.normalize(clip.root_rot)}
    for key in CHAIN_ORDER:
        q[key] = quat.multiply(q[rigmap.KEY_PARENT[key]], clip.joint_rots[:, clip.joints.index(key)])
    return {k: quat.to_matrix(quat.normalize(v)) for k, v in q.items()}


@dataclass
class TakeTargets:
    """What a take asks of the rig, frame by frame (``take_targets``)."""
    clip: object                 # the take's Clip at the rig's frame rate
    out_frames: np.ndarray       # (T,) the frames it is keyed on
    source_frames: np.ndarray    # (T,) the source frame each one plays
    rotations: dict              # key -> (T, 3, 3) world rotation of every mapped bone
    pelvis: np.ndarray           # (T, 3) world head of the pelvis bone
    samples: dict                # the source action's channels at ``source_frames`` (_sample_curves)

    @property
    def frames(self) -> int:
        return len(self.out_frames)


def take_targets(clip, info: RetargetInfo, action_name: str, source_frames=None) -> TakeTargets:
    """The world rotations and pelvis position ``clip`` gives every mapped bone (the inverse of
    ``action_to_clip``), and the source's channels sampled at ``source_frames`` (one source frame
    per clip frame, default: the same frame, holding the last source frame past its end)."""
    if abs(clip.fps - info.fps) > 1e-6:
        clip = clip.resampled(info.fps)
    if tuple(clip.joints) != JOINT_KEYS:
        raise RetargetError(f"clip '{clip.name}' has joints {clip.joints}: expected the default proxy's {JOINT_KEYS}")
    source = bpy.data.actions.get(info.action)
    if source is None:
        raise RetargetError(f"the source action '{info.action}' is gone: re-assign it and bake again")
    if action_name == source.name:
        raise RetargetError(f"cannot write the fatigued take over its source action '{source.name}': choose another name")
    T = clip.frames
    out_frames = info.frame_start + np.arange(T, dtype=np.float64)
    if source_frames is None:
        src = np.minimum(out_frames, info.frame_end)
    else:
        src = np.asarray(source_frames, dtype=np.float64)
        if src.shape != (T,) or not np.isfinite(src).all():
            raise RetargetError(f"source_frames must hold one finite frame per clip frame ({T})")
    A, s = info.align, info.scale
    Pw = proxy_world_rotations(clip)
    target = {}
    for key in rigmap.HUMANOID_KEYS:
        target[key] = A.T @ Pw[key] @ info.proxy_rest[key].T @ A @ info.rest_world[key]
    pelvis_world = ((clip.root_pos - info.root_offset) / s) @ A        # A^-1 v for row vectors
    samples = _sample_curves(anim.action_curves(source, info.slot_handle), src)
    return TakeTargets(clip, out_frames, src, target, pelvis_world, samples)


def kept_channels(samples: dict, drop, skip_prefixes=()) -> list:
    """The source channels a take keeps as ``(data_path, index, group, values)`` rows: every bone
    channel but those ``drop(bone, prop)`` says the take writes itself, and every other channel
    but those whose path starts with one of ``skip_prefixes``."""
    out = []
    for (path, index), (vals, group) in samples.items():
        m = _BONE_PATH.match(path)
        if m:
            bname, prop = _unescape(m.group(1)), m.group(2)
            if not drop(bname, prop):
                out.append((path, index, group or bname, vals))
        elif not (skip_prefixes and path.startswith(tuple(skip_prefixes))):
            out.append((path, index, group, vals))
    return out


def clip_to_action(obj, mapping, clip, info: RetargetInfo, action_name: str, source_frames=None,
                   extra_channels=(), skip_prefixes=()):
    """Write ``clip`` onto ``obj``'s rig as the NEW action ``action_name`` (replaced if it exists).

    Mapped bones get the Clip's world rotations (the pelvis also its position); every other
    channel of the source action ``info.action`` is sampled at ``source_frames`` (one source frame
    per Clip frame, default: the same frame, holding the last source frame past its end), so
    fingers, twist and middle spine bones keep their animation.  Keys are written one per frame
    from ``info.frame_start`` with ``keyframe_points.add`` + ``foreach_set``.  The action is not
    assigned to ``obj``.  ``extra_channels``: more curves to key on the same frames, as
    ``(data_path, index, group, values (T,))`` rows; they win over source channels of the same
    path (the bake's per-bone ``fatigue`` / ``capacity`` curves).  Source channels whose data path
    starts with one of ``skip_prefixes`` are not copied.  Returns the action.
    """
    import time

    t0 = time.perf_counter()
    bones = _mapping_bones(obj, mapping)
    take = take_targets(clip, info, action_name, source_frames)
    T, out_frames, target, pelvis_world, samples = take.frames, take.out_frames, take.rotations, take.pelvis, take.samples
    chans = _bone_channels(samples)
    mapped = {bones[k]: k for k in rigmap.HUMANOID_KEYS}
    order = _closure(obj, list(mapped))
    bases = _bases(obj, chans, order, T)
    O = info.object_matrix if info.object_matrix is not None else rig_space.object_matrix(obj.matrix_world)
    O_inv = np.linalg.inv(O)
    O_rot = polar(O[:3, :3])
    mats, new_rot, new_loc = {}, {}, None
    warnings = []
    for name in order:
        bone = obj.data.bones[name]
        rel = _rel(obj, name)
        K = rel if bone.parent is None else mats[bone.parent.name] @ rel
        B = bases[name]
        if name in mapped:
            key = mapped[name]
            K3 = np.broadcast_to(K[..., :3, :3], (T, 3, 3))
            Rb = polar(K3).transpose(0, 2, 1) @ (O_rot.T @ target[key])
            sc = np.linalg.norm(B[:, :3, :3], axis=1)          # column norms = the bone's own scale
            B = B.copy()
            B[:, :3, :3] = Rb * sc[:, None, :]
            new_rot[name] = Rb
            if key == "pelvis":
                head_arm = pelvis_world @ O_inv[:3, :3].T + O_inv[:3, 3]
                Kt = np.broadcast_to(K[..., :3, 3], (T, 3))
                new_loc = np.linalg.solve(K3, (head_arm - Kt)[..., None])[..., 0]
                if bone.use_connect:
                    warnings.append(f"pelvis bone '{name}' is connected to its parent: its position cannot be keyed")
                else:
                    B[:, :3, 3] = new_loc
        mats[name] = K @ B
    t1 = time.perf_counter()

    pelvis = bones["pelvis"]
    channels = list(extra_channels) + kept_channels(
        samples, lambda bname, prop: (bname in mapped and prop in _ROTATION_PROPS)
        or (bname == pelvis and prop == "location" and new_loc is not None), skip_prefixes)
    for name, Rb in new_rot.items():
        pb = obj.pose.bones[name]
        esc = bpy.utils.escape_identifier(name)
        mode = pb.rotation_mode
        src_ch = chans.get(name, {})
        if mode in ("QUATERNION", "AXIS_ANGLE"):
            q = mat_to_quat(Rb)[:, [3, 0, 1, 2]]            # w, x, y, z
            first = np.array([src_ch.get(("rotation_quaternion", i), np.array([v]))[0]
                              for i, v in enumerate(pb.rotation_quaternion)])
            if np.dot(q[0], first) < 0:
                q[0] = -q[0]
            q = quat.make_continuous(q)
            if mode == "QUATERNION":
                prop, values = "rotation_quaternion", q
            else:
                w = np.clip(q[:, 0], -1.0, 1.0)
                ang = 2.0 * repeatable.arccos(w)
                sn = np.sqrt(np.maximum(1.0 - w * w, 0.0))
                axis = np.where(sn[:, None] > 1e-9, q[:, 1:] / np.maximum(sn, 1e-12)[:, None], [0.0, 1.0, 0.0])
                prop, values = "rotation_axis_angle", np.concatenate([ang[:, None], axis], axis=1)
        else:
            from mathutils import Euler, Matrix

            prev = Euler([src_ch.get(("rotation_euler", i), np.array([v]))[0]
                          for i, v in enumerate(pb.rotation_euler)], mode)
            values = np.empty((T, 3))
            for t in range(T):
                prev = Matrix(Rb[t].tolist()).to_euler(mode, prev)
                values[t] = tuple(prev)
            prop = "rotation_euler"
        for i in range(values.shape[1]):
            channels.append((f'pose.bones["{esc}"].{prop}', i, name, values[:, i]))
    if new_loc is not None and not obj.data.bones[pelvis].use_connect:
        esc = bpy.utils.escape_identifier(pelvis)
        for i in range(3):
            channels.append((f'pose.bones["{esc}"].location', i, pelvis, new_loc[:, i]))
    action = write_action(obj, action_name, out_frames, channels)
    t2 = time.perf_counter()
    info.timings.update({"inverse": t1 - t0, "write": t2 - t1})
    info.warnings.extend(w for w in warnings if w not in info.warnings)
    return action


def write_action(obj, name: str, frames: np.ndarray, channels) -> "bpy.types.Action":
    """Key ``channels`` (``(data_path, index, group, values (T,))`` rows, the first of a path wins)
    on ``frames`` into the action ``name`` for ``obj`` (created, or emptied and rewritten)."""
    action = bpy.data.actions.get(name)
    if action is None:
        action = bpy.data.actions.new(name)
    new_curve = _curve_writer(action, obj)
    T = len(frames)
    co = np.empty(2 * T, dtype=np.float32)
    co[0::2] = frames
    seen = set()
    for path, index, group, values in channels:
        if (path, index) in seen:
            continue
        seen.add((path, index))
        fc = new_curve(path, index, group)
        fc.keyframe_points.add(T)
        co[1::2] = values
        fc.keyframe_points.foreach_set("co", co)
        fc.update()
    return action


def _curve_writer(action, obj):
    """A function (data_path, index, group) -> new F-curve in ``action`` for ``obj``, after
    removing every F-curve the action had (a re-bake replaces the previous take)."""
    if hasattr(action, "layers") and hasattr(action, "slots"):     # Blender 4.4+: slotted actions
        slot = next((s for s in action.slots if s.identifier == "OB" + obj.name), None)
        if slot is None:
            slot = action.slots.new(id_type="OBJECT", name=obj.name)
        layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
        strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
        for lay in action.layers:
            for st in lay.strips:
                for bag in st.channelbags:
                    bag.fcurves.clear()
        bag = strip.channelbag(slot, ensure=True)

        def new(path, index, group):
            try:
                return bag.fcurves.new(path, index=index, group_name=group)
            except TypeError:       # a channel bag without group_name support
                return bag.fcurves.new(path, index=index)
        return new
    action.fcurves.clear()                                            # Blender 4.2 / 4.3
    action.id_root = "OBJECT"
    return lambda path, index, group: action.fcurves.new(path, index=index, action_group=group)


def _heads_at(obj, frame: int | None):
    """A function bone -> its head in armature space: in the rest pose, or posed at ``frame``."""
    if frame is None:
        return lambda bone: bone.head_local
    posed = rigmap.read_pose(obj, frame)
    return lambda bone: posed[bone.name][0]


def rig_size(obj, mapping, frame: int | None = None) -> "rig_space.RigMeasure":
    """The rig's size in its world units (object and parent transforms included), from the
    lengths of its mapped joint chains: what ``action_to_clip`` scales to the proxy's height.
    ``frame``: measured on that animated frame instead of the rest pose (rigmap.body_pose)."""
    bones = _mapping_bones(obj, mapping)
    O = rig_space.object_matrix(obj.matrix_world)
    head = _heads_at(obj, frame)
    joints = {k: O[:3, :3] @ np.array(head(obj.data.bones[bones[k]]), dtype=float) + O[:3, 3]
              for k in rigmap.HUMANOID_KEYS}
    return rig_space.measure(joints)


def rig_segment_lengths(obj, mapping: dict, frame: int | None = None) -> dict[str, float]:
    """Rest-pose segment lengths (world metres) of the mapped skeleton for ``runtime.body.anthropometry``:
    thigh, shank and upper arm from joint to joint (mapped bone heads), hip and shoulder width
    between the left and right joints, left and right averaged; the trunk from the hip joints to
    the neck joint.  Only what the mapping pins down: where the forearm ends (twist bones, hands)
    varies too much between rigs, so it keeps the default proportion.  ``frame``: measured on
    that animated frame instead of the rest pose (rigmap.body_pose)."""
    O = rig_space.object_matrix(obj.matrix_world)
    head = _heads_at(obj, frame)

    def joint(key):
        bone = obj.data.bones.get(mapping.get(key, "")) if mapping.get(key) else None
        return None if bone is None else O[:3, :3] @ np.array(head(bone), dtype=float) + O[:3, 3]

    def mean_length(pairs):
        lengths = []
        for a, b in pairs:
            pa, pb = joint(a), joint(b)
            if pa is not None and pb is not None:
                lengths.append(float(np.linalg.norm(pb - pa)))
        return float(np.mean(lengths)) if lengths else None

    out = {
        "thigh": mean_length([(f"{s}_hip", f"{s}_knee") for s in ("right", "left")]),
        "shank": mean_length([(f"{s}_knee", f"{s}_ankle") for s in ("right", "left")]),
        "upper_arm": mean_length([(f"{s}_shoulder", f"{s}_elbow") for s in ("right", "left")]),
        "hip_width": mean_length([("right_hip", "left_hip")]),
        "shoulder_width": mean_length([("right_shoulder", "left_shoulder")]),
    }
    # The trunk as a whole, hip joints to the neck joint (where the spine joints between sit varies
    # between rigs, its length does not): shared by the proxy's pelvis and chest links as the
    # default has them, so a short-trunked character does not carry a long heavy trunk.
    hips, neck = (joint("right_hip"), joint("left_hip")), joint("neck")
    if all(p is not None for p in hips) and neck is not None:
        from ..runtime.body.anthropometry import default_lengths

        trunk = float(np.linalg.norm(neck - 0.5 * (hips[0] + hips[1])))
        ref = default_lengths()
        whole = ref["pelvis"] + ref["chest"]
        out["pelvis"], out["chest"] = trunk * ref["pelvis"] / whole, trunk * ref["chest"] / whole
    return {k: v for k, v in out.items() if v is not None}
