"""Thin operators, one module per feature of the panel: rig mapping, bake, last bake (the
fitness settings are properties, edited in place).  Each validates the selection, calls
fatigue_addon and reports one line (common.reported)."""
import bpy

from . import bake, last_bake, rig_mapping

classes = (*rig_mapping.classes, bake.FATIGUE_OT_bake_take, last_bake.FATIGUE_OT_switch_action)

register, unregister = bpy.utils.register_classes_factory(classes)
