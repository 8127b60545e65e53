"""Add-on preferences: where the simulation runs.

pybullet wheels exist only for Linux / CPython 3.11, so on other platforms (or when the user
wants a simulator crash kept out of the Blender session) the bake runs in a worker process
started with a separately configured Python that has numpy and pybullet.
"""
import bpy

from . import ADDON_ID


class FatigueAddonPreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON_ID

    backend: bpy.props.EnumProperty(
        name="Simulation backend",
        items=(
            ("AUTO", "Automatic", "Inside Blender when pybullet imports here, otherwise a worker process"),
            ("IN_PROCESS", "Inside Blender", "Simulate in Blender's own Python (needs pybullet in Blender)"),
            ("WORKER", "Worker process", "Simulate in a separate Python process (safe from simulator crashes)"),
        ),
        default="AUTO",
    )
    worker_python: bpy.props.StringProperty(
        name="Worker Python",
        description="A Python 3.11 executable with numpy and pybullet installed, used for the worker process",
        subtype="FILE_PATH",
        default="",
    )

    worker_watchdog: bpy.props.FloatProperty(
        name="Worker watchdog",
        description="Stop a worker process that reports no progress for this many seconds (hung or stalled)",
        default=120.0, min=5.0, soft_max=1800.0, max=86400.0, unit="TIME_ABSOLUTE",
    )

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "backend")
        layout.prop(self, "worker_python")
        layout.prop(self, "worker_watchdog")


classes = (FatigueAddonPreferences,)


register, unregister = bpy.utils.register_classes_factory(classes)
