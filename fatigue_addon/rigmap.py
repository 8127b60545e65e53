"""Humanoid bone auto-detection: which bone of an armature drives which proxy joint.

Keys (``HUMANOID_KEYS``, all required): ``pelvis`` (root/hips bone, carries the root
translation), ``chest``, ``neck``, and per side ``*_hip`` (thigh), ``*_knee`` (shin),
``*_ankle`` (foot), ``*_shoulder`` (upper arm), ``*_elbow`` (forearm).  ``OPTIONAL_KEYS``
(``head``, hands, toes) only help the retarget find segment directions in the rest pose.

This module reads the rig from Blender (``read_skeleton``, ``read_pose``) and runs the detection
of the bpy-free ``rig/`` package on it (rig/names.py and rig/by_names.py, rig/by_geometry.py,
rig/shape.py; presets in rig/presets.py).  Detection, in order:

1. Names.  Every bone name is normalised: the namespace is dropped (``mixamorig:``, ``rig:``,
   ``Armature|``), known prefixes are stripped (``DEF-``, ``ORG-``, ``Bip01 ``, ``CC_Base_``,
   ``ValveBiped.Bip01_``, ``Character1_``...), the side is split off (``.L``, ``_l``, ``Left``,
   ``L_``, ``Bip01 L Thigh``, Daz ``lThighBend``, Rigify ``thigh.L.001``), and the rest,
   lower-cased without separators, is looked up in alias patterns (``_ALIASES``).  ``MCH-``
   (Rigify mechanism) bones are never used; plain names beat ``DEF-``, which beats ``ORG-``.
   Limbs are resolved as chains: the knee must descend from the hip, the ankle from the knee.
2. Hierarchy.  ``pelvis`` is the root-most pelvis-named ancestor of both thighs, else their
   lowest common ancestor (Rigify's ``spine``).  ``chest`` is the lowest common ancestor of the
   two upper arms (the bone the shoulders hang from: Mixamo ``Spine2``, Rigify ``spine.003``,
   Unreal ``spine_03``); when that is a neck (3ds Max Biped hangs its clavicles from
   ``Bip01 Neck``) it walks up to the first spine bone.  ``neck`` is the neck-named bone
   closest below the chest, else the head, else the chest's child that points up (Rigify
   ``spine.004``).
3. Geometry, for whatever names did not find: the rest pose is read in world space; limbs
   reaching the floor are legs, the two of them meet at the pelvis, the spine rises from it,
   and the bone where two long chains go sideways (along the line through the hips) is the
   chest.  Whatever the numbering of the names, an arm's upper arm and forearm are its first two
   long bones past a clavicle (a long bone starting within the hips' half-width of the middle);
   an arm ending at the wrist or a spine ending at the neck is a shorter chain.  Left is where
   the toes point from, else +X of the armature (Blender's convention for ``.L`` bones).
4. The animated pose, where the rest pose is no humanoid (a BVH whose offsets all lie along the
   parent's X: its rest is a horizontal line of bones, every animated frame an upright person):
   the same detection on frames spread over the assigned action, and what most of them agree on
   is the mapping.  ``body_pose`` then picks the frame the body is measured on (sizes, up,
   facing, segment directions: rest_geometry and the retarget read it instead of the rest pose).

Multi-bone spines: the proxy has one chest joint for the whole trunk.  ``chest`` is the upper-most
spine bone below the neck; the spine bones between pelvis and chest are not mapped, keep their
own animation, and the chest bone's WORLD orientation is what the proxy follows (and what the
bake writes back), so a 3-, 5- or 6-bone spine retargets the same way.

A rig with more than two limbs reaching the floor, or whose neck is not above its pelvis, is not
a humanoid and is rejected with a ``RigMappingError`` (one line, naming the fix).  Mapping presets
are JSON (``save_mapping`` / ``load_mapping``); ``rig_presets/`` ships one per common family.
"""
from __future__ import annotations

import math

import bpy
import numpy as np

from . import anim
from .failure import RigMappingError
from .rig import rigify
from .rig.by_geometry import by_geometry
from .rig.by_names import by_names
from .rig.keys import (ALL_KEYS, FIX_HINT, HUMANOID_KEYS, KEY_LABELS, KEY_PARENT, OPTIONAL_KEYS,  # noqa: F401
                       Mapping)
from .rig.names import parse_name
from .rig.presets import PRESET_DIR, load_mapping, save_mapping, shipped_presets  # noqa: F401
from .rig.shape import pose_score, shape_problems
from .rig.skeleton import Bone, Skeleton, depth_of
from .rig.space import object_matrix, rotation_onto_z


# ============================================================================= the rig read from Blender

