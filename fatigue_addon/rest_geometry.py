"""The rig's body measured in Blender: its mapped bones, their rest (or animated reference) pose
in its own body axes with the proxy posed like it, its size and segment lengths."""
from __future__ import annotations

import math

import numpy as np

from . import rigmap
from .failure import RetargetError, RigMappingError
from .rig import space
from .rig.keys import FIX_HINT, HUMANOID_KEYS, KEY_LABELS, KEY_PARENT, Mapping
from .rig.proxy_rest import CHAIN_ORDER, R0, SEGMENT_DIRECTION, hinge_twist
from ..runtime.maths.rotation import rotation_matrix_between
from .rig.rotations import array64, polar, rot_z

def mapping_bones(obj, mapping) -> dict:
    if isinstance(mapping, Mapping):
        bones = dict(mapping.bones)
    else:
        bones = dict(mapping)
    missing = [k for k in HUMANOID_KEYS if not bones.get(k)]
    if missing:
        labels = ", ".join(KEY_LABELS[k] for k in missing)
        raise RigMappingError(f"'{obj.name}': no bone mapped for {labels}: {FIX_HINT}")
    absent = [b for k, b in bones.items() if b not in obj.data.bones]
    if absent:
        raise RigMappingError(f"bone '{absent[0]}' of the rig mapping is not in '{obj.name}': {FIX_HINT}")
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


def rest_geometry(obj, bones: dict, O: np.ndarray, pose: dict | None = None, feet: dict | None = None,
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
        return array64(obj.data.bones[name].matrix_local if reading is None else reading[name][2])[:3, :3]

    rest_world = {k: polar(O3 @ rotation(k)) for k in HUMANOID_KEYS}
    joints = {k: world(obj.data.bones[bones[k]].head_local if pose is None else pose[bones[k]][0])
              for k in HUMANOID_KEYS}
    try:
        Fr = space.body_frame(joints)
    except ValueError:
        raise RetargetError(f"cannot tell which way '{obj.name}' faces (its left and right bones coincide): "
                            f"check the left/right entries of the Rig Mapping list") from None
    size = space.measure(joints, up=Fr[:, 2])
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
        parent = KEY_PARENT[key]
        d = Fr.T @ (ends[key] - base.get(key, head(key)))     # a foot from the frame it is planted in
        if key.endswith("_ankle"):
            d[2] = 0.0
            yaw = math.atan2(d[1], d[0]) if np.linalg.norm(d) > 1e-3 * size.stature else 0.0
            C[key] = rot_z(yaw) @ R0
            continue
        if np.linalg.norm(d) < 1e-6 * size.stature:
            warnings.append(f"{KEY_LABELS[key]} '{bones[key]}' has no length in the rest pose")
            C[key] = C[parent].copy()
            continue
        d_proxy = C[parent] @ R0.T @ SEGMENT_DIRECTION[key]
        C[key] = rotation_matrix_between(d_proxy, d) @ C[parent]
        if key in (hinges or {}):
            C[key] = hinge_twist(key, C[key], d, Fr.T @ hinges[key])
    return {"rest_world": rest_world, "C_body": C, "Fr": Fr, "size": size, "warnings": warnings}



def _heads_at(obj, frame: int | None):
    """A function bone -> its head in armature space: in the rest pose, or posed at ``frame``."""
    if frame is None:
        return lambda bone: bone.head_local
    posed = rigmap.read_pose(obj, frame)
    return lambda bone: posed[bone.name][0]


def rig_size(obj, mapping, frame: int | None = None) -> "space.RigMeasure":
    """The rig's size in its world units (object and parent transforms included), from the
    lengths of its mapped joint chains: what ``action_to_clip`` scales to the proxy's height.
    ``frame``: measured on that animated frame instead of the rest pose (rigmap.body_pose)."""
    bones = mapping_bones(obj, mapping)
    O = space.object_matrix(obj.matrix_world)
    head = _heads_at(obj, frame)
    joints = {k: O[:3, :3] @ np.array(head(obj.data.bones[bones[k]]), dtype=float) + O[:3, 3]
              for k in HUMANOID_KEYS}
    return space.measure(joints)


def rig_segment_lengths(obj, mapping: dict, frame: int | None = None) -> dict[str, float]:
    """Rest-pose segment lengths (world metres) of the mapped skeleton for ``runtime.body.anthropometry``:
    thigh, shank and upper arm from joint to joint (mapped bone heads), hip and shoulder width
    between the left and right joints, left and right averaged; the trunk from the hip joints to
    the neck joint.  Only what the mapping pins down: where the forearm ends (twist bones, hands)
    varies too much between rigs, so it keeps the default proportion.  ``frame``: measured on
    that animated frame instead of the rest pose (rigmap.body_pose)."""
    O = space.object_matrix(obj.matrix_world)
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
