"""SRB mode: the character as one rigid body on fatigue-limited legs (seed: "Adaptive Tracking of
a Single-Rigid-Body Character").

Why: a full articulated humanoid without a learned controller cannot keep its balance; a single
rigid body (the proxy's mass and rest-pose composite inertia) with foot contacts can, because
a small QP finds the contact forces that best realise the desired centroidal acceleration.

Fatigue acts physically: the contact forces map to hip, knee and ankle torques through the
legs' geometry at the current pose (the moment of each corner force about each joint: the
Jacobian transpose for a point force), those torques drive the leg DoFs' 3CC models, and the
fatigued bounds |tau_d| <= RC_d * tau_max_d are linear constraints on the forces in the QP.  A
tired leg cannot push as hard: take-off is weaker, jumps are lower, the body sinks.

Feet follow the reference shifted by a per-foot offset that is constant in stance and blends,
during swing, to a Raibert-style landing correction; a foot that reaches the floor early lands
early (the reference phase skips ahead).  Tempo: the reference phase rate drops as the legs'
residual capacity drops (on the ground only: flights are ballistic), and the character rests
(phase frozen) until it recovers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import quadprog

from . import lowpass, proxy, quat, repeatable
from .clip import Y_UP_TO_Z_UP, Clip, angular_velocity
from .kinematics import ClipKinematics, Kinematics
from .limbs import LIMB_JOINTS

GRAVITY = np.array([0.0, 0.0, -9.81])
_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])
SIDES = ("right", "left")


# ---------------------------------------------------------------------------------------------
# Body: mass, inertia and leg geometry of the proxy at its rest pose
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Body:
    mass: float
    inertia: np.ndarray          # (3, 3) composite inertia about the COM, SRB (root) frame
    inertia_inv: np.ndarray
    hip: np.ndarray              # (2, 3) hip joint centres relative to the root, root frame
    thigh: float                 # hip -> knee length
    shin: float                  # knee -> ankle length
    sole: np.ndarray             # (4, 3) sole corners relative to the ankle, foot link frame
    leg_mass: np.ndarray         # (3,) thigh, shin, foot mass
    leg_dofs: np.ndarray         # (2, 7) DoF indices: hip x3, knee, ankle x3 (right, left)
    tau_max: np.ndarray          # (DoF,)
    height: float

    @property
    def sole_drop(self) -> float:
        """Height of the sole below the ankle centre (foot level)."""
        return float(self.sole[:, 1].min())

    @property
    def sole_centre(self) -> np.ndarray:
        """Centre of the sole relative to the ankle, foot link frame."""
        return self.sole.mean(axis=0)

    @property
    def tau_max_inv(self) -> np.ndarray:
        return 1.0 / self.tau_max

    def inertia_world(self, R: np.ndarray) -> np.ndarray:
        return R @ self.inertia @ R.T


def body_from_proxy(kin: Kinematics, mass: float = proxy.DEFAULT_MASS) -> Body:
    """Measure the SRB and leg geometry on the proxy in its rest pose (scaled to its height)."""
    root_rot = Y_UP_TO_Z_UP
    kin.set_pose([0.0, 0.0, 1.0], root_rot, np.tile(quat.IDENTITY, (len(proxy.DEFAULT_JOINTS), 1)))
    com_pos, com_rot = kin.link_frames()
    origins = kin.joint_positions()
    m = kin.link_mass
    com = (m[:, None] * com_pos).sum(0) / m.sum()
    inertia = np.zeros((3, 3))
    for k in range(len(m)):
        R = quat.to_matrix(com_rot[k])
        r = com_pos[k] - com
        inertia += R @ np.diag(kin.link_inertia[k]) @ R.T + m[k] * (r @ r * np.eye(3) - np.outer(r, r))
    scale = mass / m.sum()
    R_root = quat.to_matrix(root_rot)
    idx = {n: i for i, n in enumerate(kin.link_names)}
    hips = np.array([R_root.T @ (origins[idx[f"{s}_hip"]] - [0, 0, 1.0]) for s in SIDES])
    thigh = float(np.linalg.norm(origins[idx["right_knee"]] - origins[idx["right_hip"]]))
    shin = float(np.linalg.norm(origins[idx["right_ankle"]] - origins[idx["right_knee"]]))
    # Sole corners in the foot link frame (identity joint rotations: link frame = root frame).
    ankle = origins[idx["right_ankle"]]
    sole_world = kin.sole_corners(com_pos, com_rot)[0]
    sole = (sole_world - ankle) @ R_root  # world -> link frame (R_root^T applied to rows)
    leg_mass = np.array([m[idx["right_hip"]], m[idx["right_knee"]], m[idx["right_ankle"]]]) * scale
    offsets = np.cumsum([0] + [j.dofs for j in proxy.DEFAULT_JOINTS])
    jidx = {j.name: k for k, j in enumerate(proxy.DEFAULT_JOINTS)}
    leg_dofs = []
    for s in SIDES:
        h, kn, an = (offsets[jidx[f"{s}_{n}"]] for n in ("hip", "knee", "ankle"))
        leg_dofs.append([h, h + 1, h + 2, kn, an, an + 1, an + 2])
    return Body(
        mass=float(mass), inertia=R_root.T @ inertia @ R_root * scale,
        inertia_inv=np.linalg.inv(R_root.T @ inertia @ R_root * scale), hip=hips, thigh=thigh, shin=shin,
        sole=sole, leg_mass=leg_mass, leg_dofs=np.array(leg_dofs),
        tau_max=np.array(proxy.dof_tau_max(scale=mass / proxy.DEFAULT_MASS * kin.scale)),
        height=kin.height,
    )


# ---------------------------------------------------------------------------------------------
# Reference: centroidal motion, feet and contacts derived from any clip
# ---------------------------------------------------------------------------------------------
ORIENTATION_PULL = 1.0   # 1/s: how fast the momentum-integrated orientation is pulled to the pelvis


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
    support_reach: float      # largest horizontal COM-to-stance-ankle distance the clip itself uses

    @property
    def duration(self) -> float:
        return self.clip.duration

    def index(self, phase: float) -> tuple[int, float]:
        x = min(max(phase * self.clip.fps, 0.0), self.clip.frames - 1.0)
        i = min(int(x), self.clip.frames - 2)
        return i, x - i

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
    # once (the same LAPACK solve per frame), then integrate on Python floats.
    step_rot = quat.from_rotvec(np.linalg.solve(I_ref[:-1], L[:-1]) * dt).tolist()
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
        support_reach=support_reach,
    )


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


BALLISTIC_STANCE = 0.25   # s: the longest push-off or landing absorption a flight dictates (a slower rise or sink is a choice)
TWO_FOOTED_WITHIN = 0.1   # s: a take-off or landing with both feet down this close to it is a jump's
ECCENTRIC_STRENGTH = 1.3  # a leg lowering the body holds this much more than it can push (see _yielding_strength)
YIELD_SPEED = 0.1         # m/s (1.62 m body) of sinking at which a stance counts as fully yielding
MAX_EFFORT_ECONOMY = 5.0   # beyond this a tired limb flops at the first sign of fatigue
SHORT_LIFT = 0.1           # s: a foot lifted this briefly is not re-placed; twice as long, fully
MAX_FLIGHT_RATE = 3.0      # the source's flight plays at most this much faster when the body lands sooner
FLIGHT_RATE_SLACK = 0.05   # ... and only when it lands more than this much sooner (fresh flights keep time)
FLIGHT_TIME_SLACK = 0.03   # s: ... and by more than this (near touchdown both times are tiny)
LANDING_TURN_DECAY = 0.3    # s: after a short flight the body turns onto the source's orientation this fast
LANDING_SHIFT_DECAY = 1.0   # s (with a foot free): after a short landing the body drifts back onto the source's path this fast
LIMB_LOAD_SMOOTHING = 0.25  # s: the load a tired limb yields to is averaged this long (motor spikes)
MAX_GIVE_RATE = 0.5        # rad/s: how fast a tired joint's yield can change
MAX_GIVE = 0.5             # rad (about 30 deg): the most a tired joint yields to its load (a hanging arm)
MAX_KNEE_GIVE = 0.25       # rad (about 15 deg): ... a knee under the body (deeper costs it more, not less)
MAX_UPRIGHT_GIVE = 0.25    # rad: ... a trunk or neck carrying what is above it (likewise)
UPRIGHT_JOINTS = ("chest", "neck")
CAPTURE_SLACK = 0.05      # m (1.62 m body): capture point ahead of the slowed motion's before the tempo gives way
REST_HIP_OFFSET = 0.08   # m (1.62 m body): hips at most this far from over the feet to rest
REST_ANKLE_EFFORT = 0.5  # a resting body stands no further ahead of its ankles than costs them this share of what they have left
REST_WAIT = 1.0          # s a tired body waits for a restful moment before resting where it can
STILL_SPEED = 0.1        # m/s (1.62 m body): a centre of mass slower than this, both feet down, ...
STILL_ACCELERATION = 0.5  # m/s^2 (1.62 m body): ... and accelerating less: the body stands still
BALANCE_MARGIN = 0.25    # m (1.62 m body) beyond the clip's own COM-to-foot reach
LOST_BALANCE_TIME = 0.25 # s off balance before it counts as a fall
CARRY_SINKING = 0.04     # m (1.62 m body): a body this far below its target on its feet (smoothed) ...
CARRY_SMOOTHING = 0.5    # s: ... over about this long, is not carried by its legs: it rests
CARRY_RISE = 0.3         # m/s (1.62 m body): ... not counting while its target rises faster than this
STOP_AHEAD = 0.3         # s of source: a rest due this long before both feet come down stops the body where it is
CATCH_TIME = 0.25        # s: a foot put down to stop takes this long to reach the floor
CATCH_REACH = 0.5        # m (1.62 m body): ... and lands at most this far from under its hip
CLOSE_SPREAD = 0.15      # m (1.62 m body): a resting foot further than this from beside the other steps in
CLOSE_SETTLE = 0.5       # s: ... once the body has rested this long ...
CLOSE_STILL = 0.1        # m/s (1.62 m body): ... and its centre of mass moves slower than this ...
CLOSE_EFFORT = 0.8       # ... onto a leg that stands alone on at most this share of what each of its joints has left
CLOSE_SHIFT_TIME = 0.4   # s: the weight goes onto the staying foot (and back between both feet after)
CLOSE_STEP_TIME = 0.5    # s: the closing step itself
CLOSE_STEP_LIFT = 0.05   # m (1.62 m body): how high the stepping foot clears the floor


@dataclass
class _ClosingStep:
    """A rest's closing step (see SrbSimulator._plan_closing_step): the foot that steps in, where
    it lands (world ankle), and how far it has got."""
    foot: int
    anchor: np.ndarray
    began: float                  # s: the weight started onto the staying foot
    start_xy: np.ndarray          # where the centre of mass stood then
    lifted: tuple | None = None   # (world ankle at the lift, time)
    landed: float | None = None   # s: the foot came down beside the other

    def settled(self, time: float) -> bool:
        """The body has moved back between both feet (CLOSE_SHIFT_TIME after the landing)."""
        return self.landed is not None and time - self.landed >= CLOSE_SHIFT_TIME


def kin_scale(body: "Body") -> float:
    return body.height / proxy.DEFAULT_HEIGHT


# ---------------------------------------------------------------------------------------------
# The QP: contact forces that best realise the desired centroidal acceleration
# ---------------------------------------------------------------------------------------------
@dataclass
class QpSettings:
    friction: float = 0.8
    angular_weight: float = 0.05     # weight of angular vs linear acceleration error
    regulariser: float = 1e-6        # on forces (N^2 scaled): keeps the QP strictly convex
    max_normal_bw: float = 6.0       # per-foot cap on the normal force, body weights
    effort_weight: float = 0.05      # weight of sum((tau / (RC*tau_max))^2) against tracking


_FRICTION_CACHE: dict[tuple[int, float, float], tuple[np.ndarray, np.ndarray]] = {}


def _friction_constraints(n: int, mu: float, max_normal: float) -> tuple[np.ndarray, np.ndarray]:
    """Columns C and bounds b of C^T f >= b: pyramid |f_t| <= mu f_n, 0 <= f_n <= max_normal."""
    key = (n, mu, max_normal)
    if key not in _FRICTION_CACHE:
        rows, lows = [], []
        for c in range(n):
            for row, low in (((0, 0, 1), 0.0), ((-1, 0, mu), 0.0), ((1, 0, mu), 0.0),
                             ((0, -1, mu), 0.0), ((0, 1, mu), 0.0), ((0, 0, -1), -max_normal)):
                v = np.zeros(3 * n)
                v[3 * c:3 * c + 3] = row
                rows.append(v)
                lows.append(low)
        _FRICTION_CACHE[key] = (np.array(rows).T.copy(), np.array(lows))
    return _FRICTION_CACHE[key]


def solve_contact_forces(body: Body, com, rot_matrix, acc_des, moment_des, corners,
                         torque_rows=None, torque_bounds=None, settings: QpSettings = QpSettings(),
                         effort_scale=None):
    """Corner forces (n, 3) minimising the error to the desired COM acceleration and moment about
    the COM (both weighted in acceleration units) within a friction pyramid.

    ``torque_rows`` (k, 3n) and ``torque_bounds`` (k, 2) add lo <= rows @ f <= hi (fatigue), and
    an effort cost sum((effort_scale * torque)^2) (see _leg_effort).
    """
    n = len(corners)
    if n == 0:
        return np.zeros((0, 3))
    r = (corners - com).T
    A = _wrench_template(n).copy()
    A[3, 1::3] = -r[2]
    A[3, 2::3] = r[1]
    A[4, 0::3] = r[2]
    A[4, 2::3] = -r[0]
    A[5, 0::3] = -r[1]
    A[5, 1::3] = r[0]
    b = np.empty(6)
    b[:3] = body.mass * (acc_des - GRAVITY)
    b[3:] = moment_des
    # Residual in acceleration units: linear rows / m, angular rows through I^-1.
    Minv = np.zeros((6, 6))
    Minv[0, 0] = Minv[1, 1] = Minv[2, 2] = 1.0 / body.mass
    Minv[3:, 3:] = rot_matrix @ body.inertia_inv @ rot_matrix.T * math.sqrt(settings.angular_weight)
    MA = Minv @ A
    Mb = Minv @ b
    G = MA.T @ MA
    G.ravel()[::3 * n + 1] += settings.regulariser     # the diagonal (G is a fresh C-order array)
    a = MA.T @ Mb
    C, lows = _friction_constraints(n, settings.friction, settings.max_normal_bw * body.mass * 9.81 / 4)
    if torque_rows is not None and len(torque_rows):
        if effort_scale is not None:
            scaled = torque_rows * effort_scale[:, None]
            G += settings.effort_weight * (scaled.T @ scaled)
        C = np.hstack([C, torque_rows.T, -torque_rows.T])
        lows = np.concatenate([lows, torque_bounds[:, 0], -torque_bounds[:, 1]])
    try:
        f = quadprog.solve_qp(G, a, C, lows, 0)[0]
    except ValueError:
        # Infeasible (cannot happen while the bounds admit f = 0): no force this step.
        f = np.zeros(3 * n)
    return f.reshape(n, 3)


_WRENCH_TEMPLATES: dict[int, np.ndarray] = {}


def _wrench_template(n: int) -> np.ndarray:
    """(6, 3n) wrench map of n point forces with the force rows filled (the moment rows are zero)."""
    A = _WRENCH_TEMPLATES.get(n)
    if A is None:
        A = np.zeros((6, 3 * n))
        A[0, 0::3] = A[1, 1::3] = A[2, 2::3] = 1.0
        _WRENCH_TEMPLATES[n] = A
    return A


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last axis (np.cross costs ~10x more on tiny arrays); broadcasts."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    np.multiply(a1, b2, out=out[..., 0])
    out[..., 0] -= a2 * b1
    np.multiply(a2, b0, out=out[..., 1])
    out[..., 1] -= a0 * b2
    np.multiply(a0, b1, out=out[..., 2])
    out[..., 2] -= a1 * b0
    return out


def _cross3(a, b) -> np.ndarray:
    """a x b of two 3-vectors on Python floats (the same products and differences as _cross)."""
    a0, a1, a2 = a.tolist() if isinstance(a, np.ndarray) else a
    b0, b1, b2 = b.tolist() if isinstance(b, np.ndarray) else b
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def _cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """_cross of two (n, 3) arrays on Python floats (faster for a few rows, same bits)."""
    return np.array([(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
                     for (a0, a1, a2), (b0, b1, b2) in zip(a.tolist(), b.tolist())]).reshape(-1, 3)


def _qmat(q) -> np.ndarray:
    """Rotation matrix of one unit quaternion (x, y, z, w), on Python floats for speed."""
    x, y, z, w = q.tolist() if isinstance(q, np.ndarray) else (float(c) for c in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


# ---------------------------------------------------------------------------------------------
# Legs: two-link IK and the joint torques of the contact forces
# ---------------------------------------------------------------------------------------------
def knee_position(hip: np.ndarray, ankle: np.ndarray, forward: np.ndarray, thigh: float, shin: float) -> np.ndarray:
    """Knee centre of a two-link leg bending forward (towards ``forward``)."""
    # Element-wise arithmetic on Python floats (the same operations as on arrays); the dot
    # products stay numpy's (BLAS) so the results are the same bits as the vectorised form.
    h0, h1, h2 = hip.tolist()
    a0, a1, a2 = ankle.tolist()
    d = np.array((a0 - h0, a1 - h1, a2 - h2))
    norm = math.sqrt(d.dot(d))          # == np.linalg.norm(d) (same dot, same sqrt), cheaper
    dist = min(max(norm, 1e-6), thigh + shin - 1e-9)
    scale = max(norm, 1e-9)
    d0, d1, d2 = d.tolist()
    u = np.array((d0 / scale, d1 / scale, d2 / scale))
    along = (thigh ** 2 - shin ** 2 + dist ** 2) / (2 * dist)
    h = math.sqrt(max(thigh ** 2 - along ** 2, 0.0))
    fu = float(forward @ u)
    u0, u1, u2 = u.tolist()
    f0, f1, f2 = forward.tolist()
    bend = np.array((f0 - fu * u0, f1 - fu * u1, f2 - fu * u2))
    nb = math.sqrt(bend.dot(bend))
    if nb > 1e-9:
        b0, b1, b2 = bend.tolist()
        b0, b1, b2 = b0 / nb, b1 / nb, b2 / nb
    else:
        b0, b1, b2 = 1.0, 0.0, 0.0
    return np.array((h0 + along * u0 + h * b0, h1 + along * u1 + h * b1, h2 + along * u2 + h * b2))


def leg_torque_rows(joints: list[np.ndarray], frames: list[np.ndarray], corners: np.ndarray) -> np.ndarray:
    """(7, 3n) rows mapping corner forces to hip(3), knee(1), ankle(3) torques of one leg.

    The torque of force f at point x about joint o along axis u is u . ((x - o) x f)
    = f . (u x (x - o)).  ``frames`` give the axes: hip and ankle 3x3 (columns), knee its axis.
    """
    hip, knee, ankle = (np.asarray(j, dtype=np.float64).tolist() for j in joints)
    # On Python floats: the same products and differences as the vectorised
    # _cross(axes, corners - origins), at a fraction of the cost for 7 x 4 points.
    hip_axes = list(zip(*np.asarray(frames[0], dtype=np.float64).tolist()))       # columns
    ankle_axes = list(zip(*np.asarray(frames[2], dtype=np.float64).tolist()))
    axes = hip_axes + [tuple(np.asarray(frames[1], dtype=np.float64).tolist())] + ankle_axes
    origins = (hip, hip, hip, knee, ankle, ankle, ankle)
    points = np.asarray(corners, dtype=np.float64).tolist()
    rows = []
    for (a0, a1, a2), (o0, o1, o2) in zip(axes, origins):
        row = []
        for c0, c1, c2 in points:
            l0, l1, l2 = c0 - o0, c1 - o1, c2 - o2
            row += (a1 * l2 - a2 * l1, a2 * l0 - a0 * l2, a0 * l1 - a1 * l0)
        rows.append(row)
    return np.array(rows).reshape(7, 3 * len(points))


def stance_leg_rows(body: "Body", k: int, root_pos: np.ndarray, root_R: np.ndarray, ankle: np.ndarray,
                    foot_R: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """leg_torque_rows of leg ``k`` standing on ``corners``: hip from the root, knee where the
    leg's IK puts it (its axis normal to the leg's plane; the root's lateral axis if straight)."""
    hip = root_pos + root_R @ body.hip[k]
    knee = knee_position(hip, ankle, root_R[:, 0], body.thigh, body.shin)
    knee_axis = _cross3(knee - hip, ankle - knee)
    norm = math.sqrt(knee_axis @ knee_axis)
    knee_axis = knee_axis / norm if norm > 1e-9 else root_R[:, 1]
    return leg_torque_rows([hip, knee, ankle], [root_R, knee_axis, foot_R], corners)


