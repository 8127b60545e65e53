"""Sampling-based whole-body tracking (SAMCON: Liu, Yin, van de Panne et al. 2010, 2015) on MuJoCo.

Why: the articulated body has no balance controller of its own, and the clips' balance is not
physically feasible frame by frame (their centre of pressure leaves flat feet in 31-98 % of
stance frames), so an inverse-dynamics tracker needed a root moment.  Sampling needs neither a
feasible reference nor a learned policy: window by window it tries offsets to the clip's PD
targets from the states it kept, simulates each forward with every motor capped (no force or
moment on the root, ever), scores the end of each window against the clip and keeps the best.
The simulator itself finds the foot roll, timing and centre of pressure the clip leaves out.

The body is the proxy's (runtime.body.description), each ball joint as three hinges (in an order
chosen per clip, clear of gimbal lock) so that MuJoCo's own position servos drive every DoF: the PD runs in C, and
so do the samples, in MuJoCo's threaded rollouts (one thread per core).  The search is seeded
from the clip's numbers and every sample's result depends only on its parent state and offsets,
so a take is the same bit for bit however the samples are spread over the threads.
"""
from __future__ import annotations

import copy
import hashlib
import math
import os
import time as _time
from dataclasses import dataclass, field, replace

import numpy as np

from .. import calibration
from ..body import proxy
from ..body.description import proxy_links
from ..engines import chooser
from ..engines.mujoco.model import keep_warnings_in_memory, mjcf, numbers_text
from ..fatigue.effort import PathGive, fatigue_cost
from ..fatigue.schedule import ScheduledModel
from ..fatigue.tempo import MAX_STRETCH
from ..maths import quat, repeatable
from ..motion.clip import Clip
from ..motion.take import Event, Take, unfatigued
from .sampled_reference import DAMPING_RATIO, Reaching, SampledReference, WindowEnd, Clock

# PD stiffness per joint at the default 45 kg body (DeepMimic's humanoid); damping kp / 10.
GAINS = {"chest": 1000.0, "neck": 100.0, "hip": 500.0, "knee": 500.0, "ankle": 400.0,
         "shoulder": 400.0, "elbow": 300.0}
# Sampling spread per joint (rad): legs and trunk carry the balance.
SPREAD = {"chest": 0.1, "neck": 0.05, "hip": 0.2, "knee": 0.2, "ankle": 0.2, "shoulder": 0.1,
          "elbow": 0.1}
FOOT_LINKS = ("right_ankle", "left_ankle")
TIP_LINKS = FOOT_LINKS + ("right_wrist", "left_wrist")
FALL_COST = 1e3           # a sample whose look-ahead falls
FRICTION = "0.9 0.005 0.0001"   # sliding, torsional, rolling (feet, body and floor alike)
STRENGTH_HEADROOM = 3.0   # motors' caps over the proxy's default strength while fresh
TIRED_MARGIN = 1.05       # a fatigued track's strength over the fresh track's largest torque
# A joint whose damper, as a passive one, would hold it below this speed at its fresh strength
# (strength / damping, rad/s) carries its damping in its servo, within its strength: see SampledBody.
PASSIVE_SPEED = 6.0
PEAK_SPEED = 10.0         # rad/s: a servo-damped joint keeps strength / PEAK_SPEED of passive damping


def _kind(name: str) -> str:
    return name.split("_")[-1]


def fresh_strength(mass: float = proxy.DEFAULT_MASS) -> np.ndarray:
    """Per DoF, the servos' caps while fresh: STRENGTH_HEADROOM times the proxy's default strength."""
    return np.array(proxy.dof_tau_max(scale=mass / proxy.DEFAULT_MASS)) * STRENGTH_HEADROOM


@dataclass(frozen=True)
class SamconSettings:
    window: float = 0.1            # s of motion per sampling window
    rate: float = 250.0            # Hz, physics
    samples: int = 1200            # simulated per window (with 600 and 60 kept the spin fell at 2.9 s)
    keep: int = 120                # states kept between windows
    retries: int = 2               # a window where nothing survives: this many more rounds, each twice as big
    pose_weight: float = 1.0       # joint angles (rad^2)
    root_weight: float = 1.0       # pelvis orientation
    end_weight: float = 10.0       # feet and hands relative to the centre of mass (m^2)
    balance_weight: float = 10.0   # centre of mass over the feet, and its height
    position_weight: float = 30.0  # centre of mass on the clip's path across the floor
    velocity_weight: float = 1.0   # ... and at the clip's pace
    effort_weight: float = 1.0     # torque over strength squared, weighed by what it costs a tired joint
    spread_scale: float = 1.0
    lookahead: int = 2             # windows each sample is followed on (the clip's targets) before it is scored
    landing_lookahead: int = 6     # ... at most this many where the clip takes off within them: on past its landing
    threads: int = 0               # simulating samples (0: one per core)


