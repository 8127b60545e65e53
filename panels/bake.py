"""Bake: the Fatigue tab's main panel (mode, fitness, the bake button) and its Range & Output
sub-panel."""
import bpy

from .common import armature, FatigueSubPanel, FatigueTab
from .fitness import draw_fitness


class VIEW3D_PT_fatigue(FatigueTab, bpy.types.Panel):
    bl_label = "Fatigued Takes"
    bl_idname = "VIEW3D_PT_fatigue"

    def draw(self, context):
        layout = self.layout
        obj = armature(context)
        if obj is None:
            layout.label(text="Select the character's armature", icon="INFO")
            return
        settings = obj.fatigue_settings
        layout.prop(settings, "mode", expand=True)
        if settings.mode == "TORQUE":
            col = layout.column(align=True)
            col.label(text="Experimental: whole body, no root help (MuJoCo)", icon="INFO")
            col.label(text="Slow: seconds of compute per second of motion")
        else:
            layout.prop(settings, "foot_placement", expand=True)
        layout.prop(settings, "effort_economy")
        draw_fitness(layout, settings)
        status = context.window_manager.fatigue_bake_status
        if status:
            layout.label(text=status, icon="TIME")
        from ..fatigue_addon import backend

        note = backend.no_engine_note()      # found without importing a wheel: cheap on every redraw
        row = layout.row(align=True)
        row.scale_y = 1.4
        row.enabled = note is None
        row.operator("fatigue.bake_take", icon="RENDER_ANIMATION")
        if note:
            layout.label(text=note, icon="ERROR")
            layout.label(text="Detect Rig, Check Rig and the settings work here")
        row = layout.row(align=True)
        row.operator("fatigue.check_rig", icon="ARMATURE_DATA")
        if settings.baked_action is not None:
            row.operator("fatigue.switch_action", icon="ACTION", text="Take / Source")


class VIEW3D_PT_fatigue_output(FatigueSubPanel, bpy.types.Panel):
    bl_label = "Range & Output"
    bl_idname = "VIEW3D_PT_fatigue_output"

    def draw(self, context):
        layout = self.layout
        s = context.active_object.fatigue_settings
        layout.prop(s, "use_custom_range")
        row = layout.row(align=True)
        if s.use_custom_range:
            row.prop(s, "frame_start")
            row.prop(s, "frame_end")
        else:
            row.label(text=f"Scene range {context.scene.frame_start}-{context.scene.frame_end}")
        col = layout.column()
        col.prop(s, "breathing")
        col.prop(s, "kneeling")
        col.prop(s, "write_curves")
        sub = col.column()
        sub.enabled = s.write_curves
        sub.prop(s, "heat_modifier")
        sub.prop(s, "heat_material")
