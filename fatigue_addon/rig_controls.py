"""Which bones a take is keyed on: never a bone whose result a constraint overrides.

A mapped bone posed by a constraint (a Copy Transforms, a Child Of, the chain of an IK ...) would
ignore keys written on it: what plays would be whatever drives the constraint, not the
simulation.  ``plan_keys`` decides, before anything is simulated:

* no mapped bone is driven: the take keys the mapped bones (retarget.clip_to_action);
* a rig Rigify generated (rigify.is_generated): its DEF- bones are read (the pose the animator
  sees) and the take is keyed on the controls an animator animates with (``torso``, ``hips``,
  ``chest``, ``neck``, ``head`` and the FK controls, each limb's IK/FK switch keyed to FK over the
  take, and the chest's tweak, whose place the spine's bend decides): ``write_controls`` poses the
  controls frame by frame on the evaluated rig so that the DEF bones land where the simulation
  put them;
* another rig whose mapped bone copies, at full influence in world space, the transform of an
  unconstrained bone with the same rest pose: the take keys that bone, with a one-line warning;
* anything else is refused in one line naming the fix (map the bone that drives it, or mute the
  constraint).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import bpy
import numpy as np
from mathutils import Matrix

from . import anim, retarget, rigmap
from .rig import rigify
from .failure import BakeInputError

OVERRIDING = frozenset({"COPY_TRANSFORMS", "COPY_ROTATION", "CHILD_OF", "ARMATURE", "DAMPED_TRACK", "TRACK_TO",
                        "LOCKED_TRACK", "STRETCH_TO", "TRANSFORM", "ACTION", "PIVOT", "FOLLOW_PATH", "CLAMP_TO"})
CHAINS = frozenset({"IK", "SPLINE_IK"})
COPIES = frozenset({"COPY_TRANSFORMS", "COPY_ROTATION"})
REST_MATCH_DEG = 1.0            # a copied bone keyed in place of the mapped one: rest poses this close
_DRIVER_PROP = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\["([^"]+)"\]$')
_TRANSFORM_PROPS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle")


def _active(con) -> bool:
    return (not con.mute and getattr(con, "enabled", True) and getattr(con, "is_valid", True)
            and con.influence > 0.0)


def driving_constraint(obj, bone: str):
    """(constraint, the bone that holds it) of the first active constraint that overrides
    ``bone``'s pose: one of its own (OVERRIDING), or an IK / Spline IK whose chain holds it; None
    when keys on ``bone`` play as keyed (limits and the like only clamp them)."""
    pb = obj.pose.bones[bone]
    for con in pb.constraints:
        if con.type in OVERRIDING and _active(con):
            return con, bone
    for other in obj.pose.bones:
        for con in other.constraints:
            if con.type not in CHAINS or not _active(con):
                continue
            chain = [other.name] + [p.name for p in other.parent_recursive]
            if con.type == "IK" and not con.use_tail:
                chain = chain[1:]
            if con.chain_count > 0:
                chain = chain[:con.chain_count]
            if bone in chain:
                return con, other.name
    return None


def _constraint_label(con) -> str:
    kind = {"IK": "IK", "SPLINE_IK": "Spline IK"}.get(con.type, con.type.replace("_", " ").title())
    return f"{kind} constraint '{con.name}'"


# ============================================================================= the plan

@dataclass
class RigifyControls:
    """The controls a take is keyed on in a rig Rigify generated."""
    torso: str
    control: dict                # key -> control (hips, chest, neck, head, FK limb controls)
    switches: list               # (bone, property): each limb's IK/FK switch, keyed to FK
    tweaks: dict = field(default_factory=dict)   # key -> the tweak its DEF bone copies, moved to place its head

    @property
    def bones(self) -> list:
        return [self.torso] + list(self.control.values()) + list(self.tweaks.values())


@dataclass
class KeyPlan:
    """What a take keys: ``keyed`` key -> the bone keyed for that joint (the mapped bone, or the
    bone a constraint copies it from), or ``rigify`` controls; ``warnings`` one line each."""
    keyed: dict
    rigify: RigifyControls | None = None
    warnings: list = field(default_factory=list)

    def curve_bone(self, key: str) -> str | None:
        """The bone a joint's fatigue curves go on: one the animator sees (a control, else the
        keyed bone)."""
        if self.rigify is not None:
            return self.rigify.control.get(key) or (self.rigify.torso if key == "pelvis" else None)
        return self.keyed.get(key)


_LEVELS = (("pelvis",), ("chest",), ("neck", "right_hip", "left_hip", "right_shoulder", "left_shoulder"),
           ("head", "right_knee", "left_knee", "right_elbow", "left_elbow"),
           ("right_ankle", "left_ankle", "right_hand", "left_hand"))


def _fk_control(obj, org: str) -> tuple[str | None, tuple | None]:
    """The FK control a limb's ORG- bone copies (its Copy Transforms with no driven influence)
    and the IK/FK switch (bone, property) driving the other one's influence."""
    pb = obj.pose.bones.get(org)
    if pb is None:
        return None, None
    drivers = {}
    if obj.animation_data is not None:
        for fc in obj.animation_data.drivers:
            drivers[fc.data_path] = fc
    fk, switch = None, None
    for con in pb.constraints:
        if con.type != "COPY_TRANSFORMS" or not con.subtarget:
            continue
        path = f'pose.bones["{bpy.utils.escape_identifier(org)}"].constraints["{bpy.utils.escape_identifier(con.name)}"].influence'
        fc = drivers.get(path)
        if fc is None:
            fk = fk or con.subtarget
            continue
        for var in fc.driver.variables:
            m = _DRIVER_PROP.match(var.targets[0].data_path or "")
            if m:
                switch = (m.group(1).replace('\\"', '"').replace("\\\\", "\\"), m.group(2))
    return fk, switch


