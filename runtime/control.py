"""Torque mode (EXPERIMENTAL, not offered in Blender): the whole PyBullet proxy on explicit,
fatigue-bounded joint torques.

Why this design: on its own an articulated humanoid tracking a clip falls (measured: PD tracking
within 0.3-2.5 s; an inverse-dynamics QP within 3.4 s) because tracking is not a balance
strategy.  Here the SRB simulator runs in lockstep as the strategy (contact timing, foot
placement from where the body really is, centre-of-mass acceleration, tempo, rests) and an
inverse-dynamics QP finds joint torques and contact forces that realise it on the articulated
body, every DoF within its fatigued bound |tau_d| <= RC_d * tau_max_d.  Fatigue is booked from
those torques.  What the contacts cannot supply is a root wrench: a penalised, bounded variable
reported per frame (Take.residual_force, stats["residual_moment_nm_mean"]).

Why it is not a product mode yet: SRB mode keeps its balance with a moment its contacts do not
supply (its orientation follows the reference; residual_moment 18-107 N*m mean on walk, run,
jump, kick), and the articulated body needs that moment too: with the root moment priced like the
root force every clip falls within about 2 s; priced cheaply (the default here) 4 or 5 of 8 S1
clips stand 10 s with 0.03-0.11 body weights of root force but 40-265 N*m of root moment (which
of walk, jump and dance_a stand changes with 1e-16 differences).  The clips' own balance is the
reason (runtime.balance): the centre of pressure they call for lies outside flat feet in 31-98 %
of their stance frames, and laying the feet flat, holding planted feet still as a hard constraint
and re-planning the centre of mass onto the feet did not keep any clip up without the moment
(docs/simulation.md).  What is missing is a balance planner that re-plans contacts and footholds
against the feet's real support (centroidal MPC) or a learned policy.

The articulated body itself (PyBullet, mass matrix, bias, Jacobians) is runtime.articulated.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from . import pose_output, proxy, quat
from .articulated import GRAVITY, SUBSTEPS, Articulated, LinkFrames
from .take import BodyPose

FOOT_PRESS = 0.005      # m (1.62 m body): a planted foot not on the floor yet is aimed this far below it


@dataclass(frozen=True)
class TorqueSettings:
    """Gains (acceleration space) and the QP's weights.  Costs compare against tracking one DoF
    10 m/s^2 (rad/s^2) off, which costs 1."""
    kp_root: float = 100.0        # 1/s^2: pelvis position and orientation feedback
    kd_root: float = 20.0         # 1/s
    kp_joint: float = 400.0       # 1/s^2: joint rotation feedback
    kd_joint: float = 40.0        # 1/s
    kp_foot: float = 400.0        # planted feet onto the SRB's footholds
    kd_foot: float = 40.0
    friction: float = 0.8         # friction pyramid the QP assumes (PyBullet's floor has 1.0)
    residual_weight: float = 1e3  # a root force of one body weight
    residual_moment_weight: float = 1.0   # a root moment of 0.2 body weight x 1 m (see WholeBody)
    residual_limit: float = 1.0   # body weights: the most root force ever applied
    contact_weight: float = 1e2   # touching points stay still
    torque_weight: float = 1e-2   # effort, sum (tau / tau_max)^2
    com_weight: float = 300.0     # the SRB's centre-of-mass acceleration
    root_weight: float = 10.0     # pelvis orientation
    pelvis_position_weight: float = 0.1   # the pelvis's place (the centre of mass carries the body)
    stance_leg_weight: float = 0.3    # a planted leg's joint angles (against 1 for a free joint)
    foot_weight: float = 30.0     # a planted foot's place and orientation




def _rotvec_error(target: np.ndarray, current: np.ndarray, local: bool) -> np.ndarray:
    d = quat.multiply(quat.conjugate(current), target) if local else quat.multiply(target, quat.conjugate(current))
    return quat.to_rotvec(d)


class TorqueController:
    """One inverse-dynamics QP per control step: unknowns the generalised acceleration and the
    contact forces; joint torques follow from the equations of motion and stay within their
    fatigued bounds; the root rows' imbalance is the residual wrench."""

    def __init__(self, body: Articulated, tau_max: np.ndarray, settings: TorqueSettings | None = None):
        self.b = body
        self.s = settings or TorqueSettings()
        self.tau_max = np.asarray(tau_max, dtype=np.float64)
        self.weight = body.mass * GRAVITY

    def desired_acceleration(self, target: "Target", root_pos, root_rot, joints, v) -> np.ndarray:
        """PD in acceleration space towards ``target`` (pelvis in the world, joints locally)."""
        s, t = self.s, target
        a = np.empty(self.b.nv)
        a[0:3] = s.kp_root * (t.root_pos - root_pos) + s.kd_root * (t.root_vel - v[0:3])
        e = _rotvec_error(t.root_rot, root_rot, local=False)
        a[3:6] = s.kp_root * e + s.kd_root * (t.root_ang_vel - v[3:6])
        err = _rotvec_error(t.joints, joints, local=True)
        for k, sph in enumerate(self.b.spherical):
            o = self.b.offsets[k]
            if sph:
                a[o:o + 3] = s.kp_joint * err[k] + s.kd_joint * (t.joint_vel[k] - v[o:o + 3])
            else:
                a[o] = s.kp_joint * err[k, 2] + s.kd_joint * (t.joint_vel[k, 2] - v[o])
        return a

    def tracking_weights(self, stance: list[bool]) -> np.ndarray:
        """Per generalised DoF, how much its desired acceleration counts.  A standing leg's joint
        angles are not targets of their own: with the foot planted they follow from where the
        pelvis goes (tracking them too would fight the pelvis back onto the plan)."""
        w = np.ones(self.b.nv)
        w[0:3] = self.s.pelvis_position_weight
        w[3:6] = self.s.root_weight
        for side, planted in enumerate(stance):
            if planted:
                for k in self.b.leg_slots[side]:
                    o = self.b.offsets[k]
                    w[o:o + (3 if self.b.spherical[k] else 1)] = self.s.stance_leg_weight
        return w

    def solve(self, a_des: np.ndarray, M: np.ndarray, h: np.ndarray, jacobians: list[np.ndarray],
              v: np.ndarray, caps: np.ndarray, weights: np.ndarray | None = None, tasks=()):
        """Returns (joint torques, root wrench, contact forces (n, 3))."""
        s, nv, mg = self.s, self.b.nv, self.weight
        weights = np.ones(nv) if weights is None else weights
        nc = len(jacobians)
        n = nv + 3 * nc
        Jc = np.vstack(jacobians) if nc else np.zeros((0, nv))
        # Rows of the equations of motion, M a + h - Jc^T f, with f = mg * phi (phi ~ 1).
        E = np.hstack([M, -mg * Jc.T])
        blocks = []
        scale = 1.0 / 10.0   # accelerations of 10 m/s^2 (rad/s^2) cost 1
        root_w = np.sqrt(weights)
        blocks.append((np.hstack([np.diag(root_w), np.zeros((nv, 3 * nc))]) * scale, root_w * a_des * scale, 1.0))
        moment_share = math.sqrt(s.residual_moment_weight / s.residual_weight)
        root_scale = np.array([1 / mg] * 3 + [moment_share / (0.2 * mg)] * 3)[:, None]
        blocks.append((E[:6] * root_scale, -h[:6] * root_scale[:, 0], s.residual_weight))
        if nc:
            blocks.append((np.hstack([Jc, np.zeros((3 * nc, 3 * nc))]) * scale, -20.0 * (Jc @ v) * scale,
                           s.contact_weight))
            blocks.append((np.hstack([np.zeros((3 * nc, nv)), np.eye(3 * nc)]), np.zeros(3 * nc), 1e-3))
        for J, acc, w in tasks:   # (Jacobian, desired acceleration, weight): centre of mass, planted feet
            blocks.append((np.hstack([J, np.zeros((J.shape[0], 3 * nc))]) * scale, acc * scale, w))
        inv = (1.0 / self.tau_max)[:, None]
        blocks.append((E[6:] * inv, -h[6:] * inv[:, 0], s.torque_weight))
        G = np.zeros((n, n))
        g = np.zeros(n)
        for A, b, w in blocks:
            G += w * (A.T @ A)
            g += w * (A.T @ b)
        G += 1e-8 * np.eye(n)
        # Constraints C^T x >= b: torque bounds, then friction pyramids.
        rows = [E[6:], -E[6:]]
        lows = [-caps - h[6:], -caps + h[6:]]
        if nc:
            mu = s.friction
            F = np.zeros((5 * nc, n))
            for k in range(nc):
                o = nv + 3 * k
                F[5 * k, o + 2] = 1.0
                F[5 * k + 1, [o, o + 2]] = [-1.0, mu]
                F[5 * k + 2, [o, o + 2]] = [1.0, mu]
                F[5 * k + 3, [o + 1, o + 2]] = [-1.0, mu]
                F[5 * k + 4, [o + 1, o + 2]] = [1.0, mu]
            rows.append(F)
            lows.append(np.zeros(5 * nc))
        C = np.vstack(rows)
        lo = np.concatenate(lows)
        import quadprog    # compiled wheel: imported when a take runs, never at register

        x = quadprog.solve_qp(G, g, C.T, lo, 0)[0]
        forces = mg * x[nv:].reshape(-1, 3)
        generalised = E @ x + h
        torque = np.clip(generalised[6:], -caps, caps)
        wrench = generalised[:6].copy()
        limit = s.residual_limit * mg
        norm = float(np.linalg.norm(wrench[:3]))
        if norm > limit:
            wrench[:3] *= limit / norm
        return torque, wrench, forces


