"""The reference a simulation tracks: centroidal motion, feet and contacts derived from any clip.

Why: the SRB controller reads the source as a centre of mass, a momentum-consistent orientation and
foot targets (plus per-frame flags: restful, still, ballistic), not as joint rotations; building
them once per clip keeps the step cheap (Reference.sample interpolates two packed tables).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..motion.contacts import ClipKinematics
from ..maths import lowpass, quat
from ..motion.clip import Clip, angular_velocity
from .rigid_body import Body, SIDES, kin_scale

ORIENTATION_PULL = 1.0   # 1/s: how fast the momentum-integrated orientation is pulled to the pelvis
BALLISTIC_STANCE = 0.25   # s: the longest push-off or landing absorption a flight dictates (a slower rise or sink is a choice)
TWO_FOOTED_WITHIN = 0.1   # s: a take-off or landing with both feet down this close to it is a jump's
REST_HIP_OFFSET = 0.08   # m (1.62 m body): hips at most this far from over the feet to rest
STILL_SPEED = 0.1        # m/s (1.62 m body): a centre of mass slower than this, both feet down, ...
STILL_ACCELERATION = 0.5  # m/s^2 (1.62 m body): ... and accelerating less: the body stands still
TRAVEL_WINDOW = 2.0       # s: travel is judged over this long, centred on the frame (a dance travels in bursts) ...
TRAVEL_SPEED = 0.5        # m/s (1.62 m body): ... the centre of mass covering at least this much ground ...
TRAVEL_STRAIGHT = 0.95    # ... along a path at least this straight (net over path length): walking or running somewhere
HELD_STANCE = 0.4         # s: the source on one foot alone this long is balancing on it (a run's stride or a landing passes over it)


@dataclass(frozen=True)
class Reference:
    clip: Clip
    kin: ClipKinematics
    com: np.ndarray           # (T, 3)
    com_vel: np.ndarray
    com_acc: np.ndarray
    rot: np.ndarray           # (T, 4) SRB orientation
    ang_vel: np.ndarray       # (T, 3) world
    ang_acc: np.ndarray
    momentum_rate: np.ndarray # (T, 3) dL/dt about the COM: the moment the contacts must supply
    root_offset: np.ndarray   # (T, 3) root position relative to the COM, SRB frame
    root_rel: np.ndarray      # (T, 4) rot^-1 * root rotation
    ankle: np.ndarray         # (T, 2, 3) ankle joint centres
    foot_rot: np.ndarray      # (T, 2, 4) foot link rotations
    contact: np.ndarray       # (T, 2) reference foot contact
    floor: float
    standing_com: float       # COM height above the floor when standing upright
    restful: np.ndarray       # (T,) frames where a tired character can stop and rest
    still: np.ndarray         # (T,) frames where the body stands still (slowing them changes nothing)
    ballistic: np.ndarray     # (T,) ground frames tied to a flight: its push-off and its landing
    travels: np.ndarray       # (T,) frames of steady travel (walking or running somewhere: travelling())
    support_reach: float      # largest horizontal COM-to-stance-ankle distance the clip itself uses
    alone_span: np.ndarray    # (T, 2) s: how long the stretch on this foot alone that each frame belongs to lasts (else 0)

    @property
    def duration(self) -> float:
        return self.clip.duration

    def index(self, phase: float) -> tuple[int, float]:
        x = min(max(phase * self.clip.fps, 0.0), self.clip.frames - 1.0)
        i = min(int(x), self.clip.frames - 2)
        return i, x - i

    def balancing(self, phase: float, foot: int) -> bool:
        """Whether the source balances on ``foot`` at ``phase``: on it alone for HELD_STANCE or longer."""
        return bool(self.alone_span[self.frame(phase), foot] >= HELD_STANCE)

    def frame(self, phase: float) -> int:
        """The clip frame nearest to ``phase`` (for per-frame flags: contact, restful, ballistic)."""
        i, a = self.index(phase)
        return i + (1 if a > 0.5 else 0)

    def sample(self, phase: float) -> "RefSample":
        """Everything the controller reads at ``phase``, from two packed tables (one lerp each)."""
        vec, quats = self._packed()
        i, a = self.index(phase)
        v = vec[i] + a * (vec[i + 1] - vec[i])
        q = quats[i] + a * (quats[i + 1] - quats[i])
        q /= np.sqrt((q * q).sum(axis=1))[:, None]
        return RefSample(v, q, self.contact[i + (1 if a > 0.5 else 0)])

    def _packed(self) -> tuple[np.ndarray, np.ndarray]:
        """The two tables sample() interpolates (built once): every vector field side by side,
        every quaternion field side by side."""
        tables = self.__dict__.get("_tables")
        if tables is None:
            vec = np.concatenate([self.com, self.com_vel, self.com_acc, self.ang_vel, self.momentum_rate,
                                  self.root_offset, self.ankle.reshape(-1, 6),
                                  self.contact.astype(np.float64),
                                  self.clip.joint_angular_velocities().reshape(self.clip.frames, -1)], axis=1)
            quats = np.concatenate([np.stack([self.rot, self.root_rel, self.foot_rot[:, 0], self.foot_rot[:, 1]],
                                             axis=1), quat.make_continuous(self.clip.joint_rots)], axis=1)
            tables = (vec, quats)
            object.__setattr__(self, "_tables", tables)
        return tables

    def samples(self, phases: np.ndarray) -> "RefSample":
        """sample() at many phases at once: every field gains a leading axis of len(phases)."""
        vec, quats = self._packed()
        phases = np.asarray(phases, dtype=np.float64)
        x = np.clip(phases * self.clip.fps, 0.0, self.clip.frames - 1.0)
        i = np.minimum(x.astype(np.int64), self.clip.frames - 2)
        a = x - i
        v = vec[i] + a[:, None] * (vec[i + 1] - vec[i])
        q = quats[i] + a[:, None, None] * (quats[i + 1] - quats[i])
        q /= np.sqrt((q * q).sum(axis=-1))[..., None]
        return RefSample(v, q, self.contact[i + (a > 0.5)], batch=True)

    def next_both_down(self, phase: float) -> float:
        """Phase of the next frame (from ``phase`` on) with both feet down; infinity if none."""
        table = self.__dict__.get("_both_ahead")
        if table is None:
            both = self.contact.all(axis=1)
            table = np.full(len(both) + 1, np.inf)
            for t in range(len(both) - 1, -1, -1):
                table[t] = t / self.clip.fps if both[t] else table[t + 1]
            object.__setattr__(self, "_both_ahead", table)
        i, a = self.index(phase)
        return float(table[i + (1 if a > 0 else 0)])

    def next_takeoff(self, phase: float, within: float, flight: float = 0.0) -> float | None:
        """Phase at which the next flight (neither foot down) of at least ``flight`` s begins, if
        within ``within`` s of ``phase``; None if none does."""
        i, _ = self.index(phase)
        stop = min(len(self.contact), i + 1 + int(math.ceil(within * self.clip.fps)))
        least = max(1, int(math.ceil(flight * self.clip.fps - 1e-9)))
        spans = self.__dict__.get("_flight_spans")
        if spans is None:
            spans = run_spans(~self.contact.any(axis=1), self.clip.fps)
            object.__setattr__(self, "_flight_spans", spans)
        later = np.flatnonzero(spans[i:stop] >= least / self.clip.fps)
        return None if later.size == 0 else (i + later[0]) / self.clip.fps

    def next_contact_start(self, side: int, phase: float) -> float | None:
        """Phase at which the foot's next reference stance begins (None if never)."""
        i, _ = self.index(phase)
        c = self.contact[:, side]
        later = np.flatnonzero(c[i + 1:] & ~c[i:-1])
        return None if later.size == 0 else (i + 1 + later[0]) / self.clip.fps


