"""Motion in proxy space: the one format every simulation mode reads and every retarget writes.

A Clip is uniformly sampled: root position and rotation in the world (Z-up, metres, quaternions
x,y,z,w) and each proxy joint's local rotation (quaternions for every joint; a revolute joint's
rotation is about its axis).  Contacts come from ``runtime.motion.contacts`` because they need the
proxy's geometry.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..body import proxy
from ..errors import ClipError
from ..maths import lowpass, quat

# DeepMimic files are Y-up; rotating +90 degrees about X makes them Z-up (x forward, y left).
Y_UP_TO_Z_UP = quat.from_axis_angle([1.0, 0.0, 0.0], np.pi / 2)
# Knee and elbow axis in the URDF's link frames: a revolute joint's angle is quat.hinge_angle of its
# rotation (either quaternion sign).
REVOLUTE_AXIS = np.array([0.0, 0.0, 1.0])

# m/s for a 1.62 m body (scaled with the square root of height, like running speed): faster than
# anyone runs (a sprint peaks near 12) or falls within a shot; the DeepMimic clips stay below 5.2.
MAX_ROOT_SPEED = 20.0


@dataclass(frozen=True)
class Clip:
    name: str
    fps: float
    root_pos: np.ndarray      # (T, 3) world, metres
    root_rot: np.ndarray      # (T, 4) world, x y z w
    joint_rots: np.ndarray    # (T, J, 4) local, x y z w, order of ``joints``
    loop: bool = False
    joints: tuple[str, ...] = field(default_factory=lambda: tuple(j.name for j in proxy.DEFAULT_JOINTS))

    def __post_init__(self):
        T = self.root_pos.shape[0]
        if T < 2:
            raise ClipError(f"clip '{self.name}' has {T} frame(s): it needs at least 2")
        if not (np.isfinite(self.fps) and 1.0 <= self.fps <= 1000.0):
            raise ClipError(f"clip '{self.name}' frame rate {self.fps!r}: use 1 to 1000 fps")
        if self.root_pos.shape != (T, 3) or self.root_rot.shape != (T, 4):
            raise ClipError(f"clip '{self.name}': root arrays must be (T, 3) and (T, 4)")
        if self.joint_rots.shape != (T, len(self.joints), 4):
            raise ClipError(f"clip '{self.name}': joint rotations must be (T, {len(self.joints)}, 4), "
                            f"got {self.joint_rots.shape}")
        for label, arr in (("root position", self.root_pos), ("root rotation", self.root_rot),
                           ("joint rotation", self.joint_rots)):
            if not np.isfinite(arr).all():
                frame = int(np.argwhere(~np.isfinite(arr))[0][0])
                raise ClipError(f"clip '{self.name}' has NaN/inf {label} at frame {frame}: fix the animation there")

    # -- timing ----------------------------------------------------------------------------
    @property
    def frames(self) -> int:
        return self.root_pos.shape[0]

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame (one cycle for a loop)."""
        return (self.frames - 1) / self.fps

    def cycle_offset(self) -> tuple[np.ndarray, np.ndarray]:
        """Root translation (horizontal) and heading rotation that one loop cycle adds."""
        delta = self.root_pos[-1] - self.root_pos[0]
        delta[2] = 0.0
        turn = quat.yaw(self.root_rot[-1]) - quat.yaw(self.root_rot[0])
        return delta, quat.from_axis_angle([0.0, 0.0, 1.0], turn)

    # -- sampling --------------------------------------------------------------------------
    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Interpolated (root_pos, root_rot, joint_rots) at time t; loops continue with root offset,
        non-looping clips hold their ends."""
        pos, rot, joints = self.sample_many(np.array([float(t)]))
        return pos[0], rot[0], joints[0]

    def sample_many(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Vectorised ``sample`` over an array of times: (N, 3), (N, 4), (N, J, 4)."""
        times = np.asarray(times, dtype=np.float64)
        cycles = np.zeros(times.shape, dtype=np.int64)
        if self.loop:
            cycles = np.floor(times / self.duration).astype(np.int64)
            times = times - cycles * self.duration
        x = np.clip(times * self.fps, 0.0, self.frames - 1.0)
        i = np.minimum(np.floor(x).astype(np.int64), self.frames - 2)
        a = x - i
        pos = (1 - a)[:, None] * self.root_pos[i] + a[:, None] * self.root_pos[i + 1]
        rot = quat.slerp(self.root_rot[i], self.root_rot[i + 1], a)
        joints = quat.slerp(self.joint_rots[i], self.joint_rots[i + 1],
                            np.repeat(a[:, None], len(self.joints), axis=1))
        if self.loop and cycles.any():
            pos, rot = self._advance_cycles(pos, rot, cycles)
        return pos, rot, joints

    def _advance_cycles(self, pos, rot, cycles: np.ndarray):
        """Carry samples ``cycles`` loop cycles forward: the root turns by the cycle's heading
        change and travels its displacement, rotated by the heading reached so far."""
        delta, _ = self.cycle_offset()
        turn = float(quat.yaw(self.root_rot[-1]) - quat.yaw(self.root_rot[0]))
        start = self.root_pos[0] * np.array([1.0, 1.0, 0.0])
        z = np.array([0.0, 0.0, 1.0])
        out_pos, out_rot = pos.copy(), rot.copy()
        for c in np.unique(cycles):
            if c == 0:
                continue
            sel = cycles == c
            heading = quat.from_axis_angle(z, c * turn)
            travelled = sum(quat.rotate(quat.from_axis_angle(z, j * turn), delta) for j in range(c))
            out_pos[sel] = start + quat.rotate(heading, pos[sel] - start) + travelled
            out_rot[sel] = quat.multiply(heading, rot[sel])
        return out_pos, out_rot

    def played_faster(self, factor: float) -> "Clip":
        """The same frames played ``factor`` times faster (runtime.reference.playback: a slow-motion clip at
        the speed it was performed)."""
        return replace(self, fps=float(self.fps * factor))

    def resampled(self, fps: float) -> "Clip":
        """The same motion at another frame rate (linear / slerp interpolation)."""
        n = int(round(self.duration * fps)) + 1
        pos, rot, joints = replace(self, loop=False).sample_many(np.arange(n) / fps)
        return replace(self, fps=float(fps), root_pos=pos, root_rot=quat.make_continuous(rot),
                       joint_rots=quat.make_continuous(joints))

    def mirrored(self) -> "Clip":
        """The motion mirrored left to right (across the world XZ plane), left and right joints
        swapped: a right-footed kick becomes a left-footed one.  Training data (a policy should
        not care which side leads).

        The proxy's link frames share one rest orientation (x forward, y up, z lateral), so a
        joint's mirrored local rotation is the reflection through its xy plane: (x, y, z, w) ->
        (-x, -y, z, w); the root's frame is that reflection seen through Y_UP_TO_Z_UP."""
        def reflect(q):
            return q * np.array([-1.0, -1.0, 1.0, 1.0])

        up = np.broadcast_to(Y_UP_TO_Z_UP, self.root_rot.shape)
        root_rot = quat.multiply(up, reflect(quat.multiply(quat.conjugate(up), self.root_rot)))
        index = {name: i for i, name in enumerate(self.joints)}
        partner = [index.get(proxy.other_side(name), i) for i, name in enumerate(self.joints)]
        return replace(self, name=self.name + "~mirror", root_pos=self.root_pos * np.array([1.0, -1.0, 1.0]),
                       root_rot=quat.normalize(root_rot), joint_rots=reflect(self.joint_rots[:, partner]))

    def repeated(self, seconds: float) -> "Clip":
        """A non-looping clip covering ``seconds`` (looping clips cycle with root offset;
        others play once and hold the last pose)."""
        n = int(round(seconds * self.fps)) + 1
        if not self.loop:
            n = max(n, self.frames)
            idx = np.minimum(np.arange(n), self.frames - 1)
            return replace(self, root_pos=self.root_pos[idx], root_rot=self.root_rot[idx],
                           joint_rots=self.joint_rots[idx])
        pos, rot, joints = self.sample_many(np.arange(n) / self.fps)
        return replace(self, loop=False, root_pos=pos, root_rot=quat.make_continuous(rot),
                       joint_rots=quat.make_continuous(joints))

    def root_cut(self, height: float = proxy.DEFAULT_HEIGHT) -> tuple[int, float] | None:
        """The first step between frames whose root moves faster than MAX_ROOT_SPEED (for a
        body of ``height`` metres): (the frame before it, metres moved), or None.

        Why: a cut, a teleport or a stepped key in an action (two takes spliced, a root
        snapped back to the origin, a blocking pass on constant interpolation) is not motion.  Simulated, the body was flung across the gap and fell, and the
        take said only where it fell; the bake now refuses it and names the frames."""
        step = np.linalg.norm(np.diff(self.root_pos, axis=0), axis=1)
        limit = MAX_ROOT_SPEED * np.sqrt(height / proxy.DEFAULT_HEIGHT) / self.fps
        over = np.flatnonzero(step > limit)
        return (int(over[0]), float(step[over[0]])) if over.size else None

    # -- derivatives -----------------------------------------------------------------------
    def root_angular_velocity(self) -> np.ndarray:
        """(T, 3) world angular velocity of the root."""
        return angular_velocity(self.root_rot, self.fps, world=True)

    def joint_angular_velocities(self) -> np.ndarray:
        """(T, J, 3) local angular velocities of every joint (child frame)."""
        return angular_velocity(self.joint_rots, self.fps, world=False)