_EYE3 = np.eye(3)
KNEE_AXIS = np.array([0.0, 0.0, 1.0])   # revolute axis of the knee in its link frame
LEG_DOWN = np.array([0.0, -1.0, 0.0])   # thigh and shin direction in their link frames (URDF Y-up)


def _mv(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """M @ v over leading axes ((..., 3, 3) by (..., 3)), as element-wise products and sums (no
    BLAS kernel whose choice could change the last bit)."""
    return M[..., 0] * v[..., 0, None] + M[..., 1] * v[..., 1, None] + M[..., 2] * v[..., 2, None]


def _mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B over leading axes ((..., 3, 3) each), element-wise like _mv."""
    return (A[..., :, 0, None] * B[..., None, 0, :] + A[..., :, 1, None] * B[..., None, 1, :]
            + A[..., :, 2, None] * B[..., None, 2, :])


def _mtm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A^T @ B over leading axes."""
    return _mm(np.swapaxes(A, -1, -2), B)


def leg_ik(body: Body, side: int, root_pos, root_R, q_hip_ref, ankle_target, foot_R_target):
    """Hip, knee angle and ankle local rotation putting the ankle at ``ankle_target`` with the foot
    oriented ``foot_R_target``.  The knee angle follows from the hip-ankle distance; the hip keeps
    the reference's twist and knee plane and swings minimally onto the target.  Vectorised over
    leading axes (one pose or a whole take's frames)."""
    root_R = np.asarray(root_R, dtype=np.float64)
    hip = np.asarray(root_pos, dtype=np.float64) + _mv(root_R, body.hip[side])
    to_target = np.asarray(ankle_target, dtype=np.float64) - hip
    l1, l2 = body.thigh, body.shin
    d = np.clip(np.sqrt((to_target * to_target).sum(axis=-1)), abs(l1 - l2) + 1e-6, l1 + l2 - 1e-6)
    interior = repeatable.arccos(np.clip((l1 * l1 + l2 * l2 - d * d) / (2 * l1 * l2), -1.0, 1.0))
    knee = -(np.pi - interior)                       # DeepMimic knees flex to negative angles
    W_hip_ref = _mm(root_R, quat.to_matrix(q_hip_ref))
    c, s_ = repeatable.cos(knee), repeatable.sin(knee)
    zero, one = np.zeros_like(c), np.ones_like(c)
    Rk = np.stack([np.stack([c, -s_, zero], -1), np.stack([s_, c, zero], -1),
                   np.stack([zero, zero, one], -1)], -2)   # about the knee's local z
    shin = l2 * Rk[..., :, 1] * LEG_DOWN[1]          # Rk @ (l2 * LEG_DOWN): LEG_DOWN is -y
    ankle_now = _mv(W_hip_ref, shin + l1 * LEG_DOWN)
    W_hip = _mm(_rotation_matrices_between(ankle_now, to_target), W_hip_ref)
    q_hip = _matrices_to_quats(_mtm(root_R, W_hip))
    q_ankle = _matrices_to_quats(_mtm(_mm(W_hip, Rk), np.asarray(foot_R_target, dtype=np.float64)))
    return q_hip, knee, q_ankle


def leg_ik_one(body: Body, side: int, root_pos, root_R, q_hip_ref, ankle_target, foot_R_target):
    """leg_ik for one pose on Python floats (about ten times faster than the vectorised form on a
    single pose: torque mode asks for one pose every step)."""
    hip = root_pos + root_R @ body.hip[side]
    to_target = ankle_target - hip
    d = float(np.sqrt(to_target @ to_target))
    l1, l2 = body.thigh, body.shin
    d = min(max(d, abs(l1 - l2) + 1e-6), l1 + l2 - 1e-6)
    # numpy's arccos (its bits differ from math.acos); math.cos / math.sin match numpy's.
    interior = float(repeatable.arccos(min(max((l1 * l1 + l2 * l2 - d * d) / (2 * l1 * l2), -1.0), 1.0)))
    knee = -(np.pi - interior)                       # DeepMimic knees flex to negative angles
    W_hip_ref = root_R @ _qmat(q_hip_ref)
    c, s_ = math.cos(knee), math.sin(knee)
    Rk = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])   # about the knee's local z
    ankle_now = W_hip_ref @ (l1 * LEG_DOWN + Rk @ (l2 * LEG_DOWN))
    W_hip = _rotation_matrix_between(ankle_now, to_target) @ W_hip_ref
    q_hip = _matrix_to_quat(root_R.T @ W_hip)
    q_ankle = _matrix_to_quat((W_hip @ Rk).T @ foot_R_target)
    return q_hip, knee, q_ankle