class RefSample:
    """Reference quantities at one phase (views into one interpolated vector)."""

    __slots__ = ("com", "com_vel", "com_acc", "ang_vel", "momentum_rate", "root_offset", "ankle",
                 "rot", "root_rel", "foot_rot", "joints", "joint_vel", "contact")

    def __init__(self, v: np.ndarray, q: np.ndarray, contact: np.ndarray, batch: bool = False):
        if batch:   # many phases (Reference.samples): the same layout behind a leading axis
            v, q = v.T, np.moveaxis(q, 0, -1)
        self.com, self.com_vel, self.com_acc = v[0:3], v[3:6], v[6:9]
        self.ang_vel, self.momentum_rate, self.root_offset = v[9:12], v[12:15], v[15:18]
        self.ankle = v[18:24].reshape((2, 3) + v.shape[1:])
        self.joint_vel = v[26:].reshape((-1, 3) + v.shape[1:])   # local angular velocity of every joint
        self.rot, self.root_rel, self.foot_rot, self.joints = q[0], q[1], q[2:4], q[4:]
        self.contact = contact
        if batch:
            for name in self.__slots__[:-1]:
                setattr(self, name, np.moveaxis(getattr(self, name), -1, 0))


def build_reference(clip: Clip, ck: ClipKinematics, body: Body) -> Reference:
    """Centroidal reference of a clip: COM, momentum-consistent orientation, feet, contacts."""
    dt = 1.0 / clip.fps
    com = ck.com
    com_vel = lowpass.derivative(com, clip.fps)
    com_acc = lowpass.derivative(com_vel, clip.fps)
    m = ck.link_mass
    link_vel = lowpass.derivative(ck.link_pos, clip.fps)
    link_w = angular_velocity(ck.link_rot, clip.fps, world=True)
    # Angular momentum about the COM: point masses plus each link's spin.
    r = ck.link_pos - com[:, None]
    L = np.einsum("l,tlk->tk", m, np.cross(r, link_vel - com_vel[:, None]))
    Rl = quat.to_matrix(ck.link_rot)
    L += np.einsum("tlij,lj,tlkj,tlk->ti", Rl, ck.link_inertia, Rl, link_w)
    # Composite inertia of each reference pose about its COM (world frame).
    I_ref = np.einsum("tlij,lj,tlkj->tik", Rl, ck.link_inertia, Rl)
    I_ref += np.einsum("l,tlij->tij", m, np.einsum("tlk,tlk->tl", r, r)[..., None, None] * np.eye(3)
                       - np.einsum("tli,tlj->tlij", r, r))
    # Orientation: integrate I_ref^-1 L (the body's average rotation that its momentum allows),
    # pulled towards the pelvis while a foot is on the ground (in the air nothing can pull).
    rot = np.empty((clip.frames, 4))
    rot[0] = clip.root_rot[0]
    pull = min(1.0, ORIENTATION_PULL * dt)
    grounded = ck.foot_contact.any(axis=1)
    # The per-frame increments do not depend on the integrated orientation: solve them all at
    # once (the same LAPACK solve per frame), then integrate on Python floats.  L as a stack of
    # one-column matrices: numpy 2 (Blender 5.1 on) reads a (T, 3) right-hand side as one matrix.
    step_rot = quat.from_rotvec(np.linalg.solve(I_ref[:-1], L[:-1, :, None])[..., 0] * dt).tolist()
    pelvis = clip.root_rot.tolist()
    grounded_list = grounded.tolist()
    q = rot[0].tolist()
    for t in range(clip.frames - 1):
        q = quat.normalize4(quat.multiply4(step_rot[t], q))
        if grounded_list[t]:
            q = quat.slerp4(q, pelvis[t + 1], pull)
        rot[t + 1] = q
    rot = quat.make_continuous(rot)
    ang_vel = angular_velocity(rot, clip.fps, world=True)
    ang_acc = lowpass.derivative(ang_vel, clip.fps)
    inv = quat.conjugate(rot)
    root_offset = quat.rotate(inv, clip.root_pos - com)
    root_rel = quat.multiply(inv, clip.root_rot)
    idx = [ck.link_names.index(f"{s}_ankle") for s in SIDES]
    ankle = ck.joint_pos[:, idx]
    both = ck.foot_contact.all(axis=1)
    upright = com[both, 2] if both.any() else com[:, 2]
    standing = float(np.percentile(upright, 90) - ck.floor_height)
    # Restful: both feet down, body upright, hips over the feet (little static leg torque).
    hips = ck.joint_pos[:, [ck.link_names.index(f"{s}_hip") for s in SIDES]].mean(axis=1)
    over_feet = np.linalg.norm((hips - ankle.mean(axis=1))[:, :2], axis=1) < REST_HIP_OFFSET * kin_scale(body)
    restful = both & (com[:, 2] - ck.floor_height >= 0.95 * standing) & over_feet
    ballistic = _ballistic_stance(ck.foot_contact, com_vel[:, 2], clip.fps)
    scale = kin_scale(body)
    still = (both & (np.linalg.norm(com_vel, axis=1) < STILL_SPEED * scale)
             & (np.linalg.norm(com_acc, axis=1) < STILL_ACCELERATION * scale))
    reach = np.linalg.norm((com[:, None, :2] - ankle[:, :, :2]), axis=2)          # (T, 2)
    reach = np.where(ck.foot_contact, reach, np.inf).min(axis=1)
    support_reach = float(reach[np.isfinite(reach)].max()) if np.isfinite(reach).any() else 0.5
    return Reference(
        clip=clip, kin=ck, com=com, com_vel=com_vel, com_acc=com_acc, rot=rot, ang_vel=ang_vel,
        ang_acc=ang_acc, momentum_rate=lowpass.derivative(L, clip.fps), root_offset=root_offset, root_rel=quat.make_continuous(root_rel),
        # PyBullet hands back link rotations with either sign: sampling between two frames of
        # opposite sign blended a foot through a half turn (tired takes, off-frame phases).
        ankle=ankle, foot_rot=quat.make_continuous(ck.link_rot[:, idx]), contact=ck.foot_contact,
        floor=ck.floor_height, standing_com=standing, restful=restful, still=still, ballistic=ballistic,
        travels=travelling(com, clip.fps, scale),
        support_reach=support_reach, alone_span=alone_spans(ck.foot_contact, clip.fps),
    )


