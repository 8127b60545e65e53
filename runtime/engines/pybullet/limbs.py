"""The fatigue-bounded upper body (runtime.engines.limbs) in PyBullet.

The pelvis is PyBullet's fixed base, teleported each step, with the SRB's acceleration folded
into gravity so a landing still throws the arms down; chest, neck, shoulders and elbows track the
reference with PyBullet's joint motors capped per DoF at RC * tau_max.  The motor solve is
implicit (stable at 120 Hz on 1 kg forearms, where explicit PD is not) and PyBullet reports the
torque each motor applied, which is what the fatigue model books.
"""
from __future__ import annotations

import numpy as np

from ...body import proxy
from ...body.head import head_load
from ...maths import quat, repeatable
from ..limbs import axis_angle, floats, limb_layout, LIMB_JOINTS, passive_stops, PassiveStop, SOLVER_ITERATIONS
from ..limbs import UpperBody
from . import body as pybullet_body

POSITION_GAIN = 1.0    # PyBullet motor error reduction (dimensionless, per step)
VELOCITY_GAIN = 1.0


class LimbSimulator(UpperBody):
    """Upper body of the proxy in PyBullet; ``step`` advances it by one SRB step in ``substeps`` pieces."""

    def __init__(self, height: float = proxy.DEFAULT_HEIGHT, rate: float = 120.0, mass: float = proxy.DEFAULT_MASS,
                 plan=None):
        import pybullet

        self.p = pybullet
        self.client = pybullet.connect(pybullet.DIRECT)
        self.body, links = pybullet_body.load_body(self.client, height, fixed_base=True, plan=plan)
        # The URDF's link masses describe a 45 kg body; the character's mass scales every link (and
        # its inertia), so a heavier character's arms weigh what the SRB and tau_max assume.
        ratio = mass / proxy.DEFAULT_MASS
        for j in range(-1, pybullet.getNumJoints(self.body, physicsClientId=self.client)):
            info = pybullet.getDynamicsInfo(self.body, j, physicsClientId=self.client)
            pybullet.changeDynamics(self.body, j, mass=info[0] * ratio,
                                    localInertiaDiagonal=[v * ratio for v in info[2]],
                                    physicsClientId=self.client)
        self.head = head_load(height, mass, plan)
        self.dt = 1.0 / rate
        pybullet.setTimeStep(self.dt, physicsClientId=self.client)
        # Ten solver iterations track as well as PyBullet's default fifty here (measured: joint
        # error within 0.05 deg on punch and dance_a) at about half the cost.
        pybullet.setPhysicsEngineParameter(numSolverIterations=SOLVER_ITERATIONS, physicsClientId=self.client)
        # The upper body never touches anything here: no collisions, no contact solve.
        for j in range(-1, pybullet.getNumJoints(self.body, physicsClientId=self.client)):
            pybullet.setCollisionFilterGroupMask(self.body, j, 0, 0, physicsClientId=self.client)
        self.joint_index = [links[n] for n in LIMB_JOINTS]
        self.spherical, self.dofs, self.joint_slots = limb_layout()
        self._stops = self._passive_stops(links)
        self._start()
        # Release PyBullet's default velocity motors so only our capped motors act.
        for j, sph in zip(self.joint_index, self.spherical):
            if sph:
                pybullet.setJointMotorControlMultiDof(self.body, j, pybullet.POSITION_CONTROL,
                                                      targetPosition=[0, 0, 0, 1], force=[0, 0, 0],
                                                      physicsClientId=self.client)
            else:
                pybullet.setJointMotorControl2(self.body, j, pybullet.VELOCITY_CONTROL, force=0,
                                               physicsClientId=self.client)

    def _passive_stops(self, links: dict) -> list[PassiveStop]:
        """passive_stops from PyBullet's rest-pose link frames."""
        p, c, body = self.p, self.client, self.body
        count = p.getNumJoints(body, physicsClientId=c)
        parent = [p.getJointInfo(body, j, physicsClientId=c)[16] for j in range(count)]
        states = [p.getLinkState(body, j, computeForwardKinematics=1, physicsClientId=c) for j in range(count)]
        masses = np.array([p.getDynamicsInfo(body, j, physicsClientId=c)[0] for j in range(count)])
        return passive_stops(links, parent, masses, np.array([s[0] for s in states]),
                             np.array([s[4] for s in states]), self.joint_index)

    def close(self) -> None:
        if self.client is not None:
            self.p.disconnect(self.client)
            self.client = None

    def reset(self, root_pos, root_rot, joint_rots) -> None:
        """Pose the upper body like ``joint_rots`` (12 x 4, proxy order), at rest."""
        p, c = self.p, self.client
        p.resetBasePositionAndOrientation(self.body, list(root_pos), list(root_rot), physicsClientId=c)
        for j, slot, sph in zip(self.joint_index, self.joint_slots, self.spherical):
            q = joint_rots[slot]
            value = list(q) if sph else [quat.hinge_angle4(q)]
            p.resetJointStateMultiDof(self.body, j, targetValue=value, physicsClientId=c)
        self._stop_state = [(floats(joint_rots[self.joint_slots[stop.slot]]), [0.0, 0.0, 0.0])
                            for stop in self._stops]
        self._goals = None       # at rest: no move to lead

    def _advance(self, root_pos, root_rot, root_acc, positions: list, velocities: list, forces: list,
                 limits: list[float], substeps: int) -> list[float]:
        """UpperBody._advance on PyBullet's position motors."""
        p, c = self.p, self.client
        p.resetBasePositionAndOrientation(self.body, floats(root_pos), floats(root_rot), physicsClientId=c)
        a0, a1, a2 = floats(root_acc)
        p.setGravity(0.0 - a0, 0.0 - a1, -9.81 - a2, physicsClientId=c)
        n = len(positions)
        p.setJointMotorControlMultiDofArray(
            self.body, self.joint_index, p.POSITION_CONTROL, targetPositions=positions,
            targetVelocities=velocities,
            positionGains=[POSITION_GAIN] * n, velocityGains=[VELOCITY_GAIN] * n,
            forces=forces, physicsClientId=c)
        applied = [0.0] * len(self.dofs)
        root_q = floats(root_rot)
        for _ in range(substeps):
            self._press_stops(root_q, limits)
            p.stepSimulation(physicsClientId=c)
            states = p.getJointStatesMultiDof(self.body, self.joint_index, physicsClientId=c)
            now = [v for st in states for v in st[3]]
            applied = [a + b for a, b in zip(applied, now)]
            self._stop_state = [(states[stop.slot][0], states[stop.slot][1]) for stop in self._stops]
        return applied

    def _press_stops(self, root_q: list, limits: list[float]) -> None:
        """Passive tissue at the end of range: a spring-damper pushing the joint back inside it,
        applied as equal and opposite torques on the link and its parent (PyBullet clears
        external torques after every step, so this runs before each one)."""
        p, c = self.p, self.client
        for stop, limit, (q, w) in zip(self._stops, limits, self._stop_state):
            if self._tired and stop.slot == self._neck:
                # passive damping of the tired head's motion against the chest (runtime.body.head); PyBullet
                # reports a ball joint's rate in the child's frame
                frame = quat.multiply(root_q, list(self._stop_state[stop.parent_stop][0]))
                torque = quat.rotate(quat.multiply(frame, list(q)), np.array(w) * -self.head.damping)
                p.applyExternalTorque(self.body, stop.link, torque.tolist(), p.WORLD_FRAME, physicsClientId=c)
                p.applyExternalTorque(self.body, stop.parent, (-torque).tolist(), p.WORLD_FRAME, physicsClientId=c)
            u, angle = axis_angle(q)
            if angle <= limit:
                continue
            push = stop.stiffness * (angle - limit) + stop.damping * (u[0] * w[0] + u[1] * w[1] + u[2] * w[2])
            if push <= 0.0:
                continue
            frame = (root_q if stop.parent_stop is None
                     else quat.multiply(root_q, list(self._stop_state[stop.parent_stop][0])))
            torque = quat.rotate(frame, np.array(u) * -push)
            p.applyExternalTorque(self.body, stop.link, torque.tolist(), p.WORLD_FRAME, physicsClientId=c)
            if stop.parent is not None:
                p.applyExternalTorque(self.body, stop.parent, (-torque).tolist(), p.WORLD_FRAME, physicsClientId=c)

    def joint_rotations(self) -> np.ndarray:
        """Current local rotations of the limb joints (len(LIMB_JOINTS) x 4)."""
        states = self.p.getJointStatesMultiDof(self.body, self.joint_index, physicsClientId=self.client)
        out = np.empty((len(self.joint_index), 4))
        for i, (s, sph) in enumerate(zip(states, self.spherical)):
            if sph:
                out[i] = s[0]
            else:
                a = s[0][0]
                out[i] = [0.0, 0.0, repeatable.sin(0.5 * a), repeatable.cos(0.5 * a)]
        return out
