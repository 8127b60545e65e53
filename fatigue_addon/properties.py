"""Per-armature fatigue settings, saved in the .blend on the armature object.

Fitness, F, R, r and the time scale are animatable, so the animator keyframes them and edits
them in the Graph Editor like any other channel (fresh at frame 1, exhausted by frame 900).
The preset list comes from runtime.fatigue.params so the UI and the simulation never disagree.
"""
import bpy

from ..runtime.fatigue import params as fatigue_params
from ..runtime.fatigue.direction import MAX_TIREDNESS
from ..runtime.request import HEIGHT_RANGE, MASS_RANGE, enum_items

_DEFAULT = fatigue_params.PRESETS[fatigue_params.DEFAULT_PRESET]
_OPEN_MIN = 1e-6          # the least value a range open at its low end (F, R, r, speed-up) takes in the panel


def _limits(name: str) -> dict:
    """min and max of a panel property from the bake option's range (runtime.fatigue.params)."""
    lo, hi, lo_open = fatigue_params.OPTION_RANGES[name]
    return {"min": max(lo, _OPEN_MIN) if lo_open else lo, "max": hi}


_PRESET_ITEMS = [(name, name, p.description) for name, p in fatigue_params.PRESETS.items()]
_PRESET_ITEMS.append(("CUSTOM", "Custom", "Use the F, R, r below instead of a preset"))
_PRESET_ITEMS.append(("FRESH", "Fresh (no fatigue)",
                      "Muscles never tire: the physics alone, a baseline to compare tired takes with"))


def _apply_preset(settings, _context):
    """Choosing a preset sets fitness, time scale, starting fatigue and how tired the body is
    meant to be (all still editable)."""
    if settings.preset in ("CUSTOM", "FRESH"):
        return
    p = fatigue_params.preset(settings.preset)
    settings.fitness = p.fitness
    settings.time_scale = p.time_scale
    settings.initial_fatigue = p.initial_fatigue
    settings.direct_tiredness = p.tiredness is not None
    if p.tiredness is not None:
        settings.tiredness_start, settings.tiredness_end = p.tiredness


def _rates_given(settings, _context):
    """A speed-up or starting fatigue typed in (or set by a script) runs the rates as given: the
    tiredness is no longer directed."""
    if settings.direct_tiredness:
        settings.direct_tiredness = False


def _overridable(cls):
    """Every property of ``cls`` also on a library override (Object > Library Override > Make):
    editable there, and kept when the file is saved (an override keeps only what may be overridden)."""
    for prop in cls.__annotations__.values():
        if prop.function is not bpy.props.CollectionProperty:
            prop.keywords["override"] = {"LIBRARY_OVERRIDABLE"}
    return cls


@_overridable
class FatigueBoneMapItem(bpy.types.PropertyGroup):
    """One row of the rig mapping: a proxy joint key and the armature bone that drives it."""
    key: bpy.props.StringProperty(name="Key", description="Proxy joint key (pelvis, chest, left_knee, ...)")
    bone: bpy.props.StringProperty(name="Bone", description="The armature's bone for this joint")