def rigify_controls(obj, mapping: dict) -> RigifyControls:
    """The controls of a generated Rigify rig that pose the mapped DEF bones (found from the ORG-
    bones' constraints and drivers, so they follow Rigify's naming of the running version);
    refused in one line when one is missing or is itself driven by a constraint."""
    fix = "regenerate the rig with Rigify, or map bones that no constraint drives in the Rig Mapping list"
    control, switches = {}, []
    for key, name in rigify.TRUNK_CONTROLS.items():
        if key == "head" and not mapping.get("head"):
            continue
        control[key] = name
    for side in ("right", "left"):
        for joint, limb in rigify.LIMB_BONES.items():
            key = f"{side}_{joint}"
            if not mapping.get(key):
                continue
            fk, switch = _fk_control(obj, "ORG-" + rigify.twin(mapping[key]))
            if fk is None:
                raise BakeInputError(f"'{obj.name}' is a Rigify rig, but no FK control poses "
                                     f"'ORG-{rigify.twin(mapping[key])}' ({rigmap.KEY_LABELS[key]}): {fix}")
            control[key] = fk
            if switch is not None and switch not in switches:
                switches.append(switch)
    plan = RigifyControls(torso=rigify.TORSO, control=control, switches=switches,
                          tweaks=_tweaks(obj, mapping, control))
    for bone in plan.bones:
        if bone not in obj.pose.bones:
            raise BakeInputError(f"'{obj.name}' is a Rigify rig without its '{bone}' control: {fix}")
        driven = driving_constraint(obj, bone)
        if driven is not None:
            raise BakeInputError(f"'{obj.name}': the Rigify control '{bone}' is posed by the "
                                 f"{_constraint_label(driven[0])} on '{driven[1]}', so keys on it would not play: "
                                 f"mute the constraint, or {fix}")
    for bone, prop in switches:
        if prop not in obj.pose.bones[bone].keys():
            raise BakeInputError(f"'{obj.name}': the IK/FK switch '{prop}' of '{bone}' is missing: {fix}")
    return plan


def _tweaks(obj, mapping: dict, control: dict) -> dict:
    """key -> the tweak control the chest's DEF bone copies (Rigify's ``tweak_spine.003``): the
    spine between hips and chest bends with both, so the chest's head lands where the simulation
    put it only when its tweak moves it there."""
    bone = mapping.get("chest")
    if not bone or bone not in obj.pose.bones:
        return {}
    for con in obj.pose.bones[bone].constraints:
        if con.type == "COPY_TRANSFORMS" and _active(con) and con.target == obj and con.subtarget:
            sub = con.subtarget
            if (sub in obj.pose.bones and not sub.startswith(("DEF-", "ORG-", "MCH-")) and sub not in control.values()
                    and driving_constraint(obj, sub) is None):
                return {"chest": sub}
            break
    return {}