def read_skeleton(obj, posed: bool = False, turn=None) -> Skeleton:
    """``obj``'s hierarchy and world geometry (read once): its rest pose, or with ``posed`` the pose
    it holds at the current frame, optionally turned by ``turn`` (3x3 rows)."""
    mw = type(obj.matrix_world)(object_matrix(obj.matrix_world).tolist())   # a mirror undone
    parents = {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones}
    bones: dict[str, Bone] = {}
    for b in obj.data.bones:
        pb = obj.pose.bones[b.name] if posed else None
        head_arm = pb.head if posed else b.head_local
        tail_arm = pb.tail if posed else b.tail_local
        head = tuple(mw @ head_arm)
        tail = tuple(mw @ tail_arm)
        if turn is not None:            # read the rig as if ``turn`` stood it up
            head = tuple(sum(turn[i][k] * head[k] for k in range(3)) for i in range(3))
            tail = tuple(sum(turn[i][k] * tail[k] for k in range(3)) for i in range(3))
        length = sum((a - c) ** 2 for a, c in zip(head, tail)) ** 0.5
        bones[b.name] = Bone(b.name, parents[b.name], [c.name for c in b.children], head, tail,
                             tuple(head_arm), depth_of(parents, b.name), length)
    return Skeleton(obj.name, bones)


def _by_geometry_any_way_up(obj, geo: dict, reason: str) -> tuple[dict, str | None]:
    """Geometry for a rig that does not stand on world Z: its rest pose lying down or on its head
    (the animation stands it up), or rest and motion both along another axis (a file imported
    with another up axis).  The current pose, then the rest pose, are read with each world axis
    as up; the first reading that finds a whole humanoid wins, else the one that found most.  (A
    reading with the wrong up also tells left from right wrongly, so only whole ones count.)"""
    axes = [np.array(a, dtype=float) for a in ((0, 0, 1), (0, 1, 0), (0, -1, 0), (1, 0, 0), (-1, 0, 0), (0, 0, -1))]
    for posed in (True, False):
        for axis in axes:
            if not posed and axis[2] == 1.0:
                continue                    # the plain rest pose: already read
            found, why = by_geometry(read_skeleton(obj, posed=posed, turn=rotation_onto_z(axis).tolist()))
            if why is None and all(k in found for k in HUMANOID_KEYS):
                return found, None
            if len(found) > len(geo):
                geo, reason = found, why
    return geo, reason



# ============================================================================= public API

_GROUPS = (
    ("pelvis", "chest", "neck"),
    ("right_hip", "right_knee", "right_ankle"),
    ("left_hip", "left_knee", "left_ankle"),
    ("right_shoulder", "right_elbow"),
    ("left_shoulder", "left_elbow"),
)
_GROUP_EXTRAS = {"right_hip": ("right_toe",), "left_hip": ("left_toe",),
                 "right_shoulder": ("right_hand",), "left_shoulder": ("left_hand",), "pelvis": ("head",)}


def detect_mapping(obj, strict: bool = True, rig: Skeleton | None = None) -> Mapping:
    """Map ``obj``'s bones to the humanoid keys (names, then hierarchy, then geometry).

    The rest pose is read first.  Where it does not give a humanoid (a BVH whose rest is a line of
    bones, every animated frame an upright person), the same detection runs on frames of the
    assigned action (``body_pose``), and what most of them agree on is the mapping.

    With ``strict`` (default) raise ``RigMappingError`` unless every required key is mapped and
    the rig looks humanoid; otherwise return what was found with ``problems`` filled in.
    ``rig``: the rest pose read already (read_skeleton).
    """
    if obj is None or getattr(obj, "type", None) != "ARMATURE":
        raise RigMappingError("No armature: select the character's armature")
    if len(obj.data.bones) == 0:
        raise RigMappingError(f"Armature '{obj.name}' has no bones: add a skeleton or pick another armature")
    if rigify.is_generated(obj):
        mapping, error = _generated_rigify(obj, rig)
    else:
        mapping, error = _detect(obj, rig if rig is not None else read_skeleton(obj))
    if error is not None:
        posed = _detect_posed(obj)
        if posed is not None:
            return posed
        if strict:
            raise RigMappingError(error)
    return mapping


def _generated_rigify(obj, rig: Skeleton | None = None) -> tuple[Mapping, str | None]:
    """A rig Rigify generated: its DEF- chain (what the animator sees; the take is keyed on its
    controls: rig_controls), checked like any mapping."""
    bones = rigify.deform_mapping(obj)
    mapping = Mapping(bones=bones, sources={k: "name" for k in bones}, armature=obj.name)
    problems = validate_mapping(obj, mapping, rig=rig)
    mapping.problems.extend(problems)
    if problems:
        return mapping, f"'{obj.name}' (a Rigify rig): {problems[0]}: {FIX_HINT}"
    return mapping, None


