"""The simulated proxy humanoid's actuated joints: names, degrees of freedom, body regions.

The default proxy is the DeepMimic humanoid (``runtime/data/humanoid.urdf``, as PyBullet's data ships it):
spherical chest, neck, hips, ankles and shoulders, revolute knees and elbows, 28 actuated DoF.
Every per-DoF array in ``runtime`` (fatigue state, torque limits, schedules) uses the order below.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Joint:
    name: str
    dofs: int            # 3 for spherical, 1 for revolute
    region: str          # physiological region whose published 3CC parameters apply
    body_part: str       # animator-facing group: legs, arms, trunk, neck
    tau_max: float       # N*m for the 45 kg default proxy (DeepMimic's torque limits)


# Hips and the neck have no published 3CC parameters: they use Frey-Law's pooled "general" set.
# tau_max: legs keep DeepMimic's limits; trunk, neck and arms are hand-set to roughly adult
# maximal voluntary torques scaled to a 45 kg body (DeepMimic's 100 N*m shoulders would hold an
# arm out at 10 % effort, so no arm would ever tire).  A simulation raises every default to what
# the fresh motion needs (calibration.calibrate_tau_max), so these are floors, not caps on the animation.
DEFAULT_JOINTS: tuple[Joint, ...] = (
    Joint("chest", 3, "trunk", "trunk", 120.0),
    Joint("neck", 3, "general", "neck", 15.0),
    Joint("right_hip", 3, "general", "legs", 200.0),
    Joint("right_knee", 1, "knee", "legs", 150.0),
    Joint("right_ankle", 3, "ankle", "legs", 90.0),
    Joint("right_shoulder", 3, "shoulder", "arms", 35.0),
    Joint("right_elbow", 1, "elbow", "arms", 40.0),
    Joint("left_hip", 3, "general", "legs", 200.0),
    Joint("left_knee", 1, "knee", "legs", 150.0),
    Joint("left_ankle", 3, "ankle", "legs", 90.0),
    Joint("left_shoulder", 3, "shoulder", "arms", 35.0),
    Joint("left_elbow", 1, "elbow", "arms", 40.0),
)

BODY_PARTS = ("legs", "arms", "trunk", "neck")


def dof_table(joints: tuple[Joint, ...] = DEFAULT_JOINTS) -> list[tuple[str, int, Joint]]:
    """One row per actuated DoF: (joint name, axis index within the joint, joint)."""
    return [(j.name, axis, j) for j in joints for axis in range(j.dofs)]


def dof_regions(joints: tuple[Joint, ...] = DEFAULT_JOINTS) -> list[str]:
    """Physiological region of every DoF, in actuator order."""
    return [j.region for _, _, j in dof_table(joints)]


def dof_body_parts(joints: tuple[Joint, ...] = DEFAULT_JOINTS) -> list[str]:
    """Animator-facing body part of every DoF, in actuator order."""
    return [j.body_part for _, _, j in dof_table(joints)]


def leg_dofs(joints: tuple[Joint, ...] = DEFAULT_JOINTS) -> list[list[int]]:
    """DoF indices of each leg, right then left: hip x3, knee, ankle x3."""
    first = {}
    for k, (name, _, _) in enumerate(dof_table(joints)):
        first.setdefault(name, k)
    out = []
    for side in ("right", "left"):
        hip, knee, ankle = (first[f"{side}_{n}"] for n in ("hip", "knee", "ankle"))
        out.append([hip, hip + 1, hip + 2, knee, ankle, ankle + 1, ankle + 2])
    return out


def other_side(name: str) -> str:
    """The mirror joint's name (right_knee <-> left_knee; unsided joints are their own)."""
    for a, b in (("right_", "left_"), ("left_", "right_")):
        if name.startswith(a):
            return b + name[len(a):]
    return name


def mirrored_dofs(joints: tuple[Joint, ...] = DEFAULT_JOINTS) -> list[tuple[int, int]]:
    """(right, left) DoF index pairs of mirrored joints."""
    table = dof_table(joints)
    index = {(name, axis): d for d, (name, axis, _) in enumerate(table)}
    return [(d, index[(other_side(name), axis)])
            for d, (name, axis, _) in enumerate(table) if name.startswith("right_")]


def dof_tau_max(joints: tuple[Joint, ...] = DEFAULT_JOINTS, scale: float = 1.0) -> list[float]:
    """Default torque limit of every DoF (N*m), times ``scale`` (e.g. body mass / 45 kg)."""
    return [j.tau_max * scale for _, _, j in dof_table(joints)]


# --- the PyBullet body -------------------------------------------------------------------------
URDF_PATH = Path(__file__).resolve().parent.parent / "data" / "humanoid.urdf"   # ships with the extension
URDF_SCALE = 0.25          # the file is authored 4x; DeepMimic loads it at 0.25
DEFAULT_MASS = 45.0        # kg, sum of the URDF's link masses
DEFAULT_HEIGHT = 1.62      # m, sole to crown of the scaled URDF in its rest pose
FOOT_LINKS = ("right_ankle", "left_ankle")
HAND_LINKS = ("right_wrist", "left_wrist")
# Foot box half extents (m, link frame of the scaled URDF: x forward, y up, z lateral).
FOOT_HALF_EXTENTS = (0.0885, 0.0275, 0.045)
# Joint origins along the URDF's chains (file units: x URDF_SCALE for 1.62 m): hip to knee, knee to
# ankle, root to chest, chest to neck; and the foot box's centre below the ankle.
THIGH_URDF = 1.686184
SHANK_URDF = 1.639480
CHEST_ABOVE_ROOT_URDF = 0.944604
NECK_ABOVE_CHEST_URDF = 0.895576
FOOT_BELOW_ANKLE_URDF = 0.09


def default_urdf_text() -> str:
    """The default proxy's URDF (the file ends in a stray NUL byte, cut here)."""
    text = URDF_PATH.read_text(encoding="latin-1")
    return text[: text.index("</robot>") + len("</robot>")]