def _copied_bone(obj, bone: str, con, key: str) -> str | None:
    """The bone ``con`` (on ``bone``) copies, where keys on it play on ``bone`` exactly: a full,
    world-space Copy Transforms (or, but for the pelvis, Copy Rotation) from a bone of this
    armature that nothing drives, with the same rest pose."""
    if con.type not in COPIES or con.target != obj or not con.subtarget or con.influence < 0.999:
        return None
    if key == "pelvis" and con.type != "COPY_TRANSFORMS":
        return None
    if con.owner_space != "WORLD" or con.target_space != "WORLD" or getattr(con, "mix_mode", "REPLACE") != "REPLACE":
        return None
    sub = con.subtarget
    if sub not in obj.data.bones or driving_constraint(obj, sub) is not None:
        return None
    others = [c for c in obj.pose.bones[bone].constraints if c != con and c.type in OVERRIDING and _active(c)]
    if others:
        return None
    a, b = np.array(obj.data.bones[bone].matrix_local), np.array(obj.data.bones[sub].matrix_local)
    cos = (np.trace(a[:3, :3].T @ b[:3, :3]) - 1.0) / 2.0
    if cos < math.cos(math.radians(REST_MATCH_DEG)):
        return None
    if key == "pelvis" and np.linalg.norm(a[:3, 3] - b[:3, 3]) > 1e-3 * max(obj.data.bones[bone].length, 1e-6):
        return None
    return sub


def plan_keys(obj, mapping: dict) -> KeyPlan:
    """Which bones the take of ``obj`` keys (see the module's docstring); BakeInputError (one line
    naming the fix) where a mapped bone is driven by a constraint and nothing can be keyed for it."""
    driven = {}
    for key in rigmap.HUMANOID_KEYS:
        bone = mapping.get(key)
        if bone and bone in obj.pose.bones:
            found = driving_constraint(obj, bone)
            if found is not None:
                driven[key] = found
    if not driven:
        return KeyPlan(keyed=dict(mapping))
    if rigify.is_generated(obj):
        return KeyPlan(keyed=dict(mapping), rigify=rigify_controls(obj, mapping))
    keyed, swapped = dict(mapping), []
    for key, (con, owner) in driven.items():
        bone = mapping[key]
        sub = _copied_bone(obj, bone, con, key) if owner == bone else None
        if sub is None or sub in mapping.values():
            raise BakeInputError(f"Rig mapping: {rigmap.KEY_LABELS[key]} '{bone}' is posed by the "
                                 f"{_constraint_label(con)} on '{owner}', so keys on it would not play: map the bone "
                                 f"that drives it in the Rig Mapping list, or mute the constraint")
        keyed[key] = sub
        swapped.append(f"'{bone}' from '{sub}'")
    note = (f"{len(swapped)} mapped bone{'s' if len(swapped) > 1 else ''} of '{obj.name}' copy the pose of "
            f"other bones (Copy Transforms / Rotation): the take keys the bones they copy ({', '.join(swapped)})")
    return KeyPlan(keyed=keyed, warnings=[note])


# ============================================================================= writing on Rigify's controls

@dataclass
class ControlsResult:
    """What ``write_controls`` keyed and how close the played DEF bones came to the simulation."""
    controls: list
    switches: list
    error_m: float               # the largest distance of a mapped DEF bone's head from where it was simulated
    error_p95_m: float


def _wanted(obj, mapping: dict, take, O: np.ndarray, source_rel: dict) -> dict:
    """key -> (T, 4, 4) armature-space matrix each mapped DEF bone should have: the take's world
    rotations, heads chained from the simulated pelvis along the rig's rest segments (the
    skeleton the simulation moved); head and hands keep their pose relative to neck and forearm
    in the source (``source_rel``: key -> (T, 4, 4))."""
    O_inv = np.linalg.inv(O)
    O_rot = retarget.polar(O[:3, :3])
    rest = {k: np.array(obj.data.bones[mapping[k]].matrix_local) for k in mapping}
    T = take.frames
    out = {}
    for key in ("pelvis",) + retarget.CHAIN_ORDER:
        m = np.zeros((T, 4, 4))
        m[:, 3, 3] = 1.0
        m[:, :3, :3] = O_rot.T @ take.rotations[key]
        if key == "pelvis":
            m[:, :3, 3] = take.pelvis @ O_inv[:3, :3].T + O_inv[:3, 3]
        else:
            parent = out[rigmap.KEY_PARENT[key]]
            pr = rest[rigmap.KEY_PARENT[key]]
            m[:, :3, 3] = parent[:, :3, 3] + (parent[:, :3, :3] @ pr[:3, :3].T) @ (rest[key][:3, 3] - pr[:3, 3])
        out[key] = m
    for key, rel in source_rel.items():
        out[key] = out[_RELATIVE_TO[key]] @ rel
    return out


