"""The single rigid body: the proxy's mass, composite inertia and leg geometry at its rest pose.

Why one module: the contact QP, the legs, the reference and the simulator all read these numbers;
they are measured once per character (body_from_proxy) and never change during a take.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..motion.contacts import ProxyKinematics
from ..maths import quat
from ..motion.clip import Y_UP_TO_Z_UP

GRAVITY = np.array([0.0, 0.0, -9.81])
SIDES = ("right", "left")


@dataclass(frozen=True)
class Body:
    mass: float
    inertia: np.ndarray          # (3, 3) composite inertia about the COM, SRB (root) frame
    inertia_inv: np.ndarray
    hip: np.ndarray              # (2, 3) hip joint centres relative to the root, root frame
    thigh: float                 # hip -> knee length
    shin: float                  # knee -> ankle length
    sole: np.ndarray             # (4, 3) sole corners relative to the ankle, foot link frame
    leg_mass: np.ndarray         # (3,) thigh, shin, foot mass
    leg_dofs: np.ndarray         # (2, 7) DoF indices: hip x3, knee, ankle x3 (right, left)
    tau_max: np.ndarray          # (DoF,)
    height: float

    @property
    def sole_drop(self) -> float:
        """Height of the sole below the ankle centre (foot level)."""
        return float(self.sole[:, 1].min())

    @property
    def sole_centre(self) -> np.ndarray:
        """Centre of the sole relative to the ankle, foot link frame."""
        return self.sole.mean(axis=0)

    @property
    def tau_max_inv(self) -> np.ndarray:
        return 1.0 / self.tau_max

    def inertia_world(self, R: np.ndarray) -> np.ndarray:
        return R @ self.inertia @ R.T


def body_from_proxy(kin: ProxyKinematics, mass: float = proxy.DEFAULT_MASS) -> Body:
    """Measure the SRB and leg geometry on the proxy in its rest pose (scaled to its height)."""
    root_rot = Y_UP_TO_Z_UP
    kin.set_pose([0.0, 0.0, 1.0], root_rot, np.tile(quat.IDENTITY, (len(proxy.DEFAULT_JOINTS), 1)))
    com_pos, com_rot = kin.link_frames()
    origins = kin.joint_positions()
    m = kin.link_mass
    com = (m[:, None] * com_pos).sum(0) / m.sum()
    inertia = np.zeros((3, 3))
    for k in range(len(m)):
        R = quat.to_matrix(com_rot[k])
        r = com_pos[k] - com
        inertia += R @ np.diag(kin.link_inertia[k]) @ R.T + m[k] * (r @ r * np.eye(3) - np.outer(r, r))
    scale = mass / m.sum()
    R_root = quat.to_matrix(root_rot)
    idx = {n: i for i, n in enumerate(kin.link_names)}
    hips = np.array([R_root.T @ (origins[idx[f"{s}_hip"]] - [0, 0, 1.0]) for s in SIDES])
    thigh = float(np.linalg.norm(origins[idx["right_knee"]] - origins[idx["right_hip"]]))
    shin = float(np.linalg.norm(origins[idx["right_ankle"]] - origins[idx["right_knee"]]))
    # Sole corners in the foot link frame (identity joint rotations: link frame = root frame).
    ankle = origins[idx["right_ankle"]]
    sole_world = kin.sole_corners(com_pos, com_rot)[0]
    sole = (sole_world - ankle) @ R_root  # world -> link frame (R_root^T applied to rows)
    leg_mass = np.array([m[idx["right_hip"]], m[idx["right_knee"]], m[idx["right_ankle"]]]) * scale
    return Body(
        mass=float(mass), inertia=R_root.T @ inertia @ R_root * scale,
        inertia_inv=np.linalg.inv(R_root.T @ inertia @ R_root * scale), hip=hips, thigh=thigh, shin=shin,
        sole=sole, leg_mass=leg_mass, leg_dofs=np.array(proxy.leg_dofs()),
        tau_max=np.array(proxy.dof_tau_max(scale=mass / proxy.DEFAULT_MASS * kin.scale)),
        height=kin.height,
    )


def kin_scale(body: "Body") -> float:
    return body.height / proxy.DEFAULT_HEIGHT
