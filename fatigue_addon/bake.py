"""Bake Fatigued Take: armature + action + keyed fitness -> Take -> a NEW action, curves, heat colour.

Three phases, so that bad input and failed or cancelled simulations write nothing:

1. ``prepare``  (reads only): checks, rig mapping, retarget ``action -> Clip``, fatigue schedule
   from the keyed fitness (or F, R, r) per frame and per body part.
2. the simulation (``backend``: in this process or a worker process), given ``job.request``.
3. ``write``: ``<source>.fatigued`` (replaced on a re-bake) with the simulated pose, per-bone
   ``fatigue`` (MF) and ``capacity`` (RC) curves, the heat-colour modifier, the report.  The
   source action is never modified: it moves to a muted NLA track ("Fatigue source") so it stays
   in the file, and the new action is assigned (with its slot on 4.4+).  A failure here removes
   what this phase created.

``bake()`` runs all three synchronously (``blender -b``, tests, tools/demo_blend.py); the
operator runs phase 2 from a modal timer.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from ..runtime.body import proxy
from ..runtime.fatigue.tempo import MAX_STRETCH
from ..runtime.request import (HEIGHT_RANGE, MASS_RANGE, SimulationRequest, height_problem, mass_problem,
                               source_frames_problem)
from . import anim, backend, checks, heat, retarget, rig_controls, rigmap, source_pose
from .rig import root_motion
from .rig import space as rig_space
from .bake_options import BakeOptions, SettingsView
from .failure import BakeInputError, RigMappingError
from .fitness import build_schedule, settings_curves, tiredness_keys
from .report import make_report

SUFFIX = ".fatigued"
NLA_TRACK = "Fatigue source"
BREATH = "breath"                   # the armature's custom property the take's breathing is keyed on
OVERRIDE_NOTE = ("'{}' is a library override: its take has no per-bone fatigue curves or heat colour (an override "
                 "keeps no new custom properties when the file is saved)")


@dataclass
class BakeJob:
    obj_name: str
    source: str                 # source action name
    mapping: dict               # key -> bone
    frame_start: int
    frame_end: int
    fps: float
    request: SimulationRequest  # what to simulate (runtime.request)
    info: object                # retarget.RetargetInfo
    timings: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    backend: str = "IN_PROCESS"
    engine: str | None = None   # a script's or batch's engine option (None: the add-on preference)
    settings_curves: list = field(default_factory=list)   # snapshots of the keyed fatigue_settings curves
    take_name: str = ""         # the action to write (default <source>.fatigued)
    take_note: str = ""         # why the take is not under the name asked for ("" when it is)
    keys: object = None         # rig_controls.KeyPlan: the bones (or Rigify controls) the take is keyed on
    controls: object = None     # rig_controls.ControlsResult of a take keyed on Rigify's controls
    played_on: dict = field(default_factory=dict)         # source_pose.unkeyed: the pose the source played on
    source_keyed: frozenset = frozenset()  # anim.SourceAction.keyed: the channels the source keys


# ============================================================================= settings helpers

def settings_mapping(settings) -> dict:
    return {row.key: row.bone for row in settings.mapping if row.key and row.bone}


def store_mapping(settings, mapping) -> None:
    bones = dict(mapping.bones) if isinstance(mapping, rigmap.Mapping) else dict(mapping)
    settings.mapping.clear()
    for key in rigmap.ALL_KEYS:
        row = settings.mapping.add()
        row.key = key
        row.bone = bones.get(key, "")
    settings.mapping_index = 0


def resolve_mapping(obj, settings, rig=None) -> dict:
    """The mapping the bake uses: the panel's rows when filled in, else auto-detected (strict).
    ``rig``: the armature's rest pose read already (rigmap.read_skeleton)."""
    rows = settings_mapping(settings)
    if not rows:
        return dict(rigmap.detect_mapping(obj, strict=True, rig=rig).bones)
    m = rigmap.Mapping(bones=rows, sources={k: "user" for k in rows}, armature=obj.name)
    problems = rigmap.validate_mapping(obj, m, rig=rig, posed=True)
    if problems:
        p = problems[0]
        if p.startswith("not humanoid: "):
            raise RigMappingError(f"'{obj.name}' does not look like a humanoid ({p[len('not humanoid: '):]}): "
                                         f"pick a two-legged character's armature or fix the Rig Mapping list")
        raise RigMappingError(f"Rig mapping: {p}: fix it in the Rig Mapping list (or press Detect Rig)")
    return rows