@dataclass
class SamconResult:
    """The tracked motion at the clip's frames, and what the search cost."""
    root_pos: np.ndarray           # (T, 3)
    root_rot: np.ndarray           # (T, 4) x, y, z, w
    joint_rots: np.ndarray         # (T, J, 4)
    fell_at: float | None          # s of motion where no sample survived, or None
    seconds: float                 # of motion tracked
    wall_seconds: float
    simulated_steps: int
    threads: int
    costs: list = field(default_factory=list)    # best cost per window
    torque: np.ndarray | None = None             # (T, DoF) N m the servos applied at each frame
    peak_torque: np.ndarray | None = None        # (DoF,) the largest |torque| along the path, every step
    fatigue: dict | None = None                  # MA, MR, MF, TL, RC: (T, DoF) (None: fatigue off)
    com: np.ndarray | None = None                # (T, 3) centre of mass
    fps: float = 30.0
    tau_max: np.ndarray | None = None            # (DoF,) the strength the motors were capped by
    height: float = proxy.DEFAULT_HEIGHT
    reference_time: np.ndarray | None = None     # (T,) s of the clip shown at each frame (slower when tired)
    events: list = field(default_factory=list)   # runtime.motion.take.Event: rests, resumes, a fall, a stop

    def take(self, name: str) -> Take:
        """This track as a Take (torque mode: the pose as simulated, no help on the root), so
        that everything that measures a take measures it."""
        frames = len(self.root_pos)
        strength = np.broadcast_to(self.tau_max, self.torque.shape).copy()
        fatigue = self.fatigue if self.fatigue is not None else unfatigued(self.torque, strength)
        events = [e.at(self.fps) for e in self.events]
        clip = Clip(name=f"{name}.sampled", fps=self.fps, root_pos=self.root_pos,
                    root_rot=quat.make_continuous(self.root_rot), joint_rots=quat.make_continuous(self.joint_rots),
                    loop=False)
        # Feet on the floor as every take finds them: from the pose's geometry (kinematics.analyse).
        contacts = chooser.shared_kinematics(self.height, None, "mujoco").analyse(clip).foot_contact
        return Take(mode="torque", fps=self.fps, clip=clip,
                    reference_time=(self.reference_time if self.reference_time is not None
                                    else np.arange(frames) / self.fps), fatigue=fatigue, torque=self.torque,
                    contacts=contacts, residual_force=np.zeros((frames, 3)), com=self.com, events=events,
                    notes={"body": "the whole body, sampled (no root help)"}, tau_max=self.tau_max,
                    strength=strength,
                    stats={"seconds_simulated": self.seconds, "wall_seconds": self.wall_seconds,
                           "realtime_x": self.seconds / self.wall_seconds if self.wall_seconds > 0 else float("inf"),
                           "residual_moment_nm_mean": 0.0, "floor_work": 0.0, "behind_source_m": 0.0},
                    engine="mujoco")


def strength_for(fresh: SamconResult, mass: float = proxy.DEFAULT_MASS) -> np.ndarray:
    """The strength per DoF a fatigued track is capped by: TIRED_MARGIN times the largest torque
    of the ``fresh`` track of the same motion (left and right alike), never below the proxy's
    default.  Why: as in SRB mode's calibration, fresh is just strong enough for the motion, so
    fatigue shows as soon as capacity drops (at 3x the default strength nothing would bind)."""
    default = np.array(proxy.dof_tau_max(scale=mass / proxy.DEFAULT_MASS))
    return calibration.strength_over(default, fresh.peak_torque, TIRED_MARGIN)


# -- the body ----------------------------------------------------------------------------------
ORDERS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))   # hinge axes, first to last


def _even(order) -> bool:
    return order in ((0, 1, 2), (1, 2, 0), (2, 0, 1))


