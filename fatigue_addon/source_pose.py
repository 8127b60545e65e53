"""The pose a source action plays on where it keys nothing, kept so every bake of it reads the same.

A take keys every mapped bone's rotation and the pelvis's location; a source that does not key
some of them (a glTF clip that leaves the feet or the neck alone) plays those channels at whatever
the pose holds.  Once the take is assigned, Blender writes the take's values into the pose, so a
second bake of the same source would read the first take's pose there: the same inputs, another
take (an Exhausted take baked after a Fresh one differed from one baked alone, and from the farm's,
which bakes each from the saved scene).  The values the first bake read are kept on the take and
put back while a later bake reads the source and writes its take.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

import bpy

from . import anim

POSE_PROP = "fatigued_source_pose"       # custom property on a take: {"path|index": value}
TRANSFORMS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def unkeyed(obj, keyed: set) -> dict:
    """``"path|index" -> value``: every pose bone's transform channel the source does not key
    (``keyed``: its anim.keyed_channels), as the pose holds it now (read with the source assigned)."""
    out = {}
    for pb in obj.pose.bones:
        esc = bpy.utils.escape_identifier(pb.name)
        for prop in TRANSFORMS:
            path = f'pose.bones["{esc}"].{prop}'
            for i, value in enumerate(getattr(pb, prop)):
                if (path, i) not in keyed:
                    out[f"{path}|{i}"] = float(value)
    return out


def keep(take, pose: dict) -> None:
    """Store on ``take`` the values ``pose`` (``unkeyed``) gave the channels the take keys."""
    keyed = {f"{path}|{index}" for path, index in anim.keyed_channels(take)}
    take[POSE_PROP] = json.dumps({k: v for k, v in pose.items() if k in keyed}, sort_keys=True)


def kept(takes) -> dict:
    """The pose the first of ``takes`` (takes of one source by this extension, or None) kept."""
    return next((json.loads(t[POSE_PROP]) for t in takes if t is not None and POSE_PROP in t), {})


@contextmanager
def played_on(obj, keyed: set, pose: dict):
    """While the source is read (its take written too), the channels it does not key (``keyed``:
    its anim.keyed_channels) hold what ``pose`` (``unkeyed``, ``kept``) gives them; the pose is as it
    was afterwards."""
    was = []
    for key, value in pose.items():
        path, index = key.rsplit("|", 1)
        index = int(index)
        if (path, index) in keyed:
            continue
        try:
            prop = obj.path_resolve(path, False)
        except ValueError:             # a bone renamed or removed since that take
            continue
        was.append((prop, index, prop[index]))
        prop[index] = value
    try:
        yield
    finally:
        for prop, index, value in reversed(was):
            prop[index] = value
