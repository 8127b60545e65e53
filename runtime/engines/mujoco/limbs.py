"""The fatigue-bounded upper body (runtime.engines.limbs) in MuJoCo.

Same body, same targets, caps, yielding and passive end of range as PyBullet's LimbSimulator;
what differs is only how the engine is driven:

* the pelvis is welded to the model's world, and the pelvis's rotation and acceleration enter as
  gravity in the pelvis frame (R^T (g - a)): the same non-inertial frame PyBullet's teleported,
  fixed base gives;
* the motors are PyBullet's position motors with unit gains: each step, every DoF asks for a
  velocity (hinges: the one that reaches the target at the next step, error / dt + target rate;
  ball joints: BALL_ERP of the error per step), and the impulses that give it are found by
  SOLVER_ITERATIONS sweeps of projected Gauss-Seidel from zero within each DoF's cap (+-cap dt),
  as PyBullet's solver does; MuJoCo then integrates with those torques applied and its own elbow
  range limits.
"""
from __future__ import annotations

import math
from operator import mul
from dataclasses import replace

import numpy as np

from ...body import proxy
from ...body.description import proxy_links
from ...body.head import head_load
from ...errors import SimulationError
from ...maths import quat
from ..limbs import BALL_ERP, LIMB_JOINTS, PASSIVE_RANGE, SOLVER_ITERATIONS, PassiveStop, UpperBody
from ..limbs import axis_angle, ball_error, limb_layout, passive_stops
from .model import GRAVITY, WARNINGS, keep_warnings_in_memory, mjcf

HANDS = ("right_wrist", "left_wrist", "neck")
# An explicit damper that takes more than twice a joint's velocity away in one step grows it
# instead: the end-of-range damper is held to 1.5 times what stops the motion in one step.
DAMPER_REACH = 1.5