# How to set the frames a bake reads, by where they came from (the fix a range's refusal names).
RANGE_GIVEN = "give a frame range (frame_start, frame_end; ./fatigue bake --frames A:B)"
RANGE_CUSTOM = "set the Fatigue panel's custom range (Range & Output)"
RANGE_SCENE = "set the scene's frame range in the timeline"


def bake_range(scene, settings) -> tuple[int, int]:
    if settings.use_custom_range:
        return int(settings.frame_start), int(settings.frame_end)
    return int(scene.frame_start), int(scene.frame_end)


def source_action(obj, settings):
    """The action to bake from: the assigned one, or the source of the take assigned (the last bake's,
    or any action this extension wrote: a take is never baked again as if it were keyed motion), or,
    with nothing assigned (the take deleted or unassigned), the last bake's source, kept on the muted
    "Fatigue source" NLA track."""
    active = anim.active_action(obj)
    src = settings.source_action
    if active is None:
        track = obj.animation_data.nla_tracks.get(NLA_TRACK) if obj.animation_data is not None else None
        kept = {s.action for s in track.strips if s.action is not None} if track is not None else set()
        return src if src is not None else (kept.pop() if len(kept) == 1 else None)
    if active is not None and src is not None and active == settings.baked_action and src != active:
        return src
    tagged = active.get(TAKE_TAG) if active is not None else None
    if isinstance(tagged, str) and tagged != active.name and bpy.data.actions.get(tagged) is not None:
        return bpy.data.actions[tagged]
    return active


# ============================================================================= phase 1: prepare

