"""The proxy in MuJoCo: the MJCF model built from runtime.body.description, and MuJoCo's warnings.

Why MuJoCo: it has wheels for CPython 3.11 and 3.13 on Linux, Windows and macOS, where PyBullet has
one (Linux, 3.11).  The model is the same body PyBullet loads from the URDF (links, joints, masses,
inertias, collision shapes), written as MJCF: ball joints for PyBullet's spherical ones, hinges
for its revolute ones with their URDF ranges, fixed joints merged into their parent body's frame
as child bodies without joints.
"""
from __future__ import annotations

from ...body.description import Link

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
