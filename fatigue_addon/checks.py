"""Checks on what the animator selected, each failure a one-line message that names the fix."""
from . import anim


class BakeInputError(Exception):
    """Expected bad input: shown to the user as one line, never as a traceback."""


def check_armature(obj, scene, frame_range=None) -> dict:
    """Raise BakeInputError unless ``obj`` is an armature with an action to bake; else a summary.

    ``frame_range``: (start, end) to check instead of the scene's frame range."""
    if obj is None:
        raise BakeInputError("No active object: select the character's armature")
    if obj.type != "ARMATURE":
        raise BakeInputError(f"'{obj.name}' is a {obj.type.lower()}, not an armature: select the character's armature")
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
