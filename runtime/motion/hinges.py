"""What a one-axis knee or elbow cannot do, carried by its neighbours: a clip's knees and elbows
made pure hinges, with the hip or shoulder above turned about the thigh or upper arm so the hand
and foot land where the source puts them, and the ankle below turned so the foot keeps its
orientation in the world.

Why: a rig's knee or elbow turns about more than one axis (an SMPL skeleton's knees and forearms
twist 40-58 degrees off any one axis, a rig's hinge axis sits a few degrees off the proxy's), and
the simulation keeps only the hinge part (quat.hinge_angle): the feet ended 0.12 m off, the hands
more.  The ball joint above has the freedom to take the rest: turned about its own segment (which
keeps the knee or elbow where it was), the lower segment swings into the hinge's plane, and the
hinge angle then reaches the source's hand or foot exactly.

Proxy geometry (runtime/data/humanoid.urdf): every limb segment runs along its link's -Y and the
hinge turns about its link's Z (clip.REVOLUTE_AXIS).  A hinge quaternion with no off-axis part
(a DeepMimic clip's) is left as it is, bit for bit.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..body import description
from ..maths import quat, repeatable
from ..maths.ease import smoothsteps
from .clip import Clip

# Upper ball joint, hinge, lower ball joint (None: the hinge's child is fixed, the hand).
CHAINS = tuple((f"{side}_{upper}", f"{side}_{hinge}", lower and f"{side}_{lower}")
               for side in ("right", "left")
               for upper, hinge, lower in (("hip", "knee", "ankle"), ("shoulder", "elbow", None)))
# Below this bend (sine of the angle between the segments) the plane a limb bends in is noise: the
# twist found on the frames around it is held there instead (a straight limb's own plane would
# spin the upper segment), costing at most a limb length times this sine at the hand or foot.
PLANE_SURE = 0.17          # about 10 degrees
# Between this bend and PLANE_SURE the lower segment is still put in the hinge's plane exactly, on
# whichever side lies nearer the held twist (a straight arm a few degrees past straight, a robot's
# at rest, is bent a few degrees backwards rather than turned round); below it the plane is noise.
PLANE_NOISE = 0.07         # about 4 degrees
# A limb that turns more than this between two frames is not moving there (a calibration pose
# cut against the motion, an encoding's test frames): the frames on either side are not fitted.
JUMP = np.pi / 2.0
EASE_IN = 0.2              # s: the fit comes back over this long after such a jump


@lru_cache(maxsize=None)
def flexion_sign(hinge: str) -> float:
    """+1 where the proxy's hinge flexes with a positive angle (elbows), -1 where with a negative
    one (knees): the side of its URDF range that is not zero."""
    link = next(x for x in description.proxy_links() if x.name == hinge)
    lo, hi = link.limit
    return 1.0 if hi > -lo else -1.0


def _twist_about_segment(angle: np.ndarray) -> np.ndarray:
    """(T, 4) rotations by ``angle`` about the link's -Y (the segment itself)."""
    half = 0.5 * angle
    return np.stack([np.zeros_like(half), -repeatable.sin(half), np.zeros_like(half), repeatable.cos(half)], axis=-1)


def _wrapped(angle: np.ndarray) -> np.ndarray:
    return np.mod(angle + np.pi, 2.0 * np.pi) - np.pi


def _calm(fps: float, *rotations: np.ndarray) -> np.ndarray:
    """(T,) 0 on frames where any of ``rotations`` (T, 4) turns more than JUMP to or from a
    neighbouring frame, rising to 1 over EASE_IN seconds away from them (1 where none jumps).

    Why: fitted across such a jump, the twist a jumping elbow sheds flips the shoulder by as
    much every frame (a file whose first frames alternate between two poses flipped its
    shoulders 140 degrees a frame, and the upper body's simulation blew up); eased, the fit
    does not jump where it starts again."""
    frames = rotations[0].shape[0]
    still = np.zeros(frames, dtype=bool)
    for q in rotations:
        jumps = quat.angle_between(q[1:], q[:-1]) > JUMP
        still[1:] |= jumps
        still[:-1] |= jumps
    if not still.any():
        return np.ones(frames)
    index = np.arange(frames)
    marks = np.flatnonzero(still)
    after = np.searchsorted(marks, index)
    near = np.minimum(np.abs(index - marks[np.minimum(after, len(marks) - 1)]),
                      np.abs(index - marks[np.maximum(after - 1, 0)]))
    return smoothsteps(near / max(EASE_IN * fps, 1.0))


