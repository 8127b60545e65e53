"""The feet of the SRB: each step, a foot lifts when the source's does, swings to a Raibert-style
landing spot (shifted by a policy's correction), lands with the source or early when it meets the
floor, and stands on the sole corners near the floor, whose forces the contact QP finds.

Functions on the simulator (runtime.srb.SrbSimulator) through its public state; the Footing they
return is what the QP needs of the feet on the ground.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .effort import smoothstep
from .legs import flatten_foot, stance_leg_rows
from .reference import RefSample
from .rest_steps import CLOSE_SHIFT_TIME, put_down, step_in
from .rotation import quat_matrix

SHORT_LIFT = 0.1           # s: a foot lifted this briefly is not re-placed; twice as long, fully


@dataclass
class Footing:
    """The feet on the ground this step: their sole corners that carry load, their legs' torque
    rows (when torques are needed), (side, first corner, corner count) per foot, and where each
    stands (xy, for the fall check)."""
    corners: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    legs: list = field(default_factory=list)
    ankles_xy: list = field(default_factory=list)
    count: int = 0


@dataclass
class Foot:
    """One foot's state across steps: on the ground or not, and where it stands or swings
    relative to the reference's foot."""
    stance: bool
    offset: np.ndarray            # world shift of this foot from the reference foot
    lift_offset: np.ndarray
    lift_phase: float = 0.0
    land_phase: float = 0.0
    airborne: bool = False        # the swing foot has left the floor (so it can land early)
    early: bool = False           # landed before the reference's contact while the other foot stood
    anchor: np.ndarray | None = None   # where an early-landed foot stands (world ankle)
    catch: tuple | None = None    # being put down to stop: (world ankle at the start, start time)


def place_feet(sim, r: RefSample, phase: float, p_r, v_r, in_flight: bool, root_pos, root_R):
    """Lift, carry and put down each foot; the Footing of the feet on the ground, and the
    phase an early landing jumps the clock to (None: none)."""
    ref, body = sim.ref, sim.body
    jump_to = None
    footing = Footing()
    for k, foot in enumerate(sim.feet):
        ankle_r = r.ankle[k]
        if foot.early:
            if r.contact[k]:     # the reference has caught up: an ordinary stance from here
                foot.early, foot.anchor = False, None
            else:                # stands where it landed while the reference foot still swings
                foot.offset = foot.anchor - ankle_r
        if foot.stance and not r.contact[k] and not (sim.resting or sim.stopping) and not foot.early:
            foot.stance = False
            foot.airborne = False
            foot.lift_offset = foot.offset.copy()
            foot.lift_phase = phase
            foot.land_phase = ref.next_contact_start(k, phase) or (phase + 0.5)
        closing = sim.closing if (sim.resting and sim.closing is not None and sim.closing.foot == k) else None
        if closing is not None and foot.stance and closing.lifted is None \
                and sim.time - closing.began >= CLOSE_SHIFT_TIME:
            foot.stance, foot.early, foot.anchor = False, False, None
            closing.lifted = (np.array([*(ankle_r + foot.offset)[:2], ref.floor - body.sole_drop]), sim.time)
        if closing is not None and not foot.stance:
            step_in(sim, closing, foot, r, ankle_r)
        elif not foot.stance and sim.stopping:
            put_down(sim, k, foot, r, ankle_r, p_r)
        elif not foot.stance:
            jump_to = swing(sim, k, foot, r, phase, ankle_r, p_r, v_r, in_flight, jump_to)
        if foot.stance:
            stand(sim, k, foot, r, ankle_r, root_pos, root_R, footing)
    return footing, jump_to


