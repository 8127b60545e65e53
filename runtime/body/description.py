"""The proxy's body as plain numbers, read from its URDF: what any physics engine needs to build it.

Why: PyBullet loads the URDF itself; MuJoCo (and anything else) builds the same body from this
description, so both engines simulate one body: the same links, joints, masses and shapes,
scaled to the character's height.  Inertias are the ones PyBullet gives the file (it ignores the
URDF's inertia tensors and derives them from the collision shapes: a sphere's own, a box's, and
for a capsule the box around it, grown by its collision margin), so the engines agree on how
hard every limb is to swing.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from . import proxy
from .anthropometry import urdf_text

CAPSULE_MARGIN = 0.001    # m, PyBullet's collision margin around a capsule's bounding box (inertia)


@dataclass(frozen=True)
class Shape:
    """A collision shape in its link's frame (metres, scaled)."""
    kind: str                  # "sphere", "capsule" (along its local z), "box"
    size: tuple[float, ...]    # sphere (r,), capsule (r, cylinder length), box (half x, y, z)
    pos: np.ndarray            # (3,)
    rot: np.ndarray            # (4,) x, y, z, w


@dataclass(frozen=True)
class Link:
    """One link and the joint that carries it (scaled to the body's height)."""
    name: str
    parent: str | None         # None: the base
    joint: str                 # "fixed", "ball", "hinge" (the base: "base")
    origin: np.ndarray         # (3,) joint (= link frame) position in the parent's link frame
    origin_rot: np.ndarray     # (4,) x, y, z, w
    axis: np.ndarray           # (3,) hinge axis in the link frame
    limit: tuple[float, float] | None   # hinge range, rad
    mass: float                # kg
    com: np.ndarray            # (3,) centre of mass in the link frame
    inertia: np.ndarray        # (3,) principal moments about the COM, link axes
    shapes: tuple[Shape, ...]


def _floats(text: str | None, default=(0.0, 0.0, 0.0)) -> np.ndarray:
    return np.array([float(v) for v in text.split()]) if text else np.array(default, dtype=float)


def _rpy_quat(rpy: np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, then y, then z) as a quaternion (x, y, z, w)."""
    r, p, y = 0.5 * rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
                     cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy])


def _rot_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _shape_inertia(shape: Shape, mass: float) -> np.ndarray:
    """Principal moments of ``mass`` spread as PyBullet assumes for ``shape`` (link axes)."""
    if shape.kind == "sphere":
        return np.full(3, 0.4 * mass * shape.size[0] ** 2)
    if shape.kind == "box":
        half = np.array(shape.size)
    else:                       # capsule: its bounding box in the link frame, grown by the margin
        r, length = shape.size
        local = np.array([r, r, r + 0.5 * length])
        half = np.abs(_rot_matrix(shape.rot)) @ local + CAPSULE_MARGIN
    full = 2.0 * half
    sq = full * full
    return mass / 12.0 * np.array([sq[1] + sq[2], sq[0] + sq[2], sq[0] + sq[1]])


def describe(urdf_text: str, scale: float) -> tuple[Link, ...]:
    """The links of a URDF (its file units times ``scale``), parents before children."""
    root = ET.fromstring(urdf_text)
    joints = {j.find("child").get("link"): j for j in root.iter("joint")}
    links = []
    for el in root.iter("link"):
        name = el.get("name")
        inertial = el.find("inertial")
        mass = float(inertial.find("mass").get("value")) if inertial is not None else 0.0
        com = _floats(inertial.find("origin").get("xyz")) * scale if inertial is not None else np.zeros(3)
        shapes = []
        for col in el.iter("collision"):
            origin = col.find("origin")
            pos = _floats(origin.get("xyz") if origin is not None else None) * scale
            rot = _rpy_quat(_floats(origin.get("rpy") if origin is not None else None))
            geom = col.find("geometry")[0]
            if geom.tag == "sphere":
                size = (float(geom.get("radius")) * scale,)
            elif geom.tag == "capsule":
                size = (float(geom.get("radius")) * scale, float(geom.get("length")) * scale)
            elif geom.tag == "box":
                size = tuple(0.5 * scale * _floats(geom.get("size")))
            else:
                raise ValueError(f"proxy link {name}: collision shape {geom.tag} is not supported")
            shapes.append(Shape(geom.tag, size, pos, rot))
        if shapes:
            inertia = _shape_inertia(shapes[0], mass)
        else:               # a shapeless link: PyBullet's box of its margin's size
            inertia = np.full(3, mass / 12.0 * 2.0 * (2.0 * CAPSULE_MARGIN) ** 2)
        joint = joints.get(name)
        if joint is None:
            links.append(Link(name, None, "base", np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0]),
                              None, mass, com, inertia, tuple(shapes)))
            continue
        origin = joint.find("origin")
        kind = {"fixed": "fixed", "spherical": "ball", "revolute": "hinge", "continuous": "hinge"}[joint.get("type")]
        limit = None
        lim = joint.find("limit")
        if kind == "hinge" and joint.get("type") == "revolute" and lim is not None:
            lo, hi = float(lim.get("lower", 0)), float(lim.get("upper", 0))
            limit = (lo, hi) if lo < hi else None
        axis = joint.find("axis")
        links.append(Link(
            name, joint.find("parent").get("link"), kind,
            _floats(origin.get("xyz") if origin is not None else None) * scale,
            _rpy_quat(_floats(origin.get("rpy") if origin is not None else None)),
            _floats(axis.get("xyz") if axis is not None else None, (1.0, 0.0, 0.0)),
            limit, mass, com, inertia, tuple(shapes)))
    return tuple(links)


def proxy_links(height: float = proxy.DEFAULT_HEIGHT, plan=None) -> tuple[Link, ...]:
    """The proxy's links at ``height``: the default body, or the one shaped by ``plan``."""
    if plan is None:
        text = proxy.default_urdf_text()
    else:
        text = urdf_text(plan)
    return describe(text, proxy.URDF_SCALE * height / proxy.DEFAULT_HEIGHT)
