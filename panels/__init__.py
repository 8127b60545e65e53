"""N-panel tab "Fatigue" in the 3D viewport, one module per feature: bake (settings and the
button), fitness, rig mapping, last bake report."""
import bpy

from . import bake, fitness, last_bake, rig_mapping

classes = (
    rig_mapping.FATIGUE_UL_mapping,
    bake.VIEW3D_PT_fatigue,
    fitness.VIEW3D_PT_fatigue_body,
    rig_mapping.VIEW3D_PT_fatigue_mapping,
    bake.VIEW3D_PT_fatigue_output,
    last_bake.VIEW3D_PT_fatigue_report,
)

register, unregister = bpy.utils.register_classes_factory(classes)
