"""SRB mode's rests: when the body rests (decide_rest, the tempo rule on the legs), where a
resting body stands, a halt's catching foot and a rest's closing step.

Each function reads the simulator (runtime.srb.simulator.SrbSimulator) through its public state (centre of
mass, orientation, feet, clock, fatigue, rest bookkeeping; Standing names it) and moves the foot it is given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..maths.ease import smoothstep
from ..fatigue.contract import Simulator
from ..fatigue.tempo import LAUNCH_FLIGHT, LAUNCH_LEAD, relative_effort, TempoRule, weakest_loaded
from ..maths.rotation import quat_matrix
from ..reference.legs import flatten_foot, stance_leg_rows
from ..reference.reference import RefSample
from ..reference.rigid_body import GRAVITY, kin_scale

REST_ANKLE_EFFORT = 0.5  # a resting body stands no further ahead of its ankles than costs them this share of what they have left
REST_LEG_EXTENSION = 0.995   # hip-ankle distance over leg length while resting (~10 deg knee)
CATCH_TIME = 0.25        # s: a foot put down to stop takes this long to reach the floor
CATCH_REACH = 0.5        # m (1.62 m body): ... and lands at most this far from under its hip
CLOSE_SPREAD = 0.15      # m (1.62 m body): a resting foot further than this from beside the other steps in
CLOSE_SETTLE = 0.5       # s: ... once the body has rested this long ...
CLOSE_STILL = 0.1        # m/s (1.62 m body): ... and its centre of mass moves slower than this ...
CLOSE_EFFORT = 0.8       # ... onto a leg that stands alone on at most this share of what each of its joints has left
CLOSE_SHIFT_TIME = 0.4   # s: the weight goes onto the staying foot (and back between both feet after)
CLOSE_STEP_TIME = 0.5    # s: the closing step itself
CLOSE_COST = 2.0 * CLOSE_SHIFT_TIME + CLOSE_STEP_TIME   # s a closing step takes: only where the rest has that long left
CLOSE_STEP_LIFT = 0.05   # m (1.62 m body): how high the stepping foot clears the floor

REST_WAIT = 1.0          # s a tired body waits for a restful moment before resting where it can ...
REST_CROUCH = 0.85       # ... with its centre of mass at least this share of its standing height up
CARRY_SINKING = 0.04     # m (1.62 m body): a body this far below its target on its feet (smoothed) ...
CARRY_SMOOTHING = 0.5    # s: ... over about this long, is not carried by its legs: it rests
CARRY_RISE = 0.3         # m/s (1.62 m body): ... not counting while its target rises faster than this

KNEEL_RC = 0.45          # a rest with the legs below this that standing cannot recover is taken on the knees ...
KNEEL_DOWN_S = 1.5       # ... getting down onto them over this long (runtime.floor.kneel) ...
KNEEL_UP_S = 1.8         # ... and back up into the source's pose over this long
KNEEL_HOLD_S = 1.0       # s: the shortest kneel worth getting down for, when judging whether one still fits
COLLAPSE_HEIGHT = 0.75   # a body on its feet with its centre of mass below this share of its standing height ...
COLLAPSE_SPEED = 0.5     # m/s (1.62 m body): ... dropping faster than this, below its target, ...
COLLAPSE_STOP = 0.55     # ... and not stopping above this share (the fall is at 0.45) goes down on its knees
STANDING_LOAD = 0.05     # share of their strength the leg joints hold standing at rest


@dataclass
class ClosingStep:
    """A rest's closing step (see plan_closing_step): the foot that steps in, where
    it lands (world ankle), and how far it has got."""
    foot: int
    anchor: np.ndarray
    began: float                  # s: the weight started onto the staying foot
    start_xy: np.ndarray          # where the centre of mass stood then
    lifted: tuple | None = None   # (world ankle at the lift, time)
    landed: float | None = None   # s: the foot came down beside the other

    def settled(self, time: float) -> bool:
        """The body has moved back between both feet (CLOSE_SHIFT_TIME after the landing)."""
        return self.landed is not None and time - self.landed >= CLOSE_SHIFT_TIME


class Standing(Simulator, Protocol):
    """The SRB's state its helpers read and move (here, runtime.srb.feet, and the corrections of
    runtime.srb.policy and runtime.srb.residual): what runtime.srb.simulator.SrbSimulator owes
    them beyond the Simulator contract."""

    s: "SrbSettings"                 # runtime.srb.simulator's settings (it imports this module)
    rule: TempoRule
    p: np.ndarray                    # centre of mass
    v: np.ndarray
    acc: np.ndarray                  # the last step's acceleration (contact forces and gravity)
    q: np.ndarray                    # orientation (x, y, z, w)
    p_target: np.ndarray             # the step's COM target
    v_target: np.ndarray
    feet: list["Foot"]               # runtime.srb.feet's (it imports this module)
    leg_dofs: np.ndarray
    upper_dofs: np.ndarray
    resting: bool
    sag: float
    sinking: float
    sinking_blend: float
    shift: np.ndarray
    contact_height: float
    feet_roll: bool
    flight_sped: bool
    tempo: float                     # the tempo rule's phase rate while moving
    # corrections of the rule (runtime.srb.policy, runtime.srb.residual; zero or the rule's own without one)
    controller: object | None
    control_every: int
    landing_adjust: np.ndarray
    velocity_adjust: np.ndarray
    tempo_adjust: float
    lean_adjust: float
    height_adjust: float
    rule_settings: "SrbSettings"
    # rest bookkeeping
    rest_wanted: float | None
    rest_due: bool
    rest_began: float
    gathered_for: float | None
    stopping: bool
    stopped: bool
    closing: ClosingStep | None
    closed: bool
    can_kneel: bool
    kneel_wanted: bool

    def continue_from_here(self, r: RefSample) -> None:
        """Go on with the source from where the body stands now."""
        ...

    def com_target(self, r: RefSample) -> np.ndarray:
        """Where the centre of mass should be at reference sample ``r``."""
        ...

    def rule_velocity(self, r: RefSample, rate: float) -> np.ndarray:
        """The COM velocity the rule aims for at ``r`` played at ``rate``."""
        ...


def put_down(sim: Standing, k: int, foot: "Foot", r: "RefSample", ankle_r: np.ndarray, p_r: np.ndarray) -> None:
    """Move the free foot of a stopping body to the floor over CATCH_TIME, towards its hip
    moved by the capture point's lead (where the body would come to rest, x + v / omega;
    followed as the body moves), so the body stops between its feet.  On the floor it stands
    there (an early landing) and the rest begins."""
    body, ref = sim.body, sim.ref
    lift = np.array([0.0, 0.0, sim.p[2] - p_r[2]])       # a swing foot moves with the body's height
    if foot.catch is None:
        foot.catch = (ankle_r + foot.offset + lift, sim.time)
    start, began = foot.catch
    R = quat_matrix(sim.q)
    root_R = R @ quat_matrix(r.root_rel)
    hip = sim.p + R @ r.root_offset + root_R @ body.hip[k]
    height = max(sim.p[2] - ref.floor, 0.3 * kin_scale(body))
    lead = sim.v[:2] * math.sqrt(height / 9.81)
    reach = CATCH_REACH * kin_scale(body)
    norm = math.sqrt(lead @ lead)
    if norm > reach:
        lead = lead * (reach / norm)
    anchor = np.array([hip[0] + lead[0], hip[1] + lead[1], ref.floor - body.sole_drop])
    if not carry_foot(sim, foot, start, anchor, began, CATCH_TIME, ankle_r, lift):
        return
    foot.stance, foot.early, foot.anchor, foot.catch = True, True, anchor, None
    foot.offset = anchor - ankle_r


def carry_foot(sim: Standing, foot: "Foot", start: np.ndarray, anchor: np.ndarray, began: float, duration: float,
                ankle_r: np.ndarray, lift: np.ndarray, clearance: float = 0.0) -> bool:
    """Carry a free foot from world ankle ``start`` to ``anchor`` over ``duration`` from
    ``began`` (smoothstep, ``clearance`` above the straight line at mid-way); True once
    there, until then its offset is set.  ``lift``: how far the body's height lifts a swing
    foot's recorded ankle (see pose), taken off so the foot goes where it is carried."""
    u = min((sim.time + sim.dt - began) / duration, 1.0)
    if u >= 1.0:
        return True
    at = start + smoothstep(u) * (anchor - start)
    if clearance:
        at[2] += clearance * math.sin(math.pi * u)
    foot.offset = at - ankle_r - lift
    return False


