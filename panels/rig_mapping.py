"""Rig mapping: one row per proxy joint with a bone picker, and the sub-panel that detects,
loads and saves the mapping."""
import bpy

from .common import FatigueSubPanel


class FATIGUE_UL_mapping(bpy.types.UIList):
    """One row per proxy joint: its label and a bone picker over the armature's bones."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        from ..fatigue_addon import rigmap

        obj = data.id_data
        row = layout.row(align=True)
        label = rigmap.KEY_LABELS.get(item.key, item.key)
        required = item.key in rigmap.HUMANOID_KEYS
        ok = bool(item.bone) and obj.type == "ARMATURE" and item.bone in obj.data.bones
        split = row.split(factor=0.42)
        split.label(text=label, icon="CHECKMARK" if ok else ("ERROR" if required else "DOT"))
        if obj.type == "ARMATURE":
            split.prop_search(item, "bone", obj.data, "bones", text="")
        else:
            split.prop(item, "bone", text="")


class VIEW3D_PT_fatigue_mapping(FatigueSubPanel, bpy.types.Panel):
    bl_label = "Rig Mapping"
    bl_idname = "VIEW3D_PT_fatigue_mapping"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        s = obj.fatigue_settings
        row = layout.row(align=True)
        row.operator("fatigue.detect_rig", icon="VIEWZOOM")
        row.operator("fatigue.clear_mapping", icon="X", text="")
        if len(s.mapping) == 0:
            layout.label(text="Detected automatically at bake time", icon="INFO")
        else:
            layout.template_list("FATIGUE_UL_mapping", "", s, "mapping", s, "mapping_index", rows=6)
        row = layout.row(align=True)
        row.operator("fatigue.load_shipped_mapping", icon="PRESET", text="Preset")
        row.operator("fatigue.load_mapping", icon="IMPORT", text="Load")
        row.operator("fatigue.save_mapping", icon="EXPORT", text="Save")
