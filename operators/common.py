"""What every operator shares: the active armature, the add-on preferences, and the one way a
failure reaches the user (a BakeInputError as its line, anything else one line and a log file)."""
import functools

import bpy

from ..fatigue_addon import ADDON_ID, failure
from ..fatigue_addon.failure import BakeInputError


def unexpected(exc, context, what: str) -> str:
    """The one line for a failure nobody expected; its traceback goes to a log file."""
    obj = getattr(context, "active_object", None)
    return failure.unexpected(exc, what, context=f"Blender {bpy.app.version_string}, file "
                              f"{bpy.data.filepath or '(unsaved)'}, active object {getattr(obj, 'name', None)!r}")


def reported(what: str):
    """An operator method that reports its own failures: a BakeInputError is its one line, anything
    else (a bug) one line and a log file, never a traceback; either cancels."""
    def wrap(method):
        @functools.wraps(method)
        def run(self, context, *args):
            try:
                return method(self, context, *args)
            except BakeInputError as exc:
                self.report({"ERROR"}, str(exc))
            except Exception as exc:      # noqa: BLE001 -- a bug: one line and a log file
                self.report({"ERROR"}, unexpected(exc, context, what))
            return {"CANCELLED"}
        return run
    return wrap


def prefs(context):
    addon = context.preferences.addons.get(ADDON_ID)
    return addon.preferences if addon is not None else None


def armature_or_report(op, context):
    """The active armature, or None after telling the user (one line) what to select."""
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        op.report({"ERROR"}, "No active armature: select the character's armature")
        return None
    return obj
