"""Where a rig stands in the world: its body axes, its size and its units, from joint positions.

Real files do not stand the way test rigs do.  A BVH imports in centimetres or inches, a glTF
character sits under a rotated, 0.01-scaled parent with its rest pose lying along an axis, a
capture skeleton can rest upside down and be stood up by its root rotation, a Z-up BVH imported
as Y-up lies on its back through the whole clip.  So nothing here trusts world Z or bone tails
(importers give leaf bones arbitrary lengths, 100x too long in some glTF files):

* **Size** comes from the lengths of the joint chains (thigh, shank and hip-to-neck), which no
  rotation or rest pose changes, calibrated against the same chains of the proxy.
* **Units**: a size that is not a plausible human height in metres is a rig in other units; it
  is simulated at a default height and positions are mapped by the ratio.
* **Body axes** of the rest pose: up along the trunk (snapped to the nearest world axis: rest
  poses are authored along axes, and a snapped axis keeps an upright rig exactly upright),
  left from the hips and shoulders.
* **World up** of the motion: world Z, unless the rest pose AND the motion both lie along the
  same horizontal axis (a file imported with the wrong up axis); then that axis.

Pure numpy on joint positions: testable without Blender.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...runtime.body import proxy
from ...runtime.maths import rotation

# Proxy chains at its default height (DeepMimic humanoid, URDF x URDF_SCALE): thigh and shank from
# joint to joint, hip level to the neck joint (root->chest->neck); ankle joint above the sole.
PROXY_THIGH = proxy.THIGH_URDF * proxy.URDF_SCALE
PROXY_SHANK = proxy.SHANK_URDF * proxy.URDF_SCALE
PROXY_TRUNK = (proxy.CHEST_ABOVE_ROOT_URDF + proxy.NECK_ABOVE_CHEST_URDF) * proxy.URDF_SCALE
PROXY_ANKLE_ABOVE_SOLE = proxy.FOOT_BELOW_ANKLE_URDF * proxy.URDF_SCALE + proxy.FOOT_HALF_EXTENTS[1]
STATURE_PER_CHAIN = proxy.DEFAULT_HEIGHT / (PROXY_THIGH + PROXY_SHANK + PROXY_TRUNK)
# A rig measuring this tall (world units) is taken to be in metres; anything else is in other units.
PLAUSIBLE_HEIGHT_M = (0.9, 2.4)

_AXES = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0], [0, 0, 1.0], [0, 0, -1.0]])
_AXIS_NAMES = ("+X", "-X", "+Y", "-Y", "+Z", "-Z")


@dataclass(frozen=True)
class RigMeasure:
    """A rig's size from its joint chains, in its own world units."""
    stature: float          # crown to sole, estimated from the chains as the proxy's proportions have it
    pelvis_standing: float  # pelvis joint above the sole when standing with straight legs

    @property
    def in_metres(self) -> bool:
        lo, hi = PLAUSIBLE_HEIGHT_M
        return lo <= self.stature <= hi


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else v


def nearest_axis(v) -> tuple[np.ndarray, str]:
    """The signed world axis closest in direction to ``v`` and its name ("+Z", "-Y", ...)."""
    i = int(np.argmax(_AXES @ _unit(v)))
    return _AXES[i].copy(), _AXIS_NAMES[i]


def measure(joints: dict, up=None) -> RigMeasure:
    """Size of a rig from its joint positions (key -> (3,), world): pelvis, neck, hips, knees,
    ankles.  ``up``: the body's up (for the small pelvis-above-hips term), default the trunk."""
    p = {k: np.asarray(v, dtype=float) for k, v in joints.items()}
    sides = ("right", "left")
    thigh = float(np.mean([np.linalg.norm(p[f"{s}_knee"] - p[f"{s}_hip"]) for s in sides]))
    shank = float(np.mean([np.linalg.norm(p[f"{s}_ankle"] - p[f"{s}_knee"]) for s in sides]))
    hip_mid = 0.5 * (p["right_hip"] + p["left_hip"])
    trunk = float(np.linalg.norm(p["neck"] - hip_mid))
    up = _unit(p["neck"] - hip_mid if up is None else up)
    above_hips = max(0.0, float((p["pelvis"] - hip_mid) @ up))
    leg = thigh + shank
    ankle = leg * PROXY_ANKLE_ABOVE_SOLE / (PROXY_THIGH + PROXY_SHANK)
    return RigMeasure(stature=STATURE_PER_CHAIN * (thigh + shank + trunk), pelvis_standing=above_hips + leg + ankle)


