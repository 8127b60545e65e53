"""The proxy as an articulated floating-base PyBullet body on a floor (torque mode, runtime.control):
state, mass matrix, bias forces, Jacobians and contacts in one convention.

Conventions (measured on PyBullet 3.2.7, see tests/test_control.py): generalised velocity = base
linear and angular velocity in the world frame, then per joint the child-frame angular velocity
(ball joints) or the joint rate (hinges), 34 numbers for the default proxy.  The mass matrix is
``calculateMassMatrix(flags=1)`` with the base pose first and its padding rows dropped
(``flags=0`` is wrong for ball joints); the bias h (gravity, Coriolis) is -M * a0 from one
zero-torque step of a collision-free copy (``calculateInverseDynamics`` mis-handles a rotating
base); contact Jacobians are computed here (PyBullet's do not support ball joints); ball-joint
TORQUE_CONTROL lasts one physics step, so torques are set before every step; a root force is
applied at the base's current origin (a 1 cm lever visibly spins the light pelvis).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import proxy, quat
from .rotation import cross3, skew

QP_RATE = 120.0    # Hz: one QP per control step (at least; a whole number per output frame)
SUBSTEPS = 2            # PyBullet steps per control step, the torques held between them
GRAVITY = 9.81
SOLE_REACH = 0.02       # m (1.62 m body): a sole corner this close to the floor can push on it
# Sole corners in the foot's centre-of-mass frame (x forward, y up, z lateral), 1.62 m body.
SOLE = np.array([[sx * proxy.FOOT_HALF_EXTENTS[0], -proxy.FOOT_HALF_EXTENTS[1], sz * proxy.FOOT_HALF_EXTENTS[2]]
                 for sx in (1, -1) for sz in (1, -1)])


class Articulated:
    """The proxy as a floating-base PyBullet body on a floor, plus a collision-free copy for the
    bias forces.  Reads state and builds M, h and contact Jacobians in one convention."""

    def __init__(self, height: float, mass: float, floor: float, plan=None, rate: float = SUBSTEPS * QP_RATE):
        import pybullet
        import pybullet_data

        self.p = pybullet
        self.dt = 1.0 / rate
        self.clients = []
        self.body, self.copy = None, None
        for k in range(2):
            c = pybullet.connect(pybullet.DIRECT)
            self.clients.append(c)
            body, links = proxy.load_body(c, height, fixed_base=False, plan=plan)
            ratio = mass / proxy.DEFAULT_MASS
            n = pybullet.getNumJoints(body, physicsClientId=c)
            for j in range(-1, n):
                info = pybullet.getDynamicsInfo(body, j, physicsClientId=c)
                pybullet.changeDynamics(body, j, mass=info[0] * ratio,
                                        localInertiaDiagonal=[v * ratio for v in info[2]],
                                        linearDamping=0.0, angularDamping=0.0, jointDamping=0.0,
                                        lateralFriction=1.0, physicsClientId=c)
            pybullet.setGravity(0, 0, -GRAVITY, physicsClientId=c)
            pybullet.setTimeStep(self.dt, physicsClientId=c)
            if k == 0:
                self.body, self.links, self.client = body, links, c
                with proxy.quiet_stdout():
                    self.floor_id = pybullet.loadURDF(str(pybullet_data.getDataPath()) + "/plane.urdf",
                                                      [0, 0, floor], physicsClientId=c)
                pybullet.changeDynamics(self.floor_id, -1, lateralFriction=1.0, physicsClientId=c)
            else:
                self.copy, self.copy_client = body, c
                for j in range(-1, n):
                    pybullet.setCollisionFilterGroupMask(body, j, 0, 0, physicsClientId=c)
        self.mass = mass
        self.joint_index = [self.links[j.name] for j in proxy.DEFAULT_JOINTS]
        self.spherical = [j.dofs == 3 for j in proxy.DEFAULT_JOINTS]
        self.nv = 6 + sum(j.dofs for j in proxy.DEFAULT_JOINTS)
        self.offsets = list(6 + np.cumsum([0] + [j.dofs for j in proxy.DEFAULT_JOINTS])[:-1])
        n = pybullet.getNumJoints(self.body, physicsClientId=self.client)
        info = [pybullet.getJointInfo(self.body, j, physicsClientId=self.client) for j in range(n)]
        self.parent = [i[16] for i in info]
        self.axis = {j: np.array(info[j][13]) for j in range(n)}
        self.masses = np.array([pybullet.getDynamicsInfo(self.body, j, physicsClientId=self.client)[0]
                                for j in range(n)])
        slot = {j: k for k, j in enumerate(self.joint_index)}
        # Per link: the actuated joints from the base to it (joint slot), for Jacobians.
        self.chain = {}
        for link in range(n):
            path, j = [], link
            while j != -1:
                if j in slot:
                    path.append(slot[j])
                j = self.parent[j]
            self.chain[link] = path[::-1]
        # Per actuated joint: the massive links it moves (its subtree), for the COM Jacobian.
        self._massive = np.flatnonzero(self.masses > 1e-3)
        self._subtree = [np.array([l for l in self._massive if k in self.chain[l]], dtype=int)
                         for k in range(len(self.joint_index))]
        # Mass-matrix rows that PyBullet pads (base: 7 position numbers, ball joints: 4).
        keep, k = list(range(6)), 7
        for sph in self.spherical:
            keep.extend(range(k, k + (3 if sph else 1)))
            k += 4 if sph else 1
        self.keep = np.array(keep)
        for c, body in ((self.client, self.body), (self.copy_client, self.copy)):
            self._release(c, body)
        self.foot_links = [self.links[n] for n in proxy.FOOT_LINKS]
        names = [j.name for j in proxy.DEFAULT_JOINTS]
        self.leg_slots = [[names.index(f"{side}_{part}") for part in ("hip", "knee", "ankle")]
                          for side in ("right", "left")]
        scale = height / proxy.DEFAULT_HEIGHT
        self.sole = SOLE * scale
        self.sole_reach = SOLE_REACH * scale
        self.floor = floor

    def _release(self, c, body) -> None:
        for j, sph in zip(self.joint_index, self.spherical):
            if sph:
                self.p.setJointMotorControlMultiDof(body, j, self.p.POSITION_CONTROL, targetPosition=[0, 0, 0, 1],
                                                    positionGain=0, velocityGain=0, force=[0, 0, 0],
                                                    physicsClientId=c)
            else:
                self.p.setJointMotorControl2(body, j, self.p.VELOCITY_CONTROL, force=0, physicsClientId=c)

    def close(self) -> None:
        for c in self.clients:
            self.p.disconnect(c)
        self.clients = []

    # -- state -----------------------------------------------------------------------------
    def reset(self, root_pos, root_rot, joint_rots, root_vel, root_ang_vel, joint_vel,
              which: str = "body") -> None:
        p = self.p
        c, body = (self.client, self.body) if which == "body" else (self.copy_client, self.copy)
        p.resetBasePositionAndOrientation(body, list(root_pos), list(root_rot), physicsClientId=c)
        p.resetBaseVelocity(body, list(root_vel), list(root_ang_vel), physicsClientId=c)
        values, rates = [], []
        for k, sph in enumerate(self.spherical):
            q = joint_rots[k]
            if sph:
                values.append(list(q))
                rates.append(list(joint_vel[k]))
            else:
                values.append([2.0 * math.atan2(q[2], q[3])])
                rates.append([joint_vel[k][2]])
        p.resetJointStatesMultiDof(body, self.joint_index, targetValues=values, targetVelocities=rates,
                                   physicsClientId=c)

    def state(self, which: str = "body"):
        """(root_pos, root_rot, joint_rots (12 x 4), v (nv,)) of the body or the copy."""
        p = self.p
        c, body = (self.client, self.body) if which == "body" else (self.copy_client, self.copy)
        pos, rot = p.getBasePositionAndOrientation(body, physicsClientId=c)
        lin, ang = p.getBaseVelocity(body, physicsClientId=c)
        v = list(lin) + list(ang)
        joints = np.empty((len(self.joint_index), 4))
        for k, (s, sph) in enumerate(zip(p.getJointStatesMultiDof(body, self.joint_index, physicsClientId=c),
                                         self.spherical)):
            if sph:
                joints[k] = s[0]
            else:
                a = s[0][0]
                joints[k] = [0.0, 0.0, math.sin(0.5 * a), math.cos(0.5 * a)]
            v.extend(s[1])
        return np.array(pos), np.array(rot), joints, np.array(v)

    def mass_matrix(self, root_pos, root_rot, joints) -> np.ndarray:
        positions = list(root_pos) + list(root_rot)
        for q, sph in zip(joints, self.spherical):
            positions.extend(q if sph else [2.0 * math.atan2(q[2], q[3])])
        M = np.array(self.p.calculateMassMatrix(self.body, positions, flags=1, physicsClientId=self.client))
        return M[np.ix_(self.keep, self.keep)]

    def bias(self, M: np.ndarray, root_pos, root_rot, joints, v) -> np.ndarray:
        """h(q, v): gravity and velocity forces, from one zero-torque step of the copy."""
        vel = []
        k = 6
        for sph in self.spherical:
            vel.append(v[k:k + 3] if sph else np.array([0.0, 0.0, v[k]]))
            k += 3 if sph else 1
        self.reset(root_pos, root_rot, joints, v[:3], v[3:6], vel, which="copy")
        self.p.stepSimulation(physicsClientId=self.copy_client)
        v1 = self.state("copy")[3]
        return -M @ ((v1 - v) / self.dt)

    def link_frames(self) -> "LinkFrames":
        """Every link's frame and centre of mass, from one PyBullet query per control step."""
        states = self.p.getLinkStates(self.body, list(range(len(self.parent))), computeLinkVelocity=1,
                                      computeForwardKinematics=1, physicsClientId=self.client)
        return LinkFrames(origins=np.array([s[4] for s in states]),
                          rots=quat.to_matrix(np.array([s[5] for s in states])),
                          com=np.array([s[0] for s in states]),
                          com_rot=np.array([s[1] for s in states]),
                          com_vel=np.array([s[6] for s in states]))

    def centre_of_mass(self, frames: "LinkFrames") -> tuple[np.ndarray, np.ndarray]:
        """Whole-body centre of mass and its velocity."""
        total = self.masses.sum()
        return ((self.masses[:, None] * frames.com).sum(axis=0) / total,
                (self.masses[:, None] * frames.com_vel).sum(axis=0) / total)

    def point_jacobian(self, link: int, point: np.ndarray, root_pos, origins, rots) -> np.ndarray:
        """3 x nv: world velocity of ``point`` fixed to ``link``."""
        J = np.zeros((3, self.nv))
        J[:, 0:3] = np.eye(3)
        J[:, 3:6] = -skew(point - root_pos)
        for k in self.chain.get(link, []):
            j = self.joint_index[k]
            o = self.offsets[k]
            if self.spherical[k]:
                J[:, o:o + 3] = -skew(point - origins[j]) @ rots[j]
            else:
                J[:, o] = cross3(rots[j] @ self.axis[j], point - origins[j])
        return J

    def com_jacobian(self, root_pos, frames: "LinkFrames") -> np.ndarray:
        """3 x nv: world velocity of the whole body's centre of mass.  Each joint moves its
        subtree's centre of mass (weighted by the subtree's share of the mass): one column block
        per joint instead of one point Jacobian per link."""
        m = self.masses
        total = m[self._massive].sum()
        weighted = m[:, None] * frames.com
        com = weighted[self._massive].sum(axis=0) / total
        J = np.zeros((3, self.nv))
        J[:, 0:3] = np.eye(3)
        J[:, 3:6] = -skew(com - root_pos)
        origins, rots = frames.origins, frames.rots
        for k, links in enumerate(self._subtree):
            if not len(links):
                continue
            mass = m[links].sum()
            j, o = self.joint_index[k], self.offsets[k]
            d = (weighted[links].sum(axis=0) - mass * origins[j]) / total
            if self.spherical[k]:
                J[:, o:o + 3] = -skew(d) @ rots[j]
            else:
                J[:, o] = cross3(rots[j] @ self.axis[j], d)
        return J

    def link_jacobian(self, link: int, root_pos, frames: "LinkFrames") -> np.ndarray:
        """6 x nv: world linear velocity of the link's centre of mass, then its angular velocity."""
        origins, rots = frames.origins, frames.rots
        J = np.zeros((6, self.nv))
        J[:3] = self.point_jacobian(link, frames.com[link], root_pos, origins, rots)
        J[3:6, 3:6] = np.eye(3)
        for k in self.chain.get(link, []):
            j = self.joint_index[k]
            o = self.offsets[k]
            if self.spherical[k]:
                J[3:6, o:o + 3] = rots[j]
            else:
                J[3:6, o] = rots[j] @ self.axis[j]
        return J

    def contacts(self, frames: "LinkFrames"):
        """(link, point on the floor) where the body can push on the floor now: the sole corners
        of a foot touching it that are within SOLE_REACH of it (PyBullet's own manifold holds one
        or two points per foot, too few to carry a moment), and any other link's touching points."""
        pts = self.p.getContactPoints(bodyA=self.body, bodyB=self.floor_id, physicsClientId=self.client)
        touching = {c[3] for c in pts if c[8] < 0.005}
        out = [(c[3], np.array(c[6])) for c in pts if c[8] < 0.005 and c[3] not in self.foot_links]
        for link in self.foot_links:
            if link not in touching:
                continue
            corners = frames.com[link] + quat.rotate(np.broadcast_to(frames.com_rot[link], (4, 4)), self.sole)
            for c in corners:
                if c[2] - self.floor < self.sole_reach:
                    out.append((link, np.array([c[0], c[1], self.floor])))
        return out

    def apply(self, torque: np.ndarray, wrench: np.ndarray | None, substeps: int | None = None) -> None:
        """Hold ``torque`` (per DoF) and the root ``wrench`` for ``substeps`` physics steps."""
        p, c = self.p, self.client
        forces, k = [], 0
        for sph in self.spherical:
            forces.append(torque[k:k + 3].tolist() if sph else [float(torque[k])])
            k += 3 if sph else 1
        for _ in range(substeps or SUBSTEPS):
            # Ball-joint torques last one physics step (hinge ones persist): set them every step.
            p.setJointMotorControlMultiDofArray(self.body, self.joint_index, p.TORQUE_CONTROL, forces=forces,
                                                physicsClientId=c)
            if wrench is not None:
                # At the base's current origin: a light pelvis spins visibly under a 1 cm moment arm.
                at = p.getBasePositionAndOrientation(self.body, physicsClientId=c)[0]
                p.applyExternalForce(self.body, -1, wrench[:3].tolist(), at, p.WORLD_FRAME,
                                     physicsClientId=c)
                p.applyExternalTorque(self.body, -1, wrench[3:].tolist(), p.WORLD_FRAME, physicsClientId=c)
            p.stepSimulation(physicsClientId=c)


class LinkFrames(NamedTuple):
    """Per link (PyBullet link index): frame origin (the joint centre) and rotation matrix, centre
    of mass, its rotation (x, y, z, w) and its velocity; world frame."""
    origins: np.ndarray
    rots: np.ndarray
    com: np.ndarray
    com_rot: np.ndarray
    com_vel: np.ndarray
