"""Hybrid limbs: trunk, neck and arms of the proxy under fatigued torque limits, engine-free: the
limb layout and rates, the motor arithmetic and the step both engines' upper bodies share
(runtime.engines.pybullet.limbs, runtime.engines.mujoco.limbs drive their engine).

Why: the SRB carries the body's centre of mass; what makes a tired character *look* tired above
the hips is gravity winning over weak muscles — arms that drop, a head that nods.  So the upper
body is an articulated body whose pelvis follows the SRB (with the SRB's acceleration folded into
gravity so a landing still throws the arms down) and whose chest, neck, shoulders and elbows track
the reference with joint motors capped per DoF at RC * tau_max.  The motor solve is implicit
(stable at 120 Hz on 1 kg forearms, where explicit PD is not) and the torque each motor applied is
what the fatigue model books.
Trunk and neck end their range on passive tissue: a back or neck too weak to hold the body up
bends until ligaments carry it (at most about 80 and 65 degrees from upright), as a person's does,
instead of swinging round the joint (an exhausted trunk and neck had turned 60-180 degrees).
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..body import proxy
from ..body.head import HANG_MARGIN, HANG_RANGE, HOLD_SHARE, held_droop
from ..maths import quat

LIMB_JOINTS = ("chest", "neck", "right_shoulder", "right_elbow", "left_shoulder", "left_elbow")
LIMB_MIN_RATE = 120.0  # Hz: the motors are stable from here on 1 kg forearms
RATE_SLACK = 0.01      # a simulation rate may be this much (relative) below its minimum
# PyBullet's ball-joint motor (measured: one step from rest, unit gains) closes this share of its
# angle error per step and ignores the target rate (its hinge motor asks for error / dt + rate).
BALL_ERP = 0.2
# The most a ball joint's target is set past its goal (rad): a goal that would be led further
# jumps (a cut, a yield released, a file's test frames) and is not led at all (led, a chest
# flipping 180 degrees a frame was thrown past its passive stop and the simulation blew up).
BALL_LEAD_MAX = 0.5
SOLVER_ITERATIONS = 10
# End of the trunk's and neck's range (rotation from upright, any direction; flexion is the
# largest: thoracolumbar about 75, cervical about 60 degrees).  Beyond it passive tissue
# (ligaments, discs, bone) carries the segment, unbooked: it does not tire.
PASSIVE_RANGE = {"chest": math.radians(75.0), "neck": math.radians(60.0)}
PASSIVE_SAG = 0.05     # rad beyond the end of range at which the tissue carries the whole segment's weight
PASSIVE_MARGIN = 0.2   # rad: a source pose beyond the range (an acrobat, a cartoon rig) moves the stop past it
PASSIVE_DAMPING = 2.0  # damping ratio of the stop: overdamped, a segment falling onto it is caught, not bounced


def whole_steps(rate: float, per: float) -> int:
    """Steps of at least about ``rate`` Hz per interval of a ``per`` Hz clock (1 % slack: 29.97 fps
    takes 2 steps of 59.94 Hz, not 3)."""
    return max(1, math.ceil(rate / per - RATE_SLACK))


def limb_rate_for(srb_rate: float) -> float:
    """The limbs' engine rate: a whole number of substeps per SRB step, at least LIMB_MIN_RATE."""
    return srb_rate * whole_steps(LIMB_MIN_RATE, srb_rate)

def limb_layout() -> tuple[list[bool], np.ndarray, list[int]]:
    """Per LIMB_JOINTS joint: whether it is a ball joint; the proxy DoF indices of all limb DoFs
    (in LIMB_JOINTS order, the order of caps and torques here); each joint's index in the proxy."""
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    offsets = np.cumsum([0] + [j.dofs for j in proxy.DEFAULT_JOINTS])
    spherical = [proxy.DEFAULT_JOINTS[names.index(n)].dofs == 3 for n in LIMB_JOINTS]
    dofs = np.concatenate([np.arange(offsets[names.index(n)], offsets[names.index(n) + 1]) for n in LIMB_JOINTS])
    return spherical, dofs, [names.index(n) for n in LIMB_JOINTS]


