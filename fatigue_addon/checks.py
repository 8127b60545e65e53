"""Checks on what the animator selected, each failure a one-line message that names the fix."""
import math

from . import anim
from .failure import BakeInputError


def check_armature(obj, scene, frame_range=None, action=None, curves=None) -> dict:
    """Raise BakeInputError unless ``obj`` is an armature with an action to bake; else a summary.

    ``frame_range``: (start, end) to check instead of the scene's frame range."""
    if obj is None:
        raise BakeInputError("No active object: select the character's armature")
    if obj.type != "ARMATURE":
        raise BakeInputError(f"'{obj.name}' is a {obj.type.lower()}, not an armature: select the character's armature")
    check_editable(obj)
    bones = obj.data.bones
    if len(bones) == 0:
        raise BakeInputError(f"Armature '{obj.name}' has no bones: add a skeleton or pick another armature")
    zero = [b.name for b in bones if b.length < 1e-5]  # Blender 5 keeps ~2e-6 for head == tail
    if zero:
        raise BakeInputError(f"Bone '{zero[0]}' has zero length: give it a tail in Edit Mode")
    action = action if action is not None else anim.active_action(obj)
    if action is None:
        raise BakeInputError(f"Armature '{obj.name}' has no action: assign one in the Action Editor")
    animated = anim.bone_names(curves if curves is not None else anim.action_fcurves(obj, action))
    if not animated:
        raise BakeInputError(f"Action '{action.name}' animates no bones of '{obj.name}': assign the character's action")
    start, end = frame_range if frame_range is not None else (scene.frame_start, scene.frame_end)
    if end <= start:
        raise BakeInputError(f"Frame range {start}-{end} is empty: set End after Start in the timeline")
    return {
        "armature": obj.name,
        "action": action.name,
        "bones": len(bones),
        "animated_bones": len(animated),
        "frames": (start, end),
        "fps": scene.render.fps / scene.render.fps_base,
    }


def check_editable(obj) -> None:
    """Refuse an armature whose take would not be saved: one linked from another file (Blender
    saves none of its changes: the take would be orphaned), or a library override that is not
    editable.  An editable library override bakes (see bake.write)."""
    if obj.library is not None:
        raise BakeInputError(f"Armature '{obj.name}' is linked from '{obj.library.name}' and its take would be lost "
                             f"when the file is saved: make a library override (Object > Library Override > Make) "
                             f"and bake that")
    override = obj.override_library
    if override is not None and (override.is_system_override or not getattr(obj, "is_editable", True)):
        raise BakeInputError(f"Armature '{obj.name}' is a library override that is not editable: make it editable "
                             f"(select it, Object > Library Override > Make) and bake again")


# ============================================================================= input that would bake nonsense

PAST_KEYS_SECONDS = 10.0   # a range may hold the first or last pose this long beyond the keys (or the keys' length)


def keyed_range(obj, action=None, curves=None) -> tuple[float, float] | None:
    """The first and last key of the assigned action's curves (the fatigue curves and muted ones
    aside); None where a curve is cycled (a Cycles modifier plays past its keys: every frame is
    keyed) or nothing is keyed."""
    lo, hi = float("inf"), float("-inf")
    for fc in curves if curves is not None else anim.action_fcurves(obj, action):
        if fc.data_path.startswith("fatigue_settings.") or fc.mute or not len(fc.keyframe_points):
            continue
        if any(m.type == "CYCLES" and not m.mute for m in fc.modifiers):
            return None
        a, b = fc.range()
        lo, hi = min(lo, a), max(hi, b)
    return (lo, hi) if lo <= hi else None


def check_frames_keyed(obj, action, start: int, end: int, fps: float, where: str, curves=None) -> None:
    """Refuse a frame range that misses every key of ``action`` (the take would hold one pose), or
    that runs on more than PAST_KEYS_SECONDS (or the keys' own length) before or after them: a
    range of a million frames on a 247-frame action was read and prepared for minutes on Blender's
    main thread until memory ran out.  ``where``: how to set the range (the fix the line names)."""
    keys = keyed_range(obj, action, curves)
    if keys is None:
        return
    lo, hi = keys
    if end < lo or start > hi:
        raise BakeInputError(f"Frames {start}-{end} lie outside the keys of '{action.name}' (frames {lo:g}-{hi:g}): "
                             f"{where} to overlap them")
    margin = max(int(math.ceil(hi - lo)), int(math.ceil(PAST_KEYS_SECONDS * fps)))
    past = max(lo - start, end - hi)
    if past > margin:
        first, last = max(start, int(math.floor(lo - margin))), min(end, int(math.ceil(hi + margin)))
        raise BakeInputError(f"Frames {start}-{end} run {past:.0f} frames past the keys of '{action.name}' "
                             f"(frames {lo:g}-{hi:g}; a pose is held at most {margin} frames beyond them): "
                             f"{where} within {first}-{last}, e.g. the keys' {lo:g}-{hi:g}")


