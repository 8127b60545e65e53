"""Fitness: the preset, how tired when (or the rates) in the main panel, and fitness per body
part with the body's size in the Body sub-panel."""
import bpy

from .common import FatigueSubPanel


def draw_fitness(layout, settings) -> None:
    """The fitness preset, how tired when, or the speed-up and starting fatigue, F, R, r (Custom)."""
    col = layout.column(align=True)
    col.prop(settings, "preset")
    col = col.column(align=True)
    col.active = settings.preset != "FRESH"
    col.prop(settings, "fitness")
    col.prop(settings, "direct_tiredness")
    if settings.direct_tiredness and settings.preset != "CUSTOM":
        col.prop(settings, "tiredness_start")
        col.prop(settings, "tiredness_end")
        col.prop(settings, "tiredness", text="Or key Tiredness")
    else:
        col.prop(settings, "time_scale")
        col.prop(settings, "initial_fatigue")
    if settings.preset == "CUSTOM":
        sub = layout.column(align=True)
        sub.prop(settings, "F")
        sub.prop(settings, "R")
        sub.prop(settings, "r")


class VIEW3D_PT_fatigue_body(FatigueSubPanel, bpy.types.Panel):
    bl_label = "Body"
    bl_idname = "VIEW3D_PT_fatigue_body"

    def draw(self, context):
        layout = self.layout
        s = context.active_object.fatigue_settings
        layout.use_property_split = True
        layout.prop(s, "use_rig_height")
        layout.prop(s, "height", text="Height" if not s.use_rig_height else "Height (rig not in metres)")
        layout.prop(s, "mass")
        layout.prop(s, "proportions")
        sub = layout.row()
        sub.enabled = s.proportions == "RIG"
        sub.prop(s, "mass_distribution")
        layout.label(text="Fitness per body part (x)")
        col = layout.column(align=True)
        for part in ("legs", "arms", "trunk", "neck"):
            col.prop(s, f"fitness_{part}")