def limb_dofs(name: str, spherical: list[bool]) -> slice:
    """Where joint ``name``'s DoFs sit in limb-DoF order (caps, torques, yields), given per
    LIMB_JOINTS joint whether it is a ball joint (limb_layout)."""
    i = LIMB_JOINTS.index(name)
    first = sum(3 if sph else 1 for sph in spherical[:i])
    return slice(first, first + (3 if spherical[i] else 1))


def floats(v) -> list:
    """A vector as a list of Python floats (what PyBullet reads fastest)."""
    return v.tolist() if isinstance(v, np.ndarray) else [float(x) for x in v]


def _yielded(rotations: np.ndarray, give: np.ndarray, spherical: list[bool]) -> np.ndarray:
    """Joint rotations turned by ``give`` (rotation vectors in each child frame for ball joints,
    an angle about the hinge's z axis otherwise), stacked in limb-DoF order."""
    out = rotations.copy()
    k = 0
    for i, sph in enumerate(spherical):
        turn = give[k:k + 3] if sph else np.array([0.0, 0.0, give[k]])
        out[i] = quat.multiply(rotations[i], quat.from_rotvec(turn))
        k += 3 if sph else 1
    return out


def axis_angle(q: list) -> tuple[list, float]:
    """Unit rotation axis and angle (radians, 0..pi) of a unit quaternion (x, y, z, w floats)."""
    x, y, z, w = q
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        return [0.0, 0.0, 1.0], 0.0
    k = (1.0 if w >= 0.0 else -1.0) / s
    return [x * k, y * k, z * k], 2.0 * math.atan2(s, abs(w))


def ball_lead(steps: int) -> float:
    """How many of its last moves ahead a ball joint's target is set: a motor that closes BALL_ERP
    of its error per step, ``steps`` steps towards a target that stands still while they run, ends
    a goal moving at a steady rate that many moves behind it (b / (1 - b), b = (1 - BALL_ERP)^steps).

    Why: aimed at the goal itself, the chest, neck and shoulders ran 30 ms behind the source (a
    samba's hands 0.16 m off at the 95th percentile; the hinged elbows, whose motors reach their
    target in one step, on time).  The lead follows the goal's own motion, not the joint's state,
    so it adds nothing a motor's own overshoot would feed on."""
    behind = (1.0 - BALL_ERP) ** steps
    return behind / (1.0 - behind)


def ball_error(current: list, goal: list) -> tuple[list, float]:
    """Axis and angle (axis_angle: the short way round) of current^-1 * goal, quaternions x, y, z, w."""
    cx, cy, cz, cw = current
    tx, ty, tz, tw = goal
    ex = cw * tx - cx * tw - cy * tz + cz * ty
    ey = cw * ty - cy * tw - cz * tx + cx * tz
    ez = cw * tz - cz * tw - cx * ty + cy * tx
    ew = cw * tw + cx * tx + cy * ty + cz * tz
    return axis_angle([ex, ey, ez, ew])


def ahead(previous: list, source: list, target: list, lead: float) -> list:
    """``target`` moved on by ``lead`` times the source's last move (``previous`` to ``source``;
    quaternions x, y, z, w); not at all past BALL_LEAD_MAX radians.  The source's move, not the target's:
    a tired joint's yield (effort.LimbGive) answers the torques it applied and is not led."""
    axis, angle = ball_error(previous, source)
    reach = angle * lead
    if reach > BALL_LEAD_MAX:
        return target
    s, c = math.sin(0.5 * reach), math.cos(0.5 * reach)
    return quat.multiply4(target, [axis[0] * s, axis[1] * s, axis[2] * s, c])


def _within(q: list, limit: float) -> list:
    """``q`` turned back along its own axis to at most ``limit`` radians."""
    axis, angle = axis_angle(q)
    if angle <= limit:
        return q
    sin_half = math.sin(0.5 * limit)
    return [axis[0] * sin_half, axis[1] * sin_half, axis[2] * sin_half, math.cos(0.5 * limit)]


class PassiveStop(NamedTuple):
    """A joint's end of range (see PASSIVE_RANGE)."""
    slot: int                  # index in LIMB_JOINTS
    link: int
    parent: int | None         # parent link (None: the pelvis, which does not move here)
    parent_stop: int | None    # index of the parent's own stop (its rotation turns the torque)
    range: float               # rad from upright
    stiffness: float           # N*m/rad beyond the range
    damping: float             # N*m*s/rad