def plan_closing_step(sim: Standing, r: "RefSample") -> "ClosingStep | None":
    """Once a rest has settled (CLOSE_SETTLE, the body nearly still), a foot further than
    CLOSE_SPREAD from its place beside the other (hip width apart, as the hips are) steps
    in, if the other leg can stand alone.  The one further from the centre of mass (carrying
    less) steps; the weight goes onto the other over CLOSE_SHIFT_TIME, the foot lifts, lands
    beside it over CLOSE_STEP_TIME, and the body settles between both feet.

    Why: a rest begins wherever both feet happen to be down, a tired walk's mid-stride (feet
    0.4-0.6 m apart along the way), a dance's straddle (0.5-1.2 m across); standing there
    for seconds with the hips between the feet looks like a freeze-frame, not a pause, and
    costs the hips more than standing with the feet together."""
    body = sim.body
    ankles = r.ankle + np.array([f.offset for f in sim.feet])
    far = [float(np.linalg.norm(ankles[k, :2] - sim.p[:2])) for k in range(2)]
    k = 0 if far[0] > far[1] else 1
    stay = 1 - k
    root_R = quat_matrix(sim.q) @ quat_matrix(r.root_rel)
    beside = root_R @ (body.hip[k] - body.hip[stay])
    anchor = np.array([ankles[stay, 0] + beside[0], ankles[stay, 1] + beside[1], sim.ref.floor - body.sole_drop])
    if float(np.linalg.norm(anchor[:2] - ankles[k, :2])) <= CLOSE_SPREAD * kin_scale(body):
        return None
    over = rest_points(sim, r, carried=1.0)[stay]
    height = rest_height(sim, r, over)     # where the stepping foot lifts (still reachable from it)
    if sim.fatigue is not None:
        # Only onto a leg that can stand alone: body weight over its sole takes at most
        # CLOSE_EFFORT of what each of its joints has left (else it rests where it is).
        root_pos = np.array([over[0], over[1], height]) + quat_matrix(sim.q) @ r.root_offset
        ankle = ankles[stay].copy()
        ankle[2] = sim.ref.floor - body.sole_drop
        rows = stance_leg_rows(body, stay, root_pos, root_R, ankle, flatten_foot(quat_matrix(r.foot_rot[stay])),
                               np.array([[over[0], over[1], sim.ref.floor]]))
        load = np.abs(rows @ np.array([0.0, 0.0, body.mass * -GRAVITY[2]]))
        dofs = body.leg_dofs[stay]
        holds = sim.fatigue.model.residual_capacity[dofs] * body.tau_max[dofs]
        if np.any(load > CLOSE_EFFORT * holds):
            return None
    return ClosingStep(k, anchor, sim.time, sim.p[:2].copy())