def to_euler(q: np.ndarray, order=(0, 1, 2)) -> np.ndarray:
    """(..., 3) angles (a, b, c) with rotation = R_i(a) R_j(b) R_k(c), (i, j, k) = ``order``, of
    quaternions (..., 4) x, y, z, w."""
    R = quat.to_matrix(q)
    i, j, k = order
    sign = 1.0 if _even(order) else -1.0
    b = repeatable.arcsin(np.clip(sign * R[..., i, k], -1.0, 1.0))
    a = repeatable.arctan2(-sign * R[..., j, k], R[..., k, k])
    c = repeatable.arctan2(-sign * R[..., i, j], R[..., i, i])
    return np.stack([a, b, c], axis=-1)


def from_euler(e: np.ndarray, order=(0, 1, 2)) -> np.ndarray:
    """Quaternions (..., 4) x, y, z, w of R_i(a) R_j(b) R_k(c)."""
    out = None
    for n, axis in enumerate(order):
        h = 0.5 * e[..., n]
        q = np.zeros(e.shape[:-1] + (4,))
        q[..., axis], q[..., 3] = repeatable.sin(h), repeatable.cos(h)
        out = q if out is None else quat.multiply(out, q)
    return out


def gimbal_free_orders(joint_rots: np.ndarray) -> tuple:
    """Per joint of a clip (frames, J, 4), the hinge order whose middle angle stays furthest from
    +-90 degrees over the clip (where the other two angles turn without bound): ball joints
    only, None for hinges."""
    out = []
    for j, joint in enumerate(proxy.DEFAULT_JOINTS):
        if joint.dofs != 3:
            out.append(None)
            continue
        best = max(ORDERS, key=lambda o: float(repeatable.cos(to_euler(joint_rots[:, j], o)[:, 1]).min()))
        out.append(best)
    return tuple(out)


def _cap(model, caps: np.ndarray) -> None:
    """Every servo of ``model`` within +-``caps`` (per DoF)."""
    model.actuator_forcerange[:, 0] = -caps
    model.actuator_forcerange[:, 1] = caps


