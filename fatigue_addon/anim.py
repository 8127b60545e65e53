"""One place that hides how Blender stores an object's action (4.2 .. 5.0).

From 4.4 actions are slotted (layers -> strips -> channel bags per slot) and 5.0 removed
``action.fcurves``; older versions only have ``action.fcurves``.
"""
from contextlib import contextmanager
from dataclasses import dataclass


def active_action(obj):
    """The action assigned to ``obj`` or None."""
    ad = obj.animation_data
    return ad.action if ad is not None else None


def action_curves(action, slot_handle=None) -> list:
    """F-curves of ``action`` for the slot with ``slot_handle`` (first object slot if None)."""
    if action is None:
        return []
    layers = getattr(action, "layers", None)
    if layers is None or getattr(action, "is_action_legacy", False):
        return list(getattr(action, "fcurves", []))
    slot = None
    for s in action.slots:
        if slot_handle is not None and s.handle == slot_handle:
            slot = s
            break
    if slot is None:
        slot = next((s for s in action.slots if s.target_id_type in ("OBJECT", "UNSPECIFIED")), None)
    if slot is None:
        return []
    curves = []
    for layer in layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                curves.extend(bag.fcurves)
    return curves


def action_fcurves(obj, action=None) -> list:
    """F-curves that animate ``obj`` through ``action`` (default: its assigned one) and the
    object's slot, where slotted."""
    action = action if action is not None else active_action(obj)
    if action is None:
        return []
    if getattr(action, "layers", None) is None or getattr(action, "is_action_legacy", False):
        return list(getattr(action, "fcurves", []))
    slot = getattr(obj.animation_data, "action_slot", None)
    return action_curves(action, slot.handle) if slot is not None else []


def animated_bones(obj, action=None) -> set:
    """Names of pose bones with at least one F-curve in ``action`` (default: the assigned one)."""
    return bone_names(action_fcurves(obj, action))


def bone_names(curves) -> set:
    """Names of the pose bones ``curves`` animate."""
    names = set()
    for fc in curves:
        path = fc.data_path
        if path.startswith('pose.bones["'):
            names.add(path[len('pose.bones["'):].split('"]', 1)[0])
    return names


def object_slot(action, obj):
    """The action's slot for ``obj`` (None on Blender < 4.4 or when the action has none)."""
    slots = getattr(action, "slots", None)
    if slots is None:
        return None
    return next((s for s in slots if s.identifier == "OB" + obj.name), None) or \
        next((s for s in slots if s.target_id_type in ("OBJECT", "UNSPECIFIED")), None)


def assign_action(obj, action, slot=None):
    """Assign ``action`` to ``obj`` (and its slot for ``obj`` on 4.4+)."""
    ad = obj.animation_data or obj.animation_data_create()
    ad.action = action
    if action is None or not hasattr(ad, "action_slot"):
        return
    slot = slot or object_slot(action, obj)
    if slot is not None and ad.action_slot != slot:
        ad.action_slot = slot


def all_action_fcurves(action) -> list:
    """Every F-curve of ``action`` (all layers, strips and slots; or ``action.fcurves``)."""
    layers = getattr(action, "layers", None)
    if layers is None or getattr(action, "is_action_legacy", False):
        return list(getattr(action, "fcurves", []))
    curves = []
    for layer in layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                curves.extend(bag.fcurves)
    return curves


def keyed_channels(action) -> set:
    """``(data_path, index)`` of every channel ``action`` keys (any slot)."""
    return {(fc.data_path, fc.array_index) for fc in all_action_fcurves(action)}


@dataclass(frozen=True)
class SourceAction:
    """The action a bake reads, read once: its name, its F-curves of the armature (the armature's
    slot), every channel it keys in any slot and its frame range.  The checks, the rig's pose and
    the retarget read this, not the action; the action itself stays with the bake that picked it
    (the take's name, its tag, the NLA strip that keeps the source)."""
    name: str
    curves: tuple
    keyed: frozenset             # (data_path, index)
    frame_range: tuple           # (first, last) key


@contextmanager
def played(obj, action):
    """``action`` assigned to ``obj`` while Blender evaluates it (the action and slot before are put
    back after; nothing is reassigned when it is assigned already), read once: yields its
    SourceAction."""
    ad = obj.animation_data
    prev = ad.action if ad is not None else None
    prev_slot = getattr(ad, "action_slot", None)
    keyed = frozenset(keyed_channels(action))
    if prev != action:
        assign_action(obj, action)
    try:
        yield SourceAction(action.name, tuple(action_fcurves(obj, action)), keyed, tuple(action.frame_range))
    finally:
        if prev != action:
            assign_action(obj, prev, prev_slot)


def new_fcurve(action, obj, data_path: str, index: int = 0, group: str = ""):
    """A new F-curve in ``action`` animating ``obj`` (its slot's channel bag on 4.4+)."""
    if hasattr(action, "slots"):
        slot = object_slot(action, obj) or action.slots.new(id_type="OBJECT", name=obj.name)
        layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
        strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
        bag = strip.channelbag(slot, ensure=True)
        try:
            return bag.fcurves.new(data_path, index=index, group_name=group)
        except TypeError:
            return bag.fcurves.new(data_path, index=index)
    return action.fcurves.new(data_path, index=index, action_group=group)


_KEY_FIELDS = (("co", 2, "f"), ("handle_left", 2, "f"), ("handle_right", 2, "f"), ("interpolation", 1, "i"),
               ("handle_left_type", 1, "i"), ("handle_right_type", 1, "i"), ("easing", 1, "i"))


def snapshot_fcurve(fc) -> dict:
    """Everything needed to re-create F-curve ``fc`` elsewhere (keys, handles, interpolation)."""
    import numpy as np

    n = len(fc.keyframe_points)
    snap = {"data_path": fc.data_path, "index": fc.array_index, "group": fc.group.name if fc.group else "",
            "extrapolation": fc.extrapolation, "n": n}
    for name, width, kind in _KEY_FIELDS:
        buf = np.empty(n * width, dtype=np.float32 if kind == "f" else np.int32)
        fc.keyframe_points.foreach_get(name, buf)
        snap[name] = buf
    return snap


def paste_fcurve(snap: dict, action, obj):
    """Re-create a ``snapshot_fcurve`` in ``action`` for ``obj`` (keys written with foreach_set)."""
    fc = new_fcurve(action, obj, snap["data_path"], snap["index"], snap["group"])
    fc.keyframe_points.add(snap["n"])
    for name, _, _ in _KEY_FIELDS:
        fc.keyframe_points.foreach_set(name, snap[name])
    fc.extrapolation = snap["extrapolation"]
    fc.update()
    return fc