def closing_target(sim: Standing, r: "RefSample", settled: np.ndarray) -> np.ndarray:
    """The resting centre-of-mass target during a closing step: onto the staying foot, held
    there while the other steps, then back between both feet (``settled``) until it is."""
    c = sim.closing
    over = rest_points(sim, r, carried=1.0)[1 - c.foot]
    # As high as both legs reach from where the feet are: rising as the stepping foot comes in.
    on_foot = np.array([over[0], over[1], rest_height(sim, r, over)])
    if c.landed is None:
        u = smoothstep((sim.time - c.began) / CLOSE_SHIFT_TIME)
        start = np.array([c.start_xy[0], c.start_xy[1], on_foot[2]])
        return start + u * (on_foot - start)
    return on_foot + smoothstep((sim.time - c.landed) / CLOSE_SHIFT_TIME) * (settled - on_foot)


def step_in(sim: Standing, c: "ClosingStep", foot: "Foot", r: "RefSample", ankle_r: np.ndarray) -> None:
    """Move the stepping foot of a closing step: flat, clearing the floor by CLOSE_STEP_LIFT
    at mid-step, down beside the other over CLOSE_STEP_TIME; there it stands and the body
    settles."""
    start, lifted_at = c.lifted
    lift = np.array([0.0, 0.0, sim.p[2] - (r.com[2] - sim.sag)])
    if not carry_foot(sim, foot, start, c.anchor, lifted_at, CLOSE_STEP_TIME, ankle_r, lift,
                            CLOSE_STEP_LIFT * kin_scale(sim.body)):
        return
    # An ordinary stance foot from here, moved beside the other: after the rest it stands
    # at the source's ankle height for the source's foot (flat on the floor while resting).
    foot.stance, foot.early, foot.anchor = True, False, None
    foot.offset = np.array([c.anchor[0] - ankle_r[0], c.anchor[1] - ankle_r[1], 0.0])
    c.landed = sim.time


