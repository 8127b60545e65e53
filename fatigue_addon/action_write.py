"""A take's curves keyed into a new action in one pass per curve (``keyframe_points.add`` and
``foreach_set``), on Blender's slotted actions (4.4+) and the older ones alike."""
from __future__ import annotations

import bpy
import numpy as np
from mathutils import Euler, Matrix

from ..runtime.maths import quat, repeatable, rotation

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


def rotation_channel(pb, Rb: np.ndarray, src_ch: dict) -> tuple[str, np.ndarray]:
    """``(property, values (T, n))``: the local rotations ``Rb`` (T, 3, 3) of pose bone ``pb`` in its
    own rotation mode, continuous from the source's first key (``src_ch``: its sampled channels,
    bone_channels) so a curve does not flip sign or wrap against the keys it replaces."""
    T = len(Rb)
    mode = pb.rotation_mode
    if mode in ("QUATERNION", "AXIS_ANGLE"):
        q = quat.hemisphere(rotation.matrices_to_quats(Rb))[:, [3, 0, 1, 2]]            # w, x, y, z
        first = np.array([src_ch.get(("rotation_quaternion", i), np.array([v]))[0]
                          for i, v in enumerate(pb.rotation_quaternion)])
        if np.dot(q[0], first) < 0:
            q[0] = -q[0]
        q = quat.make_continuous(q)
        if mode == "QUATERNION":
            return "rotation_quaternion", q
        w = np.clip(q[:, 0], -1.0, 1.0)
        ang = 2.0 * repeatable.arccos(w)
        sn = np.sqrt(np.maximum(1.0 - w * w, 0.0))
        axis = np.where(sn[:, None] > 1e-9, q[:, 1:] / np.maximum(sn, 1e-12)[:, None], [0.0, 1.0, 0.0])
        return "rotation_axis_angle", np.concatenate([ang[:, None], axis], axis=1)
    prev = Euler([src_ch.get(("rotation_euler", i), np.array([v]))[0] for i, v in enumerate(pb.rotation_euler)], mode)
    values = np.empty((T, 3))
    for t in range(T):
        prev = Matrix(Rb[t].tolist()).to_euler(mode, prev)
        values[t] = tuple(prev)
    return "rotation_euler", values
