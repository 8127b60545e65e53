"""The simulated proxy humanoid's actuated joints: names, degrees of freedom, body regions.

The default proxy is the DeepMimic humanoid shipped in ``pybullet_data`` (``humanoid/humanoid.urdf``):
spherical chest, neck, hips, ankles and shoulders, revolute knees and elbows, 28 actuated DoF.
Every per-DoF array in ``runtime`` (fatigue state, torque limits, schedules) uses the order below.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Joint:
    name: str
    dofs: int            # 3 for spherical, 1 for revolute
    region: str          # physiological region whose published 3CC parameters apply
    body_part: str       # animator-facing group: legs, arms, trunk, neck
    tau_max: float       # N*m for the 45 kg default proxy (DeepMimic's torque limits)


# Hips and the neck have no published 3CC parameters: they use Frey-Law's pooled "general" set.
DEFAULT_JOINTS: tuple[Joint, ...] = (
    Joint("chest", 3, "trunk", "trunk", 200.0),
    Joint("neck", 3, "general", "neck", 50.0),
    Joint("right_hip", 3, "general", "legs", 200.0),
    Joint("right_knee", 1, "knee", "legs", 150.0),
    Joint("right_ankle", 3, "ankle", "legs", 90.0),
    Joint("right_shoulder", 3, "shoulder", "arms", 100.0),
    Joint("right_elbow", 1, "elbow", "arms", 60.0),
    Joint("left_hip", 3, "general", "legs", 200.0),
    Joint("left_knee", 1, "knee", "legs", 150.0),
    Joint("left_ankle", 3, "ankle", "legs", 90.0),
    Joint("left_shoulder", 3, "shoulder", "arms", 100.0),
    Joint("left_elbow", 1, "elbow", "arms", 60.0),
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


def dof_tau_max(joints: tuple[Joint, ...] = DEFAULT_JOINTS, scale: float = 1.0) -> list[float]:
    """Default torque limit of every DoF (N*m), times ``scale`` (e.g. body mass / 45 kg)."""
    return [j.tau_max * scale for _, _, j in dof_table(joints)]