def passive_stops(link_of: dict, parent: list[int], masses: np.ndarray, centres: np.ndarray,
                  origins: np.ndarray, limb_links: list[int]) -> list[PassiveStop]:
    """The trunk's and neck's ends of range.  The stiffness carries the segment's largest
    gravity moment (all links beyond the joint, held horizontal) after PASSIVE_SAG; the
    damping is PASSIVE_DAMPING times critical for their inertia about the joint.

    The body in its rest pose, per link index: ``parent`` (-1: none), ``masses``, COM ``centres``
    and frame ``origins`` (the joint centres); ``link_of`` maps a joint name to its link,
    ``limb_links`` are the links of LIMB_JOINTS."""
    stops: list[PassiveStop] = []
    for name, limit in PASSIVE_RANGE.items():
        link = link_of[name]
        beyond = [j for j in range(len(parent)) if _descends(j, link, parent)]
        pivot = origins[link]
        held = masses[beyond]
        arms = centres[beyond] - pivot
        mass = float(held.sum())
        arm = float(np.linalg.norm(held @ arms) / mass)
        inertia = float(held @ np.einsum("ij,ij->i", arms, arms))
        stiffness = mass * 9.81 * arm / PASSIVE_SAG
        up = parent[link]
        up_stop = next((i for i, stop in enumerate(stops) if stop.link == up), None)
        if up_stop is None and up in limb_links:
            raise ValueError(f"end of range of {name}: its parent joint needs one too (listed before it)")
        stops.append(PassiveStop(
            slot=LIMB_JOINTS.index(name), link=link, parent=None if up < 0 else up, parent_stop=up_stop,
            range=limit, stiffness=stiffness, damping=PASSIVE_DAMPING * 2.0 * math.sqrt(stiffness * inertia)))
    return stops


def _descends(j: int, link: int, parent: list[int]) -> bool:
    while j >= 0:
        if j == link:
            return True
        j = parent[j]
    return False


