"""Clips the runtime tests make from the DeepMimic walk: standing idle, and seated at a desk."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from runtime.body import proxy
from runtime.maths import quat
from runtime.motion import clip as C


def load(name):
    return C.load_deepmimic(C.deepmimic_clip_path(name))


def idle_clip(seconds: float) -> C.Clip:
    """Standing still, upright, arms down (the proxy's rest pose) where the walk starts."""
    walk = load("walk")
    frames = int(round(seconds * 30)) + 1
    return replace(walk, name="idle", fps=30.0, loop=False, root_pos=np.tile(walk.root_pos[0], (frames, 1)),
                   root_rot=np.tile(walk.root_rot[0], (frames, 1)),
                   joint_rots=np.tile(quat.IDENTITY, (frames, len(proxy.DEFAULT_JOINTS), 1)))


def seated_typist(seconds: float = 6.0) -> C.Clip:
    """Sitting on a chair the clip does not show (hips and knees at 90 degrees, feet on the floor
    0.42 m ahead of the pelvis), forearms forward, typing."""
    from dataclasses import replace

    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    frames = int(round(seconds * 30)) + 1
    t = np.arange(frames) / 30.0
    z = [0.0, 0.0, 1.0]
    joints = np.tile(quat.IDENTITY, (frames, len(names), 1))
    for side, phase in (("right", 0.0), ("left", 1.5)):
        joints[:, names.index(f"{side}_hip")] = quat.from_axis_angle(z, np.pi / 2)
        joints[:, names.index(f"{side}_knee")] = quat.from_axis_angle(z, -np.pi / 2)
        joints[:, names.index(f"{side}_shoulder")] = quat.from_axis_angle(z, 0.7)
        joints[:, names.index(f"{side}_elbow")] = np.stack(
            [quat.from_axis_angle(z, -1.5 + 0.1 * np.sin(4 * np.pi * x + phase)) for x in t])
    root = np.tile(walk.root_pos[0] - [0.0, 0.0, 0.332], (frames, 1))
    return replace(walk, name="seated", loop=False, root_pos=root, root_rot=np.tile(walk.root_rot[0], (frames, 1)),
                   joint_rots=joints)
