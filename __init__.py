"""Fatigued Takes: bake physically simulated, muscle-fatigued variants of character animation.

Blender loads this folder as ``bl_ext.<repository>.fatigued_takes``; everything below uses
relative imports.  Submodules are imported inside register() so that the numpy-only
``runtime`` package can be used (tests, worker process) without importing bpy.
"""


def register():
    from . import fatigue_addon, operators, panels

    fatigue_addon.register()
    operators.register()
    panels.register()


def unregister():
    from . import fatigue_addon, operators, panels

    panels.unregister()
    operators.unregister()
    fatigue_addon.unregister()
