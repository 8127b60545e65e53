"""Blender-side core: settings stored on the armature, add-on preferences, input checks.

``ADDON_ID`` is the extension's package name as Blender loaded it (it differs per repository),
used wherever Blender asks for the add-on's identity (preferences).
"""
ADDON_ID = __package__.rpartition(".")[0]


def register():
    from . import preferences, properties

    preferences.register()
    properties.register()


def unregister():
    from . import preferences, properties

    properties.unregister()
    preferences.unregister()