class MujocoLimbSimulator(UpperBody):
    """The upper body on MuJoCo (see the module's docstring for what differs)."""

    def __init__(self, height: float = proxy.DEFAULT_HEIGHT, rate: float = 120.0, mass: float = proxy.DEFAULT_MASS,
                 plan=None):
        import mujoco

        self._mj = mujoco
        ratio = mass / proxy.DEFAULT_MASS
        links = tuple(replace(link, mass=link.mass * ratio, inertia=link.inertia * ratio)
                      for link in proxy_links(height, plan))
        self.head = head_load(height, mass, plan)
        self.dt = 1.0 / rate
        self.model = mujoco.MjModel.from_xml_string(mjcf(links, free_base=False, keep=set(HANDS), dt=self.dt))
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.client = True
        self.spherical, self.dofs, self.joint_slots = limb_layout()
        self._qpos_at = [int(m.jnt_qposadr[m.joint(n).id]) for n in LIMB_JOINTS]
        self._joint_dof = [int(m.jnt_dofadr[m.joint(n).id]) for n in LIMB_JOINTS]      # MuJoCo's first DoF of each joint
        self._dof_at = np.concatenate([np.arange(a, a + (3 if sph else 1))               # ... of each limb DoF
                                       for a, sph in zip(self._joint_dof, self.spherical)])
        self._M = np.zeros((m.nv, m.nv))
        self._unstable = [int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                                           mujoco.mjtWarning.mjWARN_BADQACC)]
        keep_warnings_in_memory(mujoco)
        self._eye = np.eye(m.nv)
        self._first_dof = np.cumsum([0] + [3 if sph else 1 for sph in self.spherical]).tolist()  # in limb DoF order
        mujoco.mj_forward(m, self.data)
        self._stops = self._passive_stops_mj()
        self._start()

    def _passive_stops_mj(self) -> list[PassiveStop]:
        """limbs.passive_stops from MuJoCo's rest-pose body frames."""
        m, d = self.model, self.data
        parent = [int(b) if i > 0 and b > 0 else -1 for i, b in enumerate(m.body_parentid)]
        return passive_stops({n: m.body(n).id for n in PASSIVE_RANGE}, parent, m.body_mass, d.xipos, d.xpos,
                             [m.body(n).id for n in LIMB_JOINTS])

    def close(self) -> None:
        self.client = None

    def reset(self, root_pos, root_rot, joint_rots) -> None:
        d = self.data
        d.qvel[:] = 0.0
        for adr, slot, sph in zip(self._qpos_at, self.joint_slots, self.spherical):
            q = np.asarray(joint_rots[slot], dtype=float)
            if sph:
                d.qpos[adr:adr + 4] = (q[3], q[0], q[1], q[2])
            else:
                _, _, z, w = quat.hemisphere4(q)     # either sign (math's atan2: the bits it always had)
                d.qpos[adr] = 2.0 * math.atan2(z, w)
        self._stop_state = [(list(map(float, joint_rots[self.joint_slots[stop.slot]])), [0.0, 0.0, 0.0])
                            for stop in self._stops]
        self._goals = None

    def _joint_state(self, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """Joint ``slot``'s rotation (x, y, z, w) and local angular velocity, as PyBullet reports them."""
        d = self.data
        adr, dof = self._qpos_at[slot], self._joint_dof[slot]
        if self.spherical[slot]:
            w, x, y, z = d.qpos[adr:adr + 4]
            return np.array([x, y, z, w]), d.qvel[dof:dof + 3].copy()
        a = float(d.qpos[adr])
        return np.array([0.0, 0.0, math.sin(0.5 * a), math.cos(0.5 * a)]), np.array([0.0, 0.0, d.qvel[dof]])

    def _goal_velocity(self, positions: list, velocities: list) -> np.ndarray:
        """Per limb DoF: the rate each motor asks for (see the module's docstring)."""
        qpos = self.data.qpos
        goal = []
        scale = BALL_ERP / self.dt
        for adr, q, w, sph in zip(self._qpos_at, positions, velocities, self.spherical):
            if sph:
                cw, cx, cy, cz = qpos[adr:adr + 4].tolist()
                axis, angle = ball_error([cx, cy, cz, cw], q)
                goal.extend(v * (angle * scale) for v in axis)
            else:
                goal.append(w[0] + (q[0] - float(qpos[adr])) / self.dt)
        return np.array(goal)

    def _advance(self, root_pos, root_rot, root_acc, positions, velocities, forces, limits, substeps):
        mj, m, d = self._mj, self.model, self.data
        R = quat.to_matrix(np.asarray(root_rot, dtype=float))
        m.opt.gravity[:] = R.T @ (np.array([0.0, 0.0, -GRAVITY]) - np.asarray(root_acc, dtype=float))
        caps = np.array([f for per_joint in forces for f in per_joint]) * self.dt     # impulse bounds
        applied = np.zeros(len(self.dofs))
        dofs = self._dof_at
        for _ in range(substeps):
            d.qfrc_applied[:] = 0.0
            mj.mj_forward(m, d)
            mj.mj_solveM(m, d, self._M, self._eye)       # M^-1 (MuJoCo's own factorisation: the same bits anywhere)
            A = self._M[np.ix_(dofs, dofs)]
            stops = self._stop_forces(limits, A)
            free = d.qvel[dofs] + self.dt * (d.qacc_smooth[dofs] + A @ stops)
            impulse = self._motor_impulses(A, self._goal_velocity(positions, velocities) - free, caps)
            torque = impulse / self.dt
            d.qfrc_applied[dofs] = stops + torque
            mj.mj_step(m, d)
            if any(d.warning[i].number for i in self._unstable):
                self._fail()
            applied += torque
            self._stop_state = [tuple(map(list, self._joint_state(stop.slot))) for stop in self._stops]
        return applied.tolist()

    @staticmethod
    def _motor_impulses(A: np.ndarray, dv: np.ndarray, caps: np.ndarray) -> np.ndarray:
        """Impulses within +-caps that change the velocities by ``dv`` (A = M^-1 on the limb DoFs):
        SOLVER_ITERATIONS sweeps of projected Gauss-Seidel from zero, as PyBullet solves its
        motors (on Python floats: at 14 DoFs several times faster than numpy's per-call overhead)."""
        A = A.tolist()
        goal, bound = dv.tolist(), caps.tolist()
        n = len(goal)
        impulse = [0.0] * n
        diag = [1.0 / A[i][i] for i in range(n)]
        for _ in range(SOLVER_ITERATIONS):
            for i in range(n):
                row = A[i]
                residual = goal[i] - sum(map(mul, row, impulse))
                value = impulse[i] + residual * diag[i]
                impulse[i] = bound[i] if value > bound[i] else (-bound[i] if value < -bound[i] else value)
        return np.array(impulse)

    def _stop_forces(self, limits: list[float], A: np.ndarray) -> np.ndarray:
        """PyBullet's end-of-range stops (runtime.engines.pybullet.limbs) as joint torques (limb DoF order).  The equal and opposite
        torques PyBullet puts on a link and its parent are, on the joint between them, -push
        along the joint's own rotation axis.  The damper is applied explicitly, as PyBullet's, but
        never harder than DAMPER_REACH times what stops the joint's motion along that axis within
        one step: about a neck's own long axis (a twist) its inertia is a sixth of the one the
        damping was sized for, and an explicit damper that strong overshoots, each step more (an
        exhausted head spun up to 1e5 rad/s)."""
        out = np.zeros(len(self.dofs))
        for stop, limit, (q, w) in zip(self._stops, limits, self._stop_state):
            u, angle = axis_angle(list(q))
            if angle <= limit:
                continue
            k = self._first_dof[stop.slot]
            axis = np.array(u)
            rate = float(axis @ np.asarray(w, dtype=float))
            mobility = float(axis @ A[k:k + 3, k:k + 3] @ axis)     # 1 / inertia along the axis
            damping = min(stop.damping, DAMPER_REACH / (self.dt * mobility)) if mobility > 0.0 else stop.damping
            push = stop.stiffness * (angle - limit) + damping * rate
            if push > 0.0:
                out[k:k + 3] = -push * axis
        if self._tired:     # the tired head's passive damping (runtime.body.head)
            k = self._first_dof[self._neck]
            out[k:k + 3] -= self.head.damping * np.asarray(self._stop_state[self._neck_stop][1], dtype=float)
        return out

    def _fail(self) -> None:
        """MuJoCo found the body's state unusable and reset it: stop, rather than go on from rest."""
        said = WARNINGS[-1] if WARNINGS else "a non-finite or huge joint acceleration"
        raise SimulationError(f"the upper body's simulation became unstable {self.data.time:.2f} s in "
                              f"(MuJoCo: {said}); nothing was written: try the PyBullet engine or a higher fitness")

    def joint_rotations(self) -> np.ndarray:
        return np.array([self._joint_state(slot)[0] for slot in range(len(LIMB_JOINTS))])