def prepare(context, obj, backend_choice: str = "IN_PROCESS", options: BakeOptions | None = None) -> BakeJob:
    """Check the input and build the simulation request.  Reads only; BakeInputError on bad input.
    ``options`` (scripts, batch) override the armature's settings for this bake only."""
    t0 = time.perf_counter()
    scene = context.scene
    options = options or BakeOptions()
    if obj is None:
        raise BakeInputError("No active object: select the character's armature")
    if obj.type != "ARMATURE":
        raise BakeInputError(f"'{obj.name}' is a {obj.type.lower()}, not an armature: select the character's armature")
    checks.check_editable(obj)
    overrides = options.settings_overrides(obj.fatigue_settings)
    settings = SettingsView(obj.fatigue_settings, overrides)
    if settings.mode == "TORQUE" and options.engine is not None and backend.engine_name(options.engine) == "pybullet":
        raise BakeInputError("torque mode runs on MuJoCo only: leave the engine Automatic or choose MuJoCo")
    start, end = bake_range(scene, settings)
    if options.frame_start is not None or options.frame_end is not None:
        start = int(options.frame_start) if options.frame_start is not None else start
        end = int(options.frame_end) if options.frame_end is not None else end
        if end <= start:
            raise BakeInputError(f"frames {start}:{end} are empty: give an end frame after the start frame")
        where = RANGE_GIVEN
    elif settings.use_custom_range:
        if end <= start:
            raise BakeInputError(f"Custom frame range {start}-{end} is empty: set End after Start in the Fatigue "
                                 f"panel (Range & Output)")
        where = RANGE_CUSTOM
    else:
        where = RANGE_SCENE
    if options.action is not None:
        source = bpy.data.actions.get(options.action)
        if source is None:
            here = ", ".join(sorted(a.name for a in bpy.data.actions)[:8]) or "none"
            raise BakeInputError(f"no action named '{options.action}' in this file (actions here: {here}): "
                                 f"give one of them")
    else:
        source = source_action(obj, settings)
    if source is None:
        raise BakeInputError(f"Armature '{obj.name}' has no action: assign one in the Action Editor")
    take_name, name_note = resolve_take_name(obj, source, options.take_name)
    active = anim.active_action(obj)
    active_slot = getattr(obj.animation_data, "action_slot", None)
    takes = [t for t in (active, settings.baked_action)       # the pose they left is not the source's
             if t is not None and t.get(TAKE_TAG) == source.name]
    with anim.played(obj, source) as src, source_pose.played_on(obj, src.keyed, source_pose.kept(takes)):
        keyed = [fc for fc in settings_curves(src, active if active != source else None,
                                              active_slot.handle if active_slot is not None else None)
                 if fc.data_path[len("fatigue_settings."):] not in overrides]
        played_on = source_pose.unkeyed(obj, src.keyed)
        curves = src.curves                                 # the source's curves of this armature, read once
        checks.check_armature(obj, scene, (start, end), src, curves)
        checks.check_frames_keyed(obj, src, start, end, scene.render.fps / scene.render.fps_base, where, curves)
        too_many = source_frames_problem(start, end)       # a cycled action has no keys' end to stop at
        if too_many is not None:
            raise BakeInputError(f"{too_many[0].upper()}{too_many[1:]}: {where}")
        rest = rigmap.read_skeleton(obj)                    # the rig's rest pose, read once
        mapping = resolve_mapping(obj, settings, rest)
        frame, why = rigmap.body_pose(obj, mapping, src, rest)       # None: the rest pose is a human shape
        pose_notes = [rigmap.pose_note(obj.name, frame, why)] if frame is not None else []
        if rig_space.is_mirrored(obj.matrix_world):
            pose_notes.insert(0, rig_space.mirrored_note(obj.name))
        mapping, side_notes = checks.check_mapping_sense(obj, mapping, frame=frame,
                                                         frames=rigmap.action_frames(src))
        key_plan = rig_controls.plan_keys(obj, mapping)
        size = retarget.rig_size(obj, mapping, frame)     # the rig measured once: height and proportions
        height, size_notes = body_height(obj, settings, mapping, frame, size)
        mass = float(settings.mass)
        if mass_problem(mass) is not None:
            raise BakeInputError(f"Mass is {mass!r} kg: set {MASS_RANGE[0]:g} to {MASS_RANGE[1]:g} kg in the Fatigue panel")
        t1 = time.perf_counter()
        plan = body_plan(obj, settings, mapping, frame, size)
        from ..runtime.body.anthropometry import standing_pelvis_height

        pelvis = standing_pelvis_height(plan, height)
        read = retarget.read_action(obj, mapping, start, end, reference_frame=frame, action=src,
                                    proxy_height=height, curves=curves)       # the source action read once
        clip, info = retarget.convert(obj, read, height, pelvis)
        checks.check_moves(obj, src, mapping, clip, start, end, curves)
        clip, info, start, end = _settle_root_jumps(obj, read, src, clip, info, start, end, height, pelvis)
        t2 = time.perf_counter()
        n_sched = int(math.ceil(MAX_STRETCH * (end - start))) + int(math.ceil(info.fps)) + 2
        schedule = build_schedule(obj, settings, keyed, start, n_sched, info.fps)
        keys = tiredness_keys(settings, keyed, start, end, info.fps) if schedule is not None else None
    t3 = time.perf_counter()
    request = SimulationRequest(clip=clip, schedule=schedule, mode=settings.mode.lower(), height=height, mass=mass,
                                plan=plan, policy=policy_path(settings), effort_economy=float(settings.effort_economy),
                                breathing=bool(settings.breathing), kneeling=bool(settings.kneeling),
                                tiredness=keys)
    return BakeJob(obj_name=obj.name, source=source.name, source_keyed=src.keyed, mapping=mapping, frame_start=start, frame_end=end,
                   fps=info.fps, request=request, info=info,
                   warnings=([name_note] if name_note else []) + pose_notes + side_notes + size_notes + list(info.warnings)
                   + ([OVERRIDE_NOTE.format(obj.name)] if obj.override_library is not None else [])
                   + list(plan.notes if plan is not None else ()) + list(key_plan.warnings),
                   timings={"check": t1 - t0, "read": t2 - t1, "schedule": t3 - t2},
                   backend=backend_choice, settings_curves=[anim.snapshot_fcurve(fc) for fc in keyed],
                   take_name=take_name, take_note=name_note or "", keys=key_plan,
                   engine=backend.engine_name(options.engine) if options.engine is not None else None,
                   played_on=played_on)


