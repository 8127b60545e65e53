"""Sampling-based whole-body tracking (SAMCON: Liu, Yin, van de Panne et al. 2010, 2015) on MuJoCo.

Why: the articulated body has no balance controller of its own, and the clips' balance is not
physically feasible frame by frame (their centre of pressure leaves flat feet in 31-98 % of
stance frames), so an inverse-dynamics tracker needed a root moment.  Sampling needs neither a
feasible reference nor a learned policy: window by window it tries offsets to the clip's PD
targets from the states it kept, simulates each forward with every motor capped (no force or
moment on the root, ever), scores the end of each window against the clip and keeps the best.
The simulator itself finds the foot roll, timing and centre of pressure the clip leaves out.

The body is the proxy's (runtime.body_description), each ball joint as three hinges (x, y, z in
the joint's frame) so that MuJoCo's own position servos drive every DoF: the PD runs in C.
Samples run in worker processes, one per core; the search is seeded from the clip's numbers and
every sample's result depends only on its parent state and offsets, so a take is the same bit for
bit however the samples are spread over the workers.
"""
from __future__ import annotations

import hashlib
import math
import os
import time as _time
from dataclasses import dataclass, field, replace

import numpy as np

from . import proxy, quat
from .body_description import proxy_links
from .clip import Clip
from .mujoco_proxy import _v, mjcf

# PD stiffness per joint at the default 45 kg body (DeepMimic's humanoid); damping kp / 10.
GAINS = {"chest": 1000.0, "neck": 100.0, "hip": 500.0, "knee": 500.0, "ankle": 400.0,
         "shoulder": 400.0, "elbow": 300.0}
# Sampling spread per joint (rad): legs and trunk carry the balance.
SPREAD = {"chest": 0.1, "neck": 0.05, "hip": 0.2, "knee": 0.2, "ankle": 0.2, "shoulder": 0.1,
          "elbow": 0.1}
FOOT_LINKS = ("right_ankle", "left_ankle")
TIP_LINKS = FOOT_LINKS + ("right_wrist", "left_wrist")
DAMPING_RATIO = 0.1       # s: kd / kp of every servo
STRENGTH_HEADROOM = 3.0   # motors' caps over the proxy's default strength while fresh


def _kind(name: str) -> str:
    return name.split("_")[-1]


@dataclass(frozen=True)
class SamconSettings:
    window: float = 0.1            # s of motion per sampling window
    rate: float = 500.0            # Hz, physics
    samples: int = 400             # simulated per window
    keep: int = 40                 # states kept between windows
    retries: int = 2               # a window where nothing survives: this many more rounds, each twice as big
    pose_weight: float = 1.0       # joint angles (rad^2)
    root_weight: float = 1.0       # pelvis orientation
    end_weight: float = 10.0       # feet and hands relative to the centre of mass (m^2)
    balance_weight: float = 10.0   # centre of mass over the feet, and its height
    position_weight: float = 10.0  # centre of mass on the clip's path across the floor
    velocity_weight: float = 1.0   # ... and at the clip's pace
    spread_scale: float = 1.0
    workers: int = 0               # processes (0: one per core)


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
    workers: int
    costs: list = field(default_factory=list)    # best cost per window


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
    b = np.arcsin(np.clip(sign * R[..., i, k], -1.0, 1.0))
    a = np.arctan2(-sign * R[..., j, k], R[..., k, k])
    c = np.arctan2(-sign * R[..., i, j], R[..., i, i])
    return np.stack([a, b, c], axis=-1)


def from_euler(e: np.ndarray, order=(0, 1, 2)) -> np.ndarray:
    """Quaternions (..., 4) x, y, z, w of R_i(a) R_j(b) R_k(c)."""
    out = None
    for n, axis in enumerate(order):
        h = 0.5 * e[..., n]
        q = np.zeros(e.shape[:-1] + (4,))
        q[..., axis], q[..., 3] = np.sin(h), np.cos(h)
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
        best = max(ORDERS, key=lambda o: float(np.cos(to_euler(joint_rots[:, j], o)[:, 1]).min()))
        out.append(best)
    return tuple(out)