class SampledBody:
    """The proxy in MuJoCo with a floor, contacts and a capped position servo on every DoF (none
    on the root).

    Each servo is a PD (stiffness GAINS, damping a tenth of it).  The legs' damping is a passive
    damper on the joint, integrated implicitly (steady on contact).  An arm's, the neck's and the
    chest's damping is the servo's own, within its strength: as a passive damper it would hold
    them below PASSIVE_SPEED (a shoulder at 2.6 rad/s fresh, below 1 rad/s tired), and dance_a's
    arm circles (5.8 rad/s) lagged its right shoulder 110 degrees behind the clip on average."""

    def __init__(self, height: float = proxy.DEFAULT_HEIGHT, mass: float = proxy.DEFAULT_MASS,
                 floor: float = 0.0, rate: float = 250.0, orders: tuple | None = None, plan=None):
        import mujoco

        self._mj = mujoco
        keep_warnings_in_memory(mujoco)       # a diverging sample warns: not into a file in the user's folder
        self.joints = proxy.DEFAULT_JOINTS
        self.orders = orders or tuple((0, 1, 2) if j.dofs == 3 else None for j in self.joints)
        scale = mass / proxy.DEFAULT_MASS
        kp = np.concatenate([[GAINS[_kind(j.name)] * scale] * j.dofs for j in self.joints])
        text = mjcf(proxy_links(height, plan), free_base=True, dt=1.0 / rate)
        # No solver warm start: a step depends on (qpos, qvel, ctrl) alone, so a sample gives the
        # same bits in any worker and in the replay of the best path.
        text = text.replace('<flag contact="disable"/>', '<flag warmstart="disable"/>').replace('integrator="Euler"', 'integrator="implicitfast"')
        text = text.replace('contype="0" conaffinity="0"', f'contype="2" conaffinity="1" friction="{FRICTION}"')
        text = text.replace("  <worldbody>\n", '  <worldbody>\n    <geom name="floor" type="plane" size="0 0 1" '
                            f'pos="0 0 {numbers_text([floor])}" contype="1" conaffinity="2" friction="{FRICTION}"/>\n', 1)
        dof_names, servos = [], []
        axes = ("1 0 0", "0 1 0", "0 0 1")
        for j, order in zip(self.joints, self.orders):
            if j.dofs == 3:
                old = f'<joint name="{j.name}" type="ball" damping="0" armature="0"/>'
                hinges = "".join(f'<joint name="{j.name}_{n}" type="hinge" axis="{axes[a]}" limited="false" damping="0" armature="0"/>'
                                 for n, a in enumerate(order))
                assert old in text
                text = text.replace(old, hinges)
                dof_names += [f"{j.name}_{n}" for n in range(3)]
            else:
                dof_names.append(j.name)
        strength = fresh_strength(mass)
        self.damped_by_servo = strength / (kp * DAMPING_RATIO) < PASSIVE_SPEED
        # Where the servo carries the damping, a passive share strength / PEAK_SPEED stays on the
        # joint (a muscle's force falls with its speed): a saturated servo is still damped.  That
        # share is below the servo's kp / 10 wherever the servo carries it (PEAK_SPEED > PASSIVE_SPEED).
        passive_damping = np.where(self.damped_by_servo, strength / PEAK_SPEED, kp * DAMPING_RATIO)
        for name, k, inside, passive in zip(dof_names, kp, self.damped_by_servo, passive_damping):
            damping = f' kv="{k * DAMPING_RATIO - passive!r}"' if inside else ""
            servos.append(f'    <position name="{name}" joint="{name}" kp="{k!r}"{damping} forcelimited="true" forcerange="-1 1"/>')
        # Sensors, read for every sample at every step by MuJoCo's rollouts: whether each body but
        # the feet touches the floor (a fall), then the feet and hands, the centre of mass and its
        # velocity (the cost).
        touching = [link.name for link in proxy_links(height, plan) if link.shapes and link.name not in FOOT_LINKS]
        sensors = [f'    <contact name="floor_{n}" body1="{n}" geom2="floor" data="found" num="1"/>' for n in touching]
        sensors += [f'    <framepos objtype="xbody" objname="{n}"/>' for n in TIP_LINKS]
        sensors += ['    <subtreecom body="base"/>', '    <subtreelinvel body="base"/>']
        sensors += [f'    <actuatorfrc actuator="{name}"/>' for name in dof_names]
        sensors += [f'    <contact body1="{n}" geom2="floor" data="found" num="1"/>' for n in FOOT_LINKS]
        text = text.replace("</mujoco>", "  <actuator>\n" + "\n".join(servos) + "\n  </actuator>\n  <sensor>\n"
                            + "\n".join(sensors) + "\n  </sensor>\n</mujoco>")
        self.touch_sensors = len(touching)
        self.touch_links = tuple(touching)
        tips_at = len(touching)
        com_at = tips_at + 3 * len(TIP_LINKS)
        self.tip_sensors = slice(tips_at, com_at)
        self.com_sensor = slice(com_at, com_at + 3)
        self.com_vel_sensor = slice(com_at + 3, com_at + 6)
        self.torque_sensors = slice(com_at + 6, com_at + 6 + len(dof_names))
        self.foot_sensors = slice(com_at + 6 + len(dof_names), com_at + 8 + len(dof_names))
        self.model = m = mujoco.MjModel.from_xml_string(text)
        self.data = mujoco.MjData(m)
        self.qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in dof_names])
        m.dof_damping[[m.jnt_dofadr[m.joint(n).id] for n in dof_names]] = passive_damping
        self._tips = [m.body(n).id for n in TIP_LINKS]
        floor_geom = m.geom("floor").id
        geoms = [[g for g in range(m.ngeom) if g != floor_geom and m.geom_bodyid[g] == m.body(n).id]
                 for n in touching + list(FOOT_LINKS)]
        self._floor_geom, self._link_geoms = floor_geom, geoms
        self._first = np.cumsum([0] + [j.dofs for j in self.joints])[:-1]

    def set_caps(self, caps: np.ndarray) -> None:
        _cap(self.model, caps)

    def angles_of(self, joint_rots: np.ndarray) -> np.ndarray:
        """(..., 28) servo angles of joint rotations (..., J, 4)."""
        out = []
        for j, joint in enumerate(self.joints):
            if joint.dofs == 3:
                out.append(to_euler(joint_rots[..., j, :], self.orders[j]))
            else:
                out.append(quat.hinge_angle(joint_rots[..., j, :])[..., None])
        return np.concatenate(out, axis=-1)

    def rotations_of(self, angles: np.ndarray) -> np.ndarray:
        """(..., J, 4) joint rotations of servo angles (..., 28)."""
        out = []
        for j, joint in enumerate(self.joints):
            a = angles[..., self._first[j]:self._first[j] + joint.dofs]
            if joint.dofs == 3:
                out.append(from_euler(a, self.orders[j]))
            else:
                h = 0.5 * a[..., 0]
                out.append(np.stack([np.zeros_like(h), np.zeros_like(h), repeatable.sin(h), repeatable.cos(h)], axis=-1))
        return np.stack(out, axis=-2)

    def qpos_of(self, root_pos, root_rot, angles) -> np.ndarray:
        q = np.zeros(self.model.nq)
        q[0:3], q[3], q[4:7] = root_pos, root_rot[3], root_rot[:3]
        q[self.qadr] = angles
        return q

    def set_state(self, qpos, qvel) -> None:
        self.data.qpos[:] = qpos
        self.data.qvel[:] = qvel
        self.data.time = 0.0
        self._mj.mj_forward(self.model, self.data)

    def clearance(self) -> tuple[np.ndarray, np.ndarray]:
        """(each link with a touch sensor, each foot) its height above the floor now (m; negative:
        into it; at most 1)."""
        m, d, fromto = self.model, self.data, np.zeros(6)
        gaps = np.array([min(self._mj.mj_geomDistance(m, d, g, self._floor_geom, 1.0, fromto) for g in gs)
                         for gs in self._link_geoms])
        return gaps[:self.touch_sensors], gaps[self.touch_sensors:]

    def features(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tips (4, 3), centre of mass, its velocity) now."""
        self._mj.mj_subtreeVel(self.model, self.data)
        d = self.data
        return d.xpos[self._tips].copy(), d.subtree_com[1].copy(), d.subtree_linvel[1].copy()


# -- the search ----------------------------------------------------------------------------------
class _Rollouts:
    """Simulates batches of windows with MuJoCo's threaded rollouts (one MjData per core): the
    physics and the servos run in C, the samples in parallel."""

    def __init__(self, body: SampledBody, threads: int):
        import mujoco
        from mujoco import rollout

        self._rollout = rollout.rollout
        self.body = body
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.datas = [mujoco.MjData(body.model) for _ in range(max(1, threads))]
        self.touch = body.touch_sensors
        self.models: list = []

    def state_of(self, qpos, qvel) -> np.ndarray:
        import mujoco

        b = self.body
        b.set_state(qpos, qvel)
        out = np.empty(mujoco.mj_stateSize(b.model, self.spec))
        mujoco.mj_getState(b.model, b.data, out, self.spec)
        return out

    def capped(self, caps: list[np.ndarray]) -> list:
        """One model per row of ``caps`` (its motors capped so), kept between calls."""
        while len(self.models) < len(caps):
            self.models.append(copy.copy(self.body.model))
        for m, c in zip(self.models, caps):
            _cap(m, c)
        return self.models[:len(caps)]

    def run(self, states: np.ndarray, controls: np.ndarray, models=None, on_floor=None):
        """(states, fallen, sensors) after every step (N, steps, ...) of rollouts from ``states``
        (N, nstate) under ``controls`` (N, steps, 28), each with its model in ``models`` (N; None:
        the body's).  Fallen: a link besides the feet on the floor where ``on_floor`` (steps,
        touch sensors; None: nowhere) does not put the clip's own."""
        state, sensors = self._rollout(self.body.model if models is None else models, self.datas, states, controls)
        touching = sensors[:, :, :self.touch] > 0.0
        if on_floor is not None:
            touching &= ~on_floor[None]
        return state, touching.any(axis=2), sensors