def rest_centre(sim: Standing, r: "RefSample") -> np.ndarray:
    """Where a resting body stands: over the middle of its soles, or nearer its ankles where
    they are too weak to hold it that far ahead of them.

    Why: over the sole centre (4-5 cm ahead of the ankles, as in quiet standing) each ankle
    holds half the body weight on that lever, about 11 % of its strength: more than an
    exhausted ankle sustains (the published 3CC holds about 2 % indefinitely at fitness 0),
    so an exhausted idle drained its ankles and collapsed.  Standing further back costs the
    ankles less (at most REST_ANKLE_EFFORT of what they have left), the sole still under
    the body."""
    return np.mean(rest_points(sim, r), axis=0)


def rest_points(sim: Standing, r: "RefSample", carried: float = 0.5) -> list[np.ndarray]:
    """Per foot, the point over its sole a resting body stands over (see rest_centre) when
    that foot carries the ``carried`` share of its weight."""
    body = sim.body
    points = []
    for k in range(2):
        lever = quat_matrix(r.foot_rot[k]) @ body.sole_centre
        ahead = math.sqrt(lever[0] * lever[0] + lever[1] * lever[1])
        share = 1.0
        if sim.fatigue is not None and ahead > 1e-9:
            dofs = body.leg_dofs[k, 4:]
            holds = float((sim.fatigue.model.residual_capacity[dofs] * body.tau_max[dofs]).min())
            share = min(1.0, REST_ANKLE_EFFORT * holds / (carried * body.mass * -GRAVITY[2] * ahead))
        points.append(r.ankle[k] + sim.feet[k].offset + np.array([share * lever[0], share * lever[1], lever[2]]))
    return points


def rest_height(sim: Standing, r: "RefSample", centre: np.ndarray) -> float:
    """Centre-of-mass height of a rest over ``centre``: each hip as high as a nearly straight
    leg (REST_LEG_EXTENSION) reaches from its foot on the floor, the lower of the two.

    Why: a rest is where standing costs the knees least, but the feet stay where the motion
    left them, often a stride apart.  Hips set for vertical legs were out of reach of feet
    0.3 m ahead and behind them: the legs could not get there and the feet floated 3-5 cm
    above the floor through the whole rest."""
    body, ref = sim.body, sim.ref
    R = quat_matrix(sim.q)
    root_R = R @ quat_matrix(r.root_rel)
    root = centre + R @ r.root_offset              # root position at the rest's centre (xy)
    reach = REST_LEG_EXTENSION * (body.thigh + body.shin)
    sole_level = ref.floor - body.sole_drop
    height = math.inf
    for k in range(2):
        hip = root_R @ body.hip[k]
        ankle = r.ankle[k] + sim.feet[k].offset
        d = root[:2] + hip[:2] - ankle[:2]
        rise = math.sqrt(max(reach * reach - float(d @ d), (0.5 * reach) ** 2))
        height = min(height, sole_level + rise - hip[2] - (root[2] - centre[2]))
    return height


def standing_recovery(sim: Standing) -> float:
    """The most the legs can recover to resting on their feet: the 3CC's residual capacity where
    recovery balances fatigue under STANDING_LOAD, over the leg DoFs (ThreeCompartmentModel.held_capacity)."""
    return float(sim.fatigue.model.held_capacity(STANDING_LOAD)[sim.leg_dofs].min())


