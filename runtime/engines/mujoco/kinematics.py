"""Forward kinematics of the proxy in MuJoCo: link frames and distances to a plane, for the
engine-free clip analysis (runtime.motion.contacts.ProxyKinematics)."""
from __future__ import annotations

import numpy as np

from ...body import proxy
from ...body.description import proxy_links
from ...maths import quat
from ...motion.contacts import ProxyKinematics
from .model import mjcf


class MujocoKinematics(ProxyKinematics):
    """Kinematics (link frames, COM, soles, floor, contacts) of the proxy computed by MuJoCo."""

    def __init__(self, height: float = proxy.DEFAULT_HEIGHT, plan=None):
        import mujoco

        super().__init__(height)
        self._mj = mujoco
        links = proxy_links(height, plan)
        self.model = mujoco.MjModel.from_xml_string(mjcf(links, free_base=True))
        self.data = mujoco.MjData(self.model)
        m = self.model
        # Link order as PyBullet's (the URDF's, the base left out); joints in proxy order.
        named = [link for link in links if link.parent is not None]
        self.link_names = tuple(link.name for link in named)
        self._body_ids = np.array([m.body(n).id for n in self.link_names])
        self.link_mass = np.array([link.mass for link in named])
        self.link_inertia = np.array([link.inertia for link in named])
        self.revolute = [j.dofs == 1 for j in proxy.DEFAULT_JOINTS]
        self._qpos_at = [int(m.jnt_qposadr[m.joint(j.name).id]) for j in proxy.DEFAULT_JOINTS]
        # Collision geoms per link: (link slot, geom id, kind, size).
        self._geoms = [(k, m.geom(f"{link.name}_{g}").id, shape.kind, shape.size)
                       for k, link in enumerate(named) for g, shape in enumerate(link.shapes)]
        self.client = True

    def close(self):
        self.client = None

    @property
    def closed(self) -> bool:
        return self.client is None

    def _qpos(self, root_pos: np.ndarray, root_rot: np.ndarray, joint_rots: np.ndarray) -> np.ndarray:
        """(T, nq) MuJoCo positions for poses (T, 3), (T, 4), (T, J, 4) (quaternions x, y, z, w)."""
        T = len(root_pos)
        q = np.zeros((T, self.model.nq))
        q[:, 0:3] = root_pos
        q[:, 3] = root_rot[:, 3]
        q[:, 4:7] = root_rot[:, :3]
        for j, (adr, rev) in enumerate(zip(self._qpos_at, self.revolute)):
            r = joint_rots[:, j]
            if rev:
                q[:, adr] = quat.hinge_angle(r)
            else:
                q[:, adr] = r[:, 3]
                q[:, adr + 1:adr + 4] = r[:, :3]
        return q

    def _forward(self, qpos: np.ndarray) -> None:
        self.data.qpos[:] = qpos
        self._mj.mj_kinematics(self.model, self.data)

    def _frames_now(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d, ids = self.data, self._body_ids
        rot = d.xquat[ids][:, [1, 2, 3, 0]]     # the COM frames are the link frames (no inertial rotation)
        return d.xipos[ids].copy(), rot, d.xpos[ids].copy()

    def set_pose(self, root_pos, root_rot, joint_rots) -> None:
        self._forward(self._qpos(np.asarray(root_pos, float)[None], np.asarray(root_rot, float)[None],
                                 np.asarray(joint_rots, float)[None])[0])

    def link_frames(self) -> tuple[np.ndarray, np.ndarray]:
        com, rot, self._last_origins = self._frames_now()
        return com, rot

    def _heights_now(self, plane: float) -> np.ndarray:
        """Distance of every link's collision shapes to the plane z = ``plane`` (lowest shape)."""
        d = self.data
        out = np.full(len(self.link_names), np.inf)
        for k, g, kind, size in self._geoms:
            z = d.geom_xpos[g, 2]
            R = d.geom_xmat[g].reshape(3, 3)
            if kind == "sphere":
                low = z - size[0]
            elif kind == "capsule":
                low = z - 0.5 * size[1] * abs(R[2, 2]) - size[0]
            else:
                low = z - abs(R[2, 0]) * size[0] - abs(R[2, 1]) * size[1] - abs(R[2, 2]) * size[2]
            out[k] = min(out[k], low - plane)
        return out

    def pose_frames(self, clip, below, span, link_pos, link_rot, joint_pos, above_plane) -> None:
        qpos = self._qpos(np.asarray(clip.root_pos, float), np.asarray(clip.root_rot, float),
                          np.asarray(clip.joint_rots, float))
        for t in range(clip.frames):
            self._forward(qpos[t])
            link_pos[t], link_rot[t], joint_pos[t] = self._frames_now()
            h = self._heights_now(below)
            above_plane[t] = np.where(h <= span, h, np.inf)
