"""What a bake does with a root that jumps: a calibration pose to skip, a broken channel, or a cut.

Motion capture files often open (or close) with a frame or two of calibration pose somewhere
else, and some exports store something other than a position in the root's translation channel
(it flips between far-apart values every few frames).  Neither is motion, and neither is the
animator's fault.  A jump in the middle of otherwise smooth motion is a cut or a stepped key: the
bake refuses it and names the frames, since simulating across it flings the body.

The speed limit is ``runtime.motion.clip.MAX_ROOT_SPEED`` (scaled with the body's height), the one the
runtime refuses too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...runtime.motion import clip as rclip
from ...runtime.body import proxy

EDGE_SECONDS = 1.0        # jumps only this close to either end (at most a third of the clip): skipped
BROKEN_SHARE = 0.05       # jumps on more than this share of frames: the channel is not a position
BROKEN_MIN_JUMPS = 3


@dataclass(frozen=True)
class RootPlan:
    """How to bake a source whose root jumps (frames are offsets into the sampled range)."""
    kind: str                     # "ok" | "trim" | "in_place" | "cut"
    first: int = 0                # first frame offset to keep ("trim")
    last: int | None = None       # last frame offset to keep ("trim"), inclusive
    jumps: tuple = ()             # frame offsets before each jump
    metres: float = 0.0           # the largest jump (proxy metres)


def jumps(root_pos: np.ndarray, fps: float, height: float) -> tuple[np.ndarray, np.ndarray]:
    """(frame offsets before each over-fast step, their lengths in metres)."""
    step = np.linalg.norm(np.diff(np.asarray(root_pos, dtype=float), axis=0), axis=1)
    limit = rclip.MAX_ROOT_SPEED * np.sqrt(height / proxy.DEFAULT_HEIGHT) / fps
    over = np.flatnonzero(~(step <= limit))          # NaN counts as a jump
    return over, step[over]


def plan(root_pos: np.ndarray, fps: float, height: float) -> RootPlan:
    """Decide what a jumping root means (see the module docstring)."""
    over, lengths = jumps(root_pos, fps, height)
    if over.size == 0:
        return RootPlan("ok")
    T = len(root_pos)
    biggest = float(np.where(np.isfinite(lengths), lengths, np.inf).max())
    edge = max(1, min(int(round(EDGE_SECONDS * fps)), (T - 1) // 3))
    head = over[over < edge]
    tail = over[over >= T - 1 - edge]
    middle = over[(over >= edge) & (over < T - 1 - edge)]
    if over.size >= max(BROKEN_MIN_JUMPS, BROKEN_SHARE * (T - 1)):
        return RootPlan("in_place", jumps=tuple(int(i) for i in over), metres=biggest)
    if middle.size == 0:
        first = int(head.max()) + 1 if head.size else 0
        last = int(tail.min()) if tail.size else T - 1
        if last - first >= 2:
            return RootPlan("trim", first=first, last=last, jumps=tuple(int(i) for i in over), metres=biggest)
    return RootPlan("cut", jumps=tuple(int(i) for i in over), metres=biggest)


def in_place(root_pos: np.ndarray, standing_height: float) -> np.ndarray:
    """Root positions for a source whose root channel is not a position: the body stays where it
    starts, at its standing pelvis height (the simulation finds the floor under its feet)."""
    out = np.empty_like(np.asarray(root_pos, dtype=float))
    start = np.asarray(root_pos[0], dtype=float)
    out[:, 0] = start[0] if np.isfinite(start[0]) else 0.0
    out[:, 1] = start[1] if np.isfinite(start[1]) else 0.0
    out[:, 2] = standing_height
    return out
