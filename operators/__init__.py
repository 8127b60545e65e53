"""Thin operators: validate the selection, call fatigue_addon, report one line."""
import bpy
from bpy_extras.io_utils import ExportHelper, ImportHelper


def _unexpected(exc, context, what: str = "Bake Fatigued Take") -> str:
    """The one line for a failure nobody expected; its traceback goes to a log file."""
    from ..fatigue_addon import failure

    obj = getattr(context, "active_object", None)
    return failure.unexpected(exc, what, context=f"Blender {bpy.app.version_string}, file "
                              f"{bpy.data.filepath or '(unsaved)'}, active object {getattr(obj, 'name', None)!r}")


def _prefs(context):
    from ..fatigue_addon import ADDON_ID

    addon = context.preferences.addons.get(ADDON_ID)
    return addon.preferences if addon is not None else None


def _armature(context):
    obj = context.active_object
    return obj if obj is not None and obj.type == "ARMATURE" else None


def _armature_or_report(op, context):
    """The active armature, or None after telling the user (one line) what to select."""
    obj = _armature(context)
    if obj is None:
        op.report({"ERROR"}, "No active armature: select the character's armature")
    return obj


class FATIGUE_OT_check_rig(bpy.types.Operator):
    """Check that the active armature has an action the fatigue bake can use"""

    bl_idname = "fatigue.check_rig"
    bl_label = "Check Rig"
    bl_options = {"REGISTER"}

    def execute(self, context):
        from ..fatigue_addon.checks import check_armature
        from ..fatigue_addon.failure import BakeInputError

        try:
            info = check_armature(context.active_object, context.scene)
        except BakeInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except Exception as exc:      # a bug: one line and a log file, never a traceback
            self.report({"ERROR"}, _unexpected(exc, context, "Check Rig"))
            return {"CANCELLED"}
        self.report(
            {"INFO"},
            f"'{info['armature']}': action '{info['action']}' animates {info['animated_bones']} of "
            f"{info['bones']} bones, frames {info['frames'][0]}-{info['frames'][1]} at {info['fps']:g} fps",
        )
        return {"FINISHED"}


# ============================================================================= rig mapping

class FATIGUE_OT_detect_rig(bpy.types.Operator):
    """Find which bone drives each joint of the simulated body (names, hierarchy, then geometry)"""

    bl_idname = "fatigue.detect_rig"
    bl_label = "Detect Rig"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from ..fatigue_addon import bake, rigmap
        from ..fatigue_addon.failure import BakeInputError

        obj = _armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        try:
            mapping = rigmap.detect_mapping(obj, strict=False)
        except BakeInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except Exception as exc:
            self.report({"ERROR"}, _unexpected(exc, context, "Detect Rig"))
            return {"CANCELLED"}
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
        obj = _armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        obj.fatigue_settings.mapping.clear()
        return {"FINISHED"}


def _mapping_from_rows(obj):
    from ..fatigue_addon import bake, rigmap

    rows = bake.settings_mapping(obj.fatigue_settings)
    return rigmap.Mapping(bones=rows, armature=obj.name)


class FATIGUE_OT_save_mapping(bpy.types.Operator, ExportHelper):
    """Save the rig mapping as a JSON preset"""

    bl_idname = "fatigue.save_mapping"
    bl_label = "Save Mapping Preset"
    filename_ext = ".json"
    filter_glob: bpy.props.StringProperty(default="*.json", options={"HIDDEN"})

    def execute(self, context):
        from ..fatigue_addon import rigmap
        from ..fatigue_addon.failure import BakeInputError

        obj = _armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        mapping = _mapping_from_rows(obj)
        if not len(mapping):
            self.report({"ERROR"}, "The rig mapping is empty: press Detect Rig first")
            return {"CANCELLED"}
        try:
            path = rigmap.save_mapping(mapping, self.filepath)
        except BakeInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Saved rig mapping to {path}")
        return {"FINISHED"}


def _load_into(op, obj, path):
    from ..fatigue_addon import bake, rigmap
    from ..fatigue_addon.failure import BakeInputError

    try:
        preset = rigmap.load_mapping(path)
        mapping = rigmap.apply_preset(obj, preset, strict=False)
    except BakeInputError as exc:
        op.report({"ERROR"}, str(exc))
        return {"CANCELLED"}
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
        obj = _armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        return _load_into(self, obj, self.filepath)


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

        obj = _armature_or_report(self, context)
        if obj is None:
            return {"CANCELLED"}
        path = rigmap.shipped_presets().get(self.preset)
        if path is None:
            self.report({"ERROR"}, f"No shipped rig mapping preset '{self.preset}'")
            return {"CANCELLED"}
        return _load_into(self, obj, path)


