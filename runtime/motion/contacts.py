"""A clip on the proxy, engine-free: link frames, COM, feet and ground contacts from any engine's
forward kinematics (runtime.engines.pybullet.kinematics, runtime.engines.mujoco.kinematics).

Contacts are derived from geometry, not from clip names, so any clip works: a body part touches
the ground when its collision shape is within a tolerance of the ground (the clip's own floor
level, estimated from its lowest points), and a foot must also be nearly still to count as stance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..maths import lowpass, quat
from .clip import Clip

# Tolerances for a 1.62 m proxy; scaled with the proxy's height.
CONTACT_DISTANCE = 0.035    # m between collision shape and floor
FOOT_STILL_SPEED = 0.6      # m/s horizontal speed of a stance foot
STILL_FOOT_REACH = 2.0      # a still foot counts up to this many CONTACT_DISTANCEs (capture hover)
SLIDING_FOOT_REACH = 3.0    # ... a foot carrying a body that is not in free fall, even sliding
SUPPORTED_ACCELERATION = 0.5  # COM falling slower than this many g is being held up by something
# Corners of the sole in the foot link's frame (x forward, y up, z lateral in the URDF frame).
SOLE = np.array([[sx * proxy.FOOT_HALF_EXTENTS[0], -proxy.FOOT_HALF_EXTENTS[1], sz * proxy.FOOT_HALF_EXTENTS[2]]
                  for sx in (1, -1) for sz in (1, -1)])


@dataclass(frozen=True)
class ClipKinematics:
    """Per-frame kinematic quantities of a clip on the proxy."""
    link_names: tuple[str, ...]
    link_pos: np.ndarray       # (T, L, 3) link COM positions
    link_rot: np.ndarray       # (T, L, 4) link COM frame rotations
    joint_pos: np.ndarray      # (T, L, 3) link frame origins (the joint centres)
    link_mass: np.ndarray      # (L,)
    link_inertia: np.ndarray   # (L, 3) principal moments in the COM frame
    com: np.ndarray            # (T, 3) whole-body centre of mass
    sole: np.ndarray           # (T, 2, 4, 3) sole corners, right then left foot
    floor_height: float        # estimated ground level of the clip
    touching: np.ndarray       # (T, L) link within CONTACT_DISTANCE of the floor
    foot_contact: np.ndarray   # (T, 2) stance right, left (touching and nearly still)

    fps: float = 30.0

    def non_foot_touching(self) -> np.ndarray:
        """(T,) frames in which a link other than the feet touches the floor."""
        feet = [self.link_names.index(n) for n in proxy.FOOT_LINKS]
        return np.delete(self.touching, feet, axis=1).any(axis=1)

    def non_foot_contact_fraction(self, min_seconds: float = 0.1) -> float:
        """Fraction of frames in which something other than the feet rests on the floor (touches
        lasting under ``min_seconds``, like a shin brushing it in a run, do not count)."""
        return float(sustained(self.non_foot_touching(), max(1, int(round(min_seconds * self.fps)))).mean())


class ProxyKinematics:
    """The questions both engines' kinematic bodies answer, and the clip analysis built on them.

    Why here, engine-free: the floor, the contacts and the stance are read from link frames and
    distances to a plane; an engine only supplies those (``pose_frames``), so both engines' takes
    come from one analysis."""

    link_names: tuple[str, ...]
    link_mass: np.ndarray       # (L,)
    link_inertia: np.ndarray    # (L, 3) principal moments in the COM frame

    def __init__(self, height: float):
        self.height = height
        self.scale = height / proxy.DEFAULT_HEIGHT
        self._sole = SOLE * self.scale
        self._last_origins = None

    def close(self) -> None:
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def set_pose(self, root_pos, root_rot, joint_rots) -> None:
        """Pose the body (root position, root rotation, joint rotations J x 4)."""
        raise NotImplementedError

    def link_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """COM positions and COM-frame rotations of every link (of the pose last set)."""
        raise NotImplementedError

    def pose_frames(self, clip: Clip, below: float, span: float, link_pos: np.ndarray, link_rot: np.ndarray,
                    joint_pos: np.ndarray, above_plane: np.ndarray) -> None:
        """Fill, for every frame of ``clip``: link COM positions and rotations, joint centres, and
        each link's distance to the plane z = ``below`` (capped at ``span``: inf beyond)."""
        raise NotImplementedError

    def joint_positions(self) -> np.ndarray:
        """Link frame origins (joint centres) of the pose last read by link_frames()."""
        return self._last_origins

    def sole_corners(self, link_pos: np.ndarray, link_rot: np.ndarray) -> np.ndarray:
        """(2, 4, 3) world sole corners of the right and left foot for given link frames."""
        out = []
        for name in proxy.FOOT_LINKS:
            k = self.link_names.index(name)
            out.append(link_pos[k] + quat.rotate(np.broadcast_to(link_rot[k], (4, 4)), self._sole))
        return np.array(out)

    def analyse(self, clip: Clip) -> ClipKinematics:
        """Link frames, COM, soles, floor level and contacts for every frame of ``clip``."""
        T = clip.frames
        L = len(self.link_names)
        link_pos = np.empty((T, L, 3))
        link_rot = np.empty((T, L, 4))
        joint_pos = np.empty((T, L, 3))
        sole = np.empty((T, 2, 4, 3))
        # Each link's height above a plane well below the clip, measured in the same pass as the
        # link frames (the floor is found from them later; a plane's distances only shift).
        below = float(clip.root_pos[:, 2].min()) - 2.0 * self.scale
        span = float(np.ptp(clip.root_pos[:, 2])) + 4.0 * self.scale
        above_plane = np.empty((T, L))
        self.pose_frames(clip, below, span, link_pos, link_rot, joint_pos, above_plane)
        for k, name in enumerate(proxy.FOOT_LINKS):
            j = self.link_names.index(name)
            sole[:, k] = link_pos[:, j, None] + quat.rotate(link_rot[:, j, None], self._sole[None])
        com = np.einsum("tlk,l->tk", link_pos, self.link_mass) / self.link_mass.sum()
        # Floor: the level the feet return to.  A low percentile of the lowest sole point, robust
        # to clips whose ground is not at z = 0, to long flights and to frames that dip below it.
        lowest = sole[..., 2].min(axis=(1, 2))
        floor = float(np.percentile(lowest, 20))
        reach = CONTACT_DISTANCE * self.scale
        touching = above_plane - (floor - below) < reach
        # Feet: the sole near the floor and its lowest corner nearly still (a foot rolling over
        # heel or toe pivots about that corner while the sole's centre moves), or the sole right
        # on the floor, or still and hovering a little (captured feet often float a few cm).
        sole_z = sole[..., 2]
        clearance = sole_z.min(axis=2) - floor
        foot_low = clearance < reach
        corner_speed = np.linalg.norm(lowpass.derivative(sole[..., :2], clip.fps), axis=-1)
        pivot = sole_z.argmin(axis=2)[..., None]
        pivot_speed = np.take_along_axis(corner_speed, pivot, axis=2)[..., 0]
        still = pivot_speed < FOOT_STILL_SPEED * self.scale
        foot_contact = (clearance < 0.5 * reach) | (foot_low & still) | ((clearance < STILL_FOOT_REACH * reach) & still)
        flicker = max(1, int(round(clip.fps * 0.05)))
        foot_contact = _debounce(foot_contact, flicker)
        foot_contact = _debounce(_supported_flights(foot_contact, com[:, 2], clearance, clip.fps,
                                                    SLIDING_FOOT_REACH * reach), flicker)
        return ClipKinematics(self.link_names, link_pos, link_rot, joint_pos, self.link_mass, self.link_inertia,
                              com, sole, floor, touching, foot_contact, fps=clip.fps)


