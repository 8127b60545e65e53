"""A take's curves keyed into a new action in one pass per curve (``keyframe_points.add`` and
``foreach_set``), on Blender's slotted actions (4.4+) and the older ones alike."""
from __future__ import annotations

import bpy
import numpy as np

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
