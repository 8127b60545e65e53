"""The feet of the SRB: each step, a foot lifts when the source's does, swings to a Raibert-style
landing spot (shifted by a policy's correction), lands with the source or early when it meets the
floor, and stands on the sole corners near the floor, whose forces the contact QP finds.

Functions on the simulator (runtime.srb.simulator.SrbSimulator) through its public state; the Footing they
return is what the QP needs of the feet on the ground.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..maths.ease import smoothstep
from ..maths.rotation import quat_matrix
from ..reference.balance import cart_table_cop
from ..reference.legs import flatten_foot, stance_leg_rows
from ..reference.reference import RefSample
from ..reference.rigid_body import kin_scale
from ..reference.support import inside_support
from .rest_steps import CLOSE_SHIFT_TIME, put_down, Standing, step_in

PRESSURE_MARGIN = 0.02     # m (1.62 m body): how far inside its bearing corners one foot's centre of pressure sits
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
    stances: list = field(default_factory=list)    # stance_leg_rows' arguments per foot, for leg_rows

    def leg_rows(self, body) -> list:
        """The legs' torque rows per foot: ``rows`` where torques are needed this step, else made
        now and not booked (a fresh take needs them only on the steps whose forces must stay
        within strength; its leg torques stay unrecorded on every step alike)."""
        if len(self.rows) == len(self.legs):
            return self.rows
        return [stance_leg_rows(body, *stance) for stance in self.stances]


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


def place_feet(sim: Standing, r: RefSample, phase: float, p_r, v_r, in_flight: bool, root_pos, root_R):
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


def swing(sim: Standing, k: int, foot: Foot, r: RefSample, phase: float, ankle_r, p_r, v_r, in_flight: bool,
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


def stand(sim: Standing, k: int, foot: Foot, r: RefSample, ankle_r, root_pos, root_R, footing: "Footing") -> None:
    """Add a standing foot to ``footing``: the sole corners that bear its load (bearing_corners),
    and its leg's torque rows when torques are needed."""
    ref, body = sim.ref, sim.body
    foot_R = quat_matrix(r.foot_rot[k])
    ankle = ankle_r + foot.offset
    if sim.resting:  # a resting foot is flat on the floor
        foot_R = flatten_foot(foot_R)
        ankle = np.array([ankle[0], ankle[1], ref.floor - body.sole_drop])
    pressure = None
    if sim.feet_roll and sum(f.stance for f in sim.feet) == 1 and ref.balancing(sim.phase, k):
        pressure = pressure_centre(r, ref.floor)
        if pressure is not None:
            pressure = pressure - ankle_r[:2] + ankle[:2]
    corners = bearing_corners(ankle, foot_R, body.sole, ref.floor, sim.contact_height, pressure,
                              PRESSURE_MARGIN * kin_scale(body))
    footing.stances.append((k, root_pos, root_R, ankle, foot_R, corners))
    if sim.fatigue is not None or sim.need_torques:
        footing.rows.append(stance_leg_rows(body, k, root_pos, root_R, ankle, foot_R, corners))
    footing.legs.append((k, footing.count, len(corners)))
    footing.corners.append(corners)
    footing.ankles_xy.append(ankle[:2])
    footing.count += len(corners)


def pressure_centre(r: RefSample, floor: float):
    """Where the source's weight and inertia meet the floor (its zero-moment point, xy), or None
    in a fall or a flight (nothing pushes on the floor)."""
    cop, _ = cart_table_cop(r.com, r.com_acc, floor, 0.1)
    return None if np.isnan(cop[0]) else cop


def bearing_corners(ankle, foot_R, sole, floor: float, contact_height: float, pressure, margin: float):
    """The sole corners (on the floor) that carry a standing foot's load.

    The corners near the floor, as the pose holds the foot (the two lowest if none is).  With
    one foot down (``pressure``: the source's centre of pressure, xy) the foot rolls under its
    load instead: while that lies on the sole (within ``margin`` of it) but not ``margin`` inside
    the corners near the floor, the next lowest corners bear too, up to the whole sole, flat; a
    foot held above the floor bears flat on its whole sole.  Why: balance on one foot is moving
    the centre of pressure about under the body, which an edge or a corner cannot do, and a
    foot's pose in capture (no toe bones, a floor that drifts) is off by a few degrees and
    centimetres: one-legged stances put on a heel, or on one corner of the toes, fell off a
    support their source never had."""
    corners = ankle + sole @ foot_R.T
    heights = corners[:, 2] - floor
    order = sorted(range(len(corners)), key=lambda i: heights[i])
    near = [i for i in order if heights[i] < contact_height]
    chosen = near or order[:2]
    if pressure is not None:
        flat = ankle + sole @ flatten_foot(foot_R).T
        if not near:
            chosen = order
        elif len(near) < len(order) and inside_support(pressure, flat[:, :2]) >= -margin:
            for n in range(max(len(near), 3), len(order) + 1):
                if n == len(order) or inside_support(pressure, corners[order[:n], :2]) >= margin:
                    chosen = order[:n]
                    break
        if len(chosen) == len(order) > len(near):
            corners = flat                # rolled onto the whole sole, or held above the floor: flat
    bearing = corners[sorted(chosen)]
    bearing[:, 2] = floor
    return bearing
