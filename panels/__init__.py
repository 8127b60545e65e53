"""N-panel tab "Fatigue" in the 3D viewport."""
import bpy


class VIEW3D_PT_fatigue(bpy.types.Panel):
    bl_label = "Fatigued Takes"
    bl_idname = "VIEW3D_PT_fatigue"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Fatigue"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            layout.label(text="Select the character's armature", icon="INFO")
            return
        settings = obj.fatigue_settings
        layout.prop(settings, "mode", expand=True)
        col = layout.column(align=True)
        col.prop(settings, "preset")
        col.prop(settings, "fitness")
        col.prop(settings, "time_scale")
        col.prop(settings, "initial_fatigue")
        if settings.preset == "CUSTOM":
            sub = layout.column(align=True)
            sub.prop(settings, "F")
            sub.prop(settings, "R")
            sub.prop(settings, "r")
        layout.operator("fatigue.check_rig", icon="ARMATURE_DATA")


classes = (VIEW3D_PT_fatigue,)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