def travelling(com: np.ndarray, fps: float, scale: float) -> np.ndarray:
    """Per frame, whether the body travels steadily there: over the TRAVEL_WINDOW centred on it
    the centre of mass covers TRAVEL_SPEED or more of ground along a nearly straight path
    (TRAVEL_STRAIGHT).  A walk or a run does; a dance that sways, turns or steps back and forth
    does not, nor does a move in place."""
    T = len(com)
    half = max(1, int(round(0.5 * TRAVEL_WINDOW * fps)))
    xy = com[:, :2]
    path = np.concatenate([[0.0], np.cumsum(np.sqrt((np.diff(xy, axis=0) ** 2).sum(axis=1)))])
    lo = np.clip(np.arange(T) - half, 0, T - 1)
    hi = np.clip(np.arange(T) + half, 0, T - 1)
    span = (hi - lo) / fps
    net = np.sqrt(((xy[hi] - xy[lo]) ** 2).sum(axis=1))
    walked = path[hi] - path[lo]
    return (span > 0.0) & (net >= TRAVEL_SPEED * scale * np.maximum(span, 1e-9)) & (net >= TRAVEL_STRAIGHT * walked)


def run_spans(mask: np.ndarray, fps: float) -> np.ndarray:
    """Per frame, how long in seconds the unbroken run of ``mask`` that the frame is part of
    lasts; 0 where ``mask`` is False."""
    span = np.zeros(len(mask))
    edges = np.flatnonzero(np.diff(np.concatenate([[0], np.asarray(mask).astype(np.int8), [0]])))
    for start, stop in zip(edges[::2], edges[1::2]):
        span[start:stop] = (stop - start) / fps
    return span