class SampledBody:
    """The proxy in MuJoCo with a floor, contacts and a capped position servo on every DoF (none
    on the root)."""

    def __init__(self, height: float = proxy.DEFAULT_HEIGHT, mass: float = proxy.DEFAULT_MASS,
                 floor: float = 0.0, rate: float = 500.0, orders: tuple | None = None, plan=None):
        import mujoco

        self._mj = mujoco
        self.joints = proxy.DEFAULT_JOINTS
        self.orders = orders or tuple((0, 1, 2) if j.dofs == 3 else None for j in self.joints)
        scale = mass / proxy.DEFAULT_MASS
        kp = np.concatenate([[GAINS[_kind(j.name)] * scale] * j.dofs for j in self.joints])
        text = mjcf(proxy_links(height, plan), free_base=True, dt=1.0 / rate)
        # No solver warm start: a step depends on (qpos, qvel, ctrl) alone, so a sample gives the
        # same bits in any worker and in the replay of the best path.
        text = text.replace('<flag contact="disable"/>', '<flag warmstart="disable"/>').replace('integrator="Euler"', 'integrator="implicitfast"')
        text = text.replace('contype="0" conaffinity="0"', 'contype="2" conaffinity="1" friction="0.9 0.005 0.0001"')
        text = text.replace("  <worldbody>\n", '  <worldbody>\n    <geom name="floor" type="plane" size="0 0 1" '
                            f'pos="0 0 {_v([floor])}" contype="1" conaffinity="2" friction="0.9 0.005 0.0001"/>\n', 1)
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
        for name, k in zip(dof_names, kp):
            servos.append(f'    <position name="{name}" joint="{name}" kp="{k!r}" forcelimited="true" forcerange="-1 1"/>')
        text = text.replace("</mujoco>", "  <actuator>\n" + "\n".join(servos) + "\n  </actuator>\n</mujoco>")
        self.model = m = mujoco.MjModel.from_xml_string(text)
        self.data = mujoco.MjData(m)
        self.qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in dof_names])
        m.dof_damping[[m.jnt_dofadr[m.joint(n).id] for n in dof_names]] = kp * DAMPING_RATIO
        self._tips = [m.body(n).id for n in TIP_LINKS]
        feet = {m.body(n).id for n in FOOT_LINKS}
        floor_id = m.geom("floor").id
        self._bad_geom = np.array([g != floor_id and m.geom_bodyid[g] not in feet for g in range(m.ngeom)])
        self._ball = np.array([j.dofs == 3 for j in self.joints])
        self._first = np.cumsum([0] + [j.dofs for j in self.joints])[:-1]

    def set_caps(self, caps: np.ndarray) -> None:
        self.model.actuator_forcerange[:, 0] = -caps
        self.model.actuator_forcerange[:, 1] = caps

    def angles_of(self, joint_rots: np.ndarray) -> np.ndarray:
        """(..., 28) servo angles of joint rotations (..., J, 4)."""
        out = []
        for j, joint in enumerate(self.joints):
            if joint.dofs == 3:
                out.append(to_euler(joint_rots[..., j, :], self.orders[j]))
            else:
                out.append(2.0 * np.arctan2(joint_rots[..., j, 2], joint_rots[..., j, 3])[..., None])
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
                out.append(np.stack([np.zeros_like(h), np.zeros_like(h), np.sin(h), np.cos(h)], axis=-1))
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

    def fallen(self) -> bool:
        """Anything but a foot touches the floor."""
        n = self.data.ncon
        if n == 0:
            return False
        c = self.data.contact
        return bool(self._bad_geom[c.geom1[:n]].any() or self._bad_geom[c.geom2[:n]].any())

    def features(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tips (4, 3), centre of mass, its velocity) now."""
        self._mj.mj_subtreeVel(self.model, self.data)
        d = self.data
        return d.xpos[self._tips].copy(), d.subtree_com[1].copy(), d.subtree_linvel[1].copy()


# -- the search ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Plan:
    """What every worker needs: the body and the clip's servo targets, per physics step, and its
    features at every window's end."""
    height: float
    mass: float
    floor: float
    settings: SamconSettings
    targets: np.ndarray        # (steps + 1, 28) servo targets
    ref_root: np.ndarray       # (windows + 1, 4) pelvis orientation at window ends
    ref_angles: np.ndarray     # (windows + 1, 28)
    ref_tips: np.ndarray       # (windows + 1, 4, 3)
    ref_com: np.ndarray        # (windows + 1, 3)
    ref_com_vel: np.ndarray    # (windows + 1, 3)
    steps_per_window: int
    orders: tuple = ()


_WORKER: dict = {}