def check_mapping_sense(obj, mapping: dict, frame: int | None = None, frames=None) -> tuple[dict, list[str]]:
    """Refuse a (usually hand-edited) rig mapping that is complete but wrong: a bone given to two
    joints, a head, hand or toe in another limb, or left and right swapped (judged in the rest
    pose, or on the animated ``frame`` the body is measured on: rigmap.body_pose).  Returns the
    mapping to bake and its notes: bones named for the wrong sides (where the feet and the knees'
    bend over the action agree) are baked with their sides swapped, one note saying so.
    ``frames``: the frames of the source the knees are read on (default: rigmap.action_frames of
    the assigned action)."""
    from . import rigmap

    label = rigmap.KEY_LABELS
    seen = {}
    for key in rigmap.ALL_KEYS:
        bone = mapping.get(key)
        if not bone:
            continue
        if bone in seen:
            raise BakeInputError(f"Rig mapping: bone '{bone}' is mapped to both {label[seen[bone]]} and "
                                 f"{label[key]}: map each joint to its own bone in the Rig Mapping list")
        seen[bone] = key
    bones = obj.data.bones
    limb_keys = [f"{s}_{j}" for s in ("left", "right") for j in ("hip", "knee", "ankle", "shoulder", "elbow")]
    limb_of_bone = {mapping[k]: k for k in limb_keys if mapping.get(k) in bones}

    def limb(name):
        """The mapped limb joint ``name`` hangs from (itself included), or None (trunk, head)."""
        b = bones.get(name)
        while b is not None:
            if b.name in limb_of_bone:
                return limb_of_bone[b.name]
            b = b.parent
        return None

    def group(key):
        return None if key is None else (key.split("_")[0], "leg" if key.split("_")[1] in ("hip", "knee", "ankle")
                                         else "arm")

    expected = {"head": None, "left_hand": ("left", "arm"), "right_hand": ("right", "arm"),
                "left_toe": ("left", "leg"), "right_toe": ("right", "leg")}
    for key, want in expected.items():
        bone = mapping.get(key)
        if not bone or bone not in bones:
            continue
        got = limb(bone)
        if got is not None and group(got) != want:
            raise BakeInputError(f"Rig mapping: {label[key]} is '{bone}', a bone of the {label[got].lower()} "
                                 f"'{mapping[got]}': map the {label[key].lower()} bone in the Rig Mapping list "
                                 f"(or press Detect Rig)")
    return _check_sides(obj, mapping, label, frame, frames)


def _check_sides(obj, mapping: dict, label: dict, frame: int | None = None, frames=None) -> tuple[dict, list[str]]:
    """Left and right judged in the rest pose (or the animated ``frame`` the body is measured on),
    in the armature's own space (so the object's rotation or scale does not matter; a mirrored
    object is read as its mirror image: rig.space.object_matrix): a person's left is up x forward,
    with up from the pelvis to the neck and forward from the ankles to the toes (or along the
    feet).  Rows swapped by hand (their bones' names say the other sides) are refused.  Where the
    names say the rows' sides, the feet alone do not overrule them (a creature's heel-raised leg
    points its 'toes' back); the feet and the knees' bend over the action together do: the names
    are on the wrong sides (elbows baked bent backwards, hands a tenth of the height off), so the
    mapping is swapped and a note says so.  Returns (mapping, notes)."""
    import numpy as np

    from .rig.names import parse_name
    from .rigmap import read_pose

    bones = obj.data.bones
    posed = read_pose(obj, frame) if frame is not None else None

    def head(key):
        b = bones.get(mapping.get(key) or "")
        if b is None:
            return None
        return np.array(b.head_local if posed is None else posed[b.name][0], dtype=float)

    def tail(b):
        return np.array(b.tail_local if posed is None else posed[b.name][1], dtype=float)

    pelvis, neck = head("pelvis"), head("neck")
    if pelvis is None or neck is None:
        return mapping, []
    up = neck - pelvis
    size = float(np.linalg.norm(up))
    if size < 1e-6:
        return mapping, []
    up /= size
    fwd = []
    for side in ("left", "right"):
        ankle, toe = head(f"{side}_ankle"), head(f"{side}_toe")
        foot = bones.get(mapping.get(f"{side}_ankle") or "")
        if ankle is not None and toe is not None:
            fwd.append(toe - ankle)
        elif foot is not None:
            fwd.append(tail(foot) - head(f"{side}_ankle"))
    if not fwd:
        return mapping, []
    forward = np.mean(fwd, axis=0)
    forward -= up * float(forward @ up)
    if np.linalg.norm(forward) < 0.02 * size:
        return mapping, []         # feet along the spine (a lying rest pose with pointed feet): cannot judge
    left = np.cross(up, forward / np.linalg.norm(forward))
    wrong, right = [], []
    for joint in ("hip", "shoulder", "knee", "ankle", "elbow"):
        a, b = head(f"left_{joint}"), head(f"right_{joint}")
        if a is None or b is None:
            continue
        apart = float((a - b) @ left)
        if apart >= -0.05 * size:
            right += [joint] if apart > 0.05 * size else []
            continue
        named = (parse_name(mapping[f"left_{joint}"])[1], parse_name(mapping[f"right_{joint}"])[1])
        if named != ("left", "right"):
            raise BakeInputError(f"Rig mapping: left and right look swapped: {label[f'left_{joint}']} "
                                 f"'{mapping[f'left_{joint}']}' is on the character's right: swap the left and "
                                 f"right rows in the Rig Mapping list (or press Detect Rig)")
        wrong.append(joint)
    if not wrong or knee_sense(obj, mapping, frames) > -KNEES_BEND:
        return mapping, []
    first = f"left_{wrong[0]}"
    if right:
        raise BakeInputError(f"Rig mapping: left and right look swapped for some limbs only: {label[first]} "
                             f"'{mapping[first]}' is on the character's right, {label[f'left_{right[0]}'].lower()} "
                             f"'{mapping[f'left_{right[0]}']}' on its left: map each limb to the bones on its "
                             f"side in the Rig Mapping list")
    swapped = {(k.replace("left_", "right_", 1) if k.startswith("left_") else
                k.replace("right_", "left_", 1) if k.startswith("right_") else k): v for k, v in mapping.items()}
    return swapped, [f"'{obj.name}' names its sides the wrong way round: {label[first].lower()} '{mapping[first]}' "
                     f"is on the character's right (its feet point and its knees bend that way): baked with left "
                     f"and right swapped (rename the bones to silence this)"]