def alone_spans(contact: np.ndarray, fps: float) -> np.ndarray:
    """Per frame and foot, how long in seconds the unbroken stretch on that foot alone (the
    other one up) lasts that the frame is part of; 0 where the foot is not alone on the floor."""
    return np.stack([run_spans(contact[:, k] & ~contact[:, 1 - k], fps) for k in range(contact.shape[1])], axis=1)


def _ballistic_stance(contact: np.ndarray, com_vel_z: np.ndarray, fps: float) -> np.ndarray:
    """Ground frames whose timing a flight dictates: the push that launches it (the centre of
    mass rising into the take-off) and the landing that absorbs it (still falling after
    touchdown).

    Why: a tired body slows its ground phases, but a push played in slow motion launches
    nothing (its acceleration scales with the tempo squared) and a landing played slowly has to
    stop the body's full falling speed in a fraction of the distance.  Tired jumps vanished at
    60 % of the legs' capacity while the legs could still have jumped 80 % as high.  Here the
    clock runs at the source's rate, like in the air; the tempo shows in the stances between."""
    out = np.zeros(len(contact), dtype=bool)
    air = ~contact.any(axis=1)
    both = contact.all(axis=1)
    span = max(1, int(round(BALLISTIC_STANCE * fps)))
    feet_moment = max(1, int(round(TWO_FOOTED_WITHIN * fps)))
    for t in np.flatnonzero(air[1:] & ~air[:-1]) + 1:        # take-offs: push before them
        if not both[max(0, t - feet_moment):t].any():
            continue                                          # a hop or a running stride
        u = t - 1
        while u >= max(0, t - span) and not air[u] and com_vel_z[u] > 0.0:
            out[u] = True
            u -= 1
    for t in np.flatnonzero(~air[1:] & air[:-1]) + 1:        # touchdowns: absorb after them
        if not both[t:t + feet_moment].any():
            continue
        u = t
        while u < min(len(out), t + span) and not air[u] and com_vel_z[u] < 0.0:
            out[u] = True
            u += 1
    return out
