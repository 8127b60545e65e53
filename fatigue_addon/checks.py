"""Checks on what the animator selected, each failure a one-line message that names the fix."""
import math

from . import anim
from .failure import BakeInputError


def check_armature(obj, scene, frame_range=None) -> dict:
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
    action = anim.active_action(obj)
    if action is None:
        raise BakeInputError(f"Armature '{obj.name}' has no action: assign one in the Action Editor")
    animated = anim.animated_bones(obj)
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


def keyed_range(obj) -> tuple[float, float] | None:
    """The first and last key of the assigned action's curves (the fatigue curves and muted ones
    aside); None where a curve is cycled (a Cycles modifier plays past its keys: every frame is
    keyed) or nothing is keyed."""
    lo, hi = float("inf"), float("-inf")
    for fc in anim.action_fcurves(obj):
        if fc.data_path.startswith("fatigue_settings.") or fc.mute or not len(fc.keyframe_points):
            continue
        if any(m.type == "CYCLES" and not m.mute for m in fc.modifiers):
            return None
        a, b = fc.range()
        lo, hi = min(lo, a), max(hi, b)
    return (lo, hi) if lo <= hi else None


def check_frames_keyed(obj, action, start: int, end: int, fps: float, where: str) -> None:
    """Refuse a frame range that misses every key of ``action`` (the take would hold one pose), or
    that runs on more than PAST_KEYS_SECONDS (or the keys' own length) before or after them: a
    range of a million frames on a 247-frame action was read and prepared for minutes on Blender's
    main thread until memory ran out.  ``where``: how to set the range (the fix the line names)."""
    keys = keyed_range(obj)
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


def check_mapping_sense(obj, mapping: dict, frame: int | None = None) -> None:
    """Refuse a (usually hand-edited) rig mapping that is complete but wrong: a bone given to two
    joints, a head, hand or toe in another limb, or left and right swapped (judged in the rest
    pose, or on the animated ``frame`` the body is measured on: rigmap.body_pose)."""
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
    _check_sides(obj, mapping, label, frame)


def _check_sides(obj, mapping: dict, label: dict, frame: int | None = None) -> None:
    """Left and right judged in the rest pose (or the animated ``frame`` the body is measured on),
    in the armature's own space (so the object's rotation or scale does not matter): a person's
    left is up x forward, with up from the pelvis to the neck and forward from the ankles to the
    toes (or along the feet).  Where the bones' names say the same sides as the rows, the names
    win: feet that point back (a creature's heel-raised leg) would mislead the geometry, a
    hand-edited row does not rename its bone."""
    import numpy as np

    from .rigmap import parse_name, read_pose

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
        return
    up = neck - pelvis
    size = float(np.linalg.norm(up))
    if size < 1e-6:
        return
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
        return
    forward = np.mean(fwd, axis=0)
    forward -= up * float(forward @ up)
    if np.linalg.norm(forward) < 0.02 * size:
        return                     # feet along the spine (a lying rest pose with pointed feet): cannot judge
    left = np.cross(up, forward / np.linalg.norm(forward))
    for joint in ("hip", "shoulder", "knee", "ankle", "elbow"):
        a, b = head(f"left_{joint}"), head(f"right_{joint}")
        if a is None or b is None:
            continue
        named = (parse_name(mapping[f"left_{joint}"])[1], parse_name(mapping[f"right_{joint}"])[1])
        if float((a - b) @ left) < -0.05 * size and named != ("left", "right"):
            raise BakeInputError(f"Rig mapping: left and right look swapped: {label[f'left_{joint}']} "
                                 f"'{mapping[f'left_{joint}']}' is on the character's right: swap the left and "
                                 f"right rows in the Rig Mapping list (or press Detect Rig)")


def check_moves(obj, action, mapping: dict, clip, start: int, end: int) -> None:
    """Refuse an action that keys none of the mapped bones and does not move them either (fingers,
    a prop, a root bone alone): the take would stand still.  Constraint-driven rigs move their
    mapped bones without keying them, so the motion decides, not the keys alone."""
    import numpy as np

    if anim.animated_bones(obj) & set(mapping.values()):
        return
    q = np.asarray(clip.joint_rots, dtype=float)
    if len(q) < 2:
        return
    if float(np.abs(np.sum(q * q[:1], axis=-1)).min()) < math.cos(math.radians(0.25)):   # a joint turns > 0.5 deg
        return
    keyed = sorted(anim.animated_bones(obj))
    raise BakeInputError(f"Action '{action.name}' moves none of the mapped bones of '{obj.name}' in frames "
                         f"{start}-{end} (it keys only {', '.join(keyed[:3])}{', ...' if len(keyed) > 3 else ''}): "
                         f"assign the character's body animation, or map the bones it animates in the Rig Mapping list")
