"""Forward kinematics of the proxy in PyBullet (no stepping): link frames and distances to a
plane, for the engine-free clip analysis (runtime.motion.contacts.ProxyKinematics)."""
from __future__ import annotations

import numpy as np

from ...body import proxy
from ...maths import quat
from ...motion.clip import Clip
from ...motion.contacts import ProxyKinematics
from . import body as pybullet_body


class Kinematics(ProxyKinematics):
    """A PyBullet DIRECT client holding one proxy body used only for kinematic queries (the
    MuJoCo one, runtime.engines.mujoco.kinematics.MujocoKinematics, answers the same questions)."""

    def __init__(self, height: float = proxy.DEFAULT_HEIGHT, plan=None):
        import pybullet

        super().__init__(height)
        self.p = pybullet
        self.client = pybullet.connect(pybullet.DIRECT)
        self.body, self.links = pybullet_body.load_body(self.client, height, plan=plan)
        self.link_names = tuple(self.links)
        self.link_index = [self.links[n] for n in self.link_names]
        self.joint_index = [self.links[j.name] for j in proxy.DEFAULT_JOINTS]
        self._link_slot = {j: k for k, j in enumerate(self.link_index)}
        self.revolute = [j.dofs == 1 for j in proxy.DEFAULT_JOINTS]
        info = [pybullet.getDynamicsInfo(self.body, i, physicsClientId=self.client) for i in self.link_index]
        self.link_mass = np.array([d[0] for d in info])
        self.link_inertia = np.array([d[2] for d in info])
        self._floor = None
        self._floor_height = None

    def close(self):
        if self.client is not None:
            self.p.disconnect(self.client)
            self.client = None

    @property
    def closed(self) -> bool:
        return self.client is None

    def set_pose(self, root_pos, root_rot, joint_rots) -> None:
        self._set_pose_values(list(root_pos), list(root_rot), self._joint_values(np.asarray(joint_rots)[None])[0])

    def _joint_values(self, joint_rots: np.ndarray) -> list[list[list[float]]]:
        """PyBullet joint targets for poses (T, J, 4): the quaternion of a spherical joint, the
        angle of a revolute one (quat.hinge_angle: either sign); as Python lists, computed once for all frames."""
        joint_rots = np.asarray(joint_rots, dtype=np.float64)
        quats = joint_rots.tolist()
        rev = [j for j, r in enumerate(self.revolute) if r]
        if rev:
            angles = quat.hinge_angle(joint_rots[:, rev]).tolist()
            for row, a in zip(quats, angles):
                for j, v in zip(rev, a):
                    row[j] = [v]
        return quats

    def _set_pose_values(self, root_pos: list, root_rot: list, values: list) -> None:
        p, c = self.p, self.client
        p.resetBasePositionAndOrientation(self.body, root_pos, root_rot, physicsClientId=c)
        p.resetJointStatesMultiDof(self.body, self.joint_index, targetValues=values, physicsClientId=c)

    def link_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """COM positions and COM-frame rotations of every link."""
        states = self.p.getLinkStates(self.body, self.link_index, physicsClientId=self.client)
        self._last_origins = np.array([s[4] for s in states])
        return np.array([s[0] for s in states]), np.array([s[1] for s in states])

    def _distances_to_floor(self, floor_height: float, reach: float) -> np.ndarray:
        """Distance of every link's collision shape to the plane z = floor_height (capped at reach)."""
        p, c = self.p, self.client
        if self._floor is None:
            shape = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=c)
            self._floor = p.createMultiBody(0, shape, physicsClientId=c)
        if floor_height != self._floor_height:
            p.resetBasePositionAndOrientation(self._floor, [0, 0, floor_height], [0, 0, 0, 1], physicsClientId=c)
            self._floor_height = floor_height
        dist = [np.inf] * len(self.link_index)
        slot = self._link_slot
        for pt in p.getClosestPoints(self.body, self._floor, reach, physicsClientId=c):
            if pt[3] >= 0:
                k = slot[pt[3]]
                if pt[8] < dist[k]:
                    dist[k] = pt[8]
        return np.array(dist)

    def pose_frames(self, clip: Clip, below: float, span: float, link_pos: np.ndarray, link_rot: np.ndarray,
                     joint_pos: np.ndarray, above_plane: np.ndarray) -> None:
        """ProxyKinematics.pose_frames: PyBullet's closest points to a plane."""
        root_pos, root_rot = clip.root_pos.tolist(), clip.root_rot.tolist()
        values = self._joint_values(clip.joint_rots)
        p, c, body, links = self.p, self.client, self.body, self.link_index
        for t in range(clip.frames):
            self._set_pose_values(root_pos[t], root_rot[t], values[t])
            states = p.getLinkStates(body, links, physicsClientId=c)
            link_pos[t] = [s[0] for s in states]
            link_rot[t] = [s[1] for s in states]
            joint_pos[t] = [s[4] for s in states]
            above_plane[t] = self._distances_to_floor(below, span)