def wants_to_kneel(sim: Standing, reason: str | None, legs_rc: float, ended: bool) -> bool:
    """A resting body goes down on its knees (runtime.floor.kneel, where the simulator can) as the
    last resort: its legs are below KNEEL_RC and could not get back to resume_rc on their feet
    (standing_recovery), or they are below exhausted_rc and cannot hold even a rest; and a kneel
    still fits the performance's time (see tempo.TempoRule.performance_goes_on).  Not while a
    closing step is under way, nor after the source has ended (the take ends on the source's last
    pose).

    Why: legs that give out where they stand fall; a body whose standing load is past its
    endurance limit (runtime.fatigue.model) does not recover on its feet."""
    if not sim.can_kneel or sim.closing is not None:         # (decide_rest runs only under fatigue)
        return False
    if reason not in (None, "recovery stalled"):
        return False
    # A stalled rest alone is no reason: a directed take recovers as slowly as it was asked to
    # tire (runtime.fatigue.direction), and its dances knelt where their legs still stood.
    weak = legs_rc < KNEEL_RC and standing_recovery(sim) < sim.s.resume_rc
    if not (weak or legs_rc < sim.s.exhausted_rc):
        return False
    cost = KNEEL_DOWN_S + KNEEL_HOLD_S + KNEEL_UP_S
    return not ended and not sim.rule.performance_goes_on(sim.phase, sim.time + cost)


def collapsing(sim: Standing) -> bool:
    """The legs no longer hold the body and it is going down: on its feet, its centre of mass
    low (COLLAPSE_HEIGHT), below where it should be and dropping (COLLAPSE_SPEED), and at the
    upward acceleration its legs give it now it would not stop above COLLAPSE_STOP.

    Why: an exhausted lunge whose stance leg gave way dropped a third of its height in 0.3 s,
    and legs at half their capacity could not stop it in the crouch it landed in: it fell.  A
    person whose legs give way catches themselves on their knees.  A tired kick that sinks deeper
    than its source but is being stopped is not a collapse, nor a landing (reference.ballistic):
    its legs take a few frames to brake, and they do."""
    scale = kin_scale(sim.body)
    height = sim.p[2] - sim.ref.floor
    falling = sim.v[2]
    landing = bool(sim.ref.ballistic[sim.ref.frame(sim.phase)]) and not sim.resting
    if (not any(f.stance for f in sim.feet) or landing or falling > -COLLAPSE_SPEED * scale
            or height > COLLAPSE_HEIGHT * sim.ref.standing_com
            or sim.p_target[2] - sim.p[2] < CARRY_SINKING * scale):
        return False
    braking = float(sim.acc[2])
    if braking <= 0.0:
        return True
    return height - falling * falling / (2.0 * braking) < COLLAPSE_STOP * sim.ref.standing_com


def _begin_rest(sim: Standing, capacity: float, until_recovered: bool, giving_out: bool) -> None:
    """A rest begins where the body stands (tempo.TempoRule.begin_rest): a halt under way becomes
    the rest it stopped for, and no closing step is planned yet."""
    sim.stopped, sim.rest_due, sim.stopping = sim.stopping, False, False
    sim.rule.begin_rest(capacity, sim.time, until_recovered=until_recovered, giving_out=giving_out)
    sim.closing, sim.closed, sim.rest_began = None, False, sim.time