def swing(sim, k: int, foot: Foot, r: RefSample, phase: float, ankle_r, p_r, v_r, in_flight: bool,
           jump_to: float | None) -> float | None:
    """Carry a free foot towards its Raibert-corrected landing spot; land it when the
    reference does, or early when it meets the floor.  Returns the (updated) phase an early
    landing from a flight jumps to."""
    ref, s, body = sim.ref, sim.s, sim.body
    contact_r = r.contact
    target = np.zeros(3)
    target[:2] = (sim.shift[:2] + sim.lag[:2] + s.raibert_kp * (sim.p[:2] - p_r[:2])
                  + s.raibert_kv * (sim.v[:2] - v_r[:2]))
    if sim.controller is not None:
        target[:2] += sim.landing_adjust[k]
    span = max(foot.land_phase - foot.lift_phase, 1e-6)
    # A foot lifted only for a moment (a tap, a shuffle, a flicker in the source's
    # contacts) is not a step: it comes down where it was, not at a corrected spot.
    placed = min(max((span - SHORT_LIFT) / SHORT_LIFT, 0.0), 1.0)
    if placed < 1.0:
        target = foot.lift_offset + placed * (target - foot.lift_offset)
    blend = smoothstep((phase - foot.lift_phase) / span)
    foot.offset = (1 - blend) * foot.lift_offset + blend * target
    # In the air the foot keeps its height relative to the body, not to the world.
    sole_z = ankle_r[2] + (sim.p[2] - p_r[2]) + body.sole_drop
    touches = sole_z <= ref.floor + sim.contact_height
    foot.airborne = foot.airborne or sole_z > ref.floor + 2.0 * sim.contact_height
    if contact_r[k] or (touches and foot.airborne and sim.v[2] < 0 and
                        foot.land_phase - phase < s.early_landing_window):
        foot.stance = True
        if contact_r[k] and in_flight and sim.flight_sped:
            # A flight played faster (see tempo.flight_rate) lands with the source: from
            # where the body came down, like an early landing.
            jump_to = max(jump_to or 0.0, phase)
        if not contact_r[k]:
            if not in_flight and any(f.stance for f in sim.feet if f is not foot):
                # A swing foot meeting the floor early while the other foot stands
                # (a sagging body): it stands there and the clock runs on.  Skipping
                # the reference ahead here would speed the whole motion up.
                foot.early = True
                foot.anchor = ankle_r + foot.offset
                foot.anchor[2] = ankle_r[2] + (sim.p[2] - p_r[2])
                foot.offset = foot.anchor - ankle_r
            else:
                # Landing from a flight early (a lower, shorter jump): the motion
                # goes on from the reference's landing.
                jump_to = max(jump_to or 0.0, foot.land_phase)
    return jump_to


def stand(sim, k: int, foot: Foot, r: RefSample, ankle_r, root_pos, root_R, footing: "Footing") -> None:
    """Add a standing foot to ``footing``: its sole corners near the floor (the two lowest if
    none), and its leg's torque rows when torques are needed."""
    ref, body = sim.ref, sim.body
    foot_R = quat_matrix(r.foot_rot[k])
    ankle = ankle_r + foot.offset
    if sim.resting:  # a resting foot is flat on the floor
        foot_R = flatten_foot(foot_R)
        ankle = np.array([ankle[0], ankle[1], ref.floor - body.sole_drop])
    corners = ankle + body.sole @ foot_R.T
    heights = (corners[:, 2] - ref.floor).tolist()
    keep = [i for i, z in enumerate(heights) if z < sim.contact_height]
    if not keep:   # none near the floor: the two lowest corners
        zs = corners[:, 2].tolist()
        second = sorted(zs)[1]
        keep = [i for i, z in enumerate(zs) if z <= second]
    if len(keep) < len(heights):
        corners = corners[keep]
    corners[:, 2] = ref.floor
    if sim.fatigue is not None or sim.need_torques:
        footing.rows.append(stance_leg_rows(body, k, root_pos, root_R, ankle, foot_R, corners))
    footing.legs.append((k, footing.count, len(corners)))
    footing.corners.append(corners)
    footing.ankles_xy.append(ankle[:2])
    footing.count += len(corners)