def _detect(obj, rig: Skeleton, any_way_up: bool = True) -> tuple[Mapping, str | None]:
    """The mapping read on ``rig`` (the rest pose, or a posed reading) and the one line that
    refuses it (None when it is a complete humanoid)."""
    bones, notes = by_names(rig)
    sources = {k: "name" for k in bones}
    for k, classes in (("pelvis", ("pelvis",)), ("chest", ("spine",)), ("neck", ("neck", "head"))):
        if k in bones and parse_name(bones[k])[0] not in classes:
            sources[k] = "hierarchy"
    problems = list(notes)
    reason = None
    if any(k not in bones for k in HUMANOID_KEYS):
        geo, reason = by_geometry(rig)
        if reason is not None and any_way_up:
            geo, reason = _by_geometry_any_way_up(obj, geo, reason)
        used = set(bones.values())
        for group in _GROUPS:
            if all(k in bones for k in group):
                continue
            if all(k in geo for k in group) and not (set(geo[k] for k in group) & used):
                for k in group + _GROUP_EXTRAS.get(group[0], ()):
                    if k in geo:
                        bones[k] = geo[k]
                        sources[k] = "geometry"
                        used.add(geo[k])
    mapping = Mapping(bones=bones, problems=problems, sources=sources, armature=obj.name)
    missing = mapping.missing()
    if missing:
        if reason is None:
            _, reason = by_geometry(rig)
        if reason and (len(missing) >= 4 or "limbs reach the floor" in reason):
            msg = (f"'{obj.name}' does not look like a humanoid ({reason}): pick a two-legged character's "
                   f"armature, or map its bones in the Fatigue panel's Rig Mapping list")
        else:
            labels = ", ".join(KEY_LABELS[k] for k in missing)
            msg = f"'{obj.name}': no bone found for {labels}: {FIX_HINT}"
        mapping.problems.append(msg)
        return mapping, msg
    mapping.problems.extend(validate_mapping(obj, mapping, rig=rig))
    fatal = [p for p in mapping.problems if p.startswith("not humanoid:")]
    if fatal:
        return mapping, (f"'{obj.name}' does not look like a humanoid ({fatal[0][len('not humanoid: '):]}): "
                         f"pick a two-legged character's armature, or map its bones in the Fatigue panel's Rig Mapping list")
    return mapping, None


# ============================================================================= the body in its animated pose

POSE_SAMPLES = 15          # frames of the action read when the rest pose is not a human shape


def action_frames(action, count: int = POSE_SAMPLES) -> list[int]:
    """Up to ``count`` whole frames spread evenly over the keys of ``action``."""
    if action is None:
        return []
    lo, hi = action.frame_range
    lo, hi = int(math.ceil(lo - 1e-6)), int(math.floor(hi + 1e-6))
    if hi <= lo:
        return [lo]
    n = min(count, hi - lo + 1)
    return sorted({lo + int(round(i * (hi - lo) / (n - 1))) for i in range(n)})


def _posed_rigs(obj, frames) -> list[tuple[int, Skeleton]]:
    """``obj`` read in its pose at each frame (the scene's frame is put back)."""
    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    out = []
    try:
        for f in frames:
            scene.frame_set(int(f))
            rig = read_skeleton(obj, posed=True)
            rig.animated = True
            out.append((int(f), rig))
    finally:
        scene.frame_set(keep[0], subframe=keep[1])
    return out


def read_pose(obj, frame: int) -> dict[str, tuple]:
    """Bone name -> (head, tail, 4x4 matrix as rows) of every bone of ``obj`` in armature space,
    posed at ``frame`` of its assigned action (the scene's frame is put back)."""
    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    try:
        scene.frame_set(int(frame))
        return {pb.name: (tuple(pb.head), tuple(pb.tail), [tuple(r) for r in pb.matrix]) for pb in obj.pose.bones}
    finally:
        scene.frame_set(keep[0], subframe=keep[1])


def _detect_posed(obj) -> Mapping | None:
    """The mapping most frames of the assigned action agree on, when at least half of them read as a
    complete humanoid; None otherwise (a creature stays refused in every pose)."""
    frames = action_frames(anim.active_action(obj))
    if not frames:
        return None
    votes: dict[tuple, list] = {}
    for f, rig in _posed_rigs(obj, frames):
        m, error = _detect(obj, rig, any_way_up=False)
        if error is None:
            votes.setdefault(tuple(m.bones.get(k) for k in HUMANOID_KEYS), []).append((f, rig, m))
    if not votes:
        return None
    best = max(votes.values(), key=len)
    if 2 * len(best) < len(frames):
        return None
    f, _, mapping = min(best, key=lambda x: (pose_score(x[1], x[2]), x[0]))
    mapping.problems.insert(0, f"the rest pose is not a human shape: bones found in the animated pose (frame {f})")
    return mapping


