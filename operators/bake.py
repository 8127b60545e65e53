"""Bake: the Bake Fatigued Take operator, in the panel (modal, ESC cancels) and from scripts and
``blender -b`` (its arguments are runtime.request.BAKE_OPTIONS, one per option).

The bake's modules are imported when it runs, not when the add-on registers."""
import time

import bpy

from ..fatigue_addon.bake_options import BakeOptions
from ..fatigue_addon.failure import BakeCancelled, BakeInputError
from ..runtime.request import BAKE_OPTIONS
from .common import prefs, reported, unexpected

_SCRIPT_ONLY = {"HIDDEN", "SKIP_SAVE"}
_PROPERTY = {str: bpy.props.StringProperty, int: bpy.props.IntProperty, float: bpy.props.FloatProperty,
             bool: bpy.props.BoolProperty}


def _argument(option):
    """The operator argument of a bake option.  No min/max on numbers: Blender would clamp a bad
    value silently; BakeOptions refuses it in one line."""
    return _PROPERTY[option.kind](name=option.label, options=_SCRIPT_ONLY,
                                  description=option.help[0].upper() + option.help[1:])


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

    # Script / `blender -b` arguments (runtime.request.BAKE_OPTIONS): each one given replaces the
    # armature's Fatigue setting for this bake only (the settings in the file stay as they are).
    __annotations__ = {
        "armature": bpy.props.StringProperty(
            name="Armature", options=_SCRIPT_ONLY, description="Bake this armature instead of the active object"),
        **{option.name: _argument(option) for option in BAKE_OPTIONS},
    }

    _timer = None
    _run = None
    _job = None

    def _options(self):
        given = {name: getattr(self, name) for name in BakeOptions.__dataclass_fields__
                 if self.properties.is_property_set(name)}
        return BakeOptions(**{k: (v if v != "" else None) for k, v in given.items()})

    def _target(self, context):
        """The armature to bake: the ``armature`` argument, else the active object."""
        if not self.armature:
            return context.active_object
        obj = bpy.data.objects.get(self.armature)
        if obj is None or obj.type != "ARMATURE":
            here = ", ".join(sorted(o.name for o in bpy.data.objects if o.type == "ARMATURE")) or "none"
            raise BakeInputError(f"no armature named '{self.armature}' in this file (armatures here: {here}): "
                                 f"give one of them")
        return obj

    # -- synchronous: F3 / scripts / blender -b ----------------------------------------------------
    @reported("Bake Fatigued Take")
    def execute(self, context):
        from ..fatigue_addon import bake

        progress = bake.background_progress() if bpy.app.background else None
        try:
            report = bake.bake(context, self._target(context), prefs=prefs(context), progress=progress,
                               options=self._options())
        except BakeCancelled as exc:
            self.report({"WARNING"}, str(exc))
            return {"CANCELLED"}
        context.window_manager.fatigue_bake_status = ""
        _report_done(self, report)
        return {"FINISHED"}

    # -- interactive: modal timer, the simulation in a thread or worker, ESC cancels ---------------
    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        return self._start(context)

    @reported("Bake Fatigued Take")
    def _start(self, context):
        from ..fatigue_addon import bake

        self._job = bake.prepare(context, self._target(context), options=self._options())
        self._run = bake.make_run(self._job, prefs(context), threaded=True)
        self._run.start()
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
            self.report({"ERROR"}, unexpected(exc, context, "Bake Fatigued Take"))
            return {"CANCELLED"}

    def _modal(self, context, event):
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
        self._job.timings["simulate"] = time.perf_counter() - self._t0
        self._finish(context)
        if state == "cancelled":
            self.report({"WARNING"}, "Bake cancelled: nothing was written")
            return {"CANCELLED"}
        if state == "error":
            self.report({"ERROR"}, value)
            return {"CANCELLED"}
        return self._write(context, value)

    @reported("Bake Fatigued Take")
    def _write(self, context, take):
        from ..fatigue_addon import bake

        _report_done(self, bake.write(context, self._job, take))
        return {"FINISHED"}      # UNDO flag: the whole bake is this one undo step

    def cancel(self, context):   # Blender closes the window / file while modal
        if self._run is not None:
            self._run.cancel()
        self._finish(context)