def _settle_root_jumps(obj, read, source, clip, info, start: int, end: int, height: float, pelvis: float):
    """Skip calibration frames at either end (the frames ``read`` holds, narrowed), bake in place
    when the root channel is not a position, refuse a cut in the middle (see root_motion).
    Returns (clip, info, start, end)."""
    root = root_motion.plan(clip.root_pos, clip.fps, height)
    if root.kind == "ok":
        return clip, info, start, end
    if root.kind == "trim":
        new_start, new_end = start + root.first, start + root.last
        clip, info = retarget.convert(obj, retarget.trimmed(obj, read, root.first, root.last), height, pelvis)
        skipped = []
        if new_start > start:
            skipped.append(f"{start}-{new_start - 1}")
        if new_end < end:
            skipped.append(f"{new_end + 1}-{end}")
        info.warnings.insert(0, f"the root jumps away at frames {' and '.join(skipped)} (a calibration pose, not "
                                f"motion): baked frames {new_start}-{new_end}")
        return clip, info, new_start, new_end
    if root.kind == "in_place":
        clip = dataclasses.replace(clip, root_pos=root_motion.in_place(clip.root_pos, pelvis))
        info.warnings.insert(0, f"the root of '{source.name}' jumps on {len(root.jumps)} of {clip.frames - 1} frames "
                                f"(up to {root.metres:.3g} m at once): its channel is not a position, so the take is "
                                f"baked in place")
        return clip, info, start, end
    cut = root.jumps[0]
    raise BakeInputError(f"The root jumps {root.metres:.2f} m between frames {start + cut} and "
                         f"{start + cut + 1}: a cut, teleport or stepped key in '{source.name}', not "
                         f"motion; bake the frames on either side separately (Range & Output: custom "
                         f"range) or key it smoothly (Bezier interpolation)")


TAKE_TAG = "fatigued_take_of"             # custom properties on every written take: its source action
TAKE_ARMATURE = "fatigued_take_armature"  # ... and the armature it was baked for (both decide ownership)


def owns(action, obj, source) -> bool:
    """Whether ``action`` is the take this extension wrote for ``obj`` from ``source``: the only
    action a bake may replace (an action the user made or copied, a take of another armature
    sharing the source, or of another source, is never written into).  A take from before the
    armature tag is ``obj``'s when ``obj``, and no other object, names it as its last bake."""
    if action.get(TAKE_TAG) != source.name or action.library is not None:     # a linked take is never saved
        return False
    if action.get(TAKE_ARMATURE) is not None:
        return action.get(TAKE_ARMATURE) == obj.name
    claims = [o for o in bpy.data.objects
              if o.type == "ARMATURE" and getattr(o.fatigue_settings, "baked_action", None) == action]
    return claims == [obj]