def _rotation_matrix_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Matrix of the minimal rotation taking direction a to direction b (Rodrigues)."""
    a = a / math.sqrt(a @ a)
    b = b / math.sqrt(b @ b)
    v0, v1, v2 = _cross3(a, b).tolist()
    c = float(a @ b)
    if c < -0.999999:
        return _qmat(_rotation_between(a, b))
    K = np.array([[0.0, -v2, v1], [v2, 0.0, -v0], [-v1, v0, 0.0]])   # _skew(v)
    return _EYE3 + K + K @ K * (1.0 / (1.0 + c))


def _rotation_matrices_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Matrices of the minimal rotations taking directions a to directions b (Rodrigues), over
    leading axes."""
    a = a / np.sqrt((a * a).sum(axis=-1))[..., None]
    b = b / np.sqrt((b * b).sum(axis=-1))[..., None]
    v = _cross(a, b)
    c = (a * b).sum(axis=-1)
    zero = np.zeros_like(c)
    K = np.stack([np.stack([zero, -v[..., 2], v[..., 1]], -1), np.stack([v[..., 2], zero, -v[..., 0]], -1),
                  np.stack([-v[..., 1], v[..., 0], zero], -1)], -2)
    opposite = c < -0.999999
    out = _EYE3 + K + _mm(K, K) * (1.0 / np.where(opposite, 1.0, 1.0 + c))[..., None, None]
    for i in np.ndindex(opposite.shape):   # half turns: any axis normal to a
        if opposite[i]:
            out[i] = _qmat(_rotation_between(a[i], b[i]))
    return out