def _booked(fatigue, torques: np.ndarray, tau_max: np.ndarray, start: float, dt: float):
    """A copy of the 3CC state ``fatigue`` (None: fatigue off) after booking ``torques`` (steps,
    DoF), one per physics step from time ``start``."""
    if fatigue is None:
        return None
    out = copy.copy(fatigue)
    out.model = copy.deepcopy(fatigue.model)
    for k, torque in enumerate(torques):
        out.step_torque(torque, tau_max, start + k * dt, dt)
    return out


def _costs(s: SamconSettings, body: SampledBody, end: WindowEnd, states: np.ndarray,
           sensors: np.ndarray, give: np.ndarray | None = None) -> np.ndarray:
    """Cost of every sample (rows of end ``states`` and ``sensors``) against the clip where the
    window ends (``end``), its pose yielded by ``give`` (rows per sample; None: none)."""
    qpos = states[:, 1:1 + body.model.nq]
    angles = qpos[:, body.qadr]
    aim = end.angles if give is None else end.angles + give
    diff = np.abs(np.remainder(angles - aim + math.pi, 2.0 * math.pi) - math.pi)
    pose = (diff * diff).sum(axis=1)
    root = qpos[:, [4, 5, 6, 3]]
    turn = 2.0 * repeatable.arccos(np.minimum(1.0, np.abs(root @ end.root)))
    tips = sensors[:, body.tip_sensors].reshape(-1, len(TIP_LINKS), 3)
    com = sensors[:, body.com_sensor]
    com_vel = sensors[:, body.com_vel_sensor]
    rel = (tips - com[:, None, :]) - (end.tips - end.com)
    feet = (tips[:, :2, :2].mean(axis=1) - com[:, :2]) - (end.tips[:2, :2].mean(axis=0) - end.com[:2])
    balance = (feet * feet).sum(axis=1) + (com[:, 2] - end.com[2]) ** 2
    path = com[:, :2] - end.com[:2]
    pace = com_vel - end.com_vel
    return (s.pose_weight * pose + s.root_weight * turn * turn + s.end_weight * (rel * rel).sum(axis=(1, 2))
            + s.balance_weight * balance + s.position_weight * (path * path).sum(axis=1)
            + s.velocity_weight * (pace * pace).sum(axis=1))