def resolve_take_name(obj, source, wanted: str | None = None) -> tuple[str, str | None]:
    """The action a take of ``obj`` from ``source`` goes into, and a one-line note when that is not
    ``wanted`` (default ``<source>.fatigued``): a name held by anything but this armature's own
    take of this source gets the first free (or own) ``<name>.001``, ``.002``, ..."""
    base = wanted if wanted is not None else source.name + SUFFIX
    if not base.strip():
        raise BakeInputError("the take name is empty: give a name for the new action")
    if base == source.name:
        raise BakeInputError(f"the take cannot replace its source action '{base}': give another take name")
    held = bpy.data.actions.get(base)
    if held is None or owns(held, obj, source):
        return base, None
    stem = base[:59]
    pattern = re.compile(re.escape(stem) + r"\.\d{3}")
    own = sorted(a.name for a in bpy.data.actions if pattern.fullmatch(a.name) and owns(a, obj, source))
    name = own[0] if own else next(f"{stem}.{i:03d}" for i in range(1, 10000)
                                   if bpy.data.actions.get(f"{stem}.{i:03d}") is None)
    if held.library is not None:
        why = f"linked from '{held.library.name}' (a bake into it would not be saved)"
    elif held.get(TAKE_TAG) is None:
        why = "an action of yours, not a fatigued take"
    elif held.get(TAKE_TAG) != source.name:
        why = f"the take of another source ('{held.get(TAKE_TAG)}')"
    elif held.get(TAKE_ARMATURE) is not None:
        why = f"the take of armature '{held.get(TAKE_ARMATURE)}'"
    else:
        why = "an earlier take that more than one armature (or none) names as its last bake"
    return name, f"'{base}' is {why}: this take is '{name}' (rename or delete '{base}' to use its name)"


def body_height(obj, settings, mapping, frame: int | None = None, size=None) -> tuple[float, list]:
    """The simulated body's height (m) and what to tell the animator about it.  From the rig when
    it asks for that and the rig measures a human height in metres; a rig in other units (a BVH
    in centimetres or inches) is simulated at the panel's Height and says so: the retarget maps
    positions by the ratio, so the take stays in the rig's own units.  ``frame``: the animated
    frame the body is measured on (rigmap.body_pose), None for the rest pose; ``size``: its
    rig_size when measured already."""
    size = size if size is not None else retarget.rig_size(obj, mapping, frame)
    if settings.use_rig_height and size.in_metres:
        return float(size.stature), []
    height = float(settings.height)
    if height_problem(height) is not None:
        raise BakeInputError(f"Height is {height!r} m: set {HEIGHT_RANGE[0]:g} to {HEIGHT_RANGE[1]:g} m in the "
                             f"Fatigue panel")
    notes = [rig_space.units_note(obj.name, size.stature, height)] if settings.use_rig_height else []
    return height, notes


def policy_path(settings) -> str | None:
    """The shipped SRB policy's file, or the shipped residual on the rule's, when the settings ask
    for one (checked before anything runs)."""
    placement = getattr(settings, "foot_placement", "PACED")
    if placement not in ("POLICY", "PACED"):
        return None
    from ..runtime.srb import policy, residual

    model = policy.DEFAULT_MODEL if placement == "POLICY" else residual.DEFAULT_MODEL
    if not model.is_file() or not model.with_suffix(".json").is_file():
        raise BakeInputError(f"the shipped {'policy' if placement == 'POLICY' else 'residual'} {model.name} is "
                             f"missing: reinstall the extension, or set Foot placement to Rule in the Fatigue panel")
    return str(model)


def body_plan(obj, settings, mapping: dict, frame: int | None = None, size=None):
    """The proxy's proportions: measured on the rig's rest pose (or the animated ``frame`` the body
    is measured on; scale-free: lengths over the rig's height) with de Leva masses, or None for the
    default humanoid."""
    from ..runtime.body import anthropometry

    if settings.proportions != "RIG":
        return None
    size = size if size is not None else retarget.rig_size(obj, mapping, frame)
    return anthropometry.plan_from_lengths(retarget.rig_segment_lengths(obj, mapping, frame), size.stature,
                                           sex=settings.mass_distribution.lower())


def make_run(job: BakeJob, prefs=None, threaded: bool = True):
    """The backend run for ``job`` following the preferences (``prefs``: backend, engine,
    worker_watchdog; a script's or batch's ``engine`` option wins over the preference).  The
    engine is resolved here, before anything runs: a missing one is one line naming the fix."""
    engine = job.engine or (getattr(prefs, "engine", "AUTO") if prefs is not None else "AUTO")
    if job.request.mode == "torque":
        engine = "MUJOCO"           # torque mode samples in MuJoCo's batched rollouts, whatever SRB mode uses
    choice, name = backend.choose(getattr(prefs, "backend", "AUTO") if prefs is not None else "AUTO", engine)
    job.backend = choice
    job.request = dataclasses.replace(job.request, engine=name)
    if choice == "WORKER":
        return backend.WorkerRun(job.request, backend.worker_python(engine=name),
                                 watchdog_s=float(getattr(prefs, "worker_watchdog", backend.WATCHDOG_S)))
    return backend.InProcessRun(job.request, threaded=threaded)