def body_frame(joints: dict) -> np.ndarray:
    """(3, 3) rest-pose body axes as columns (forward, left, up): up the world axis nearest the
    trunk (pelvis to neck), left from the right to the left hip and shoulder, off up."""
    p = {k: np.asarray(v, dtype=float) for k, v in joints.items()}
    up, _ = nearest_axis(p["neck"] - p["pelvis"])
    left = (p["left_hip"] - p["right_hip"]) + (p["left_shoulder"] - p["right_shoulder"])
    left = left - (left @ up) * up
    if np.linalg.norm(left) < 1e-9:
        raise ValueError("left and right coincide")
    left = _unit(left)
    return np.column_stack([np.cross(left, up), left, up])


def motion_up(rest_frame: np.ndarray, trunk_dirs: np.ndarray, share: float = 0.8,
              within_deg: float = 35.0) -> tuple[np.ndarray | None, str]:
    """The world axis the motion stands along when it is not Z: (axis, its name), else (None, "").

    Only when the trunk (``trunk_dirs``, (T, 3) pelvis-to-neck per frame) points along one
    other world axis in at least ``share`` of the frames AND the rest pose does not stand on
    world Z: a file imported with another up axis.  A rig whose rest pose stands on Z and whose
    clip lies down (a nap on the floor) keeps world Z, and so does a rest pose lying along an
    axis that the animation stands up (glTF, capture rigs)."""
    if rest_frame[2, 2] > 0.5:
        return None, ""
    d = np.asarray(trunk_dirs, dtype=float)
    n = np.linalg.norm(d, axis=1)
    ok = n > 1e-12
    if not ok.any():
        return None, ""
    d = d[ok] / n[ok, None]
    axis, name = nearest_axis(np.median(d, axis=0))
    if axis[2] > 0.5 or np.mean(d @ axis > math.cos(math.radians(within_deg))) < share:
        return None, ""
    return axis, name


def rotation_onto_z(axis: np.ndarray) -> np.ndarray:
    """The quarter or half turn about a world axis taking the unit world axis ``axis`` onto +Z."""
    a = np.asarray(axis, dtype=float)
    z = np.array([0.0, 0.0, 1.0])
    if a @ z > 0.5:
        return np.eye(3)
    if a @ z < -0.5:
        return np.diag([1.0, -1.0, -1.0])           # half turn about X
    return rotation.rotation_matrix_between(a, z)   # a quarter turn (Rodrigues, exact on world axes)


def facing_yaw(left: np.ndarray) -> float | None:
    """Heading (rad about world Z) of a body whose left points along ``left``; None when left is
    nearly vertical (the body lies on its side) and has no heading."""
    left = np.asarray(left, dtype=float)
    horiz = np.array([left[0], left[1], 0.0])
    if np.linalg.norm(horiz) < 0.25 * max(np.linalg.norm(left), 1e-12):
        return None
    fwd = np.cross(horiz, [0.0, 0.0, 1.0])
    return math.atan2(fwd[1], fwd[0])


def units_note(name: str, stature: float, simulated_height: float) -> str:
    """The warning a rig in other units gets (no scale to apply: the ratio maps positions)."""
    return (f"'{name}' is {stature:.3g} units tall (not metres): simulated as {simulated_height:.2f} m; "
            f"set Height (Fatigue panel, Body) to override")


# World X mirrored: what takes a mirrored object's matrix (a negative determinant) back to a proper one.
MIRROR_X = np.diag([-1.0, 1.0, 1.0, 1.0])


def is_mirrored(matrix) -> bool:
    """Whether an object's 4x4 world matrix mirrors (a negative scale on one or three axes)."""
    return float(np.linalg.det(np.asarray(matrix, dtype=float)[:3, :3])) < 0.0


def object_matrix(matrix) -> np.ndarray:
    """The world matrix a rig is read and written under: its object's own, or, where that mirrors
    (scale x -1), the same mirrored back across world X.  A mirror turns right-handed rotations
    left-handed, so the bones' world rotations would be nonsense; read under the proper matrix the
    rig is its own mirror image, a performance as physical as the one seen (the mirror is across a
    vertical plane: gravity keeps its direction), and the take written back under the same matrix
    plays mirrored again in the object, on the source's path."""
    m = np.array(matrix, dtype=np.float64)
    return MIRROR_X @ m if is_mirrored(m) else m


def mirrored_note(name: str) -> str:
    """The warning a mirrored armature's bake gives."""
    return (f"'{name}' is mirrored (a negative scale): simulated as its mirror image, which the object's "
            f"scale mirrors back")