def _worker_init(plan: _Plan) -> None:
    _WORKER["plan"] = plan
    _WORKER["body"] = SampledBody(plan.height, plan.mass, plan.floor, plan.settings.rate, plan.orders)


def _run_window(plan: _Plan, body: SampledBody, w: int, qpos, qvel, offset, caps, record=False):
    """Simulate window ``w`` from (qpos, qvel) with ``offset`` on the targets: (cost or None if
    it fell, qpos, qvel, recorded qpos per step if ``record``)."""
    body.set_caps(caps)
    body.set_state(qpos, qvel)
    n = plan.steps_per_window
    base = w * n
    targets = plan.targets[base + 1:base + n + 1] + offset
    mj, m, d = body._mj, body.model, body.data
    recorded = []
    for i in range(n):
        d.ctrl[:] = targets[i]
        mj.mj_step(m, d)
        if body.fallen():
            return None, None, None, recorded
        if record:
            recorded.append(d.qpos.copy())
    return _cost(plan, body, w + 1), d.qpos.copy(), d.qvel.copy(), recorded


def _cost(plan: _Plan, body: SampledBody, end: int) -> float:
    s = plan.settings
    d = body.data
    angles = d.qpos[body.qadr]
    diff = np.abs(np.remainder(angles - plan.ref_angles[end] + math.pi, 2.0 * math.pi) - math.pi)
    pose = float(diff @ diff)
    root = np.array([d.qpos[4], d.qpos[5], d.qpos[6], d.qpos[3]])
    turn = 2.0 * math.acos(min(1.0, abs(float(root @ plan.ref_root[end]))))
    tips, com, com_vel = body.features()
    rel = (tips - com) - (plan.ref_tips[end] - plan.ref_com[end])
    feet = (tips[:2, :2].mean(axis=0) - com[:2]) - (plan.ref_tips[end, :2, :2].mean(axis=0) - plan.ref_com[end, :2])
    balance = float(feet @ feet) + float(com[2] - plan.ref_com[end, 2]) ** 2
    path = com[:2] - plan.ref_com[end, :2]
    pace = com_vel - plan.ref_com_vel[end]
    return (s.pose_weight * pose + s.root_weight * turn * turn + s.end_weight * float((rel * rel).sum())
            + s.balance_weight * balance + s.position_weight * float(path @ path) + s.velocity_weight * float(pace @ pace))


def _sample_batch(args):
    w, jobs, caps = args
    plan, body = _WORKER["plan"], _WORKER["body"]
    out = []
    for qpos, qvel, offset in jobs:
        cost, q, v, _ = _run_window(plan, body, w, qpos, qvel, offset, caps)
        out.append((cost, q, v))
    return out


def _seed(clip: Clip, settings: SamconSettings) -> int:
    h = hashlib.sha256()
    for a in (clip.root_pos, clip.root_rot, clip.joint_rots):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    h.update(repr(replace(settings, workers=0)).encode())
    return int.from_bytes(h.digest()[:8], "little")


def _plan(clip: Clip, duration: float, s: SamconSettings, height: float, mass: float, floor: float):
    """The _Plan of ``clip``, and its root positions and rotations at every physics step."""
    dt = 1.0 / s.rate
    n = max(1, int(round(s.window * s.rate)))
    orders = gimbal_free_orders(clip.joint_rots)
    body = SampledBody(height, mass, floor, s.rate, orders)
    windows = int(math.ceil(duration / (n * dt) - 1e-9))
    times = np.arange(windows * n + 1) * dt
    pos, rot, joints = clip.sample_many(times)
    angles = np.unwrap(body.angles_of(joints), axis=0)
    ends = np.arange(0, len(times), n)
    tips, com, vel = [], [], []
    for i in ends:
        body.set_state(body.qpos_of(pos[i], rot[i], angles[i]), np.zeros(body.model.nv))
        t, c, _ = body.features()
        tips.append(t)
        com.append(c)
    com = np.array(com)
    vel = np.gradient(com, n * dt, axis=0)
    # The servos aim at the clip's angle plus its rate times kd / kp: with the damping that is a
    # PD on both (a servo aiming at the angle alone lags a fast arm by a tenth of a second).
    servo = angles + DAMPING_RATIO * np.gradient(angles, dt, axis=0)
    return _Plan(height, mass, floor, s, servo, rot[ends], angles[ends], np.array(tips), com, vel, n, orders), pos, rot


