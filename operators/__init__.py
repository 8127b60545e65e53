"""Thin operators: validate the selection, call fatigue_addon, report one line."""
import bpy


class FATIGUE_OT_check_rig(bpy.types.Operator):
    """Check that the active armature has an action the fatigue bake can use"""

    bl_idname = "fatigue.check_rig"
    bl_label = "Check Rig"
    bl_options = {"REGISTER"}

    def execute(self, context):
        from ..fatigue_addon.checks import BakeInputError, check_armature

        try:
            info = check_armature(context.active_object, context.scene)
        except BakeInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report(
            {"INFO"},
            f"'{info['armature']}': action '{info['action']}' animates {info['animated_bones']} of "
            f"{info['bones']} bones, frames {info['frames'][0]}-{info['frames'][1]} at {info['fps']:g} fps",
        )
        return {"FINISHED"}


classes = (FATIGUE_OT_check_rig,)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
