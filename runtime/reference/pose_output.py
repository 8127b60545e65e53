"""Pose output: the full-body pose of recorded simulator states (pelvis from the simulated centre
of mass with the reference's pelvis-to-COM offset, legs by IK onto the simulated feet, trunk, arms
and neck from the reference or the simulated limbs).

Why apart from the simulator: the step records only a small SimState per output frame; the
poses are built afterwards for all frames at once (numpy over frames), or for one pose on Python
floats where torque mode needs the SRB's pose every step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..maths import quat, repeatable
from ..maths.rotation import mv, quat_matrix
from .legs import flatten_foot, leg_ik, leg_ik_one, pivot_on_toes, TOE_PIVOT_REACH
from .reference import Reference
from .rest_posture import hinged
from .rigid_body import Body, SIDES

_NAMES = [j.name for j in proxy.DEFAULT_JOINTS]
LEG_SLOTS = [[_NAMES.index(f"{side}_{n}") for n in ("hip", "knee", "ankle")] for side in SIDES]


@dataclass(frozen=True)
class SimState:
    """What the full-body pose of one output frame needs from the SRB, cheap to take every frame."""
    phase: float                  # s of the source shown
    com: np.ndarray               # (3,) centre of mass
    rot: np.ndarray               # (4,) body orientation
    foot_offsets: np.ndarray      # (2, 3) world shift of each foot from the reference's
    stance: np.ndarray            # (2,) bool: foot on the ground
    resting: bool
    limbs: np.ndarray | None      # simulated upper-body joint rotations (None: the reference's)
    sag: float                    # m the centre of mass sits below the source's (tired knees)
    hinge: float = 0.0            # rad the pelvis tips forward for a braced rest (runtime.reference.rest_posture)
    pose: tuple | None = None     # (root position, root rotation, joint rotations) set outright: a kneel (runtime.floor.kneel)


def pose(ref: Reference, body: Body, state: SimState, limb_slots=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """poses() of one state (``limb_slots``: where the simulated limbs' rotations go, None: none) (root position, rotation, joint rotations), on Python floats."""
    if state.pose is not None:
        return tuple(np.array(a, dtype=float) for a in state.pose)
    phase, p, q, offsets, stance = state.phase, state.com, state.rot, state.foot_offsets, state.stance
    resting, limbs, sag = state.resting, state.limbs, state.sag
    _, _, joints = ref.clip.sample(phase)
    joints = joints.copy()
    if limbs is not None:
        joints[limb_slots] = limbs
    r = ref.sample(phase)
    R = quat_matrix(q)
    root_rot = np.array(quat.multiply4(q.tolist(), r.root_rel.tolist()))
    root_pos = p + R @ r.root_offset
    if state.hinge > 0.0:
        root_pos, root_rot = hinged(p, root_pos, root_rot, state.hinge)
    root_R = quat_matrix(root_rot)
    ankles = r.ankle + offsets
    sole_level = ref.floor - body.sole_drop
    for k in range(2):
        ankle = ankles[k]
        if not stance[k]:
            ankle[2] = max(float(ankle[2] + p[2] - (r.com[2] - sag)), sole_level)
        foot_R = quat_matrix(r.foot_rot[k])
        if resting:                 # flat, on the floor or stepping in (see rest_steps.step_in)
            foot_R = flatten_foot(foot_R)
        if resting and stance[k]:
            ankle[2] = sole_level
        if stance[k] or resting:    # (a rest's closing step from a wide stance: toes first)
            ankle, foot_R = pivot_on_toes(body, root_pos + root_R @ body.hip[k], ankle, foot_R)
        hi, ki, ai = LEG_SLOTS[k]
        q_hip, knee, q_ankle = leg_ik_one(body, k, root_pos, root_R, joints[hi], ankle, foot_R)
        joints[hi] = q_hip
        joints[ki] = (0.0, 0.0, math.sin(0.5 * knee), math.cos(0.5 * knee))
        joints[ai] = q_ankle
    return root_pos, root_rot, joints

def poses(ref: Reference, body: Body, states: list[SimState], limb_slots=None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Full-body poses for recorded states: root positions (N, 3), rotations (N, 4), joint
    rotations (N, J, 4), foot contacts (N, 2).

    Trunk, arms and neck come from the reference at each phase (or the simulated limbs); the
    pelvis from the SRB with the reference's pelvis-to-COM offset; the legs by IK onto the
    simulated feet.  All frames at once (numpy over frames)."""
    phases = np.array([st.phase for st in states])
    p = np.array([st.com for st in states])
    q = np.array([st.rot for st in states])
    at = ref.samples(phases)
    ankles = np.array([st.foot_offsets for st in states]) + at.ankle
    contacts = np.array([st.stance for st in states], dtype=bool)
    resting = np.array([st.resting for st in states], dtype=bool)
    sag = np.array([st.sag for st in states])
    _, _, joints = ref.clip.sample_many(phases)
    if limb_slots is not None:
        for n, st in enumerate(states):
            if st.limbs is not None:
                joints[n, limb_slots] = st.limbs
    root_rot = quat.multiply(q, at.root_rel)
    root_pos = p + mv(quat.to_matrix(q), at.root_offset)
    hinge = np.array([st.hinge for st in states])
    bent = np.flatnonzero(hinge > 0.0)
    if bent.size:
        root_pos[bent], root_rot[bent] = hinged(p[bent], root_pos[bent], root_rot[bent], hinge[bent])
    root_R = quat.to_matrix(root_rot)
    sole_level = ref.floor - body.sole_drop
    for k in range(2):
        ankle = ankles[:, k]
        swing = ~contacts[:, k]
        # A swing foot keeps its height relative to the body; a resting foot stands flat.
        ankle[swing, 2] = np.maximum(ankle[swing, 2] + p[swing, 2] - (at.com[swing, 2] - sag[swing]),
                                     sole_level)
        foot_R = quat.to_matrix(at.foot_rot[:, k])
        flat = resting & contacts[:, k]
        for n in np.flatnonzero(resting):     # flat, on the floor or stepping in (see rest_steps.step_in)
            foot_R[n] = flatten_foot(foot_R[n])
        ankle[flat, 2] = sole_level
        hip = root_pos + mv(root_R, body.hip[k])
        # (a rest's closing step from a wide stance: toes first)
        far = (contacts[:, k] | resting) & (np.sqrt(((ankle - hip) ** 2).sum(axis=1))
                                            > TOE_PIVOT_REACH * (body.thigh + body.shin))
        for n in np.flatnonzero(far):
            ankle[n], foot_R[n] = pivot_on_toes(body, hip[n], ankle[n], foot_R[n])
        hi, ki, ai = LEG_SLOTS[k]
        q_hip, knee, q_ankle = leg_ik(body, k, root_pos, root_R, joints[:, hi], ankle, foot_R)
        joints[:, hi] = q_hip
        joints[:, ki] = np.stack([np.zeros_like(knee), np.zeros_like(knee),
                                  repeatable.sin(0.5 * knee), repeatable.cos(0.5 * knee)], axis=-1)
        joints[:, ai] = q_ankle
    for n, st in enumerate(states):         # poses set outright (a kneel): as they are, both feet down
        if st.pose is not None:
            root_pos[n], root_rot[n], joints[n] = st.pose
            contacts[n] = True
    return root_pos, root_rot, joints, contacts