def decide_rest(sim: Standing) -> None:
    """SRB mode's tempo and rests, after each step (tempo.TempoRule): slow down as the weakest
    loaded joint tires; rest when the motion asks the legs for more than they have (where a
    person would, or a closing step first) and a rest still fits, resume when the legs could
    carry the motion again or recovery has stalled."""
    if sim.fatigue is None:
        return
    s, rule = sim.s, sim.rule
    dofs = sim.leg_dofs
    if sim.v_target[2] < CARRY_RISE * kin_scale(sim.body):
        # (A take-off the tired legs push less high is fatigue showing, not legs giving way.)
        below = (sim.p_target[2] - sim.p[2]) if any(f.stance for f in sim.feet) and not sim.resting else 0.0
        sim.sinking += (below - sim.sinking) * sim.sinking_blend
    rc = sim.fatigue.model.residual_capacity[dofs]
    load = sim.load_avg[dofs]
    rc_eff = weakest_loaded(rc, load)
    # After the source motion's end there is nothing to carry on with: a rest there lasts
    # until the legs have recovered (the keyed end pose may cost more than standing easy).
    ended = sim.phase >= sim.ref.duration - 1e-9
    if sim.resting and sim.closing is not None:
        return                      # a closing step finishes (and settles) before anything else
    if sim.can_kneel and not ended and collapsing(sim):
        # The last resort before a fall, whatever the rest rule would say: down on the knees.
        if not sim.resting:
            _begin_rest(sim, float(rc.min()), until_recovered=False, giving_out=True)
        sim.kneel_wanted = True
        return
    if (sim.resting and sim.closing is None and not sim.closed
            and sim.time - sim.rest_began >= CLOSE_SETTLE
            and float(sim.v @ sim.v) < (CLOSE_STILL * kin_scale(sim.body)) ** 2
            and not rule.performance_goes_on(sim.phase, sim.time + CLOSE_COST)):
        sim.closing = plan_closing_step(sim, sim.ref.sample(sim.phase))
        if sim.closing is not None:
            sim.closed = True
            return
    if sim.resting:
        reason = rule.rest_over(float(rc.min()), ended, sim.time, sim.phase)
        if wants_to_kneel(sim, reason, float(rc.min()), ended):
            sim.kneel_wanted = True
            return
        if reason is not None:
            rule.end_rest(reason, sim.time, sim.phase)
            sim.closing = None
            if sim.stopped:       # a rest it stopped for: go on from where it stands
                sim.continue_from_here(sim.ref.sample(sim.phase))
        return
    # The tempo follows the weakest loaded joint of the whole body, rests the legs: tired arms
    # punch slower and a tired neck and trunk dance slower (at the legs' tempo a tired dancer's
    # neck whipped 21 degrees in a frame), but a walk does not stop for its arms.
    upper = sim.upper_dofs
    held = weakest_loaded(sim.fatigue.model.residual_capacity[upper], sim.load_avg[upper], rc_eff)
    rule.pace(min(rc_eff, held), relative_effort(load, rc), sim.phase, sim.time, sim.dt)
    # Rest where a person would: both feet down, upright, hips over the feet (until then the
    # motion goes on at the slowest tempo); exhausted, anywhere both feet are down, since a
    # motion that never offers such a moment would otherwise carry the body until it falls.
    # And one that has waited REST_WAIT for such a moment takes the next one both feet are
    # down: a dance with no restful moment carried the tired body until a knee gave way.
    # Legs that no longer hold the body up (it stays below its target on its feet, an
    # exhausted run sinking stride by stride) cannot carry the motion, whatever capacity
    # they show: that needs a rest too.
    failing = sim.sinking > CARRY_SINKING * kin_scale(sim.body)
    exhausted = failing or rc_eff < s.exhausted_rc
    cannot = failing or rule.cannot_go_on(rc_eff)
    if not cannot:
        sim.rest_wanted = None
    elif sim.rest_wanted is None:
        sim.rest_wanted = sim.time
    waited = sim.rest_wanted is not None and sim.time - sim.rest_wanted >= REST_WAIT
    allowed = rule.may_rest(sim.phase, ended, sim.time, giving_out=exhausted)
    sim.rest_due = cannot and (exhausted or waited) and allowed
    frame = sim.ref.frame(sim.phase)
    planted = all(f.stance for f in sim.feet)
    # (Not with the body itself in a deep crouch, though, unless exhausted: legs that cannot go
    # on cannot rise from it either, and a tired jump that rested there sank to the floor.)
    tall = sim.p[2] - sim.ref.floor >= REST_CROUCH * sim.ref.standing_com
    restful = exhausted or (tall and (waited or bool(sim.ref.restful[frame])))
    # Legs this tired and working this hard before a jump (LAUNCH_FLIGHT) stand and gather first (once per
    # take-off): a push-off asks for more than the legs' average load shows, and a tired jump
    # that went on crouched, sank and fell.
    takeoff = sim.ref.next_takeoff(sim.phase, LAUNCH_LEAD, LAUNCH_FLIGHT)
    gather = (takeoff is not None and takeoff != sim.gathered_for and rc_eff < s.resume_rc
              and rule.effort >= s.resume_effort and tall and bool(sim.ref.restful[frame])
              and planted and allowed)
    if gather:
        sim.gathered_for = takeoff
    # Standing still, tired legs stand easy whenever they can: the still source plays on, so it
    # costs the performance nothing (an exhausted idle that waited until its legs could not go
    # on collapsed).
    easy = bool(sim.ref.still[frame]) and rc_eff < s.rest_rc and tall
    unneeded = gather or easy
    if (unneeded or cannot) and planted and (unneeded or restful) and allowed:
        _begin_rest(sim, float(rc.min()), until_recovered=unneeded, giving_out=failing)
    elif sim.stopping and planted:
        sim.stopping = False       # down on both feet and no longer due a rest: carry on
