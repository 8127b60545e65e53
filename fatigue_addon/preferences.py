"""Add-on preferences: which physics engine simulates, and where.

The extension carries its engines as wheels (PyBullet on Linux with Python 3.11, MuJoCo on every
platform it ships for), so nothing here asks for another Python: the worker process, kept for
crash isolation, runs Blender's own.
"""
import bpy

from ..runtime.request import enum_items
from . import ADDON_ID


class FatigueAddonPreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON_ID

    engine: bpy.props.EnumProperty(
        name="Physics engine",
        items=enum_items("engine", {
            "auto": ("Automatic", "PyBullet where it is installed (Linux, Blender 4.2 to 5.0), else MuJoCo"),
            "pybullet": ("PyBullet", "The proxy simulated in PyBullet (Linux x64 with Python 3.11 only)"),
            "mujoco": ("MuJoCo", "The proxy simulated in MuJoCo (every platform the extension ships for)"),
        }),
        default="AUTO",
    )
    backend: bpy.props.EnumProperty(
        name="Simulation backend",
        # Saved preferences hold the numbers: AUTO (0) and WORKER (2) keep theirs; an old IN_PROCESS (1,
        # the same as AUTO now that every zip carries its engine) falls back to the default.
        items=(
            ("AUTO", "Inside Blender", "Simulate in Blender's own Python, in this process (fastest to start)", 0),
            ("WORKER", "Separate process",
             "Simulate in a separate process of Blender's own Python: a simulator crash cannot take this "
             "session down", 2),
        ),
        default="AUTO",
    )
    worker_watchdog: bpy.props.FloatProperty(
        name="Worker watchdog",
        description="Stop a worker process that reports no progress for this many seconds (hung or stalled)",
        default=120.0, min=5.0, soft_max=1800.0, max=86400.0, unit="TIME_ABSOLUTE",
    )

    def draw(self, context):
        from . import backend

        layout = self.layout
        layout.prop(self, "engine")
        note = backend.no_engine_note()
        if note:
            layout.label(text=note, icon="ERROR")
        layout.prop(self, "backend")
        row = layout.row()
        row.active = self.backend == "WORKER"
        row.prop(self, "worker_watchdog")


classes = (FatigueAddonPreferences,)


register, unregister = bpy.utils.register_classes_factory(classes)