def body_pose(obj, mapping, action=None, rig: Skeleton | None = None) -> tuple[int | None, str | None]:
    """Where the body is measured (up, facing, sizes, segment directions): ``(None, None)`` when the
    rest pose passes the humanoid checks with this (complete) mapping, else ``(frame, why)``: the
    frame of the assigned action standing straightest among those that pass, and why the rest pose
    did not; ``(None, why)`` when fewer than half of the action's frames pass either.  ``action``:
    the source (default: the assigned one); ``rig``: its rest pose read already (read_skeleton)."""
    rest = shape_problems(rig if rig is not None else read_skeleton(obj), mapping)
    if not rest:
        return None, None
    why = rest[0][len("not humanoid: "):].replace(" in the rest pose", "")
    frames = action_frames(action if action is not None else anim.active_action(obj))
    passing = [(f, rig) for f, rig in _posed_rigs(obj, frames) if not shape_problems(rig, mapping)]
    if not frames or 2 * len(passing) < len(frames):
        return None, why
    return min(passing, key=lambda x: (pose_score(x[1], mapping), x[0]))[0], why


def pose_note(name: str, frame: int, why: str) -> str:
    """The one warning a bake measured on an animated frame gives."""
    return (f"the rest pose of '{name}' was not used (it is not a human shape: {why}): the body was "
            f"measured on frame {frame} of the animation")


def validate_mapping(obj, mapping: Mapping, rig: Skeleton | None = None, posed: bool = False) -> list[str]:
    """Problems with a mapping on this armature (empty list = usable).

    Missing bones and broken chains are problems; ``not humanoid: ...`` entries mean the skeleton
    is not a person's (legs that do not hang from the trunk, arms below the feet, a tail), judged
    in its own body axes so that any rest orientation is judged alike.  With ``posed``, a rest pose
    that is not a human shape is no problem where most animated frames are (``body_pose``).
    """
    rig = rig or read_skeleton(obj)
    problems = []
    for key, bone in mapping.items():
        if bone not in rig.bones:
            problems.append(f"{KEY_LABELS.get(key, key)}: bone '{bone}' is not in '{obj.name}'")
    for key in mapping.missing():
        problems.append(f"{KEY_LABELS[key]}: no bone mapped")
    seen = {}
    for key in HUMANOID_KEYS:
        bone = mapping.get(key)
        if bone in seen:
            problems.append(f"bone '{bone}' is mapped twice ({seen[bone]} and {key})")
        elif bone:
            seen[bone] = key
    if problems:
        return problems
    for child, parent in KEY_PARENT.items():
        if child.endswith("_ankle"):
            continue            # feet parented to the root or a control bone for IK are fine
        if not rigify.hangs_from(rig.ancestors(mapping[child]), mapping[parent]):
            problems.append(f"{KEY_LABELS[child]} '{mapping[child]}' is not below {KEY_LABELS[parent]} "
                            f"'{mapping[parent]}' in the hierarchy")
    problems.extend(shape_problems(rig, mapping))
    if posed and problems and all(p.startswith("not humanoid:") for p in problems) and body_pose(obj, mapping, rig=rig)[0] is not None:
        return []
    return problems


def apply_preset(obj, preset: Mapping, strict: bool = True) -> Mapping:
    """A preset resolved on ``obj``: exact bone names first, else the same normalised name."""
    rig = read_skeleton(obj)
    by_norm = {}
    for n in rig.bones:
        cls, side, base, prio = parse_name(n)
        by_norm.setdefault((side, base), []).append((prio, n))
    bones, problems = {}, []
    for key, bone in preset.items():
        if bone in rig.bones:
            bones[key] = bone
            continue
        cls, side, base, _ = parse_name(bone)
        hits = sorted(by_norm.get((side, base), []))
        if hits:
            bones[key] = hits[0][1]
        elif key in HUMANOID_KEYS:
            problems.append(f"{KEY_LABELS[key]}: bone '{bone}' is not in '{obj.name}'")
    mapping = Mapping(bones=bones, problems=problems, sources={k: "preset" for k in bones}, armature=obj.name)
    mapping.problems.extend(p for p in validate_mapping(obj, mapping, rig=rig) if p not in mapping.problems)
    if strict and mapping.missing():
        labels = ", ".join(KEY_LABELS[k] for k in mapping.missing())
        raise RigMappingError(f"'{obj.name}': the preset's bones for {labels} are not in this armature: {FIX_HINT}")
    return mapping