def _matrices_to_quats(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (x, y, z, w) of rotation matrices over leading axes (Shepperd's method:
    each from its largest of trace and diagonal, so no division by a small number)."""
    r00, r11, r22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    tr = r00 + r11 + r22
    case = np.where(tr > 0, 0, np.where((r00 > r11) & (r00 > r22), 1, np.where(r11 > r22, 2, 3)))
    radicand = np.choose(case, [tr + 1.0, 1.0 + r00 - r11 - r22, 1.0 + r11 - r00 - r22, 1.0 + r22 - r00 - r11])
    s = 2.0 * np.sqrt(np.maximum(radicand, 1e-300))
    d21, d02, d10 = R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]
    s01, s02, s12 = R[..., 0, 1] + R[..., 1, 0], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1]
    quarter = 0.25 * s
    q = np.stack([
        np.choose(case, [d21 / s, quarter, s01 / s, s02 / s]),
        np.choose(case, [d02 / s, s01 / s, quarter, s12 / s]),
        np.choose(case, [d10 / s, s02 / s, s12 / s, quarter]),
        np.choose(case, [quarter, d21 / s, d02 / s, d10 / s]),
    ], axis=-1)
    return q / np.sqrt((q * q).sum(axis=-1))[..., None]


def _matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method)."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()
    tr = r00 + r11 + r22
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [(r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s, 0.25 * s]
    elif r00 > r11 and r00 > r22:
        s = 2.0 * math.sqrt(1.0 + r00 - r11 - r22)
        q = [0.25 * s, (r01 + r10) / s, (r02 + r20) / s, (r21 - r12) / s]
    elif r11 > r22:
        s = 2.0 * math.sqrt(1.0 + r11 - r00 - r22)
        q = [(r01 + r10) / s, 0.25 * s, (r12 + r21) / s, (r02 - r20) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r22 - r00 - r11)
        q = [(r02 + r20) / s, (r12 + r21) / s, 0.25 * s, (r10 - r01) / s]
    q = np.array(q)
    return q / math.sqrt(q.dot(q))     # == q / np.linalg.norm(q)

def _rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quaternion of the minimal rotation taking direction a to direction b."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    c = np.cross(a, b)
    d = float(a @ b)
    if d < -0.999999:
        axis = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0.0, 1.0, 0.0])
        return quat.from_axis_angle(axis, np.pi)
    q = np.array([c[0], c[1], c[2], 1.0 + d])
    return q / np.linalg.norm(q)


# ---------------------------------------------------------------------------------------------
# The simulation loop
# ---------------------------------------------------------------------------------------------
@dataclass
class SrbSettings:
    rate: float = 60.0            # Hz, SRB dynamics and QP
    kp: float = 120.0             # 1/s^2, COM position gain
    kd: float = 35.0              # 1/s, COM velocity gain
    kp_rot: float = 40.0
    kd_rot: float = 12.6
    raibert_kp: float = 1.0       # landing correction per metre of COM error
    raibert_kv: float = 0.1       # ... per m/s of COM velocity error
    full_tempo_rc: float = 0.9    # legs' residual capacity above which the tempo is unchanged
    rest_rc: float = 0.35         # ... below which the character stops to rest where it can
    exhausted_rc: float = 0.2     # ... below which it stops as soon as both feet are down
    resume_rc: float = 0.7        # ... it resumes once every leg DoF is back above this
    min_tempo: float = 0.35
    rest_stall: float = 1.5       # s without recovery (RC +0.01) after which a rest ends anyway
    min_motion_between_rests: float = 0.5   # s of source motion before the next rest
    early_landing_window: float = 0.35   # s: a swing foot touching down this early lands
    effort_economy: float = 1.0   # rad: how far a tired joint (limbs; knees under the body) yields per unit of load (0: never, at most MAX_EFFORT_ECONOMY)
    contact_height: float = 0.02  # m (1.62 m body): sole corners this close to the floor carry load
    # "reference": the body's orientation follows the momentum-consistent reference and only
    # the COM is simulated (the moment the contacts cannot supply is recorded as residual);
    # "dynamic": full rigid-body rotation (the seed's SRB; needs a policy for most clips).
    orientation: str = "reference"
    qp: QpSettings = None

    def __post_init__(self):
        if self.qp is None:
            self.qp = QpSettings()


@dataclass
class _Foot:
    stance: bool
    offset: np.ndarray            # world shift of this foot from the reference foot
    lift_offset: np.ndarray
    lift_phase: float = 0.0
    land_phase: float = 0.0
    airborne: bool = False        # the swing foot has left the floor (so it can land early)
    early: bool = False           # landed before the reference's contact while the other foot stood
    anchor: np.ndarray | None = None   # where an early-landed foot stands (world ankle)
    catch: tuple | None = None    # being put down to stop: (world ankle at the start, start time)


TOE_PIVOT_REACH = 0.999     # hip-ankle distance over leg length a stance foot keeps within (toe pivot)
REST_LEG_EXTENSION = 0.995   # hip-ankle distance over leg length while resting (~10 deg knee)


def _flatten_foot(R: np.ndarray) -> np.ndarray:
    """The foot frame turned flat on the floor, keeping its heading (link x forward, y up)."""
    fwd = np.array([R[0, 0], R[1, 0], 0.0])
    n = np.linalg.norm(fwd)
    fwd = fwd / n if n > 1e-9 else np.array([1.0, 0.0, 0.0])
    up = np.array([0.0, 0.0, 1.0])
    return np.column_stack([fwd, up, np.cross(fwd, up)])


MAX_TOE_PIVOT = 1.0   # rad (about 57 deg): the furthest a stance heel rises to keep the toes down


def _pivot_on_toes(body: "Body", hip: np.ndarray, ankle: np.ndarray, foot_R: np.ndarray):
    """A stance foot the leg cannot reach (hip to ankle beyond the straight leg): the heel rises
    about the toes, as in a push-off, until the ankle is within reach (at most MAX_TOE_PIVOT).
    Returns the ankle and foot rotation; unchanged when the ankle is within reach.

    Why: the body's centre of mass runs a little ahead of the source's at the end of a run's
    stance, and the leg IK, stretched straight, lifted the whole foot 7-13 cm off the floor for
    the stance's last frame or two.  Rising onto the toes is what a leg does there."""
    reach = TOE_PIVOT_REACH * (body.thigh + body.shin)
    if float(np.linalg.norm(ankle - hip)) <= reach:
        return ankle, foot_R
    toe = ankle + foot_R @ np.array([body.sole[:, 0].max(), body.sole_drop, 0.0])
    axis = foot_R[:, 2]                               # the foot's lateral axis (link z)
    lever = ankle - toe                               # normal to the axis: the ankle circles the toes
    across = _cross3(axis, lever)
    # |toe + lever cos t + across sin t - hip|^2 = reach^2  <=>  A cos t + B sin t = C
    d = toe - hip
    A, B = 2.0 * float(d @ lever), 2.0 * float(d @ across)
    C = reach * reach - float(d @ d) - float(lever @ lever)
    r = math.hypot(A, B)
    turn = -MAX_TOE_PIVOT                             # negative turns about the lateral axis lift the heel
    if r > 1e-12 and abs(C) <= r:
        phi, spread = math.atan2(B, A), math.acos(C / r)
        for t in (phi - spread, phi + spread):
            t = math.remainder(t, 2.0 * math.pi)
            if -MAX_TOE_PIVOT <= t <= 0.0:
                turn = max(turn, t)                   # the smallest rise that reaches
    c, s_ = math.cos(turn), math.sin(turn)
    R = _qmat(quat.from_axis_angle(axis, turn))
    return toe + c * lever + s_ * across, R @ foot_R


def calibrate_tau_max(ref: Reference, body: Body, settings: "SrbSettings | None" = None,
                      margin: float = 1.05, limbs=None, until: float | None = None) -> np.ndarray:
    """Strength per DoF from the fresh motion (seed "Discovering Fatigued Movements", eq. 10):
    the largest torque met while performing the clip unfatigued (a leg lowering the body: over
    its yielding strength, see SrbSimulator._yielding_strength), times ``margin``, never below
    the proxy's default; left and right take the larger of the pair so the body stays symmetric.
    With ``limbs`` (a fresh LimbSimulator) the upper body is measured too, its motors allowed
    three times the default while measuring.  ``until``: stop at this phase (default the end).

    Why: a fresh character must be able to do what the animator keyed; fatigue then takes
    strength away from there, so its effect is graded instead of an arbitrary cliff."""
    measuring = body
    if limbs is not None:
        generous = body.tau_max.copy()
        generous[limbs.dofs] *= 3.0
        from dataclasses import replace as _replace
        measuring = _replace(body, tau_max=generous)
        limbs.reset(ref.clip.root_pos[0], ref.clip.root_rot[0], ref.clip.joint_rots[0])
    sim = SrbSimulator(ref, measuring, None, settings, limbs=limbs)
    peak = np.zeros(len(body.tau_max))
    end = ref.duration if until is None else min(until, ref.duration)
    while sim.phase < end - 1e-9 and not sim.fallen and sim.time < 3.0 * end + 1.0:
        sim.step()
        np.maximum(peak, np.abs(sim.torque) / sim.strength_factor, out=peak)
    for right, left in proxy.mirrored_dofs():
        peak[right] = peak[left] = max(peak[right], peak[left])
    return np.maximum(body.tau_max, margin * peak)


def _fatigue_cost(capacity):
    """How much dearer than fresh a joint's torque is at residual capacity RC: 1 / RC^2 - 1
    (RC floored at 0.05).  Nothing when fresh, a little when tired, a lot when exhausted: the
    effort economy of tired limbs and knees (_limb_give, _update_sag) and the legs' QP effort
    cost (_leg_effort) all weigh loads by it."""
    rc = np.maximum(capacity, 0.05)
    return 1.0 / (rc * rc) - 1.0


def _leg_effort(capacity: np.ndarray, strength: np.ndarray) -> np.ndarray:
    """Per leg DoF, the scale whose squared product with the torque is the QP's effort cost:
    (tau / strength)^2 * (1 / RC^2 - 1).

    Why: a torque costs more the less capacity is left, so a tired body loads its fresher joints
    and leg (how a tired person shifts weight onto the fresher leg) and pushes a little less
    where the motion allows; like the limbs' economy it costs nothing fresh, so a take that
    starts fresh starts exactly like a fresh one."""
    return np.sqrt(_fatigue_cost(capacity)) / strength


def _leg_length(body: "Body", knee_bend: float) -> float:
    """Hip-to-ankle distance of a leg with its knee bent ``knee_bend`` radians."""
    t, s = body.thigh, body.shin
    return math.sqrt(max(t * t + s * s + 2.0 * t * s * repeatable.cos(knee_bend), 0.0))


def _smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


class SrbSimulator:
    """Steps the SRB through a Reference under a fatigue model (or none) and records frames."""

    def __init__(self, ref: Reference, body: Body, fatigue=None, settings: SrbSettings | None = None,
                 push: tuple[float, float, np.ndarray] | None = None, limbs=None):
        self.ref = ref
        self.body = body
        self.fatigue = fatigue              # runtime.schedule.ScheduledModel or None
        self.s = settings or SrbSettings()
        self.push = push                    # (start s, duration s, force N)
        self.limbs = limbs                  # runtime.limbs.LimbSimulator or None (kinematic upper body)
        self.acc = np.zeros(3)
        self.dt = 1.0 / self.s.rate
        self.time = 0.0
        self.phase = 0.0
        self.tempo = 1.0
        self.resting = False
        self.p = ref.com[0].copy()
        self.v = ref.com_vel[0].copy()
        self.q = ref.rot[0].copy()
        self.w = ref.ang_vel[0].copy()
        self.feet = [_Foot(bool(ref.contact[0, k]), np.zeros(3), np.zeros(3)) for k in range(2)]
        for k, foot in enumerate(self.feet):
            if not foot.stance:
                foot.lift_phase = 0.0
                foot.land_phase = ref.next_contact_start(k, 0.0) or ref.duration
        n = len(body.tau_max)
        self.torque = np.zeros(n)
        self.load_avg = np.zeros(n)
        # Per DoF, the strength this step over tau_max: above 1 for stance legs lowering the body
        # (see _yielding_strength), 1 everywhere else.
        self.strength_factor = np.ones(n)
        self._load_blend = min(1.0, self.dt / 0.5)
        self.events: list[dict] = []
        self.fallen = False
        self.residual_moment = np.zeros(3)
        self._rest_best, self._rest_best_time, self._no_rest_before = 0.0, 0.0, 0.0
        self._rest_wanted = None    # time the legs first needed a rest that has not come yet
        self._rest_due = False      # the legs need a rest now and the motion offers none: make one
        self._sinking = 0.0         # m: how far the body has stayed below its target on its feet (smoothed)
        self.stopping = False       # putting the free foot down to rest (the clock stands still meanwhile)
        self._stopped = False       # the current rest began with a stop
        self._closing = None        # a rest's closing step under way (_ClosingStep)
        self._closed = False        # this rest has had its closing step
        self._rest_began = 0.0
        self._sinking_blend = min(1.0, self.dt / CARRY_SMOOTHING)
        self._support, self._off_balance = [], 0.0
        self.shift = np.zeros(3)    # world xy by which the motion goes on after short flights
        self.stride = 1.0           # share of the source's ground speed the body aims for (tired strides)
        self._takeoff_pace = 1.0    # share of the source's ground speed a flight carries (its take-off's)
        self.lag = np.zeros(3)      # world xy the shortened strides have left the body behind the source
        self._shift_keep = 1.0 - min(1.0, self.dt / LANDING_SHIFT_DECAY)
        self._contact_height = self.s.contact_height * kin_scale(body)
        self.turn = None            # orientation offset after a short flight (None: none)
        self._flight_sped = False   # this flight plays faster than the source's (it will land sooner)
        self._turn_keep = 1.0 - min(1.0, self.dt / LANDING_TURN_DECAY)
        self._limb_torque = np.zeros(len(limbs.dofs)) if limbs is not None else None
        self._give = np.zeros(len(limbs.dofs)) if limbs is not None else None
        self._give_caps = [MAX_UPRIGHT_GIVE if name in UPRIGHT_JOINTS else MAX_GIVE for name in LIMB_JOINTS]
        self._limb_blend = min(1.0, self.dt / LIMB_LOAD_SMOOTHING)
        self._knee_give = np.zeros(2)   # rad per leg: how far each tired knee yields (see _update_sag)
        self.sag = 0.0              # m: how far the COM target sits below the source's (tired knees)
        names = [j.name for j in proxy.DEFAULT_JOINTS]
        self._knee_slots = [names.index(f"{side}_knee") for side in SIDES]
        self._leg_slots = [[names.index(f"{side}_{n}") for n in ("hip", "knee", "ankle")] for side in SIDES]
        self._next_sample, self._next_sample_phase = None, None
        self.need_torques = True    # leg torques every step (fatigue) or only when recorded
        self.books_fatigue = True   # False: another simulator applies the torques and books them
        self.p_target, self.v_target = self.p.copy(), self.v.copy()   # the step's COM target
        self._leg_dofs = body.leg_dofs.ravel()
        # A policy (runtime.policy) corrects the rule every control step: swing-foot landing
        # shifts and a COM velocity target shift, world xy; zero without one.
        self.controller = None
        self.control_every = 1
        self.landing_adjust = np.zeros((2, 2))
        self.velocity_adjust = np.zeros(2)
        self.steps = 0

    # -- one step ----------------------------------------------------------------------------
    def step(self) -> None:
        ref, s, body = self.ref, self.s, self.body
        if self.controller is not None and self.steps % self.control_every == 0:
            self.controller.control(self)
        self.steps += 1
        phase = self.phase
        holding = phase >= ref.duration - 1e-9          # past the end: hold the last pose still
        r = self._next_sample if self._next_sample_phase == phase else ref.sample(phase)
        # Tempo is a choice a tired body makes with a foot on the ground; a flight is ballistic
        # and takes the time gravity gives it (a slowed flight would fall far below the arc).
        in_flight = not any(f.stance for f in self.feet)   # (feet touching down now land together)
        # Standing still, a slower clock changes nothing but the take's length (the legs hold the
        # same pose either way): the tempo slows motion only, and a rest postpones motion only
        # (the still source plays on while the body stands easy).  A 60 s idle took 180 s and
        # never finished.
        frame = ref.frame(phase)
        still = bool(ref.still[frame])
        moving = r.contact.any() and not still
        if (self._rest_due and not self.stopping and not self.resting and not in_flight
                and sum(f.stance for f in self.feet) == 1
                and ref.next_both_down(phase) - phase > STOP_AHEAD):
            # A rest is due and the motion will not put both feet down soon (a run, a spin, a
            # kick that lost its balance): the body stops where it is and puts its free foot down.
            self.stopping = True
            self._continue_from_here(r)
            self.events.append({"time": self.time, "frame": int(round(self.time * 30)), "kind": "halt"})
        rate = 0.0 if (holding or ((self.resting or self.stopping) and not still)) else (self.tempo if moving else 1.0)
        if rate == 1.0 and not r.contact.any() and in_flight:
            rate = self._flight_rate(phase)
        launching = 0.0 < rate < 1.0 and bool(ref.ballistic[frame])
        self._update_sag(r)
        p_r = self.com_target(r)
        # Where gravity keeps the clock (see _single_support_rate: a run's stances, a dance's falls
        # onto the next step) a tired body shortens its strides instead: it aims for the slowed
        # share of the source's ground speed, and the ground it does not cover accumulates as
        # ``lag``.  A flight keeps the pace it took off with.  Fresh, the stride is always 1.
        standing_on = sum(f.stance for f in self.feet)
        if launching:
            # A push-off or a landing keeps the flight's clock (see _ballistic_stance): the
            # tempo shows as shorter strides, and a weaker push makes the flight lower.
            self.stride = self._takeoff_pace = rate
            rate = 1.0
        elif 0.0 < rate < 1.0 and standing_on == 1:
            slowed = self._single_support_rate(rate, p_r, r.com_vel * rate)
            self.stride = rate / slowed
            self._takeoff_pace = rate       # stride x clock: the tempo's share of the source's speed
            rate = slowed
        elif standing_on and r.contact.any() and rate > 0.0:
            self.stride = self._takeoff_pace = 1.0
        elif rate == 1.0 and not r.contact.any():
            # Taking off and in the air the body keeps the pace it took off with while the
            # source's clock runs at full rate: its target keeps that pace too (at the stance's
            # stride it ran ahead, and the landing pulled the body back up to speed).
            self.stride = self._takeoff_pace
        if self.resting:
            # Rest upright over the feet (nearer the ankles when they are weak): anything else
            # keeps the tired legs loaded.
            centre = self._rest_centre(r)
            p_r = np.array([centre[0], centre[1], self._rest_height(r, centre)])
            if self._closing is not None and self._closing.settled(self.time):
                self._closing = None
            if self._closing is not None:
                p_r = self._closing_target(r, p_r)
        v_r = self.rule_velocity(r, rate)
        acc_ff = r.com_acc * (rate * rate)
        if self.stride < 1.0:
            acc_ff[:2] *= self.stride
        if self.controller is not None:
            v_r = v_r + np.array([self.velocity_adjust[0], self.velocity_adjust[1], 0.0])
        acc_des = acc_ff + s.kp * (p_r - self.p) + s.kd * (v_r - self.v)
        self.p_target, self.v_target = p_r, v_r
        R = _qmat(self.q)
        if s.orientation == "dynamic":
            rot_err = quat.to_rotvec(quat.multiply(r.rot, quat.conjugate(self.q)))
            feedback = body.inertia_world(R) @ (s.kp_rot * rot_err + s.kd_rot * (r.ang_vel * rate - self.w))
        else:
            feedback = 0.0
        # Moment: the reference's rate of angular momentum (what its contacts supplied), plus
        # orientation feedback when the rotation is simulated.
        moment_des = r.momentum_rate * (rate * rate) + feedback

        contact_r = r.contact
        root_R = R @ _qmat(r.root_rel)
        root_pos = self.p + R @ r.root_offset
        jump_to = None
        corner_blocks, row_blocks, legs, support = [], [], [], []
        n_c = 0
        for k, foot in enumerate(self.feet):
            ankle_r = r.ankle[k]
            if foot.early:
                if contact_r[k]:     # the reference has caught up: an ordinary stance from here
                    foot.early, foot.anchor = False, None
                else:                # stands where it landed while the reference foot still swings
                    foot.offset = foot.anchor - ankle_r
            if foot.stance and not contact_r[k] and not (self.resting or self.stopping) and not foot.early:
                foot.stance = False
                foot.airborne = False
                foot.lift_offset = foot.offset.copy()
                foot.lift_phase = phase
                foot.land_phase = ref.next_contact_start(k, phase) or (phase + 0.5)
            closing = self._closing if (self.resting and self._closing is not None and self._closing.foot == k) else None
            if closing is not None and foot.stance and closing.lifted is None \
                    and self.time - closing.began >= CLOSE_SHIFT_TIME:
                foot.stance, foot.early, foot.anchor = False, False, None
                closing.lifted = (np.array([*(ankle_r + foot.offset)[:2], ref.floor - body.sole_drop]), self.time)
            if closing is not None and not foot.stance:
                self._step_in(closing, foot, r, ankle_r)
            elif not foot.stance and self.stopping:
                self._put_down(k, foot, r, ankle_r, p_r)
            elif not foot.stance:
                target = np.zeros(3)
                target[:2] = (self.shift[:2] + self.lag[:2] + s.raibert_kp * (self.p[:2] - p_r[:2])
                              + s.raibert_kv * (self.v[:2] - v_r[:2]))
                if self.controller is not None:
                    target[:2] += self.landing_adjust[k]
                span = max(foot.land_phase - foot.lift_phase, 1e-6)
                # A foot lifted only for a moment (a tap, a shuffle, a flicker in the source's
                # contacts) is not a step: it comes down where it was, not at a corrected spot.
                placed = min(max((span - SHORT_LIFT) / SHORT_LIFT, 0.0), 1.0)
                if placed < 1.0:
                    target = foot.lift_offset + placed * (target - foot.lift_offset)
                blend = _smoothstep((phase - foot.lift_phase) / span)
                foot.offset = (1 - blend) * foot.lift_offset + blend * target
                # In the air the foot keeps its height relative to the body, not to the world.
                sole_z = ankle_r[2] + (self.p[2] - p_r[2]) + body.sole_drop
                touches = sole_z <= ref.floor + self._contact_height
                foot.airborne = foot.airborne or sole_z > ref.floor + 2.0 * self._contact_height
                if contact_r[k] or (touches and foot.airborne and self.v[2] < 0 and
                                    foot.land_phase - phase < s.early_landing_window):
                    foot.stance = True
                    if contact_r[k] and in_flight and self._flight_sped:
                        # A flight played faster (see _flight_rate) lands with the source: from
                        # where the body came down, like an early landing.
                        jump_to = max(jump_to or 0.0, phase)
                    if not contact_r[k]:
                        if not in_flight and any(f.stance for f in self.feet if f is not foot):
                            # A swing foot meeting the floor early while the other foot stands
                            # (a sagging body): it stands there and the clock runs on.  Skipping
                            # the reference ahead here would speed the whole motion up.
                            foot.early = True
                            foot.anchor = ankle_r + foot.offset
                            foot.anchor[2] = ankle_r[2] + (self.p[2] - p_r[2])
                            foot.offset = foot.anchor - ankle_r
                        else:
                            # Landing from a flight early (a lower, shorter jump): the motion
                            # goes on from the reference's landing.
                            jump_to = max(jump_to or 0.0, foot.land_phase)
            if foot.stance:
                foot_R = _qmat(r.foot_rot[k])
                ankle = ankle_r + foot.offset
                if self.resting:  # a resting foot is flat on the floor
                    foot_R = _flatten_foot(foot_R)
                    ankle = np.array([ankle[0], ankle[1], ref.floor - body.sole_drop])
                corners = ankle + body.sole @ foot_R.T
                heights = (corners[:, 2] - ref.floor).tolist()
                keep = [i for i, z in enumerate(heights) if z < self._contact_height]
                if not keep:   # none near the floor: the two lowest corners
                    zs = corners[:, 2].tolist()
                    second = sorted(zs)[1]
                    keep = [i for i, z in enumerate(zs) if z <= second]
                if len(keep) < len(heights):
                    corners = corners[keep]
                corners[:, 2] = ref.floor
                if self.fatigue is not None or self.need_torques:
                    row_blocks.append(stance_leg_rows(body, k, root_pos, root_R, ankle, foot_R, corners))
                legs.append((k, n_c, len(corners)))
                corner_blocks.append(corners)
                support.append(ankle[:2])
                n_c += len(corners)
        if jump_to is not None and (jump_to > self.phase or self._flight_sped):
            # Landing early from a flight (a lower, shorter jump): the motion goes on from the
            # source's landing, from where the body came down (see com_target).
            self._flight_sped = False
            self.phase = jump_to
            landing = ref.sample(jump_to)
            self.shift[:2] = self.p[:2] - landing.com[:2] - self.lag[:2]
            # The body keeps the orientation it landed with (a shorter flight turned it less)
            # and turns onto the source's over LANDING_TURN_DECAY, instead of snapping to it.
            if s.orientation != "dynamic":
                self.turn = quat.normalize(quat.multiply(self.q, quat.conjugate(landing.rot)))
            # The landed feet stand where the source's feet land relative to its body, so the
            # legs bend for the landing as the source's do (not stretched toward a spot ahead).
            for foot in self.feet:
                if foot.stance:
                    foot.offset[:2] = self.shift[:2] + self.lag[:2]
        elif len(support) < 2:
            # Only while a foot is free to step: with both feet planted, moving the body's
            # target would pull it off its feet (legs stretched, knees straight in a crouch).
            self.shift *= self._shift_keep

        torque = np.zeros(len(body.tau_max))
        self.strength_factor[self._leg_dofs] = self._yielding_strength()
        strength = body.tau_max * self.strength_factor
        if n_c:
            corners_all = corner_blocks[0] if len(corner_blocks) == 1 else np.concatenate(corner_blocks)
            torque_rows = bounds = effort = None
            if self.fatigue is not None:
                rc = self.fatigue.model.residual_capacity
                torque_rows = np.zeros((7 * len(legs), 3 * n_c))
                bounds = np.empty((7 * len(legs), 2))
                effort = np.empty(7 * len(legs))
                for j, ((k, start, count), rows) in enumerate(zip(legs, row_blocks)):
                    torque_rows[7 * j:7 * j + 7, 3 * start:3 * (start + count)] = rows
                    dofs = body.leg_dofs[k]
                    cap = rc[dofs] * strength[dofs]
                    bounds[7 * j:7 * j + 7, 0] = -cap
                    bounds[7 * j:7 * j + 7, 1] = cap
                    effort[7 * j:7 * j + 7] = _leg_effort(rc[dofs], strength[dofs])
            forces = solve_contact_forces(body, self.p, R, acc_des, moment_des, corners_all,
                                          torque_rows, bounds, s.qp, effort)
            for (k, start, count), rows in zip(legs, row_blocks):  # empty unless torques needed
                torque[body.leg_dofs[k]] = rows @ forces[start:start + count].ravel()
            total = forces.sum(axis=0)
            moment = _cross_rows(corners_all - self.p, forces).sum(axis=0)
        else:
            forces = np.zeros((0, 3))
            total = np.zeros(3)
            moment = np.zeros(3)

        # Upper body: PyBullet limbs under the same fatigued caps, booked with the legs.
        if self.limbs is not None:
            # The motors reach their targets by the end of the step, which is where the pose is
            # recorded: aim at the source's pose there, not where this step began (one step late).
            ahead = min(self.phase + rate * self.dt, ref.duration)
            goal = ref.sample(ahead)
            self._next_sample, self._next_sample_phase = goal, ahead
            torque[self.limbs.dofs] = self.drive_limbs(root_pos, _matrix_to_quat(root_R), self.acc, goal, rate)
        if self.fatigue is not None and self.books_fatigue:
            torque = self.fatigue.step_torque(torque, strength, self.time, self.dt)
        self.torque = torque
        self.load_avg += (np.minimum(np.abs(torque) / strength, 1.0) - self.load_avg) * self._load_blend

        # Dynamics: semi-implicit Euler of the COM (and of the rotation when simulated).
        if self.push is not None and self.push[0] <= self.time < self.push[0] + self.push[1]:
            total = total + self.push[2]
        self.acc = total / body.mass + GRAVITY
        self.v = self.v + self.acc * self.dt
        self.p = self.p + self.v * self.dt
        next_phase = min(self.phase + rate * self.dt, ref.duration)
        if self.stride < 1.0:
            self.lag[:2] -= (1.0 - self.stride) * rate * self.dt * r.com_vel[:2]
        if s.orientation == "dynamic":
            I_w = body.inertia_world(R)
            ang = np.linalg.solve(I_w, moment - _cross(self.w, I_w @ self.w))
            self.w = self.w + ang * self.dt
            self.q = quat.normalize(quat.multiply(quat.from_rotvec(self.w * self.dt), self.q))
        else:
            nxt = self._next_sample if self._next_sample_phase == next_phase else ref.sample(next_phase)
            self._next_sample, self._next_sample_phase = nxt, next_phase
            sped = rate > 1.0 and not r.contact.any()
            if sped:
                # A flight played faster (see _flight_rate) does not spin faster: the body turns
                # at the source's rate and keeps the difference as a turn, handled at landing.
                self.q = quat.normalize(quat.multiply(quat.from_rotvec(r.ang_vel * self.dt), self.q))
                self.turn = quat.normalize(quat.multiply(self.q, quat.conjugate(nxt.rot)))
            elif self.turn is None:
                self.q = nxt.rot.copy()
            else:
                self.turn = quat.from_rotvec(quat.to_rotvec(self.turn) * self._turn_keep)
                self.q = quat.normalize(quat.multiply(self.turn, nxt.rot))
                if quat.angle_between(self.turn, _IDENTITY) < 1e-4:
                    self.turn = None
            self.w = nxt.ang_vel * (1.0 if sped else rate)
        self.residual_moment = moment_des - moment
        self.forces = forces
        self.time += self.dt
        self._update_tempo()
        self.phase = next_phase
        self._support = support
        self._check_fall(r.rot)

    def _put_down(self, k: int, foot: "_Foot", r: "RefSample", ankle_r: np.ndarray, p_r: np.ndarray) -> None:
        """Move the free foot of a stopping body to the floor over CATCH_TIME, towards its hip
        moved by the capture point's lead (where the body would come to rest, x + v / omega;
        followed as the body moves), so the body stops between its feet.  On the floor it stands
        there (an early landing) and the rest begins."""
        body, ref = self.body, self.ref
        lift = np.array([0.0, 0.0, self.p[2] - p_r[2]])       # a swing foot moves with the body's height
        if foot.catch is None:
            foot.catch = (ankle_r + foot.offset + lift, self.time)
        start, began = foot.catch
        R = _qmat(self.q)
        root_R = R @ _qmat(r.root_rel)
        hip = self.p + R @ r.root_offset + root_R @ body.hip[k]
        height = max(self.p[2] - ref.floor, 0.3 * kin_scale(body))
        lead = self.v[:2] * math.sqrt(height / 9.81)
        reach = CATCH_REACH * kin_scale(body)
        norm = math.sqrt(lead @ lead)
        if norm > reach:
            lead = lead * (reach / norm)
        anchor = np.array([hip[0] + lead[0], hip[1] + lead[1], ref.floor - body.sole_drop])
        if not self._carry_foot(foot, start, anchor, began, CATCH_TIME, ankle_r, lift):
            return
        foot.stance, foot.early, foot.anchor, foot.catch = True, True, anchor, None
        foot.offset = anchor - ankle_r

    def _carry_foot(self, foot: "_Foot", start: np.ndarray, anchor: np.ndarray, began: float, duration: float,
                    ankle_r: np.ndarray, lift: np.ndarray, clearance: float = 0.0) -> bool:
        """Carry a free foot from world ankle ``start`` to ``anchor`` over ``duration`` from
        ``began`` (smoothstep, ``clearance`` above the straight line at mid-way); True once
        there, until then its offset is set.  ``lift``: how far the body's height lifts a swing
        foot's recorded ankle (see pose), taken off so the foot goes where it is carried."""
        u = min((self.time + self.dt - began) / duration, 1.0)
        if u >= 1.0:
            return True
        at = start + _smoothstep(u) * (anchor - start)
        if clearance:
            at[2] += clearance * math.sin(math.pi * u)
        foot.offset = at - ankle_r - lift
        return False

    def _plan_closing_step(self, r: "RefSample") -> "_ClosingStep | None":
        """Once a rest has settled (CLOSE_SETTLE, the body nearly still), a foot further than
        CLOSE_SPREAD from its place beside the other (hip width apart, as the hips are) steps
        in, if the other leg can stand alone.  The one further from the centre of mass (carrying
        less) steps; the weight goes onto the other over CLOSE_SHIFT_TIME, the foot lifts, lands
        beside it over CLOSE_STEP_TIME, and the body settles between both feet.

        Why: a rest begins wherever both feet happen to be down, a tired walk's mid-stride (feet
        0.4-0.6 m apart along the way), a dance's straddle (0.5-1.2 m across); standing there
        for seconds with the hips between the feet looks like a freeze-frame, not a pause, and
        costs the hips more than standing with the feet together."""
        body = self.body
        ankles = r.ankle + np.array([f.offset for f in self.feet])
        far = [float(np.linalg.norm(ankles[k, :2] - self.p[:2])) for k in range(2)]
        k = 0 if far[0] > far[1] else 1
        stay = 1 - k
        root_R = _qmat(self.q) @ _qmat(r.root_rel)
        beside = root_R @ (body.hip[k] - body.hip[stay])
        anchor = np.array([ankles[stay, 0] + beside[0], ankles[stay, 1] + beside[1], self.ref.floor - body.sole_drop])
        if float(np.linalg.norm(anchor[:2] - ankles[k, :2])) <= CLOSE_SPREAD * kin_scale(body):
            return None
        over = self._rest_points(r, carried=1.0)[stay]
        height = self._rest_height(r, over)     # where the stepping foot lifts (still reachable from it)
        if self.fatigue is not None:
            # Only onto a leg that can stand alone: body weight over its sole takes at most
            # CLOSE_EFFORT of what each of its joints has left (else it rests where it is).
            root_pos = np.array([over[0], over[1], height]) + _qmat(self.q) @ r.root_offset
            ankle = ankles[stay].copy()
            ankle[2] = self.ref.floor - body.sole_drop
            rows = stance_leg_rows(body, stay, root_pos, root_R, ankle, _flatten_foot(_qmat(r.foot_rot[stay])),
                                   np.array([[over[0], over[1], self.ref.floor]]))
            load = np.abs(rows @ np.array([0.0, 0.0, body.mass * -GRAVITY[2]]))
            dofs = body.leg_dofs[stay]
            holds = self.fatigue.model.residual_capacity[dofs] * body.tau_max[dofs]
            if np.any(load > CLOSE_EFFORT * holds):
                return None
        return _ClosingStep(k, anchor, self.time, self.p[:2].copy())

    def _closing_target(self, r: "RefSample", settled: np.ndarray) -> np.ndarray:
        """The resting centre-of-mass target during a closing step: onto the staying foot, held
        there while the other steps, then back between both feet (``settled``) until it is."""
        c = self._closing
        over = self._rest_points(r, carried=1.0)[1 - c.foot]
        # As high as both legs reach from where the feet are: rising as the stepping foot comes in.
        on_foot = np.array([over[0], over[1], self._rest_height(r, over)])
        if c.landed is None:
            u = _smoothstep((self.time - c.began) / CLOSE_SHIFT_TIME)
            start = np.array([c.start_xy[0], c.start_xy[1], on_foot[2]])
            return start + u * (on_foot - start)
        return on_foot + _smoothstep((self.time - c.landed) / CLOSE_SHIFT_TIME) * (settled - on_foot)

    def _step_in(self, c: "_ClosingStep", foot: "_Foot", r: "RefSample", ankle_r: np.ndarray) -> None:
        """Move the stepping foot of a closing step: flat, clearing the floor by CLOSE_STEP_LIFT
        at mid-step, down beside the other over CLOSE_STEP_TIME; there it stands and the body
        settles."""
        start, lifted_at = c.lifted
        lift = np.array([0.0, 0.0, self.p[2] - (r.com[2] - self.sag)])
        if not self._carry_foot(foot, start, c.anchor, lifted_at, CLOSE_STEP_TIME, ankle_r, lift,
                                CLOSE_STEP_LIFT * kin_scale(self.body)):
            return
        # An ordinary stance foot from here, moved beside the other: after the rest it stands
        # at the source's ankle height for the source's foot (flat on the floor while resting).
        foot.stance, foot.early, foot.anchor = True, False, None
        foot.offset = np.array([c.anchor[0] - ankle_r[0], c.anchor[1] - ankle_r[1], 0.0])
        c.landed = self.time

    def _continue_from_here(self, r: "RefSample") -> None:
        """The motion goes on from where the body is (stopping, resuming after a rest), drifting
        back onto the source's path as after a short landing (see com_target): a body that has
        stopped off the source's path does not lunge back to it."""
        self.shift[:2] = self.p[:2] - r.com[:2] - self.lag[:2]

    def com_target(self, r: "RefSample") -> np.ndarray:
        """Where the centre of mass should be at reference sample ``r``: the source's, moved by
        ``shift`` after a short landing (the swing feet's landing targets move with it).

        Why: a tired jump is lower, so it is also shorter.  A centre of mass chasing the source's
        landing spot from where the body actually came down drags the body ahead of its planted
        feet (legs stretched back like a plank, a moment no foot could supply).  Instead the
        motion goes on from where the body landed and drifts back onto the source's path over
        about LANDING_SHIFT_DECAY of single support or flight, through the next steps: planted
        feet hold it, so a chain of tired jumps covers less ground than the source's.  Flights
        that land on time never shift.  Shorter tired strides leave it ``lag`` behind the
        source's path (see step), and tired knees lower it by ``sag`` (see _update_sag)."""
        target = r.com + self.shift + self.lag
        target[2] -= self.sag
        return target

    def rule_velocity(self, r: "RefSample", rate: float) -> np.ndarray:
        """The COM velocity the rule aims for at reference sample ``r`` played at ``rate``: the
        source's, with a tired stride's share of its ground speed (no policy correction)."""
        v = r.com_vel * rate
        if self.stride < 1.0:
            v[:2] *= self.stride
        return v

    def _rest_centre(self, r: "RefSample") -> np.ndarray:
        """Where a resting body stands: over the middle of its soles, or nearer its ankles where
        they are too weak to hold it that far ahead of them.

        Why: over the sole centre (4-5 cm ahead of the ankles, as in quiet standing) each ankle
        holds half the body weight on that lever, about 11 % of its strength: more than an
        exhausted ankle sustains (the published 3CC holds about 2 % indefinitely at fitness 0),
        so an exhausted idle drained its ankles and collapsed.  Standing further back costs the
        ankles less (at most REST_ANKLE_EFFORT of what they have left), the sole still under
        the body."""
        return np.mean(self._rest_points(r), axis=0)

    def _rest_points(self, r: "RefSample", carried: float = 0.5) -> list[np.ndarray]:
        """Per foot, the point over its sole a resting body stands over (see _rest_centre) when
        that foot carries the ``carried`` share of its weight."""
        body = self.body
        points = []
        for k in range(2):
            lever = _qmat(r.foot_rot[k]) @ body.sole_centre
            ahead = math.sqrt(lever[0] * lever[0] + lever[1] * lever[1])
            share = 1.0
            if self.fatigue is not None and ahead > 1e-9:
                dofs = body.leg_dofs[k, 4:]
                holds = float((self.fatigue.model.residual_capacity[dofs] * body.tau_max[dofs]).min())
                share = min(1.0, REST_ANKLE_EFFORT * holds / (carried * body.mass * -GRAVITY[2] * ahead))
            points.append(r.ankle[k] + self.feet[k].offset + np.array([share * lever[0], share * lever[1], lever[2]]))
        return points

    def _rest_height(self, r: "RefSample", centre: np.ndarray) -> float:
        """Centre-of-mass height of a rest over ``centre``: each hip as high as a nearly straight
        leg (REST_LEG_EXTENSION) reaches from its foot on the floor, the lower of the two.

        Why: a rest is where standing costs the knees least, but the feet stay where the motion
        left them, often a stride apart.  Hips set for vertical legs were out of reach of feet
        0.3 m ahead and behind them: the legs could not get there and the feet floated 3-5 cm
        above the floor through the whole rest."""
        body, ref = self.body, self.ref
        R = _qmat(self.q)
        root_R = R @ _qmat(r.root_rel)
        root = centre + R @ r.root_offset              # root position at the rest's centre (xy)
        reach = REST_LEG_EXTENSION * (body.thigh + body.shin)
        sole_level = ref.floor - body.sole_drop
        height = math.inf
        for k in range(2):
            hip = root_R @ body.hip[k]
            ankle = r.ankle[k] + self.feet[k].offset
            d = root[:2] + hip[:2] - ankle[:2]
            rise = math.sqrt(max(reach * reach - float(d @ d), (0.5 * reach) ** 2))
            height = min(height, sole_level + rise - hip[2] - (root[2] - centre[2]))
        return height

    def _yielding_strength(self) -> float:
        """Leg strength over tau_max this step: ECCENTRIC_STRENGTH while the body sinks onto its
        legs (a landing, the lowering half of a stance), 1 while it rises or stands still,
        blended over YIELD_SPEED of downward centre-of-mass speed.

        Why: muscles hold more while they are stretched than they can push while shortening
        (isokinetic eccentric torques exceed concentric ones by 22-60 %; Kreuzer et al. 2022,
        BMC Sports Sci Med Rehabil 14:13, and the studies they cite).  With one strength for
        both, tau_max calibrated on the clip's largest torque is set by the landings, so the
        push-offs used half of it and a tired jump was no lower until its legs had lost half
        their capacity.  The take-offs are now measured against what legs can push, the landings
        against what they can hold, and fatigue shows in the push."""
        sinking = -self.v[2] / (YIELD_SPEED * kin_scale(self.body))
        return 1.0 + (ECCENTRIC_STRENGTH - 1.0) * _smoothstep(sinking)

    def _update_sag(self, r: "RefSample") -> None:
        """Effort economy in the legs: each tired knee yields to the load it carries like a limb
        joint does (economy * load * (1/RC^2 - 1), at most MAX_KNEE_GIVE, changing at most
        MAX_GIVE_RATE), and the body sinks by what the two yields take off the legs' length at
        the source's knee angle (averaged over both legs).

        Why: the QP's fatigue bounds only bite at the motion's peak loads, so a tired walk stood
        as tall as a fresh one.  Fatigued muscle is less stiff (leg stiffness drops with fatigue
        in hopping and running): under the same load a tired knee bends further.  The deeper
        stance costs the knees more torque, which the fatigue model books; the cap keeps that
        loop bounded (at MAX_GIVE, 30 degrees, a tired dancer's knee on one leg sank until the
        leg gave way: unlike an arm, a knee under the body holds more the further it yields).
        Rests stand tall regardless (see step)."""
        economy = self.s.effort_economy
        if self.fatigue is None or economy <= 0.0:
            return
        rc = self.fatigue.model.residual_capacity
        body = self.body
        step = MAX_GIVE_RATE * self.dt
        drop = 0.0
        for k in range(2):
            dof = body.leg_dofs[k][3]
            give = min(economy * float(self.load_avg[dof]) * float(_fatigue_cost(float(rc[dof]))), MAX_KNEE_GIVE)
            self._knee_give[k] += min(max(give - self._knee_give[k], -step), step)
            q = r.joints[self._knee_slots[k]]
            bend = 2.0 * repeatable.arctan2(abs(q[2]), abs(q[3]))   # either quaternion sign
            drop += _leg_length(body, bend) - _leg_length(body, bend + self._knee_give[k])
        self.sag = 0.5 * drop

    def _limb_give(self, capacity: np.ndarray) -> np.ndarray | None:
        """Effort economy: how far each tired limb joint yields to the load it holds (radians per
        limb DoF, against its smoothed applied torque): economy * load * (1/RC^2 - 1), at most
        MAX_GIVE per joint; MAX_UPRIGHT_GIVE for trunk and neck, which like a knee under the body
        hold more the further they give (a tired dancer's trunk slumped 30 degrees, then could not
        carry the slump and folded onto its end of range).

        Why: the fatigue bound alone lets a joint hold any load below RC * tau_max at full
        accuracy, so a tired arm held out at 10 % effort would never move.  People trade
        accuracy for effort, and a torque costs more the less capacity is left (the same
        (tau / (RC tau_max))^2 the legs' QP minimises): nothing when fresh, a little when tired, a
        lot when exhausted.  The arm drops, the head nods, the chest slumps, and the smaller
        holding torque lets the joint recover.  The seed's policy learns this trade-off through
        its stiffness multiplier; here it is a rule."""
        economy = self.s.effort_economy
        if economy <= 0.0:
            return None
        load = self._limb_torque * self.body.tau_max_inv[self.limbs.dofs]
        give = -economy * load * _fatigue_cost(capacity)
        k = 0
        for sph, most in zip(self.limbs.spherical, self._give_caps):
            width = 3 if sph else 1
            norm = math.sqrt(give[k:k + width] @ give[k:k + width])
            if norm > most:
                give[k:k + width] *= most / norm
            k += width
        # A posture sags at the pace of fatigue, not of the motion: the yield moves at most
        # MAX_GIVE_RATE.  Unlimited, it followed the load of a fast dance and whipped a tired
        # head and arm 40-60 deg per frame, the whipping itself burning their capacity.
        step = MAX_GIVE_RATE * self.dt
        self._give = self._give + np.clip(give - self._give, -step, step)
        return self._give.copy()

    def drive_limbs(self, root_pos, root_quat, root_acc, goal: "RefSample", rate: float) -> np.ndarray:
        """One step of the simulated upper body on the pelvis at (root_pos, root_quat), tracking
        ``goal`` played at ``rate`` under fatigued caps with the effort economy's yield; returns
        the torques it applied (limb DoFs)."""
        caps = self.body.tau_max[self.limbs.dofs]
        give = None
        if self.fatigue is not None:
            capacity = self.fatigue.model.residual_capacity[self.limbs.dofs]
            caps = caps * capacity
            give = self._limb_give(capacity)
        applied = self.limbs.step(root_pos, root_quat, root_acc, goal.joints, goal.joint_vel * rate, caps,
                                  self.dt, give)
        self._limb_torque += (applied - self._limb_torque) * self._limb_blend
        return applied

    def _flight_rate(self, phase: float) -> float:
        """Phase rate in the air: 1, or faster when the body will land sooner than the source
        (a lower, shorter flight), so that the source's landing pose arrives when the body lands.

        Why: a tired flight is lower, hence shorter; played at full rate the legs were still in
        mid-flight pose at touchdown and snapped into the landing pose (phase skipped ahead,
        knees and hips turning up to 70 deg in one frame).  Marks the flight as sped up, so that
        its landing is handled like an early one."""
        ref = self.ref
        land = min((t for t in (ref.next_contact_start(k, phase) for k in range(2)) if t is not None),
                   default=None)
        if land is None or land <= phase:
            return 1.0
        drop = self.p[2] - self.com_target(ref.sample(land))[2]
        vz = self.v[2]
        if drop <= 0.0 and vz <= 0.0 and land - phase > FLIGHT_TIME_SLACK:
            self._flight_sped = True
            return MAX_FLIGHT_RATE
        body_left = (vz + math.sqrt(max(vz * vz + 2.0 * 9.81 * drop, 0.0))) / 9.81
        source_left = land - phase
        if body_left <= 0.0 or source_left <= (1.0 + FLIGHT_RATE_SLACK) * body_left + FLIGHT_TIME_SLACK:
            return 1.0
        self._flight_sped = True
        return min(source_left / body_left, MAX_FLIGHT_RATE)

    def _single_support_rate(self, tempo: float, p_r: np.ndarray, v_r: np.ndarray) -> float:
        """Phase rate on one foot: the tempo while the body keeps up with the slowed motion, rising
        to 1 as its capture point (where it would come to rest, x + v/omega) runs ahead of the
        slowed reference's.

        Why: a slowed weight shift or hold is still balanced, but when the source motion lets the
        body fall onto the next step (dancing, turning), gravity sets that clock: a slow-motion
        swing foot would land after the body had fallen past it.  A steady slowed walk or run keeps
        up (the feet land closer) and stays slow.  A tired character slows its holds, steps and
        strides, not its falls."""
        scale = kin_scale(self.body)
        height = max(self.p[2] - self.ref.floor, 0.3 * scale)
        root = math.sqrt(height / 9.81)
        d = (self.p[:2] - p_r[:2]) + (self.v[:2] - v_r[:2]) * root
        ahead = math.sqrt(d @ d) - CAPTURE_SLACK * scale
        return tempo + (1.0 - tempo) * min(max(ahead / (CAPTURE_SLACK * scale), 0.0), 1.0)

    def _update_tempo(self) -> None:
        """Tempo rule: slow down as the loaded leg DoFs lose capacity; rest when they cannot
        carry the motion, resume when every leg DoF has recovered or recovery has stalled."""
        if self.fatigue is None:
            return
        s = self.s
        dofs = self._leg_dofs
        if self.v_target[2] < CARRY_RISE * kin_scale(self.body):
            # (A take-off the tired legs push less high is fatigue showing, not legs giving way.)
            below = (self.p_target[2] - self.p[2]) if any(f.stance for f in self.feet) and not self.resting else 0.0
            self._sinking += (below - self._sinking) * self._sinking_blend
        rc = self.fatigue.model.residual_capacity[dofs]
        loaded = self.load_avg[dofs] > 0.02
        rc_eff = float(rc[loaded].min()) if loaded.any() else float(rc.min())
        # After the source motion's end there is nothing to carry on with: a rest there lasts
        # until the legs have recovered (the keyed end pose may cost more than standing easy).
        ended = self.phase >= self.ref.duration - 1e-9
        if self.resting and self._closing is not None:
            return                      # a closing step finishes (and settles) before anything else
        if (self.resting and self._closing is None and not self._closed
                and self.time - self._rest_began >= CLOSE_SETTLE
                and float(self.v @ self.v) < (CLOSE_STILL * kin_scale(self.body)) ** 2):
            self._closing = self._plan_closing_step(self.ref.sample(self.phase))
            if self._closing is not None:
                self._closed = True
                return
        if self.resting:
            reason = self.rest_over(float(rc.min()), ended)
            if reason is not None:
                self.end_rest(reason)
                self._closing = None
                if self._stopped:       # a rest it stopped for: go on from where it stands
                    self._continue_from_here(self.ref.sample(self.phase))
            return
        self.tempo = self.tempo_for(rc_eff)
        # Rest where a person would: both feet down, upright, hips over the feet (until then the
        # motion goes on at the slowest tempo); exhausted, anywhere both feet are down, since a
        # motion that never offers such a moment would otherwise carry the body until it falls.
        # And one that has waited REST_WAIT for such a moment takes the next one both feet are
        # down: a dance with no restful moment carried the tired body until a knee gave way.
        # Legs that no longer hold the body up (it stays below its target on its feet, an
        # exhausted run sinking stride by stride) cannot carry the motion, whatever capacity
        # they show: that needs a rest too.
        failing = self._sinking > CARRY_SINKING * kin_scale(self.body)
        if failing:
            rc_eff = min(rc_eff, s.exhausted_rc - 1e-9)
        if rc_eff >= s.rest_rc:
            self._rest_wanted = None
        elif self._rest_wanted is None:
            self._rest_wanted = self.time
        waited = self._rest_wanted is not None and self.time - self._rest_wanted >= REST_WAIT
        allowed = self.phase >= self._no_rest_before or ended
        self._rest_due = rc_eff < s.rest_rc and (rc_eff < s.exhausted_rc or waited) and allowed
        restful = bool(self.ref.restful[self.ref.frame(self.phase)]) or rc_eff < s.exhausted_rc or waited
        if rc_eff < s.rest_rc and all(f.stance for f in self.feet) and restful and allowed:
            self._stopped, self._rest_due, self.stopping = self.stopping, False, False
            self.begin_rest(float(rc.min()))
            self._closing, self._closed, self._rest_began = None, False, self.time
        elif self.stopping and all(f.stance for f in self.feet):
            self.stopping = False       # down on both feet and no longer due a rest: carry on

    # -- the tempo rule's parts (shared with floor work, runtime.floor.FloorFollower) -----------
    def tempo_for(self, capacity: float) -> float:
        """Phase rate for the weakest loaded joint's residual ``capacity``: full above
        full_tempo_rc, down to min_tempo towards rest_rc."""
        s = self.s
        return min(max((capacity - s.rest_rc) / (s.full_tempo_rc - s.rest_rc), s.min_tempo), 1.0)

    def begin_rest(self, capacity: float) -> None:
        """Start a rest (event "rest"); ``capacity``: the weakest joint's now, to measure recovery by."""
        self.resting = True
        self._rest_best, self._rest_best_time = capacity, self.time
        self.events.append({"time": self.time, "frame": int(round(self.time * 30)), "kind": "rest"})

    def rest_over(self, capacity: float, ended: bool) -> str | None:
        """While resting: why the rest ends now, given the weakest joint's ``capacity``:
        "recovered" (back above resume_rc) or "recovery stalled" (no gain for rest_stall: standing
        costs what recovery gives back; not after the source has ended); None to rest on."""
        s = self.s
        if capacity > self._rest_best + 0.01:
            self._rest_best, self._rest_best_time = capacity, self.time
        if capacity >= s.resume_rc:
            return "recovered"
        if self.time - self._rest_best_time > s.rest_stall and not ended:
            return "recovery stalled"
        return None

    def end_rest(self, reason: str) -> None:
        """Carry on (event "resume"), slowly; rest again only after some of the motion."""
        self.resting = False
        self._no_rest_before = self.phase + self.s.min_motion_between_rests
        self.events.append({"time": self.time, "frame": int(round(self.time * 30)), "kind": "resume",
                            "reason": reason})

    def _check_fall(self, q_r) -> None:
        """Fallen: the COM sank below 45 % of its standing height; or it stayed further from every
        foot on the ground than the clip itself ever goes (plus a margin) for LOST_BALANCE_TIME,
        which with the orientation following the reference is how a push topples the body; or
        (simulated rotation only) the body tilted more than 70 degrees away from the reference."""
        if self.fallen:
            return
        height = self.p[2] - self.ref.floor
        tilted = self.s.orientation == "dynamic" and float(quat.angle_between(self.q, q_r)) > 1.2
        if self._support:
            p_xy = self.p[:2]
            reach = min(math.sqrt(d.dot(d)) for d in (p_xy - xy for xy in self._support))  # == norm
            limit = self.ref.support_reach + BALANCE_MARGIN * kin_scale(self.body)
            self._off_balance = self._off_balance + self.dt if reach > limit else 0.0
        lost = self._off_balance >= LOST_BALANCE_TIME
        if height < 0.45 * self.ref.standing_com or tilted or lost:
            self.fallen = True
            self.events.append({"time": self.time, "kind": "fall", "frame": int(round(self.time * 30))})

    # -- output ------------------------------------------------------------------------------
    def state(self) -> tuple:
        """What the full-body pose needs, cheap to take every output frame."""
        limbs = self.limbs.joint_rotations() if self.limbs is not None else None
        return (self.phase, self.p.copy(), self.q.copy(), np.array([f.offset for f in self.feet]),
                np.array([f.stance for f in self.feet]), self.resting, limbs, self.sag)

    def pose(self, state: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """poses() of one state (root position, rotation, joint rotations), on Python floats."""
        ref, body = self.ref, self.body
        phase, p, q, offsets, stance, resting, limbs, sag = state
        _, _, joints = ref.clip.sample(phase)
        joints = joints.copy()
        if limbs is not None:
            joints[self.limbs.joint_slots] = limbs
        r = ref.sample(phase)
        R = _qmat(q)
        root_rot = np.array(quat.multiply4(q.tolist(), r.root_rel.tolist()))
        root_R = _qmat(root_rot)
        root_pos = p + R @ r.root_offset
        ankles = r.ankle + offsets
        sole_level = ref.floor - body.sole_drop
        for k in range(2):
            ankle = ankles[k]
            if not stance[k]:
                ankle[2] = max(float(ankle[2] + p[2] - (r.com[2] - sag)), sole_level)
            foot_R = _qmat(r.foot_rot[k])
            if resting:                 # flat, on the floor or stepping in (see _step_in)
                foot_R = _flatten_foot(foot_R)
            if resting and stance[k]:
                ankle[2] = sole_level
            if stance[k] or resting:    # (a rest's closing step from a wide stance: toes first)
                ankle, foot_R = _pivot_on_toes(body, root_pos + root_R @ body.hip[k], ankle, foot_R)
            hi, ki, ai = self._leg_slots[k]
            q_hip, knee, q_ankle = leg_ik_one(body, k, root_pos, root_R, joints[hi], ankle, foot_R)
            joints[hi] = q_hip
            joints[ki] = (0.0, 0.0, math.sin(0.5 * knee), math.cos(0.5 * knee))
            joints[ai] = q_ankle
        return root_pos, root_rot, joints

    def poses(self, states: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Full-body poses for recorded states: root positions (N, 3), rotations (N, 4), joint
        rotations (N, J, 4), foot contacts (N, 2).

        Trunk, arms and neck come from the reference at each phase (or the simulated limbs); the
        pelvis from the SRB with the reference's pelvis-to-COM offset; the legs by IK onto the
        simulated feet.  All frames at once (numpy over frames)."""
        ref, body = self.ref, self.body
        phases = np.array([st[0] for st in states])
        p = np.array([st[1] for st in states])
        q = np.array([st[2] for st in states])
        at = ref.samples(phases)
        ankles = np.array([st[3] for st in states]) + at.ankle
        contacts = np.array([st[4] for st in states], dtype=bool)
        resting = np.array([st[5] for st in states], dtype=bool)
        sag = np.array([st[7] for st in states])
        _, _, joints = ref.clip.sample_many(phases)
        if self.limbs is not None:
            for n, st in enumerate(states):
                joints[n, self.limbs.joint_slots] = st[6]
        root_rot = quat.multiply(q, at.root_rel)
        root_R = quat.to_matrix(root_rot)
        root_pos = p + _mv(quat.to_matrix(q), at.root_offset)
        sole_level = ref.floor - body.sole_drop
        for k in range(2):
            ankle = ankles[:, k]
            swing = ~contacts[:, k]
            # A swing foot keeps its height relative to the body; a resting foot stands flat.
            ankle[swing, 2] = np.maximum(ankle[swing, 2] + p[swing, 2] - (at.com[swing, 2] - sag[swing]),
                                         sole_level)
            foot_R = quat.to_matrix(at.foot_rot[:, k])
            flat = resting & contacts[:, k]
            for n in np.flatnonzero(resting):     # flat, on the floor or stepping in (see _step_in)
                foot_R[n] = _flatten_foot(foot_R[n])
            ankle[flat, 2] = sole_level
            hip = root_pos + _mv(root_R, body.hip[k])
            # (a rest's closing step from a wide stance: toes first)
            far = (contacts[:, k] | resting) & (np.sqrt(((ankle - hip) ** 2).sum(axis=1))
                                                > TOE_PIVOT_REACH * (body.thigh + body.shin))
            for n in np.flatnonzero(far):
                ankle[n], foot_R[n] = _pivot_on_toes(body, hip[n], ankle[n], foot_R[n])
            hi, ki, ai = self._leg_slots[k]
            q_hip, knee, q_ankle = leg_ik(body, k, root_pos, root_R, joints[:, hi], ankle, foot_R)
            joints[:, hi] = q_hip
            joints[:, ki] = np.stack([np.zeros_like(knee), np.zeros_like(knee),
                                      repeatable.sin(0.5 * knee), repeatable.cos(0.5 * knee)], axis=-1)
            joints[:, ai] = q_ankle
        return root_pos, root_rot, joints, contacts