_RELATIVE_TO = {"head": "neck", "right_hand": "right_elbow", "left_hand": "left_elbow"}


def _source_relative(obj, mapping: dict, keys, source, src_frames: np.ndarray) -> dict:
    """key -> (T, 4, 4) pose of head / hand relative to neck / forearm in the source, evaluated at
    each source frame (the source assigned meanwhile)."""
    if not keys:
        return {}
    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    ad = obj.animation_data
    prev, prev_slot = ad.action, getattr(ad, "action_slot", None)
    out = {k: np.empty((len(src_frames), 4, 4)) for k in keys}
    try:
        anim.assign_action(obj, source)
        for i, f in enumerate(src_frames):
            fi = int(math.floor(f))
            scene.frame_set(fi, subframe=float(f - fi))
            for k in keys:
                parent = np.array(obj.pose.bones[mapping[_RELATIVE_TO[k]]].matrix)
                out[k][i] = np.linalg.inv(parent) @ np.array(obj.pose.bones[mapping[k]].matrix)
    finally:
        anim.assign_action(obj, prev, prev_slot)
        scene.frame_set(keep[0], subframe=keep[1])
    return out


def _solve(obj, mapping: dict, plan: RigifyControls, wanted: dict, frames: np.ndarray) -> tuple[dict, np.ndarray]:
    """Pose the controls frame by frame so that every DEF bone takes its wanted matrix: each
    control gets the wanted matrix of the DEF bone it moves, carried by their rest poses, level by
    level (a control's parent is posed by the controls before it), then once more from the error
    left.  Returns control -> (T, channels) local values: location, then rotation."""
    scene = bpy.context.scene
    vl = bpy.context.view_layer
    pbs = obj.pose.bones
    rest = lambda name: np.array(obj.data.bones[name].matrix_local)          # noqa: E731
    movers = [(plan.torso, "pelvis")] + [(c, k) for k, c in plan.control.items()]
    carry = {c: np.linalg.inv(rest(mapping[k])) @ rest(c) for c, k in movers}
    levels = [[(plan.torso, "pelvis")]] + [[(plan.control[k], k) for k in level if k in plan.control]
                                           for level in _LEVELS]
    values = {c: [] for c in [c for c, _ in movers] + list(plan.tweaks.values())}
    for t, frame in enumerate(frames):
        scene.frame_set(int(frame))
        for tw in plan.tweaks.values():       # each frame's tweak from its rest place (its scale as keyed)
            pbs[tw].location = (0.0, 0.0, 0.0)
            pbs[tw].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
            pbs[tw].rotation_euler = (0.0, 0.0, 0.0)
            pbs[tw].rotation_axis_angle = (0.0, 0.0, 1.0, 0.0)
        fix = {}
        for attempt in range(2):
            for level in levels:
                for c, k in level:
                    want = wanted[k][t] @ carry[c]
                    if c in fix:
                        want = fix[c] @ want
                    scale = tuple(pbs[c].scale)
                    pbs[c].matrix = Matrix(want.tolist())
                    pbs[c].scale = scale
                vl.update()
                moved = [(k, tw) for k, tw in plan.tweaks.items() if any(k == lk for _, lk in level)]
                for k, tw in moved:       # the tweak carries its DEF bone's head onto the simulated one
                    m = np.array(pbs[tw].matrix)
                    m[:3, 3] += wanted[k][t][:3, 3] - np.array(pbs[mapping[k]].head)
                    pbs[tw].matrix = Matrix(m.tolist())
                if moved:
                    vl.update()
            if attempt == 0:
                for c, k in movers:
                    if c == plan.torso:
                        continue
                    got = np.array(pbs[mapping[k]].matrix)
                    err = wanted[k][t] @ np.linalg.inv(got)
                    if k != "pelvis":              # limbs and chest turn about their own head
                        err[:3, 3] = wanted[k][t][:3, 3] - err[:3, :3] @ wanted[k][t][:3, 3]
                    fix[c] = err
                fix[plan.torso] = fix.get(plan.control.get("pelvis"), np.eye(4))
        for c in values:
            pb = pbs[c]
            if pb.rotation_mode == "QUATERNION":
                rot = tuple(pb.rotation_quaternion)
            elif pb.rotation_mode == "AXIS_ANGLE":
                rot = tuple(pb.rotation_axis_angle)
            else:
                rot = tuple(pb.rotation_euler)
            values[c].append(tuple(pb.location) + rot)
    return {c: np.array(v) for c, v in values.items()}