@dataclass
class Target:
    """Where the SRB wants the articulated body this step, with the rates it moves at."""
    root_pos: np.ndarray
    root_rot: np.ndarray
    joints: np.ndarray        # (J, 4) local rotations
    root_vel: np.ndarray
    root_ang_vel: np.ndarray
    joint_vel: np.ndarray     # (J, 3) child-frame angular velocities


class WholeBody:
    """The articulated proxy driven by an SRB simulator in lockstep.

    Every control step the SRB is put where the articulated body's centre of mass is (position
    and velocity) and its stance feet where the articulated feet stand, takes its step (contact
    timing, Raibert foot placement, contact forces, tempo, rests), and the QP tracks its centre-of-
    mass acceleration and the full-body pose at its target (pelvis, legs by IK onto its feet, upper
    body from the reference).  A plan simulated ahead instead drifted off balance within two
    steps: its feet did not react to where the articulated body really was.  The SRB does not book
    fatigue here: the articulated body's joint torques do, on the model the SRB reads its bounds
    and tempo from."""

    def __init__(self, sim, tau_max: np.ndarray, height: float, mass: float, body_plan=None,
                 settings: TorqueSettings | None = None):
        self.sim = sim
        self.s = settings or TorqueSettings()
        self.tau_max = np.asarray(tau_max, dtype=np.float64)
        self.art = Articulated(height, mass, sim.ref.floor, body_plan, rate=SUBSTEPS * sim.s.rate)
        self.ctrl = TorqueController(self.art, self.tau_max, self.s)
        self.dt = sim.dt
        sim.books_fatigue = False
        root_pos, root_rot, joints = self._pose()
        r = sim.ref.sample(sim.phase)
        self.art.reset(root_pos, root_rot, joints, sim.v, r.ang_vel, r.joint_vel)
        self.art.p.performCollisionDetection(physicsClientId=self.art.client)
        self.previous = (root_pos, root_rot, joints)
        self.torque = np.zeros(len(self.tau_max))
        self.residual = np.zeros(6)
        self.fallen = False
        self.standing = float(root_pos[2] - sim.ref.floor)
        self.scale = height / proxy.DEFAULT_HEIGHT
        self.contacts = np.zeros(2, dtype=bool)
        self.com = np.zeros(3)

    def close(self) -> None:
        self.art.close()

    def _pose(self):
        """The full-body pose of the SRB at its target (not at its integrated state, which is
        the articulated body's own plus one step: no correction in it)."""
        sim = self.sim
        limb_slots = sim.limbs.joint_slots if sim.limbs is not None else None
        return pose_output.pose(sim.ref, sim.body, replace(sim.state(), com=sim.p_target), limb_slots)

    def _target(self) -> Target:
        root_pos, root_rot, joints = self._pose()
        p0, q0, j0 = self.previous
        self.previous = (root_pos, root_rot, joints)
        rate = 1.0 / self.dt
        return Target(root_pos, root_rot, joints, (root_pos - p0) * rate,
                      quat.to_rotvec(quat.multiply(root_rot, quat.conjugate(q0))) * rate,
                      quat.to_rotvec(quat.multiply(quat.conjugate(j0), joints)) * rate)

    def _foot_tasks(self, frames: LinkFrames, root_pos, v, touched):
        """Planted SRB feet: the articulated foot goes where the SRB's stands (flat on the floor
        when not touching yet), rotated like it."""
        sim, s, art = self.sim, self.s, self.art
        r = sim.ref.sample(sim.phase)
        tasks = []
        for k, link in enumerate(art.foot_links):
            foot = sim.feet[k]
            if not foot.stance:
                continue
            ankle = r.ankle[k] + foot.offset
            if not touched[k]:   # down onto the floor (the source's soles hover a centimetre or so)
                ankle[2] = min(ankle[2], sim.ref.floor - sim.body.sole_drop) - FOOT_PRESS * self.scale
            J = art.point_jacobian(link, frames.origins[link], root_pos, frames.origins, frames.rots)
            Jw = art.link_jacobian(link, root_pos, frames)[3:]
            vel = J @ v
            acc = s.kp_foot * (ankle - frames.origins[link]) - s.kd_foot * vel
            acc_w = (s.kp_foot * _rotvec_error(r.foot_rot[k], frames.com_rot[link], local=False)
                     - s.kd_foot * (Jw @ v))
            if touched[k]:      # on the floor: it stays where it stands (it still rolls like the source's)
                tasks.append((np.vstack([J[:2], Jw]), np.concatenate([acc[:2], acc_w]), s.foot_weight))
            else:
                tasks.append((np.vstack([J, Jw]), np.concatenate([acc, acc_w]), s.foot_weight))
        return tasks

    def step(self) -> None:
        sim, art, ctrl = self.sim, self.art, self.ctrl
        root_pos, root_rot, joints, v = art.state()
        frames = art.link_frames()
        origins, rots = frames.origins, frames.rots
        self.com, com_vel = art.centre_of_mass(frames)
        # The SRB decides from where the body really is, standing where its feet really stand.
        sim.stand_at(self.com.copy(), com_vel,
                     [(k, origins[link]) for k, link in enumerate(art.foot_links) if self.contacts[k]])
        sim.step()
        target = self._target()
        M = art.mass_matrix(root_pos, root_rot, joints)
        h = art.bias(M, root_pos, root_rot, joints, v)
        touching = art.contacts(frames)
        jac = [art.point_jacobian(link, point, root_pos, origins, rots) for link, point in touching]
        touched = [any(link == f for link, _ in touching) for f in art.foot_links]
        stance = [bool(t or f.stance) for t, f in zip(touched, sim.feet)]
        model = sim.fatigue.model if sim.fatigue is not None else None
        strength = self.tau_max * sim.strength_factor    # legs lowering the body hold more (srb)
        caps = strength if model is None else strength * model.residual_capacity
        a_des = ctrl.desired_acceleration(target, root_pos, root_rot, joints, v)
        # Centre of mass: the acceleration the SRB's QP found feasible from where the body is.
        J_com = art.com_jacobian(root_pos, frames)
        tasks = [(J_com, sim.acc, self.s.com_weight)] + self._foot_tasks(frames, root_pos, v, touched)
        torque, wrench, _ = ctrl.solve(a_des, M, h, jac, v, caps, ctrl.tracking_weights(stance), tasks)
        if sim.fatigue is not None:
            torque = sim.fatigue.step_torque(torque, strength, sim.time - self.dt, self.dt)
        self.torque, self.residual, self.contacts = torque, wrench, np.array(touched)
        sim.applied(torque)
        art.apply(torque, wrench)
        tilt = float(quat.angle_between(root_rot, target.root_rot))
        if not self.fallen and (root_pos[2] - sim.ref.floor < 0.45 * self.standing or tilt > 1.2):
            self.fallen = True
            sim.fall()

    def record(self) -> BodyPose:
        """The articulated body's pose, for one output frame."""
        root_pos, root_rot, joints, _ = self.art.state()
        return BodyPose(root_pos, root_rot, joints, self.contacts.copy(), self.com.copy())
