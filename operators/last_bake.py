"""Last bake: switch the armature between the fatigued take and its source action."""
import bpy

from .common import armature_or_report


class FATIGUE_OT_switch_action(bpy.types.Operator):
    """Switch the armature between the fatigued take and its source action"""

    bl_idname = "fatigue.switch_action"
    bl_label = "Switch Take / Source"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from ..fatigue_addon import anim

        obj = armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        s = obj.fatigue_settings
        if s.source_action is None or s.baked_action is None:
            self.report({"ERROR"}, "Nothing baked yet: press Bake Fatigued Take first")
            return {"CANCELLED"}
        target = s.source_action if anim.active_action(obj) == s.baked_action else s.baked_action
        anim.assign_action(obj, target)
        self.report({"INFO"}, f"'{obj.name}' now plays '{target.name}'")
        return {"FINISHED"}
