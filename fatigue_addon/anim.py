"""One place that hides how Blender stores an object's action (4.2 .. 5.0).

From 4.4 actions are slotted (layers -> strips -> channel bags per slot) and 5.0 removed
``action.fcurves``; older versions only have ``action.fcurves``.
"""


def active_action(obj):
    """The action assigned to ``obj`` or None."""
    ad = obj.animation_data
    return ad.action if ad is not None else None


def action_fcurves(obj) -> list:
    """F-curves that animate ``obj`` through its assigned action (and slot, where slotted)."""
    action = active_action(obj)
    if action is None:
        return []
    slot = getattr(obj.animation_data, "action_slot", None)
    layers = getattr(action, "layers", None)
    if layers is not None and slot is not None and len(layers) > 0:
        curves = []
        for layer in layers:
            for strip in layer.strips:
                bag = strip.channelbag(slot)
                if bag is not None:
                    curves.extend(bag.fcurves)
        return curves
    return list(getattr(action, "fcurves", []))


def animated_bones(obj) -> set:
    """Names of pose bones with at least one F-curve in the assigned action."""
    names = set()
    for fc in action_fcurves(obj):
        path = fc.data_path
        if path.startswith('pose.bones["'):
            names.add(path[len('pose.bones["'):].split('"]', 1)[0])
    return names