class UpperBody:
    """What both engines' upper bodies share: ``step`` turns the SRB's targets, caps and yields into
    per-joint motor goals and force limits within the passive stops; the engine advances them
    (``_advance``).  An engine's class sets, before its first step: ``spherical``, ``dofs``,
    ``joint_slots`` (limb_layout), ``head`` (runtime.body.head.head_load), ``dt``, and the state
    below (``_stops`` from passive_stops)."""

    spherical: list[bool]
    dofs: np.ndarray
    joint_slots: list[int]
    dt: float

    def _start(self) -> None:
        """The motor and stop state at rest (after ``_stops`` is set)."""
        self._last = np.zeros(len(self.dofs))   # torque applied last step, per limb DoF
        self._tired = False
        self._stop_state = [([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0]) for _ in self._stops]
        self._goals = None       # the last step's source poses (ball_lead)

    def close(self) -> None:
        raise NotImplementedError

    def reset(self, root_pos, root_rot, joint_rots) -> None:
        """Pose the upper body like ``joint_rots`` (12 x 4, proxy order), at rest."""
        raise NotImplementedError

    def joint_rotations(self) -> np.ndarray:
        """Current local rotations of the limb joints (len(LIMB_JOINTS) x 4)."""
        raise NotImplementedError

    def step(self, root_pos, root_rot, root_acc, targets, target_vel, caps, duration: float,
             give: np.ndarray | None = None, tired: bool = False) -> np.ndarray:
        """Advance ``duration`` seconds with the pelvis at (root_pos, root_rot) accelerating at
        ``root_acc``; motors track ``targets`` (12 x 4 joint rotations) and ``target_vel`` (12 x 3
        local angular velocities) with per-DoF torque caps
        ``caps`` (limb DoFs, in self.dofs order).  ``give`` (radians per limb DoF, in the joint's
        own axes, like the torques) turns each target that far: how much a tired joint yields to
        its load (see effort.LimbGive).  ``tired`` (fatigue is simulated): the neck carries the
        head as runtime.body.head says (the droop it can hold, the hang range, passive damping).
        Returns the mean applied torque per limb DoF."""
        # Python lists throughout (the same numbers as the per-joint numpy slices, cheaper).
        slots = self.joint_slots
        source_q = np.asarray(targets)[slots]
        target_q = source_q if give is None else _yielded(source_q, give, self.spherical)
        limits = self._stop_limits(source_q.tolist(), tired)
        self._tired = tired
        if tired and give is not None:
            neck, dofs = self._neck, self._neck_dofs
            target_q[neck] = held_droop(source_q[neck], np.asarray(give[dofs]), self._chest_world(root_rot),
                                        self.head, HOLD_SHARE * float(np.min(np.asarray(caps)[dofs])))
        target_q = target_q.tolist()
        for stop, limit in zip(self._stops, limits):   # a tired joint yields up to its stop, not into it
            target_q[stop.slot] = _within(target_q[stop.slot], limit)
        target_w = np.asarray(target_vel)[slots].tolist()
        cap = floats(caps)
        last = self._last.tolist()
        substeps = max(1, int(round(duration / self.dt)))
        lead = ball_lead(substeps)
        sources = source_q.tolist()
        previous = self._goals or sources
        positions, velocities, forces = [], [], []
        k = 0
        for q, w, sph, before, now in zip(target_q, target_w, self.spherical, previous, sources):
            if sph:
                positions.append(ahead(before, now, q, lead))
                velocities.append(w)
                forces.append([self._ball_cap_list(cap[k:k + 3], last[k:k + 3], self._last[k:k + 3])] * 3)
                k += 3
            else:
                positions.append([quat.hinge_angle4(q)])
                velocities.append([w[2]])
                forces.append([cap[k]])
                k += 1
        applied = self._advance(root_pos, root_rot, root_acc, positions, velocities, forces, limits, substeps)
        self._goals = sources
        self._last = np.array(applied) / substeps
        return self._last

    _neck = LIMB_JOINTS.index("neck")

    @cached_property
    def _neck_dofs(self) -> slice:
        """The neck's DoFs in limb-DoF order (caps, torques)."""
        return limb_dofs("neck", self.spherical)

    @cached_property
    def _chest_stop(self) -> int:
        return next(i for i, stop in enumerate(self._stops) if stop.slot == LIMB_JOINTS.index("chest"))

    @cached_property
    def _neck_stop(self) -> int:
        return next(i for i, stop in enumerate(self._stops) if stop.slot == self._neck)

    def _chest_world(self, root_rot) -> np.ndarray:
        """The simulated chest's world rotation now (the pelvis's times the chest joint's)."""
        chest = self._stop_state[self._chest_stop][0]
        return quat.multiply(np.asarray(root_rot, dtype=float), np.asarray(chest, dtype=float))

    def _advance(self, root_pos, root_rot, root_acc, positions: list, velocities: list, forces: list,
                 limits: list[float], substeps: int) -> list[float]:
        """``substeps`` engine steps with the pelvis at (root_pos, root_rot) accelerating at
        ``root_acc``, the motors driving to ``positions`` / ``velocities`` (per joint: a quaternion
        and a local angular velocity, or a hinge angle and rate) within ``forces``; returns the
        torque each motor applied, summed over the substeps, per limb DoF."""
        raise NotImplementedError

    def _stop_limits(self, source_q: list, tired: bool = False) -> list[float]:
        """Each stop's range for this step: the anatomical one, or past a source pose beyond it.
        A ``tired`` neck hangs its head at head.HANG_RANGE, or just past a source pose beyond it."""
        return [max(HANG_RANGE, axis_angle(source_q[stop.slot])[1] + HANG_MARGIN)
                if tired and stop.slot == self._neck else
                max(stop.range, axis_angle(source_q[stop.slot])[1] + PASSIVE_MARGIN) for stop in self._stops]

    @staticmethod
    def _ball_cap(caps: np.ndarray, last: np.ndarray) -> float:
        """One force limit for a ball-joint motor (PyBullet takes a single limit for all three
        axes): the largest torque along the direction the joint is pushing that keeps every
        axis within its own cap (the per-axis box RC_d * tau_max_d, projected on that direction)."""
        norm = float(np.sqrt(last @ last))
        if norm < 1e-6:
            return float(caps.min())
        share = np.abs(last) / norm
        return float(np.min(caps / np.maximum(share, 1e-9)))

    @staticmethod
    def _ball_cap_list(caps: list, last: list, last_array: np.ndarray) -> float:
        """_ball_cap on Python floats (the norm keeps numpy's dot, so the bits are the same)."""
        norm = math.sqrt(last_array.dot(last_array))
        if norm < 1e-6:
            return min(caps)
        return min(c / max(abs(x) / norm, 1e-9) for c, x in zip(caps, last))