# ============================================================================= phase 3: write

def joint_curves(take) -> dict:
    """Joint key -> (fatigue (T,), capacity (T,)): max MF / min RC over the joint's DoFs, in [0, 1]."""
    table = proxy.dof_table()
    out = {}
    MF = np.asarray(take.fatigue["MF"], dtype=np.float64)
    RC = np.asarray(take.fatigue["RC"], dtype=np.float64)
    for j in proxy.DEFAULT_JOINTS:
        cols = [d for d, (name, _, _) in enumerate(table) if name == j.name]
        out[j.name] = (np.clip(MF[:, cols].max(axis=1), 0.0, 1.0), np.clip(RC[:, cols].min(axis=1), 0.0, 1.0))
    return out


def _ensure_bone_props(obj, bones, undo):
    for name in bones:
        pb = obj.pose.bones[name]
        for prop, default, desc in (("fatigue", 0.0, "Fatigued share of this joint's muscles (0 fresh, 1 exhausted)"),
                                    ("capacity", 1.0, "Share of this joint's strength still available")):
            if prop not in pb.keys():
                pb[prop] = default
                undo.append(lambda pb=pb, prop=prop: pb.pop(prop, None))
            try:
                pb.id_properties_ui(prop).update(min=0.0, max=1.0, soft_min=0.0, soft_max=1.0, description=desc)
            except (TypeError, AttributeError):
                pass


def _ensure_breath_prop(obj, undo):
    """The armature's ``breath`` property the take's breathing is keyed on (0 breathed out, 1 the
    deepest breath in)."""
    if BREATH not in obj.keys():
        obj[BREATH] = 0.0
        undo.append(lambda: obj.pop(BREATH, None))
    try:
        obj.id_properties_ui(BREATH).update(min=0.0, max=1.0, soft_min=0.0, soft_max=1.0,
                                            description="The take's breathing: 0 breathed out, 1 the deepest breath in")
    except (TypeError, AttributeError):
        pass


def _keep_source_in_nla(obj, source, undo):
    """Keep the source action in the file and one click away: a muted NLA track holding it."""
    ad = obj.animation_data
    for track in ad.nla_tracks:
        if any(s.action == source for s in track.strips):
            return
    track = ad.nla_tracks.new()
    track.name = NLA_TRACK
    try:
        strip = track.strips.new(source.name, int(source.frame_range[0]), source)
        slot = anim.object_slot(source, obj)
        if slot is not None and hasattr(strip, "action_slot") and strip.action_slot != slot:
            strip.action_slot = slot
    except RuntimeError:
        ad.nla_tracks.remove(track)
        source.use_fake_user = True       # fallback: at least it survives saving
        return
    track.mute = True
    undo.append(lambda ad=ad, track=track: ad.nla_tracks.remove(track))