def _held(angle: np.ndarray, sure: np.ndarray) -> np.ndarray:
    """``angle`` (T,) where ``sure`` weighs 1, moving towards the angle interpolated between the
    nearest sure frames (unwrapped) where it weighs less; 0 where no frame is sure."""
    frames = np.arange(angle.shape[0], dtype=float)
    known = sure >= 1.0
    hold = np.interp(frames, frames[known], np.unwrap(angle[known])) if known.any() else np.zeros_like(angle)
    return hold + sure * _wrapped(angle - hold)


def fit_hinges(clip: Clip) -> Clip:
    """``clip`` with every knee and elbow a pure hinge (quaternion about Z) whose hip or shoulder
    is turned about its own segment so the ankle or wrist is where the source has it, and whose
    ankle keeps the foot's orientation; the same Clip where nothing is off a hinge."""
    joints = clip.joints
    out = None
    for upper, hinge, lower in CHAINS:
        if upper not in joints or hinge not in joints:
            continue
        u, h = joints.index(upper), joints.index(hinge)
        q_hinge = quat.normalize(clip.joint_rots[:, h])
        off = (q_hinge[:, 0] != 0.0) | (q_hinge[:, 1] != 0.0)
        if not off.any():
            continue
        if out is None:
            out = clip.joint_rots.copy()
        sign = flexion_sign(hinge)
        # The lower segment's direction in the upper link's frame, and how far it bends.
        w = quat.rotate(q_hinge, np.array([0.0, -1.0, 0.0]))
        bend = np.hypot(w[:, 0], w[:, 2])
        # Turning the upper link by -alpha about its segment turns w by alpha about Y (from x to
        # z is a negative turn about Y): alpha brings w into the hinge's plane, on its flexing side.
        flexing = repeatable.arctan2(sign * w[:, 2], sign * w[:, 0])
        held = _held(flexing, smoothsteps(bend / PLANE_SURE))
        # Nearly straight: the plane on the side nearer the held twist, so the hand or foot is
        # still where the source has it; not where that side is a quarter turn away (it flips).
        away = _wrapped(flexing - held)
        nearer = np.where(np.abs(away) > 0.5 * np.pi, _wrapped(away + np.pi), away)
        trust = smoothsteps(bend / PLANE_NOISE) * smoothsteps((0.5 * np.pi - np.abs(nearer)) / (np.pi / 6.0))
        alpha = (held + trust * nearer) * _calm(clip.fps, q_hinge, quat.normalize(clip.joint_rots[:, u]))
        turn = _twist_about_segment(alpha)                   # upper link: new = old * turn
        q_upper = quat.normalize(clip.joint_rots[:, u])
        new_upper = quat.multiply(q_upper, turn)
        # The lower segment in the turned upper link's frame; the hinge angle that points it there.
        w_new = quat.rotate(quat.conjugate(turn), w)
        theta = repeatable.arctan2(w_new[:, 0], -w_new[:, 1])
        half = 0.5 * theta
        zero = np.zeros_like(half)
        new_hinge = np.stack([zero, zero, repeatable.sin(half), repeatable.cos(half)], axis=-1)
        keep = ~off
        out[:, u] = np.where(keep[:, None], clip.joint_rots[:, u], new_upper)
        out[:, h] = np.where(keep[:, None], clip.joint_rots[:, h], new_hinge)
        if lower is not None and lower in joints:
            lo = joints.index(lower)
            # The lower link's orientation in the upper joint's parent frame, kept.
            world = quat.multiply(quat.multiply(q_upper, q_hinge), quat.normalize(clip.joint_rots[:, lo]))
            new_lower = quat.multiply(quat.conjugate(quat.multiply(new_upper, new_hinge)), world)
            out[:, lo] = np.where(keep[:, None], clip.joint_rots[:, lo], new_lower)
        for col in (u, h) + ((joints.index(lower),) if lower is not None and lower in joints else ()):
            out[:, col] = quat.make_continuous(quat.hemisphere(out[:, col]))
    if out is None:
        return clip
    return replace(clip, joint_rots=out)