def _effort(torques: np.ndarray, tau_max: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Per sample, the mean over its window of sum_d (tau_d / tau_max_d)^2 (1 / RC_d^2 - 1):
    ``torques`` (N, steps, DoF), ``capacity`` (N, DoF) its path's residual capacity.

    Why: SRB mode's effort economy (runtime.fatigue.effort.fatigue_cost) for the whole body.  Nothing
    while fresh; tired, a pose that costs a weak joint dearly loses to one that spares it (an
    arm lowered, a knee less bent), and a rest can recover instead of holding the motion's pose
    at full cost."""
    load = torques / tau_max
    return ((load * load).mean(axis=1) * fatigue_cost(capacity)).sum(axis=1)


def _seed(clip: Clip, settings: SamconSettings) -> int:
    h = hashlib.sha256()
    for a in (clip.root_pos, clip.root_rot, clip.joint_rots):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    h.update(repr(replace(settings, threads=0)).encode())
    return int.from_bytes(h.digest()[:8], "little")


def track(clip: Clip, seconds: float | None = None, settings: SamconSettings | None = None,
          height: float = proxy.DEFAULT_HEIGHT, mass: float = proxy.DEFAULT_MASS, floor: float = 0.0,
          tau_max: np.ndarray | None = None, schedule=None, progress=None,
          max_stretch: float = MAX_STRETCH, effort_economy: float = 1.0,
          reaching: Reaching | None = None) -> SamconResult:
    """Track ``clip`` (its first ``seconds``; a looping clip cycles) by sampling; every motor
    within its strength ``tau_max`` per DoF (default: STRENGTH_HEADROOM times the proxy's
    default), and under a fatigue ``schedule`` (runtime.fatigue.schedule.FatigueSchedule; None: fatigue
    off) within RC x tau_max: every kept path carries its own 3CC state, booked with the torques
    its servos applied at every step, and its samples are capped by its residual capacity at
    the window's start.  Tired, the clip plays slower and holds still to rest (sampled_reference.
    Clock); tired joints yield to their loads by ``effort_economy`` (effort.PathGive); the take
    lasts at most ``max_stretch`` times the clip (event "stopped" if cut short) and ends where the
    clip does.  ``reaching``: links the clip puts on the floor though they stay a little above it."""
    s = settings or SamconSettings()
    wall0 = _time.perf_counter()
    duration = clip.duration if seconds is None else (seconds if clip.loop else min(seconds, clip.duration))
    body = SampledBody(height, mass, floor, s.rate, gimbal_free_orders(clip.joint_rots))
    ref = SampledReference(clip, duration, s.rate, s.window, body, reaching)
    clock = Clock(ref, ref.feet(clip, height))
    if tau_max is None:
        tau_max = fresh_strength(mass)
    tau_max = np.asarray(tau_max, dtype=np.float64)
    n, dt = ref.window_steps, ref.dt
    rng = np.random.default_rng(_seed(clip, s))
    spread = np.concatenate([[SPREAD[_kind(j.name)]] * j.dofs for j in proxy.DEFAULT_JOINTS]) * s.spread_scale
    start = clip.sample_many(np.array([0.0, dt]))[2]
    q0 = body.qpos_of(ref.pos[0], ref.rot[0], body.angles_of(start[0]))
    q1 = body.qpos_of(ref.pos[1], ref.rot[1], body.angles_of(start[1]))
    v0 = np.zeros(body.model.nv)
    body._mj.mj_differentiatePos(body.model, v0, dt, q0, q1)
    threads = s.threads or (os.cpu_count() or 1)
    sim = _Rollouts(body, threads)
    first = sim.state_of(q0, v0)
    fatigue0 = ScheduledModel(schedule) if schedule is not None else None
    yielding = PathGive(proxy.DEFAULT_JOINTS, n * dt) if schedule is not None else None
    # (cost, state, path node (parent node, target shift, caps), 3CC state, (load, give) of the yield)
    kept = [(0.0, first, None, fatigue0, yielding.fresh() if yielding is not None else None)]
    torque_at = body.torque_sensors
    steps, fell_at, costs, clock_at = 0, None, [], []     # clock_at: (position, tempo) per window
    most = int(math.ceil(max_stretch * ref.windows))
    w = 0
    while not clock.ended and w < most:
        time_now = w * n * dt
        tempo = clock.tempo(time_now, kept[0][3].model if kept[0][3] is not None else None)
        x = clock.x
        window_targets = ref.targets(x, tempo, n)
        x_end = float(ref.clamp(x + tempo * n))
        # Windows simulated on beyond, following the clip at this tempo (as many as it has left).
        left = s.lookahead if tempo <= 0.0 else int(math.ceil((ref.total - x_end) / (tempo * n) - 1e-9))
        ahead = max(0, min(max(s.lookahead, clock.windows_to_land(x, tempo, s.lookahead, s.landing_lookahead)), left))
        following = ref.targets(x_end, tempo, ahead * n)
        # Each kept path's motors within what it has left: RC x tau_max at the window's start.
        caps = [tau_max * (k[3].model.residual_capacity if schedule is not None else 1.0) for k in kept]
        models = sim.capped(caps)
        gives = (np.array([yielding.give(k[4], k[3].model.residual_capacity, effort_economy, tempo <= 0.0)
                           for k in kept]) if yielding is not None else None)
        count, rounds = s.samples, 0
        while True:
            parents = [kept[k % len(kept)] for k in range(count)]
            sample_models = [models[k % len(kept)] for k in range(count)]
            offsets = rng.standard_normal((count, len(spread))) * spread
            given = gives[np.arange(count) % len(kept)] if gives is not None else None
            shifts = offsets if given is None else offsets + given
            controls = window_targets[None] + shifts[:, None, :]
            if ahead:
                held = (np.broadcast_to(following, (count,) + following.shape) if given is None
                        else following[None] + given[:, None, :])
                controls = np.concatenate([controls, held], axis=1)
            states, fallen, sensors = sim.run(np.array([p[1] for p in parents]), controls, sample_models,
                                              ref.on_floor(x, tempo, n * (1 + ahead)))
            steps += count * n * (1 + ahead)
            alive = np.flatnonzero(~fallen[:, :n].any(axis=1))
            if len(alive) or rounds >= s.retries:
                break
            count, rounds = count * 2, rounds + 1
        if not len(alive):
            fell_at = time_now
            clock.events.append(Event(fell_at, "fall"))
            break
        ends = states[:, n - 1]
        aims = given[alive] if given is not None else None
        scores = _costs(s, body, ref.end(x_end, tempo), ends[alive], sensors[alive, n - 1], aims)
        for a in range(1, ahead + 1):
            later = _costs(s, body, ref.end(x_end + a * tempo * n, tempo), states[alive, (a + 1) * n - 1],
                           sensors[alive, (a + 1) * n - 1], aims)
            later[fallen[alive, :(a + 1) * n].any(axis=1)] = FALL_COST
            scores = scores + later
        if schedule is not None and s.effort_weight:
            capacity = np.array([parents[i][3].model.residual_capacity for i in alive])
            scores = scores + s.effort_weight * _effort(sensors[alive, :n, torque_at], tau_max, capacity)
        best = alive[np.argsort(scores, kind="stable")[:s.keep]]
        ranked = np.sort(scores, kind="stable")[:s.keep]
        kept = [(float(c), ends[i].copy(), (parents[i][2], shifts[i], caps[i % len(caps)]),
                 _booked(parents[i][3], sensors[i, :n, torque_at], tau_max, time_now, dt),
                 yielding.booked(parents[i][4], given[i], sensors[i, :n, torque_at], tau_max)
                 if yielding is not None else None)
                for c, i in zip(ranked, best)]
        costs.append(kept[0][0])
        clock_at.append((x, tempo))
        clock.advance(tempo)
        if schedule is not None:
            clock.land(sensors[best[0], :n, body.foot_sensors] > 0.0)
        w += 1
        if progress is not None:
            progress(clock.fraction)
    if fell_at is None and not clock.ended:
        clock.events.append(Event(w * n * dt, "stopped",
                                  f"the take reached {max_stretch:g}x the source length; the last "
                                  f"{(ref.total - clock.x) * dt:.1f} s of the source were not played"))
    # Replay the best path, recording every step (the same rollouts: the same bits) and booking
    # its torques again from the start (the same 3CC states the search carried).
    path, node = [], kept[0][2]
    while node is not None:
        node, offset, window_caps = node
        path.append((offset, window_caps))
    path.reverse()
    qs, torques, state = [q0], [np.zeros(len(tau_max))], first
    phases = [0.0]
    body.set_state(q0, v0)
    coms = [body.data.subtree_com[1].copy()]
    model = ScheduledModel(schedule) if schedule is not None else None
    snapshots = [model.model.snapshot()] if model is not None else None
    for w, ((offset, window_caps), (x, tempo)) in enumerate(zip(path, clock_at)):
        body.set_caps(window_caps)
        every, _, sensors = sim.run(state[None], (ref.targets(x, tempo, n) + offset)[None])
        qs.extend(every[0, :, 1:1 + body.model.nq])
        torques.extend(sensors[0, :, torque_at])
        coms.extend(sensors[0, :, body.com_sensor])
        phases.extend(ref.clamp(x + tempo * np.arange(1, n + 1)) * dt)
        if model is not None:
            for k in range(n):
                model.step_torque(sensors[0, k, torque_at], tau_max, (w * n + k) * dt, dt)
                snapshots.append(model.model.snapshot())
        state = every[0, -1].copy()
    tracked = len(qs) - 1
    frame_times = np.arange(int(math.floor(tracked * dt * clip.fps + 1e-9)) + 1) / clip.fps
    at = np.minimum(np.round(frame_times / dt).astype(int), tracked)
    shown = np.array(phases)[at]
    events = list(clock.events)
    # The take ends where its source does.  The search plays whole windows, and on past the end
    # the clip's last pose held: a 2-frame source gave a 13-frame take "at x1.00 tempo".  Its last
    # frame is the first to show the end, within the physics step the frame grid rounds to; what
    # came after (a stop at the length limit, a fall) is not part of it.
    ends = np.flatnonzero(shown >= duration - dt)
    if len(ends):
        at, shown = at[:ends[0] + 1], shown[:ends[0] + 1].copy()
        shown[-1] = duration
        events = [e for e in events if e.time < (len(at) - 1) / clip.fps - 1e-9]
    q = np.array([qs[i] for i in at])
    torques = np.array(torques)
    fatigue = ({k: np.array([snapshots[i][k] for i in at]) for k in snapshots[0]} if snapshots is not None else None)
    return SamconResult(root_pos=q[:, 0:3].copy(), root_rot=q[:, [4, 5, 6, 3]].copy(),
                        joint_rots=body.rotations_of(q[:, body.qadr]), fell_at=fell_at, seconds=tracked * dt,
                        wall_seconds=_time.perf_counter() - wall0, simulated_steps=steps, threads=threads, costs=costs,
                        torque=torques[at], peak_torque=np.abs(torques).max(axis=0), fatigue=fatigue,
                        com=np.array(coms)[at], fps=clip.fps, tau_max=tau_max,
                        height=height, reference_time=shown, events=events)