KNEES_BEND = 0.02      # knees bent forward of the hip-ankle line, on average, by this share of the trunk


def knee_sense(obj, mapping: dict, frames=None) -> float:
    """How far the knees bend forward over the assigned action, as ``mapping``'s sides have it: the
    knee's offset from its hip-ankle line along the body's forward (left x up, left from the mapped
    right hip to the left one, up from the pelvis to the neck, each frame its own), averaged over
    both legs and frames spread over the action, as a share of the trunk (pelvis to neck).  Knees
    bend forward: a clearly negative value says the mapping's left is the character's right.
    ``frames``: the frames read (default: rigmap.action_frames of the assigned action)."""
    import numpy as np

    from .rigmap import action_frames, read_pose

    total, count = 0.0, 0
    for f in (frames if frames is not None else action_frames(anim.active_action(obj))):
        pose = read_pose(obj, f)

        def at(key):
            return np.array(pose[mapping[key]][0], dtype=float)

        up, left = at("neck") - at("pelvis"), at("left_hip") - at("right_hip")
        size = float(np.linalg.norm(up))
        forward = np.cross(left, up)
        if size < 1e-9 or np.linalg.norm(forward) < 1e-9 * size * size:
            continue
        forward /= np.linalg.norm(forward)
        for side in ("left", "right"):
            bend = at(f"{side}_knee") - 0.5 * (at(f"{side}_hip") + at(f"{side}_ankle"))
            total += float(bend @ forward) / size
            count += 1
    return total / count if count else 0.0


def check_moves(obj, action, mapping: dict, clip, start: int, end: int, curves=None) -> None:
    """Refuse an action that keys none of the mapped bones and does not move them either (fingers,
    a prop, a root bone alone): the take would stand still.  Constraint-driven rigs move their
    mapped bones without keying them, so the motion decides, not the keys alone.  ``curves``: the
    action's curves of ``obj`` (anim.action_fcurves), read already."""
    import numpy as np

    animated = anim.bone_names(curves if curves is not None else anim.action_fcurves(obj, action))
    if animated & set(mapping.values()):
        return
    q = np.asarray(clip.joint_rots, dtype=float)
    if len(q) < 2:
        return
    if float(np.abs(np.sum(q * q[:1], axis=-1)).min()) < math.cos(math.radians(0.25)):   # a joint turns > 0.5 deg
        return
    keyed = sorted(animated)
    raise BakeInputError(f"Action '{action.name}' moves none of the mapped bones of '{obj.name}' in frames "
                         f"{start}-{end} (it keys only {', '.join(keyed[:3])}{', ...' if len(keyed) > 3 else ''}): "
                         f"assign the character's body animation, or map the bones it animates in the Rig Mapping list")