def write(context, job: BakeJob, take) -> dict:
    """Write the take onto the armature.  Returns the report (also stored on the object)."""
    t0 = time.perf_counter()
    obj = bpy.data.objects.get(job.obj_name)
    if obj is None or obj.type != "ARMATURE":
        raise BakeInputError(f"the armature '{job.obj_name}' is gone: nothing was written; bake again")
    source = bpy.data.actions.get(job.source)
    if source is None:
        raise BakeInputError(f"the source action '{job.source}' is gone: nothing was written; bake again")
    settings = obj.fatigue_settings
    name, note = resolve_take_name(obj, source, job.take_name or None)
    if note:                                   # an action took the name while the simulation ran
        job.take_note = note
        job.warnings.insert(0, note)
    existed = bpy.data.actions.get(name)
    curves = joint_curves(take)
    extra = []
    bones_with_curves = []
    overridden = obj.override_library is not None     # keeps no new custom property or mapping row (OVERRIDE_NOTE)
    write_curves = settings.write_curves and not overridden
    keys = job.keys if job.keys is not None else rig_controls.KeyPlan(keyed=dict(job.mapping))
    heat_groups = []                           # (vertex group, bone with the curves)
    if write_curves:
        for key, (fat, cap) in curves.items():
            bone = keys.curve_bone(key)
            if not bone or not job.mapping.get(key):
                continue
            esc = bpy.utils.escape_identifier(bone)
            extra.append((f'pose.bones["{esc}"]["fatigue"]', 0, bone, fat))
            extra.append((f'pose.bones["{esc}"]["capacity"]', 0, bone, cap))
            bones_with_curves.append(bone)
            heat_groups.append(bone if bone == job.mapping[key] else (job.mapping[key], bone))
    breathes = take.breath is not None and not overridden
    if breathes:
        extra.append((f'["{BREATH}"]', 0, "Fatigue", np.asarray(take.breath, dtype=np.float64)))
    source_frames = job.frame_start + np.asarray(take.reference_time, dtype=np.float64) * job.fps
    undo = []
    meshes = []
    prev_action = anim.active_action(obj)
    prev_slot = getattr(obj.animation_data, "action_slot", None)
    try:
        _keep_source_in_nla(obj, source, undo)
        _ensure_bone_props(obj, bones_with_curves, undo)
        if breathes:
            _ensure_breath_prop(obj, undo)
        with source_pose.played_on(obj, job.source_keyed, job.played_on):     # what the bones it leaves unkeyed hold
            if keys.rigify is not None:
                action, job.controls = rig_controls.write_controls(obj, job.mapping, keys.rigify, take.clip,
                                                                   job.info, name, source_frames, extra_channels=extra,
                                                                   skip_prefixes=("fatigue_settings.",))
            else:
                action = retarget.clip_to_action(obj, keys.keyed, take.clip, job.info, name, source_frames,
                                                 extra_channels=extra, skip_prefixes=("fatigue_settings.",))
        for snap in job.settings_curves:       # the keyed fitness, as keyed, on the take's timeline
            anim.paste_fcurve(snap, action, obj)
        action[TAKE_TAG] = source.name
        action[TAKE_ARMATURE] = obj.name
        source_pose.keep(action, job.played_on)
        if existed is None:
            undo.append(lambda a=action: bpy.data.actions.remove(a))
        anim.assign_action(obj, action)
        if write_curves and settings.heat_modifier:
            meshes = heat.apply(obj, heat_groups, heat.skinned_meshes(obj), settings.heat_material, undo)
        if not settings_mapping(settings) and not overridden:
            store_mapping(settings, job.mapping)
        settings.source_action = source
        settings.baked_action = action
    except Exception:
        for fn in reversed(undo):
            try:
                fn()
            except Exception:
                pass
        anim.assign_action(obj, prev_action, prev_slot)
        raise
    t1 = time.perf_counter()
    job.timings["write"] = t1 - t0
    report = make_report(job, take, action, meshes)
    settings.last_report = json.dumps(report)
    return report


# ============================================================================= all three, synchronously

def bake(context, obj, prefs=None, progress=None, cancel=None, options: BakeOptions | None = None) -> dict:
    """Prepare, simulate (in this thread, or waiting on the worker) and write.  Returns the report;
    raises BakeInputError (incl. BakeCancelled, BackendError) with nothing written."""
    job = prepare(context, obj, options=options)
    run = make_run(job, prefs, threaded=False)
    t0 = time.perf_counter()
    take = backend.run_sync(run, progress, cancel)
    job.timings["simulate"] = time.perf_counter() - t0
    return write(context, job, take)


def background_progress(prefix: str = "Fatigue bake"):
    """A progress callback printing one line per 10 %."""
    last = [-1]

    def progress(fraction: float) -> None:
        step = int(fraction * 10 + 1e-9)
        if step > last[0]:
            last[0] = step
            print(f"{prefix}: {step * 10}%", flush=True)
    return progress
