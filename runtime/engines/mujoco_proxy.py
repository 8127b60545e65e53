"""The proxy in MuJoCo: the model built from runtime.body.description, and its forward kinematics.

Why MuJoCo: it has wheels for CPython 3.11 and 3.13 on Linux, Windows and macOS, where PyBullet has
one (Linux, 3.11).  The model is the same body PyBullet loads from the URDF (links, joints, masses,
inertias, collision shapes), written as MJCF: ball joints for PyBullet's spherical ones, hinges
for its revolute ones with their URDF ranges, fixed joints merged into their parent body's frame
as child bodies without joints.
"""
from __future__ import annotations

import numpy as np

from ..body import proxy
from ..body.description import Link, proxy_links
from ..maths import quat
from .kinematics import SOLE, Kinematics

GRAVITY = 9.81

WARNINGS: list[str] = []      # MuJoCo's warnings in this process, the latest last (a few kept)


def keep_warnings_in_memory(mujoco) -> None:
    """MuJoCo writes its warnings to MUJOCO_LOG.TXT in the current directory (a user's home,
    Blender's folder); kept here instead, unless someone else already takes them."""
    if mujoco.get_mju_user_warning() is None:
        def keep(text: str) -> None:
            WARNINGS.append(str(text).strip())
            del WARNINGS[:-8]
        mujoco.set_mju_user_warning(keep)


def numbers_text(a) -> str:
    return " ".join(repr(float(x)) for x in a)


def _wxyz(q) -> str:
    return numbers_text([q[3], q[0], q[1], q[2]])


def mjcf(links: tuple[Link, ...], *, free_base: bool, keep: set[str] | None = None, dt: float = 0.01,
         base_pos=(0.0, 0.0, 0.0)) -> str:
    """MJCF text of ``links``.  ``free_base``: the base floats (a free joint; else it is welded to
    the world at ``base_pos``).  ``keep``: only these links and their ancestors (None: all).
    Collision shapes are kept as geoms that collide with nothing (their placement gives distances
    to the floor)."""
    children: dict[str | None, list[Link]] = {}
    for link in links:
        children.setdefault(link.parent, []).append(link)
    wanted = None
    if keep is not None:
        by_name = {link.name: link for link in links}
        wanted = set()
        for name in keep:
            while name is not None and name not in wanted:
                wanted.add(name)
                name = by_name[name].parent

    def body(link: Link, depth: int) -> list[str]:
        pad = "  " * depth
        attrs = f'name="{link.name}" pos="{numbers_text(base_pos if link.parent is None else link.origin)}"'
        if link.parent is not None:
            attrs += f' quat="{_wxyz(link.origin_rot)}"'
        out = [f"{pad}<body {attrs}>"]
        if link.parent is None and free_base:
            out.append(f'{pad}  <freejoint name="base"/>')
        elif link.joint == "ball":
            out.append(f'{pad}  <joint name="{link.name}" type="ball" damping="0" armature="0"/>')
        elif link.joint == "hinge":
            rng = (f' limited="true" range="{numbers_text(link.limit)}"' if link.limit is not None else ' limited="false"')
            out.append(f'{pad}  <joint name="{link.name}" type="hinge" axis="{numbers_text(link.axis)}"{rng} damping="0" armature="0"/>')
        out.append(f'{pad}  <inertial pos="{numbers_text(link.com)}" mass="{float(link.mass)!r}" diaginertia="{numbers_text(link.inertia)}"/>')
        for k, shape in enumerate(link.shapes):
            size = (shape.size[0], 0.5 * shape.size[1]) if shape.kind == "capsule" else shape.size
            out.append(f'{pad}  <geom name="{link.name}_{k}" type="{shape.kind}" size="{numbers_text(size)}" '
                       f'pos="{numbers_text(shape.pos)}" quat="{_wxyz(shape.rot)}" contype="0" conaffinity="0" mass="0"/>')
        for child in children.get(link.name, []):
            if wanted is None or child.name in wanted:
                out.extend(body(child, depth + 1))
        out.append(f"{pad}</body>")
        return out

    base = children[None][0]
    lines = ['<mujoco model="fatigued_takes_proxy">',
             '  <compiler angle="radian" inertiafromgeom="false" autolimits="false" balanceinertia="false"/>',
             f'  <option timestep="{dt!r}" gravity="0 0 {-GRAVITY!r}" integrator="Euler">',
             '    <flag contact="disable"/>',
             '  </option>',
             '  <worldbody>', *body(base, 2), '  </worldbody>', '</mujoco>']
    return "\n".join(lines)


class MujocoKinematics(Kinematics):
    """Kinematics (link frames, COM, soles, floor, contacts) of the proxy computed by MuJoCo."""

    def __init__(self, height: float = proxy.DEFAULT_HEIGHT, plan=None):
        import mujoco

        self._mj = mujoco
        self.height = height
        self.scale = height / proxy.DEFAULT_HEIGHT
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
        self._sole = SOLE * self.scale
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

    def _pose_frames(self, clip, below, span, link_pos, link_rot, joint_pos, above_plane) -> None:
        qpos = self._qpos(np.asarray(clip.root_pos, float), np.asarray(clip.root_rot, float),
                          np.asarray(clip.joint_rots, float))
        for t in range(clip.frames):
            self._forward(qpos[t])
            link_pos[t], link_rot[t], joint_pos[t] = self._frames_now()
            h = self._heights_now(below)
            above_plane[t] = np.where(h <= span, h, np.inf)
