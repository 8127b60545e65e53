"""Per-armature fatigue settings, saved in the .blend on the armature object.

Fitness, F, R, r and the time scale are animatable, so the animator keyframes them and edits
them in the Graph Editor like any other channel (fresh at frame 1, exhausted by frame 900).
The preset list comes from runtime.fatigue_params so the UI and the simulation never disagree.
"""
import bpy

from ..runtime import fatigue_params

_PRESET_ITEMS = [(name, name, p.description) for name, p in fatigue_params.PRESETS.items()]
_PRESET_ITEMS.append(("CUSTOM", "Custom", "Use the F, R, r below instead of a preset"))


def _apply_preset(settings, _context):
    """Choosing a preset sets fitness, time scale and starting fatigue (all still editable)."""
    if settings.preset == "CUSTOM":
        return
    p = fatigue_params.preset(settings.preset)
    settings.fitness = p.fitness
    settings.time_scale = p.time_scale
    settings.initial_fatigue = p.initial_fatigue


class FatigueSettings(bpy.types.PropertyGroup):
    mode: bpy.props.EnumProperty(
        name="Mode",
        items=(
            ("SRB", "SRB", "Single-rigid-body balance with fatigue-limited legs and simulated limbs (default)"),
            ("TORQUE", "Torque", "Whole-body torque control of the simulated proxy"),
        ),
        default="SRB",
    )
    preset: bpy.props.EnumProperty(
        name="Fitness preset",
        items=_PRESET_ITEMS,
        default=fatigue_params.DEFAULT_PRESET,
        update=_apply_preset,
    )
    fitness: bpy.props.FloatProperty(
        name="Fitness",
        description="0 = exhausted, 0.5 = average adult (published values), 1 = athlete. Keyframe it to tire over time",
        default=fatigue_params.PRESETS[fatigue_params.DEFAULT_PRESET].fitness,
        min=0.0, max=1.0,
        subtype="FACTOR",
        options={"ANIMATABLE"},
    )
    time_scale: bpy.props.FloatProperty(
        name="Fatigue speed-up",
        description="Fatigue and recovery run this many times faster than in the published data (1 = real time)",
        default=fatigue_params.PRESETS[fatigue_params.DEFAULT_PRESET].time_scale,
        min=0.01, soft_max=100.0, max=10000.0,
        options={"ANIMATABLE"},
    )
    initial_fatigue: bpy.props.FloatProperty(
        name="Starting fatigue",
        description="Fraction of every muscle already fatigued at the first frame",
        default=0.0, min=0.0, max=0.95, subtype="FACTOR",
    )
    F: bpy.props.FloatProperty(
        name="F", description="Fatigue rate (1/s), Custom preset only",
        default=fatigue_params.published_region("general").F, min=1e-6, max=100.0,
        precision=5, options={"ANIMATABLE"},
    )
    R: bpy.props.FloatProperty(
        name="R", description="Recovery rate (1/s), Custom preset only",
        default=fatigue_params.published_region("general").R, min=1e-6, max=100.0,
        precision=5, options={"ANIMATABLE"},
    )
    r: bpy.props.FloatProperty(
        name="r", description="Recovery multiplier while resting, Custom preset only",
        default=fatigue_params.published_region("general").r, min=1.0, max=1000.0,
        options={"ANIMATABLE"},
    )


classes = (FatigueSettings,)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.fatigue_settings = bpy.props.PointerProperty(type=FatigueSettings)


def unregister():
    del bpy.types.Object.fatigue_settings
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