def track(clip: Clip, seconds: float | None = None, settings: SamconSettings | None = None,
          height: float = proxy.DEFAULT_HEIGHT, mass: float = proxy.DEFAULT_MASS, floor: float = 0.0,
          caps: np.ndarray | None = None, progress=None) -> SamconResult:
    """Track ``clip`` (its first ``seconds``; a looping clip cycles) by sampling; every motor
    within ``caps`` per DoF (default: STRENGTH_HEADROOM times the proxy's default strength)."""
    s = settings or SamconSettings()
    wall0 = _time.perf_counter()
    duration = clip.duration if seconds is None else (seconds if clip.loop else min(seconds, clip.duration))
    plan, pos, rot = _plan(clip, duration, s, height, mass, floor)
    body = SampledBody(height, mass, floor, s.rate, plan.orders)
    if caps is None:
        caps = np.array(proxy.dof_tau_max(scale=mass / proxy.DEFAULT_MASS)) * STRENGTH_HEADROOM
    n, dt = plan.steps_per_window, 1.0 / s.rate
    windows = (len(plan.targets) - 1) // n
    rng = np.random.default_rng(_seed(clip, s))
    spread = np.concatenate([[SPREAD[_kind(j.name)]] * j.dofs for j in proxy.DEFAULT_JOINTS]) * s.spread_scale
    start = clip.sample_many(np.array([0.0, dt]))[2]
    q0 = body.qpos_of(pos[0], rot[0], body.angles_of(start[0]))
    q1 = body.qpos_of(pos[1], rot[1], body.angles_of(start[1]))
    v0 = np.zeros(body.model.nv)
    body._mj.mj_differentiatePos(body.model, v0, dt, q0, q1)
    kept = [(0.0, q0, v0, None)]        # (cost, qpos, qvel, path node: (parent node, window offset))
    workers = s.workers or (os.cpu_count() or 1)
    pool = None
    if workers > 1:
        import multiprocessing as mp
        pool = mp.get_context("fork" if hasattr(os, "fork") else "spawn").Pool(workers, _worker_init, (plan,))
    else:
        _worker_init(plan)
    steps, fell_at, costs = 0, None, []
    try:
        for w in range(windows):
            results, rounds, count = [], 0, s.samples
            while True:
                parents = [kept[k % len(kept)] for k in range(count)]
                offsets = rng.standard_normal((count, len(spread))) * spread
                jobs = [(p[1], p[2], o) for p, o in zip(parents, offsets)]
                chunks = [jobs[i::workers] for i in range(workers)] if pool else [jobs]
                outs = pool.map(_sample_batch, [(w, c, caps) for c in chunks]) if pool else [_sample_batch((w, jobs, caps))]
                merged = [None] * count
                for i, out in enumerate(outs):
                    for k, r in enumerate(out):
                        merged[i + k * workers if pool else k] = r
                steps += count * n
                results = [(r[0], r[1], r[2], (p[3], o)) for r, p, o in zip(merged, parents, offsets) if r[0] is not None]
                if results or rounds >= s.retries:
                    break
                rounds, count = rounds + 1, count * 2
            if not results:
                fell_at = w * n * dt
                break
            results.sort(key=lambda r: r[0])
            kept = results[:s.keep]
            costs.append(kept[0][0])
            if progress is not None:
                progress((w + 1) / windows)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    # Replay the best path, recording every step.
    path, node = [], kept[0][3]
    while node is not None:
        node, offset = node
        path.append(offset)
    path.reverse()
    qs, qpos, qvel = [q0], q0, v0
    for w, offset in enumerate(path):
        _, qpos, qvel, recorded = _run_window(plan, body, w, qpos, qvel, offset, caps, record=True)
        qs.extend(recorded)
    tracked = len(qs) - 1
    frame_times = np.arange(int(math.floor(tracked * dt * clip.fps + 1e-9)) + 1) / clip.fps
    q = np.array([qs[i] for i in np.minimum(np.round(frame_times / dt).astype(int), tracked)])
    return SamconResult(root_pos=q[:, 0:3].copy(), root_rot=q[:, [4, 5, 6, 3]].copy(),
                        joint_rots=body.rotations_of(q[:, body.qadr]), fell_at=fell_at, seconds=tracked * dt,
                        wall_seconds=_time.perf_counter() - wall0, simulated_steps=steps, workers=workers, costs=costs)