def angular_velocity(q: np.ndarray, fps: float, world: bool) -> np.ndarray:
    """Angular velocity (rad/s) of rotations q sampled at fps along axis 0 (central differences,
    low-passed like every rate of change of the source: runtime.maths.lowpass): in the world frame, or
    in each rotation's own (child) frame."""
    q = quat.make_continuous(q)
    nxt = np.concatenate([q[1:], q[-1:]], axis=0)
    prv = np.concatenate([q[:1], q[:-1]], axis=0)
    span = np.full(q.shape[0], 2.0)
    span[0] = span[-1] = 1.0
    span = span.reshape((-1,) + (1,) * (q.ndim - 1))
    if world:
        d = quat.multiply(nxt, quat.conjugate(prv))
    else:
        d = quat.multiply(quat.conjugate(prv), nxt)
    return lowpass.smooth(quat.to_rotvec(d) * (fps / span), fps)


def load_deepmimic(path: str | Path) -> Clip:
    """Read a DeepMimic motion file (Y-up, quaternions w,x,y,z) into a Z-up Clip.

    Several shipped files hold non-unit quaternions (kick: up to 0.42 off): every rotation is
    normalised; irregular frame durations are resampled to the first frame's rate.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        frames = np.asarray(data["Frames"], dtype=np.float64)
    except (OSError, ValueError, KeyError) as exc:
        raise ClipError(f"cannot read DeepMimic motion '{path}': {exc}") from None
    if frames.ndim != 2 or frames.shape[1] != 44:
        raise ClipError(f"'{path.name}' is not a DeepMimic humanoid clip (expected 44 columns per frame)")
    durations = frames[:, 0]
    root_y = frames[:, 1:4]
    root_pos = np.stack([root_y[:, 0], -root_y[:, 2], root_y[:, 1]], axis=1)

    def wxyz(cols):
        q = frames[:, cols]
        return quat.normalize(q[:, [1, 2, 3, 0]])

    root_rot = quat.multiply(Y_UP_TO_Z_UP, wxyz(slice(4, 8)))
    joint_quats = []
    col = 8
    for joint in proxy.DEFAULT_JOINTS:
        if joint.dofs == 3:
            joint_quats.append(wxyz(slice(col, col + 4)))
            col += 4
        else:
            joint_quats.append(quat.from_axis_angle(REVOLUTE_AXIS, frames[:, col]))
            col += 1
    joint_rots = np.stack(joint_quats, axis=1)
    fps = 1.0 / float(durations[0])
    if abs(fps - round(fps)) < 1e-3 * fps:
        fps = float(round(fps))  # durations are stored rounded (0.016666 s is 60 fps)
    clip = Clip(
        name=path.stem.replace("humanoid3d_", ""),
        fps=fps,
        root_pos=root_pos,
        root_rot=quat.make_continuous(root_rot),
        joint_rots=quat.make_continuous(joint_rots),
        loop=str(data.get("Loop", "none")).lower() == "wrap",
    )
    times = np.concatenate([[0.0], np.cumsum(durations[:-1])])
    if np.max(np.abs(times - np.arange(clip.frames) / fps)) > 0.5 / fps:
        return _resample_irregular(clip, times)
    return clip


def _resample_irregular(clip: Clip, times: np.ndarray) -> Clip:
    uniform = np.arange(0.0, times[-1] + 1e-9, 1.0 / clip.fps)
    idx = np.clip(np.searchsorted(times, uniform, side="right") - 1, 0, len(times) - 2)
    a = (uniform - times[idx]) / np.maximum(times[idx + 1] - times[idx], 1e-9)
    pos = (1 - a)[:, None] * clip.root_pos[idx] + a[:, None] * clip.root_pos[idx + 1]
    rot = quat.slerp(clip.root_rot[idx], clip.root_rot[idx + 1], a)
    jr = quat.slerp(clip.joint_rots[idx], clip.joint_rots[idx + 1], np.repeat(a[:, None], clip.joint_rots.shape[1], 1))
    return replace(clip, root_pos=pos, root_rot=rot, joint_rots=jr)


def deepmimic_clip_path(name: str) -> Path:
    """Path of a DeepMimic clip (e.g. "walk"), as PyBullet's data ships them, kept in runtime/data."""
    path = Path(__file__).resolve().parent.parent / "data" / "motions" / f"humanoid3d_{name}.txt"
    if not path.exists():
        raise ClipError(f"no DeepMimic clip named {name!r}")
    return path


DEEPMIMIC_CLIPS = ("walk", "run", "jump", "kick", "punch", "dance_a", "dance_b", "spin",
                   "backflip", "cartwheel", "spinkick", "roll", "crawl", "getup_faceup", "getup_facedown")
