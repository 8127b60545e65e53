"""Rig mapping: check the rig, detect which bone drives each joint, clear, save and load presets.

rigmap and bake are imported where an operator runs, not when the add-on registers (they bring
the runtime's geometry with them)."""
import bpy
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .common import armature_or_report, reported


class FATIGUE_OT_check_rig(bpy.types.Operator):
    """Check that the active armature has an action the fatigue bake can use"""

    bl_idname = "fatigue.check_rig"
    bl_label = "Check Rig"
    bl_options = {"REGISTER"}

    @reported("Check Rig")
    def execute(self, context):
        from ..fatigue_addon.checks import check_armature

        info = check_armature(context.active_object, context.scene)
        self.report(
            {"INFO"},
            f"'{info['armature']}': action '{info['action']}' animates {info['animated_bones']} of "
            f"{info['bones']} bones, frames {info['frames'][0]}-{info['frames'][1]} at {info['fps']:g} fps",
        )
        return {"FINISHED"}


class FATIGUE_OT_detect_rig(bpy.types.Operator):
    """Find which bone drives each joint of the simulated body (names, hierarchy, then geometry)"""

    bl_idname = "fatigue.detect_rig"
    bl_label = "Detect Rig"
    bl_options = {"REGISTER", "UNDO"}

    @reported("Detect Rig")
    def execute(self, context):
        from ..fatigue_addon import bake, rigmap

        obj = armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        mapping = rigmap.detect_mapping(obj, strict=False)
        bake.store_mapping(obj.fatigue_settings, mapping)
        if mapping.problems:
            self.report({"WARNING"}, f"Mapped {len(mapping.required())} of {len(rigmap.HUMANOID_KEYS)} joints: "
                                     f"{mapping.problems[0]}")
        else:
            self.report({"INFO"}, f"Mapped all {len(rigmap.HUMANOID_KEYS)} joints of '{obj.name}'")
        return {"FINISHED"}


class FATIGUE_OT_clear_mapping(bpy.types.Operator):
    """Empty the rig mapping (the bake then detects it again)"""

    bl_idname = "fatigue.clear_mapping"
    bl_label = "Clear Mapping"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        obj.fatigue_settings.mapping.clear()
        return {"FINISHED"}


class FATIGUE_OT_save_mapping(bpy.types.Operator, ExportHelper):
    """Save the rig mapping as a JSON preset"""

    bl_idname = "fatigue.save_mapping"
    bl_label = "Save Mapping Preset"
    filename_ext = ".json"
    filter_glob: bpy.props.StringProperty(default="*.json", options={"HIDDEN"})

    @reported("Save Mapping Preset")
    def execute(self, context):
        from ..fatigue_addon import bake, rigmap

        obj = armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        mapping = rigmap.Mapping(bones=bake.settings_mapping(obj.fatigue_settings), armature=obj.name)
        if not len(mapping):
            self.report({"ERROR"}, "The rig mapping is empty: press Detect Rig first")
            return {"CANCELLED"}
        path = rigmap.save_mapping(mapping, self.filepath)
        self.report({"INFO"}, f"Saved rig mapping to {path}")
        return {"FINISHED"}


@reported("Load Mapping Preset")
def _load_into(op, context, path):
    """Load the preset at ``path`` onto the active armature (a file or a shipped preset)."""
    from ..fatigue_addon import bake, rigmap

    obj = armature_or_report(op, context)
    if obj is None:
        return {"CANCELLED"}
    mapping = rigmap.apply_preset(obj, rigmap.load_mapping(path), strict=False)
    bake.store_mapping(obj.fatigue_settings, mapping)
    if mapping.problems:
        op.report({"WARNING"}, mapping.problems[0])
    else:
        op.report({"INFO"}, f"Loaded rig mapping '{path.stem if hasattr(path, 'stem') else path}'")
    return {"FINISHED"}


class FATIGUE_OT_load_mapping(bpy.types.Operator, ImportHelper):
    """Load a rig mapping preset (JSON) onto the active armature"""

    bl_idname = "fatigue.load_mapping"
    bl_label = "Load Mapping Preset"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".json"
    filter_glob: bpy.props.StringProperty(default="*.json", options={"HIDDEN"})

    def execute(self, context):
        return _load_into(self, context, self.filepath)


def _shipped_items(_self, _context):
    from ..fatigue_addon import rigmap

    return [(name, name.replace("_", " ").title(), str(path)) for name, path in rigmap.shipped_presets().items()]


class FATIGUE_OT_load_shipped_mapping(bpy.types.Operator):
    """Load one of the rig mapping presets shipped with the add-on"""

    bl_idname = "fatigue.load_shipped_mapping"
    bl_label = "Load Shipped Preset"
    bl_options = {"REGISTER", "UNDO"}
    bl_property = "preset"

    preset: bpy.props.EnumProperty(name="Preset", items=_shipped_items)

    def invoke(self, context, event):
        context.window_manager.invoke_search_popup(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        from ..fatigue_addon import rigmap

        path = rigmap.shipped_presets().get(self.preset)
        if path is None:
            self.report({"ERROR"}, f"No shipped rig mapping preset '{self.preset}'")
            return {"CANCELLED"}
        return _load_into(self, context, path)


classes = (FATIGUE_OT_check_rig, FATIGUE_OT_detect_rig, FATIGUE_OT_clear_mapping, FATIGUE_OT_save_mapping,
           FATIGUE_OT_load_mapping, FATIGUE_OT_load_shipped_mapping)
