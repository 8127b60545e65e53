"""The source action read: its F-curves sampled and pushed through the rig's hierarchy in numpy
(no depsgraph: a heavy mesh costs nothing), or, where constraints, drivers, NLA or object motion
would make that differ from the viewport (scene_path_reasons), every frame evaluated."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import bpy
import numpy as np

from ..runtime.maths import quat
from . import anim
from .rig import space
from .rig.keys import HUMANOID_KEYS
from .rig.rotations import array64, euler_to_mat

ROTATION_PROPS = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")
BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.([A-Za-z_]+)$')
OBJECT_TRANSFORM = re.compile(r"^(?:delta_)?(?:location|rotation_\w+|scale)$")


def unescape(name: str) -> str:
    return name.replace('\\"', '"').replace("\\\\", "\\")


def sample_curves(curves, frames: np.ndarray) -> dict:
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


def bone_channels(samples: dict) -> dict:
    """bone -> {(prop, index): values}."""
    out: dict = {}
    for (path, index), (vals, _) in samples.items():
        m = BONE_PATH.match(path)
        if m:
            out.setdefault(unescape(m.group(1)), {})[(m.group(2), index)] = vals
    return out


def basis_matrices(obj, chans: dict, names, T: int) -> dict:
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


def closure(obj, names) -> list:
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


def rel_matrix(obj, name) -> np.ndarray:
    bone = obj.data.bones[name]
    loc = array64(bone.matrix_local)
    if bone.parent is None:
        return loc
    return np.linalg.inv(array64(bone.parent.matrix_local)) @ loc


def fk(obj, bases: dict, order) -> dict:
    """bone -> (T, 4, 4) armature-space pose matrices (standard inheritance only)."""
    mats = {}
    for name in order:
        bone = obj.data.bones[name]
        rel = rel_matrix(obj, name)
        if bone.parent is None:
            mats[name] = rel @ bases[name]
        else:
            mats[name] = mats[bone.parent.name] @ rel @ bases[name]
    return mats


def scene_path_reasons(obj, bones, action=None, curves=None) -> list:
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
            if fc.data_path.startswith("pose.bones[") or OBJECT_TRANSFORM.match(fc.data_path):
                reasons.append(f"driver on {fc.data_path}")
                break
        for fc in curves if curves is not None else anim.action_fcurves(obj, action):
            if OBJECT_TRANSFORM.match(fc.data_path):
                reasons.append("the object itself is animated")
                break
    for name in closure(obj, bones):
        pb = obj.pose.bones[name]
        b = pb.bone
        if any(not c.mute and c.influence > 0 for c in pb.constraints):
            reasons.append(f"bone '{name}' has constraints")
        if not b.use_inherit_rotation or b.inherit_scale != "FULL" or not b.use_local_location or b.use_relative_parent:
            reasons.append(f"bone '{name}' does not inherit its parent's transform fully")
    return reasons



@dataclass
class SourceMotion:
    """The mapped bones' motion read once over the baked frames: armature-space pose matrices
    (``arm``), and, for the scene path, the object's matrix on every frame (``objects``; None for
    F-curves, read under one object matrix).  ``world`` places them in the world under the first
    frame's object matrix; ``trimmed`` is the same motion over fewer frames, no second read."""
    method: str                  # "fcurves" or "scene"
    arm: dict                    # key -> (T, 4, 4)
    O: np.ndarray                # (4, 4) the object matrix the bones are placed under
    objects: np.ndarray | None = None

    def world(self) -> tuple[dict, float]:
        """(key -> (T, 4, 4) world matrices, how far the object moved over the frames)."""
        if self.objects is None:
            return {k: self.O @ m for k, m in self.arm.items()}, 0.0
        O = self.O
        world = {k: np.empty_like(m) for k, m in self.arm.items()}
        moved = 0.0
        for i in range(len(self.objects)):
            moved = max(moved, float(np.abs(self.objects[i] - O).max()))
            for k, m in self.arm.items():
                world[k][i] = O @ m[i]
        return world, moved

    def trimmed(self, first: int, last: int) -> "SourceMotion":
        """Frames ``first`` .. ``last`` (indices into the frames read), under that first frame's object
        matrix as a read of those frames alone would place them."""
        arm = {k: m[first:last + 1] for k, m in self.arm.items()}
        if self.objects is None:
            return SourceMotion(self.method, arm, self.O)
        objects = self.objects[first:last + 1]
        return SourceMotion(self.method, arm, objects[0], objects)


def read_motion(obj, action, bones: dict, frames: np.ndarray, method: str, curves=None) -> SourceMotion:
    """The mapped bones of ``obj`` moved by ``action`` at ``frames``: F-curves sampled in numpy, or
    (``method`` "scene") the scene evaluated frame by frame (``action`` assigned).  ``curves``: the
    action's curves of ``obj`` (anim.action_fcurves), read already."""
    if method == "fcurves":
        slot = getattr(obj.animation_data, "action_slot", None)
        return SourceMotion("fcurves", sample_fcurves(obj, action, slot.handle if slot is not None else None,
                                                      bones, frames, curves), space.object_matrix(obj.matrix_world))
    arm, objects = sample_scene(obj, bones, frames)
    return SourceMotion("scene", arm, objects[0], objects)


def sample_fcurves(obj, action, slot_handle, bones: dict, frames: np.ndarray, curves=None) -> dict:
    """key -> (T, 4, 4) armature-space pose matrices of the mapped bones from ``action``'s F-curves
    (those of the slot ``slot_handle``; ``curves``: them, read already)."""
    curves = curves if curves is not None else anim.action_curves(action, slot_handle)
    names = sorted(set(bones[k] for k in HUMANOID_KEYS))
    order = closure(obj, names)
    needed = set(order)
    keep = []
    for fc in curves:
        m = BONE_PATH.match(fc.data_path)
        if m and unescape(m.group(1)) in needed:
            keep.append(fc)
    chans = bone_channels(sample_curves(keep, frames))
    mats = fk(obj, basis_matrices(obj, chans, order, len(frames)), order)
    return {k: mats[bones[k]] for k in HUMANOID_KEYS}


def sample_scene(obj, bones: dict, frames: np.ndarray) -> tuple[dict, np.ndarray]:
    """Evaluated pose matrices per frame (constraints, drivers, NLA) and the object's matrix on each
    (the object's own motion, an animated parent or object keys, is not part of the performance
    the body simulates; it still moves the baked take at playback)."""
    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    T = len(frames)
    arm = {k: np.empty((T, 4, 4)) for k in HUMANOID_KEYS}
    objects = np.empty((T, 4, 4))
    pbs = {k: obj.pose.bones[bones[k]] for k in HUMANOID_KEYS}
    try:
        for i, f in enumerate(frames):
            fi = int(math.floor(f))
            scene.frame_set(fi, subframe=float(f - fi))
            objects[i] = space.object_matrix(obj.matrix_world)
            for k, pb in pbs.items():
                arm[k][i] = array64(pb.matrix)
    finally:
        scene.frame_set(keep[0], subframe=keep[1])
    return arm, objects