def straight_legs(ck) -> float:
    """Length (m) of the proxy's longer leg held straight: hip to knee to ankle."""
    names, jp = ck.link_names, ck.joint_pos[0]
    legs = []
    for side in ("right", "left"):
        hip, knee, ankle = (names.index(f"{side}_{j}") for j in ("hip", "knee", "ankle"))
        legs.append(float(np.linalg.norm(jp[knee] - jp[hip]) + np.linalg.norm(jp[ankle] - jp[knee])))
    return max(legs)


def sustained(mask: np.ndarray, min_frames: int) -> np.ndarray:
    """Keep only runs of True at least ``min_frames`` long."""
    out = np.zeros_like(mask)
    t = 0
    while t < len(mask):
        if mask[t]:
            u = t
            while u < len(mask) and mask[u]:
                u += 1
            if u - t >= min_frames:
                out[t:u] = True
            t = u
        else:
            t += 1
    return out


def _supported_flights(contact: np.ndarray, com_z: np.ndarray, clearance: np.ndarray, fps: float,
                       reach: float) -> np.ndarray:
    """Give frames that look airborne but whose COM is not falling freely to the lower foot.

    Why: a captured dancer glides and pivots on the floor (feet sliding at 1-2 m/s, hovering a
    few cm), which the still-foot test reads as flight; the simulation would then drop the body
    for half a second.  Newton decides instead: with no foot down, the COM must fall at g.  Where
    the reference's COM is held up (vertical acceleration above -SUPPORTED_ACCELERATION g,
    smoothed over 0.1 s) and a foot is within ``reach`` of the floor, that foot carries it."""
    airborne = ~contact.any(axis=1)
    if not airborne.any():
        return contact
    acc = lowpass.derivative(lowpass.derivative(com_z, fps), fps)
    width = max(1, int(round(0.1 * fps)))
    if width > 1 and len(acc) >= width:
        acc = np.convolve(np.pad(acc, (width // 2, width - 1 - width // 2), mode="edge"),
                          np.full(width, 1.0 / width), mode="valid")
    held = airborne & (acc > -SUPPORTED_ACCELERATION * 9.81)
    lower = clearance.argmin(axis=1)
    near = clearance[np.arange(len(lower)), lower] < reach
    out = contact.copy()
    frames = np.flatnonzero(held & near)
    out[frames, lower[frames]] = True
    return out


def _debounce(contact: np.ndarray, min_frames: int) -> np.ndarray:
    """Remove contact flickers shorter than ``min_frames`` (both on and off runs)."""
    out = contact.copy()
    for col in range(out.shape[1]):
        for value in (True, False):
            x = out[:, col]
            t = 0
            while t < len(x):
                u = t
                while u < len(x) and x[u] == x[t]:
                    u += 1
                if x[t] == value and (u - t) < min_frames and t > 0 and u < len(x):
                    x[t:u] = not value
                t = u
    return out