# ============================================================================= bake

_SCRIPT_ONLY = {"HIDDEN", "SKIP_SAVE"}


def _report_done(op, report) -> None:
    """The bake's summary line, then a line for a take that could not have its usual name."""
    from ..fatigue_addon import report as bake_report

    op.report({"INFO"}, bake_report.summary(report))
    for note in report.get("name_notes", ()):
        op.report({"WARNING"}, note)


class FATIGUE_OT_bake_take(bpy.types.Operator):
    """Simulate the active armature's action under muscle fatigue and bake the result as a new action
    (<action>.fatigued), with per-bone fatigue curves and a heat colour on the skinned meshes"""

    bl_idname = "fatigue.bake_take"
    bl_label = "Bake Fatigued Take"
    bl_options = {"REGISTER", "UNDO"}

    # Script / `blender -b` arguments: each one given replaces the armature's Fatigue setting for this
    # bake only (the settings in the file stay as they are).  Hidden from the UI.
    armature: bpy.props.StringProperty(
        name="Armature", options=_SCRIPT_ONLY, description="Bake this armature instead of the active object")
    action: bpy.props.StringProperty(
        name="Action", options=_SCRIPT_ONLY, description="Bake this action instead of the assigned one")
    frame_start: bpy.props.IntProperty(name="Start", options=_SCRIPT_ONLY, description="First source frame")
    frame_end: bpy.props.IntProperty(name="End", options=_SCRIPT_ONLY, description="Last source frame")
    preset: bpy.props.StringProperty(
        name="Preset", options=_SCRIPT_ONLY,
        description="Fitness preset (Athlete, Average, Untrained, Tired, Exhausted, Realistic) or Fresh (no fatigue)")
    # No min/max on these: Blender would clamp a bad value silently; BakeOptions refuses it in one line.
    fitness: bpy.props.FloatProperty(name="Fitness", options=_SCRIPT_ONLY,
                                     description="0 exhausted .. 0.5 average adult .. 1 athlete")
    F: bpy.props.FloatProperty(name="F", options=_SCRIPT_ONLY, description="Fatigue rate (1/s); with R and r")
    R: bpy.props.FloatProperty(name="R", options=_SCRIPT_ONLY, description="Recovery rate (1/s); with F and r")
    r: bpy.props.FloatProperty(name="r", options=_SCRIPT_ONLY, description="Rest recovery multiplier; with F and R")
    time_scale: bpy.props.FloatProperty(
        name="Fatigue speed-up", options=_SCRIPT_ONLY,
        description="Fatigue runs this many times faster (default: the preset's; 1 when F, R, r are given)")
    tiredness_start: bpy.props.FloatProperty(
        name="Tired at start", options=_SCRIPT_ONLY,
        description="How tired at the first frame, 0 fresh .. 0.9 spent (directs the preset's fatigue)")
    tiredness_end: bpy.props.FloatProperty(
        name="Tired by the end", options=_SCRIPT_ONLY,
        description="How tired by the end of the range, 0 fresh .. 0.9 spent (directs the preset's fatigue)")
    mode: bpy.props.StringProperty(name="Mode", options=_SCRIPT_ONLY, description="srb or torque")
    foot_placement: bpy.props.StringProperty(
        name="Foot placement", options=_SCRIPT_ONLY, description="policy (the shipped SRB policy) or rule")
    effort_economy: bpy.props.FloatProperty(
        name="Effort economy", options=_SCRIPT_ONLY,
        description="How far tired joints (limbs, knees) yield to their loads (0 = never; default: the armature's setting)")
    breathing: bpy.props.BoolProperty(
        name="Breathing", options=_SCRIPT_ONLY,
        description="A tired take breathes (default: the armature's Breathing setting)")
    kneeling: bpy.props.BoolProperty(
        name="Kneel to recover", options=_SCRIPT_ONLY,
        description="Exhausted legs rest kneeling (default: the armature's Kneel to recover setting)")
    take_name: bpy.props.StringProperty(
        name="Take name", options=_SCRIPT_ONLY, description="Name of the new action (default <action>.fatigued)")
    engine: bpy.props.StringProperty(
        name="Physics engine", options=_SCRIPT_ONLY,
        description="auto, pybullet or mujoco (default: the add-on preference Physics engine)")

    _timer = None
    _run = None
    _job = None

    def _options(self):
        from ..fatigue_addon.bake_options import BakeOptions

        given = {name: getattr(self, name) for name in BakeOptions.__dataclass_fields__
                 if self.properties.is_property_set(name)}
        return BakeOptions(**{k: (v if v != "" else None) for k, v in given.items()})

    def _target(self, context):
        """The armature to bake: the ``armature`` argument, else the active object."""
        from ..fatigue_addon.failure import BakeInputError

        if not self.armature:
            return context.active_object
        obj = bpy.data.objects.get(self.armature)
        if obj is None or obj.type != "ARMATURE":
            here = ", ".join(sorted(o.name for o in bpy.data.objects if o.type == "ARMATURE")) or "none"
            raise BakeInputError(f"no armature named '{self.armature}' in this file (armatures here: {here}): "
                                 f"give one of them")
        return obj

    # -- synchronous: F3 / scripts / blender -b ----------------------------------------------------
    def execute(self, context):
        from ..fatigue_addon import backend, bake
        from ..fatigue_addon.failure import BakeInputError

        wm = context.window_manager
        progress = bake.background_progress() if bpy.app.background else None
        try:
            report = bake.bake(context, self._target(context), prefs=_prefs(context), progress=progress,
                               options=self._options())
        except backend.BakeCancelled as exc:
            self.report({"WARNING"}, str(exc))
            return {"CANCELLED"}
        except BakeInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except Exception as exc:      # a bug: one line and a log file, never a traceback
            self.report({"ERROR"}, _unexpected(exc, context))
            return {"CANCELLED"}
        wm.fatigue_bake_status = ""
        _report_done(self, report)
        return {"FINISHED"}

    # -- interactive: modal timer, the simulation in a thread or worker, ESC cancels ---------------
    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        from ..fatigue_addon import bake
        from ..fatigue_addon.failure import BakeInputError

        try:
            self._job = bake.prepare(context, self._target(context), options=self._options())
            self._run = bake.make_run(self._job, _prefs(context), threaded=True)
            self._run.start()
        except BakeInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except Exception as exc:
            self.report({"ERROR"}, _unexpected(exc, context))
            return {"CANCELLED"}
        import time

        self._t0 = time.perf_counter()
        wm = context.window_manager
        wm.progress_begin(0, 100)
        wm.fatigue_bake_status = f"Simulating ({self._job.backend.replace('_', ' ').lower()}) 0%  - ESC cancels"
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _finish(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        wm.fatigue_bake_status = ""
        for area in context.screen.areas if context.screen else ():
            area.tag_redraw()

    def modal(self, context, event):
        try:
            return self._modal(context, event)
        except Exception as exc:      # a bug: stop the run, one line and a log file
            if self._run is not None:
                self._run.cancel()
            self._finish(context)
            self.report({"ERROR"}, _unexpected(exc, context))
            return {"CANCELLED"}

    def _modal(self, context, event):
        from ..fatigue_addon import bake
        from ..fatigue_addon.failure import BakeInputError

        if event.type == "ESC":
            self._run.cancel()
            self._finish(context)
            self.report({"WARNING"}, "Bake cancelled: nothing was written")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        state, value = self._run.poll()
        if state == "running":
            wm = context.window_manager
            wm.progress_update(int(100 * value))
            wm.fatigue_bake_status = (f"Simulating ({self._job.backend.replace('_', ' ').lower()}) "
                                      f"{int(100 * value)}%  - ESC cancels")
            for area in context.screen.areas if context.screen else ():
                if area.type == "VIEW_3D":
                    area.tag_redraw()
            return {"RUNNING_MODAL"}
        import time

        self._job.timings["simulate"] = time.perf_counter() - self._t0
        self._finish(context)
        if state == "cancelled":
            self.report({"WARNING"}, "Bake cancelled: nothing was written")
            return {"CANCELLED"}
        if state == "error":
            self.report({"ERROR"}, value)
            return {"CANCELLED"}
        try:
            report = bake.write(context, self._job, value)
        except BakeInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _report_done(self, report)
        return {"FINISHED"}      # UNDO flag: the whole bake is this one undo step

    def cancel(self, context):   # Blender closes the window / file while modal
        if self._run is not None:
            self._run.cancel()
        self._finish(context)


class FATIGUE_OT_switch_action(bpy.types.Operator):
    """Switch the armature between the fatigued take and its source action"""

    bl_idname = "fatigue.switch_action"
    bl_label = "Switch Take / Source"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from ..fatigue_addon import anim

        obj = _armature_or_report(self, context)
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


classes = (
    FATIGUE_OT_check_rig,
    FATIGUE_OT_detect_rig,
    FATIGUE_OT_clear_mapping,
    FATIGUE_OT_save_mapping,
    FATIGUE_OT_load_mapping,
    FATIGUE_OT_load_shipped_mapping,
    FATIGUE_OT_bake_take,
    FATIGUE_OT_switch_action,
)


register, unregister = bpy.utils.register_classes_factory(classes)