@_overridable
class FatigueSettings(bpy.types.PropertyGroup):
    mode: bpy.props.EnumProperty(
        name="Mode",
        items=enum_items("mode", {
            "srb": ("SRB", "Single-rigid-body balance with fatigue-limited legs and simulated limbs (default)"),
            "torque": ("Torque", "Experimental: the whole body under fatigue-bounded joint torques, no help on the "
                                 "root, found by sampling on MuJoCo (slower: seconds of compute per second of motion)"),
        }),
        default="SRB",
    )
    foot_placement: bpy.props.EnumProperty(
        name="Foot placement",
        items=enum_items("foot_placement", {
            "policy": ("Learned", "The shipped fatigue-aware SRB policy corrects where the feet land and how fast "
                                  "the body goes (models/srb_general)"),
            "rule": ("Rule", "Raibert foot placement and the tempo rule alone"),
            "paced": ("Paced", "The rule, corrected by a residual learned over whole takes (models/srb_residual, "
                               "default): a tired body's pelvis height and how far its tired joints yield, so it "
                               "paces itself and rests less. Fresh takes are the rule's"),
        }),
        default="PACED",
    )
    effort_economy: bpy.props.FloatProperty(
        name="Effort economy",
        description="How far tired arms, head and chest give in to what they hold, and tired knees bend under "
                    "the body: 0 = they hold every pose until their strength runs out, 1 = default, more = they "
                    "slump sooner. No effect when fresh",
        default=fatigue_params.DEFAULT_EFFORT_ECONOMY, soft_max=3.0, **_limits("effort_economy"),
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
        default=fatigue_params.PRESETS[fatigue_params.DEFAULT_PRESET].fitness, **_limits("fitness"),
        subtype="FACTOR",
        options={"ANIMATABLE"},
    )
    time_scale: bpy.props.FloatProperty(
        name="Fatigue speed-up",
        description="Fatigue and recovery run this many times faster than in the published data (1 = real time)",
        default=fatigue_params.PRESETS[fatigue_params.DEFAULT_PRESET].time_scale,
        soft_max=100.0, **_limits("time_scale"),
        options={"ANIMATABLE"}, update=_rates_given,
    )
    initial_fatigue: bpy.props.FloatProperty(
        name="Starting fatigue",
        description="Fraction of every muscle already fatigued at the first frame",
        default=0.0, min=0.0, max=0.95, subtype="FACTOR", update=_rates_given,
    )
    # --- how tired, when (runtime.fatigue.direction) --------------------------------------------
    direct_tiredness: bpy.props.BoolProperty(
        name="Direct tiredness",
        description="Say how tired the character is at the first frame and by the end; the bake solves the "
                    "starting fatigue and the speed-up that get there (Fatigue speed-up and Starting fatigue "
                    "are then ignored)",
        default=_DEFAULT.tiredness is not None,
    )
    tiredness_start: bpy.props.FloatProperty(
        name="Tired at start",
        description="How tired at the first frame: 0 fresh, 0.5 exhausted, 0.9 spent",
        default=_DEFAULT.tiredness[0] if _DEFAULT.tiredness else 0.0, min=0.0, max=MAX_TIREDNESS, subtype="FACTOR",
    )
    tiredness_end: bpy.props.FloatProperty(
        name="Tired by the end",
        description="How tired by the last frame of the range: 0 fresh, 0.5 exhausted, 0.9 spent",
        default=_DEFAULT.tiredness[1] if _DEFAULT.tiredness else 0.0, min=0.0, max=MAX_TIREDNESS, subtype="FACTOR",
    )
    tiredness: bpy.props.FloatProperty(
        name="Tiredness",
        description="Key this to direct how tired the character is over time (its keys replace Tired at start "
                    "and by the end): 0 fresh, 0.5 exhausted, 0.9 spent",
        default=0.0, min=0.0, max=MAX_TIREDNESS, subtype="FACTOR", options={"ANIMATABLE"},
    )
    F: bpy.props.FloatProperty(
        name="F", description="Fatigue rate (1/s), Custom preset only",
        default=fatigue_params.published_region("general").F, **_limits("F"),
        precision=5, options={"ANIMATABLE"},
    )
    R: bpy.props.FloatProperty(
        name="R", description="Recovery rate (1/s), Custom preset only",
        default=fatigue_params.published_region("general").R, **_limits("R"),
        precision=5, options={"ANIMATABLE"},
    )
    r: bpy.props.FloatProperty(
        name="r", description="Recovery multiplier while resting, Custom preset only",
        default=fatigue_params.published_region("general").r, **_limits("r"),
        options={"ANIMATABLE"},
    )

    # --- body-part fitness (multiplies the fitness of that part's DoFs) ----------------------
    fitness_legs: bpy.props.FloatProperty(
        name="Legs", description="Multiplies the fitness of the hips, knees and ankles (1 = same as the body)",
        default=1.0, min=fatigue_params.PART_FITNESS_RANGE[0], soft_max=2.0, max=fatigue_params.PART_FITNESS_RANGE[1],
        options={"ANIMATABLE"})
    fitness_arms: bpy.props.FloatProperty(
        name="Arms", description="Multiplies the fitness of the shoulders and elbows (1 = same as the body)",
        default=1.0, min=fatigue_params.PART_FITNESS_RANGE[0], soft_max=2.0, max=fatigue_params.PART_FITNESS_RANGE[1],
        options={"ANIMATABLE"})
    fitness_trunk: bpy.props.FloatProperty(
        name="Trunk", description="Multiplies the fitness of the chest (1 = same as the body)",
        default=1.0, min=fatigue_params.PART_FITNESS_RANGE[0], soft_max=2.0, max=fatigue_params.PART_FITNESS_RANGE[1],
        options={"ANIMATABLE"})
    fitness_neck: bpy.props.FloatProperty(
        name="Neck", description="Multiplies the fitness of the neck (1 = same as the body)",
        default=1.0, min=fatigue_params.PART_FITNESS_RANGE[0], soft_max=2.0, max=fatigue_params.PART_FITNESS_RANGE[1],
        options={"ANIMATABLE"})

    # --- rig mapping ----------------------------------------------------------------------------
    mapping: bpy.props.CollectionProperty(type=FatigueBoneMapItem, name="Rig mapping")
    mapping_index: bpy.props.IntProperty(name="Active mapping row", default=0)

    # --- proxy body -------------------------------------------------------------------------------
    use_rig_height: bpy.props.BoolProperty(
        name="Height from rig",
        description="Size the simulated body like the armature (its joint chains, measured in the world) when it "
                    "is in metres; a rig in other units (centimetres, inches) is simulated at Height",
        default=True)
    height: bpy.props.FloatProperty(
        name="Height", description="Height of the simulated body when not taken from the rig, or when the rig is "
                                   "not in metres",
        default=1.75, min=HEIGHT_RANGE[0], max=HEIGHT_RANGE[1], unit="LENGTH")
    mass: bpy.props.FloatProperty(
        name="Mass", description="Body mass of the simulated character (kg)", default=70.0, min=MASS_RANGE[0],
        max=MASS_RANGE[1])
    proportions: bpy.props.EnumProperty(
        name="Proportions",
        items=(
            ("RIG", "From rig", "Thigh, shank, upper arm, hip and shoulder width measured on the armature's rest "
                                "pose; segment masses and centres of mass from de Leva (1996)"),
            ("DEFAULT", "Default humanoid", "The DeepMimic humanoid's proportions and masses, scaled to the height"),
        ),
        default="RIG",
    )
    mass_distribution: bpy.props.EnumProperty(
        name="Mass distribution",
        items=(("MALE", "Male", "de Leva (1996) segment masses, male table"),
               ("FEMALE", "Female", "de Leva (1996) segment masses, female table")),
        default="MALE",
        description="Which de Leva table spreads the mass over the segments (From rig proportions)",
    )

    # --- frame range ------------------------------------------------------------------------------
    use_custom_range: bpy.props.BoolProperty(
        name="Custom range", description="Bake these frames instead of the scene's frame range", default=False)
    frame_start: bpy.props.IntProperty(name="Start", default=1)
    frame_end: bpy.props.IntProperty(name="End", default=250)

    # --- output -----------------------------------------------------------------------------------
    write_curves: bpy.props.BoolProperty(
        name="Fatigue curves", default=True,
        description="Key 'fatigue' and 'capacity' custom properties on the mapped pose bones")
    breathing: bpy.props.BoolProperty(
        name="Breathing", default=True,
        description="A tired take breathes: chest, shoulders and head move with each breath, faster and deeper "
                    "the harder the body has worked (about 14 a minute calm, up to 36 exhausted), and a 'breath' "
                    "property on the armature is keyed for the Graph Editor.  A Fresh take never breathes")
    kneeling: bpy.props.BoolProperty(
        name="Kneel to recover", default=True,
        description="Legs too tired to recover standing (under the fatigue model a leg that holds even a few "
                    "percent of its strength barely recovers) go down on their knees to rest, then get up and "
                    "the performance goes on.  Off: every rest is taken standing, and exhausted legs may give way")
    heat_modifier: bpy.props.BoolProperty(
        name="Heat colour", default=True,
        description="Add a Geometry Nodes modifier to the skinned meshes that writes a 'fatigue' point "
                    "attribute and a 'fatigue_color' colour attribute (needs Fatigue curves)")
    heat_material: bpy.props.BoolProperty(
        name="Heat material", default=False,
        description="Show the heat colour in renders: override the meshes' materials with one that "
                    "renders 'fatigue_color' (object-linked, the meshes' own materials stay)")

    # --- bookkeeping (written by the bake) ------------------------------------------------------
    source_action: bpy.props.PointerProperty(
        type=bpy.types.Action, name="Source action",
        description="The animation the last bake read (never modified)")
    baked_action: bpy.props.PointerProperty(
        type=bpy.types.Action, name="Fatigued take", description="The action the last bake wrote")
    last_report: bpy.props.StringProperty(name="Last bake", description="JSON summary of the last bake", default="")


classes = (FatigueBoneMapItem, FatigueSettings)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.fatigue_settings = bpy.props.PointerProperty(type=FatigueSettings, override={"LIBRARY_OVERRIDABLE"})
    bpy.types.WindowManager.fatigue_bake_status = bpy.props.StringProperty(
        name="Bake status", default="", options={"SKIP_SAVE"})


def unregister():
    del bpy.types.WindowManager.fatigue_bake_status
    del bpy.types.Object.fatigue_settings
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