def _played_error(obj, mapping: dict, wanted: dict, frames: np.ndarray) -> np.ndarray:
    """(T, keys) distance of every mapped DEF bone's head, played from the assigned take, from
    where the simulation put it."""
    scene = bpy.context.scene
    keys = [k for k in wanted if mapping.get(k)]
    errors = np.zeros((len(frames), len(keys)))
    for t, frame in enumerate(frames):
        scene.frame_set(int(frame))
        for i, k in enumerate(keys):
            errors[t, i] = np.linalg.norm(np.array(obj.pose.bones[mapping[k]].head) - wanted[k][t][:3, 3])
    return errors


def _control_channels(obj, values: dict) -> list:
    rows = []
    for name, v in values.items():
        pb = obj.pose.bones[name]
        esc = bpy.utils.escape_identifier(name)
        mode = pb.rotation_mode
        rot = v[:, 3:]
        if mode == "QUATERNION":
            prop = "rotation_quaternion"
            rot = rot.copy()
            for t in range(1, len(rot)):             # the shorter way between keys
                if np.dot(rot[t], rot[t - 1]) < 0:
                    rot[t] = -rot[t]
        else:
            prop = "rotation_axis_angle" if mode == "AXIS_ANGLE" else "rotation_euler"
        channels = [("location", i, v[:, i]) for i in range(3)] if not pb.bone.use_connect else []
        channels += [(prop, i, rot[:, i]) for i in range(rot.shape[1])]
        rows += [(f'pose.bones["{esc}"].{p}', i, name, vals) for p, i, vals in channels]
    return rows


def write_controls(obj, mapping: dict, plan: RigifyControls, clip, info, action_name: str, source_frames=None,
                   extra_channels=(), skip_prefixes=()) -> tuple:
    """Write ``clip`` as the NEW action ``action_name`` keyed on a generated Rigify rig's controls
    (the take's counterpart of retarget.clip_to_action): each IK/FK switch keyed to FK, the
    controls posed per frame on the evaluated rig so that the DEF bones play the simulation, every
    other source channel copied.  The action is not left assigned.  Returns (action,
    ControlsResult)."""
    take = retarget.take_targets(clip, info, action_name, source_frames)
    source = bpy.data.actions[info.action]
    O = info.object_matrix if info.object_matrix is not None else np.array(obj.matrix_world)
    rel_keys = [k for k in _RELATIVE_TO if mapping.get(k) and k in plan.control]
    wanted = _wanted(obj, mapping, take, O, _source_relative(obj, mapping, rel_keys, source, take.source_frames))
    keyed = set(plan.bones)
    switch_paths = {f'pose.bones["{bpy.utils.escape_identifier(b)}"]["{p}"]' for b, p in plan.switches}
    T = take.frames
    kept = [row for row in retarget.kept_channels(take.samples, lambda b, p: b in keyed and p in _TRANSFORM_PROPS,
                                                  skip_prefixes) if row[0] not in switch_paths]
    switches = [(f'pose.bones["{bpy.utils.escape_identifier(b)}"]["{p}"]', 0, b, np.ones(T)) for b, p in plan.switches]
    base = list(extra_channels) + switches + kept
    action = retarget.write_action(obj, action_name, take.out_frames, base)
    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    ad = obj.animation_data
    prev, prev_slot = ad.action, getattr(ad, "action_slot", None)
    try:
        anim.assign_action(obj, action)
        values = _solve(obj, mapping, plan, wanted, take.out_frames)
        action = retarget.write_action(obj, action_name, take.out_frames,
                                       list(extra_channels) + switches + _control_channels(obj, values) + kept)
        errors = _played_error(obj, mapping, wanted, take.out_frames)
    finally:
        anim.assign_action(obj, prev, prev_slot)
        scene.frame_set(keep[0], subframe=keep[1])
    result = ControlsResult(controls=plan.bones, switches=[f"{b}[{p}]" for b, p in plan.switches],
                            error_m=float(errors.max()) if errors.size else 0.0,
                            error_p95_m=float(np.percentile(errors, 95)) if errors.size else 0.0)
    return action, result
