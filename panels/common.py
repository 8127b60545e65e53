"""What the Fatigue tab's panels share: the active armature and where they sit."""


def armature(context):
    obj = context.active_object
    return obj if obj is not None and obj.type == "ARMATURE" else None


class FatigueTab:
    """The Fatigue tab of the 3D viewport's N-panel."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Fatigue"


class FatigueSubPanel(FatigueTab):
    """A collapsed sub-panel under the Fatigue tab's main panel (armatures only)."""

    bl_parent_id = "VIEW3D_PT_fatigue"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return armature(context) is not None
