"""SRB mode: the character as one rigid body on fatigue-limited legs (seed: "Adaptive Tracking of
a Single-Rigid-Body Character").

Why: a full articulated humanoid without a learned controller cannot keep its balance; a single
rigid body (the proxy's mass and rest-pose composite inertia) with foot contacts can, because
a small QP finds the contact forces that best realise the desired centroidal acceleration.

Fatigue acts physically: the contact forces map to hip, knee and ankle torques through the
legs' geometry at the current pose (the moment of each corner force about each joint: the
Jacobian transpose for a point force), those torques drive the leg DoFs' 3CC models, and the
fatigued bounds |tau_d| <= RC_d * tau_max_d are linear constraints on the forces in the QP.  A
tired leg cannot push as hard: take-off is weaker, jumps are lower, the body sinks.

Feet follow the reference shifted by a per-foot offset that is constant in stance and blends,
during swing, to a Raibert-style landing correction; a foot that reaches the floor early lands
early (the reference phase skips ahead).  Tempo: the reference phase rate drops as the legs'
residual capacity drops (on the ground only: flights are ballistic), and the character rests
(phase frozen) until it recovers.

This module is the simulator itself: its settings, its state and ``step`` as named phases in the
order they run.  Each phase's rule lives in its own module (docs/architecture.md): the clock in
tempo, the feet in feet, the contact forces in contact_qp, the legs in legs, the effort economy in
effort, the rests in rest_steps, the recorded pose in pose_output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..fatigue.effort import KneeSag, lean_trunk, leg_effort, LimbGive, tired_lean, yielding_strength
from ..fatigue.params import DEFAULT_EFFORT_ECONOMY
from ..fatigue.tempo import catch_up_pace, flight_rate, single_support_rate, TempoRule, weakest_loaded
from ..maths import quat
from ..maths.rotation import cross, cross_rows, matrix_to_quat, quat_matrix
from ..motion.take import Event
from ..reference.pose_output import SimState
from ..reference.reference import Reference, RefSample
from ..reference.rest_posture import RestPosture, hinged
from ..reference.rigid_body import Body, GRAVITY, kin_scale, SIDES
from .contact_qp import QpSettings, solve_contact_forces
from .feet import Foot, Footing, place_feet
from .rest_steps import CARRY_SMOOTHING, closing_target, ClosingStep, decide_rest, rest_centre, rest_height, Standing

_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


LANDING_TURN_DECAY = 0.3    # s: after a short flight the body turns onto the source's orientation this fast
LANDING_SHIFT_DECAY = 1.0   # s (with a foot free): after a short landing the body drifts back onto the source's path this fast


BALANCE_MARGIN = 0.25    # m (1.62 m body) beyond the clip's own COM-to-foot reach
LOST_BALANCE_TIME = 0.25 # s off balance before it counts as a fall
STOP_AHEAD = 0.3         # s of source: a rest due this long before both feet come down stops the body where it is


@dataclass
class SrbSettings:
    rate: float = 60.0            # Hz, SRB dynamics and QP
    kp: float = 120.0             # 1/s^2, COM position gain
    kd: float = 35.0              # 1/s, COM velocity gain
    kp_rot: float = 40.0
    kd_rot: float = 12.6
    raibert_kp: float = 1.0       # landing correction per metre of COM error
    raibert_kv: float = 0.1       # ... per m/s of COM velocity error
    # The tempo rule (runtime.fatigue.tempo.TempoRule): the weakest loaded joint's residual capacity sets
    # the tempo, the legs' relative effort (the share of what the weakest loaded leg joint has
    # left that the motion asks of it) when they rest.
    full_tempo_rc: float = 0.9    # residual capacity above which the tempo is unchanged
    exhausted_rc: float = 0.2     # ... at which it is min_tempo, and below which the body rests as soon as both feet are down
    min_tempo: float = 0.55
    rest_effort: float = 0.85     # relative effort at which the motion asks nearly all the legs have left: a rest
    resume_effort: float = 0.6    # ... a rest is over once the motion would ask at most this share
    resume_rc: float = 0.7        # ... or every leg DoF is back above this
    rest_rc: float = 0.35         # standing still, legs below this stand easy (it costs the performance no time)
    rest_stall: float = 1.5       # s without recovery (RC +0.01) after which a rest ends anyway
    min_motion_between_rests: float = 0.5   # s of source motion before the next rest
    early_landing_window: float = 0.35   # s: a swing foot touching down this early lands
    effort_economy: float = DEFAULT_EFFORT_ECONOMY   # rad: how far a tired joint (limbs; knees under the body) yields per unit of load (0: never, at most MAX_EFFORT_ECONOMY)
    contact_height: float = 0.02  # m (1.62 m body): sole corners this close to the floor carry load
    # "reference": the body's orientation follows the momentum-consistent reference and only
    # the COM is simulated (the moment the contacts cannot supply is recorded as residual);
    # "dynamic": full rigid-body rotation (the seed's SRB; needs a policy for most clips).
    orientation: str = "reference"
    qp: QpSettings = None

    def __post_init__(self):
        if self.qp is None:
            self.qp = QpSettings()


class SrbSimulator(Standing):
    """Steps the SRB through a Reference under a fatigue model (or none) and records frames."""

    on_floor = False            # the feet carry the body (runtime.fatigue.contract.Simulator)

    def __init__(self, ref: Reference, body: Body, fatigue=None, settings: SrbSettings | None = None,
                 push: tuple[float, float, np.ndarray] | None = None, limbs=None):
        self.ref = ref
        self.body = body
        self.fatigue = fatigue              # runtime.fatigue.schedule.ScheduledModel or None
        self.s = settings or SrbSettings()
        self.push = push                    # (start s, duration s, force N)
        self.limbs = limbs                  # runtime.engines.limbs.UpperBody or None (kinematic upper body)
        self.acc = np.zeros(3)
        self.dt = 1.0 / self.s.rate
        self.time = 0.0
        self.phase = 0.0
        self.p = ref.com[0].copy()
        self.v = ref.com_vel[0].copy()
        self.q = ref.rot[0].copy()
        self.w = ref.ang_vel[0].copy()
        self.feet = [Foot(bool(ref.contact[0, k]), np.zeros(3), np.zeros(3)) for k in range(2)]
        for k, foot in enumerate(self.feet):
            if not foot.stance:
                foot.lift_phase = 0.0
                foot.land_phase = ref.next_contact_start(k, 0.0) or ref.duration
        n = len(body.tau_max)
        self.torque = np.zeros(n)
        self.load_avg = np.zeros(n)
        # Per DoF, the strength this step over tau_max: above 1 for stance legs lowering the body
        # (see effort.yielding_strength), 1 everywhere else.
        self.strength_factor = np.ones(n)
        self._load_blend = min(1.0, self.dt / 0.5)
        self.events: list[Event] = []
        self.rule = TempoRule(self.s, self.events, ref.duration)   # tempo and rests (shared with floor work)
        self.fallen = False
        self.residual_moment = np.zeros(3)
        self.rest_wanted = None    # time the legs first needed a rest that has not come yet
        self.gathered_for = None   # phase of the take-off the body last gathered (rested) before
        self.rest_due = False      # the legs need a rest now and the motion offers none: make one
        self.sinking = 0.0         # m: how far the body has stayed below its target on its feet (smoothed)
        self.stopping = False       # putting the free foot down to rest (the clock stands still meanwhile)
        self.stopped = False       # the current rest began with a stop
        self.closing = None        # a rest's closing step under way (ClosingStep)
        self.closed = False        # this rest has had its closing step
        self.rest_began = 0.0
        self.can_kneel = False     # something steps a kneel when a rest asks for one (runtime.floor.kneel)
        self.kneel_wanted = False  # this rest asks to be taken on the knees
        self.sinking_blend = min(1.0, self.dt / CARRY_SMOOTHING)
        self._support, self._off_balance = [], 0.0
        self.shift = np.zeros(3)    # world xy by which the motion goes on after short flights
        self.stride = 1.0           # share of the source's ground speed the body aims for (tired strides)
        self._takeoff_pace = 1.0    # share of the source's ground speed a flight carries (its take-off's)
        self.lag = np.zeros(3)      # world xy the shortened strides have left the body behind the source
        self._shift_keep = 1.0 - min(1.0, self.dt / LANDING_SHIFT_DECAY)
        self.contact_height = self.s.contact_height * kin_scale(body)
        self.turn = None            # orientation offset after a short flight (None: none)
        self.flight_sped = False   # this flight plays faster than the source's (it will land sooner)
        self._turn_keep = 1.0 - min(1.0, self.dt / LANDING_TURN_DECAY)
        self.limb_give = LimbGive(limbs.spherical, self.dt) if limbs is not None else None
        self.posture = RestPosture(self.dt) if limbs is not None else None   # the braced rest
        self._hinge = 0.0           # rad the pelvis tips forward for it (runtime.reference.rest_posture)
        if limbs is not None:       # limb-DoF positions (caps, torques) of the trunk and of the arms
            part = np.array(proxy.dof_body_parts())[limbs.dofs]
            self._trunk_dofs, self._arm_dofs = np.flatnonzero(part == "trunk"), np.flatnonzero(part == "arms")
        self._knee_dofs = body.leg_dofs[:, 3]
        self.sag = 0.0              # m: how far the COM target sits below the source's (tired knees)
        names = [j.name for j in proxy.DEFAULT_JOINTS]
        self.knees = KneeSag([names.index(f"{side}_knee") for side in SIDES])
        self._next_sample, self._next_sample_phase = None, None
        self.need_torques = True    # leg torques every step (fatigue) or only when recorded
        self.feet_roll = True       # a foot alone on the floor rolls under its load (feet.bearing_corners)
        self.p_target, self.v_target = self.p.copy(), self.v.copy()   # the step's COM target
        self.leg_dofs = body.leg_dofs.ravel()
        self.upper_dofs = np.setdiff1d(np.arange(len(body.tau_max)), self.leg_dofs)   # trunk, neck, arms
        # A policy (runtime.srb.policy) corrects the rule every control step: swing-foot landing
        # shifts and a COM velocity target shift, world xy, and a share of the tempo it keeps;
        # zero shifts and all of the tempo without one.
        self.controller = None
        self.control_every = 1
        self.landing_adjust = np.zeros((2, 2))
        self.velocity_adjust = np.zeros(2)
        self.tempo_adjust = 1.0
        # A residual (runtime.srb.residual) also corrects the rule's own choices: how far the trunk
        # leans (rad) and the pelvis sits lower (m) than the rule has them, and, in its own copy of
        # the settings, how far tired joints yield and when the body rests (``rule_settings``: the
        # rule's own).  Zero, and the settings themselves, without one.
        self.lean_adjust = 0.0
        self.height_adjust = 0.0
        self.rule_settings = self.s
        self.steps = 0

    @property
    def tempo(self) -> float:
        """The tempo rule's phase rate while moving."""
        return self.rule.tempo

    @tempo.setter
    def tempo(self, value: float) -> None:
        self.rule.tempo = value

    @property
    def resting(self) -> bool:
        return self.rule.resting

    # -- one step: named phases, in the order they run ---------------------------------------
    def step(self) -> None:
        """One SRB step: the policy's correction, the clock (phase rate, strides), the centre of
        mass's goal, the feet, the contact forces, the upper body and the fatigue booking, the
        integration, then the tempo rule and the fall check."""
        if self.controller is not None and self.steps % self.control_every == 0:
            self.controller.control(self)
        self.steps += 1
        phase = self.phase
        r = self._next_sample if self._next_sample_phase == phase else self.ref.sample(phase)
        # Tempo is a choice a tired body makes with a foot on the ground; a flight is ballistic
        # and takes the time gravity gives it (a slowed flight would fall far below the arc).
        in_flight = not any(f.stance for f in self.feet)   # (feet touching down now land together)
        rate, launching = self._phase_rate(r, phase, in_flight)
        self._update_sag(r)
        p_r = self.com_target(r)
        rate = self._pace(r, rate, launching, p_r)
        rate = self._catch_up(r, rate, p_r)
        p_r, v_r, acc_des, moment_des, R = self._centroidal_goal(r, rate, p_r)
        root_R = R @ quat_matrix(r.root_rel)
        root_pos = self.p + R @ r.root_offset
        footing, jump_to = place_feet(self, r, phase, p_r, v_r, in_flight, root_pos, root_R)
        self._land(jump_to, footing)
        torque, strength, forces, total, moment = self._contact_forces(footing, R, acc_des, moment_des)
        self._drive_and_book(torque, strength, rate, root_pos, root_R)
        next_phase = self._integrate(total, moment, rate, r, R)
        self.residual_moment = moment_des - moment
        self.forces = forces
        self.time += self.dt
        decide_rest(self)
        self.phase = next_phase
        self._support = footing.ankles_xy
        self._check_fall(r.rot)

    def _phase_rate(self, r: RefSample, phase: float, in_flight: bool) -> tuple[float, bool]:
        """The reference clock's rate this step (0 holding the end, resting or stopping; the tempo
        while moving; a flight's own), and whether the step is a flight's push-off or landing;
        begins a halt when a rest is due and the motion offers no moment for it."""
        ref = self.ref
        holding = phase >= ref.duration - 1e-9          # past the end: hold the last pose still
        # Standing still, a slower clock changes nothing but the take's length (the legs hold the
        # same pose either way): the tempo slows motion only, and a rest postpones motion only
        # (the still source plays on while the body stands easy).  A 60 s idle took 180 s and
        # never finished.
        frame = ref.frame(phase)
        still = bool(ref.still[frame])
        moving = r.contact.any() and not still
        if (self.rest_due and not self.stopping and not self.resting and not in_flight
                and sum(f.stance for f in self.feet) == 1
                and ref.next_both_down(phase) - phase > STOP_AHEAD):
            # A rest is due and the motion will not put both feet down soon (a run, a spin, a
            # kick that lost its balance): the body stops where it is and puts its free foot down.
            self.stopping = True
            self.continue_from_here(r)
            self.events.append(Event(self.time, "halt"))
        pace = min(self.tempo * self.tempo_adjust, 1.0) if moving else 1.0   # never faster than the source
        rate = 0.0 if (holding or ((self.resting or self.stopping) and not still)) else pace
        if rate == 1.0 and not r.contact.any() and in_flight:
            rate, sped = flight_rate(ref, phase, self.p, self.v, self.com_target)
            self.flight_sped = self.flight_sped or sped
        launching = 0.0 < rate < 1.0 and bool(ref.ballistic[frame])
        return rate, launching

    def _update_sag(self, r: RefSample) -> None:
        """Tired knees yield under the body (effort.KneeSag): the centre of mass sinks by ``sag``."""
        economy = self.s.effort_economy
        if self.fatigue is not None and economy > 0.0:
            self.sag = self.knees.sag(self.body, economy, self.load_avg, self.fatigue.model.residual_capacity,
                                      r.joints, self.dt)
            if self.height_adjust:
                self.sag = max(self.sag + self.height_adjust, 0.0)

    def _pace(self, r: RefSample, rate: float, launching: bool, p_r: np.ndarray) -> float:
        """The stride (share of the source's ground speed aimed for) and the clock's final rate.

        Where gravity keeps the clock (see tempo.single_support_rate: a run's stances, a dance's
        falls onto the next step) a tired body shortens its strides instead: it aims for the
        slowed share of the source's ground speed, and the ground it does not cover accumulates
        as ``lag``.  A flight keeps the pace it took off with.  Fresh, the stride is always 1."""
        standing_on = sum(f.stance for f in self.feet)
        if launching:
            # A push-off or a landing keeps the flight's clock (see reference.ballistic): the
            # tempo shows as shorter strides, and a weaker push makes the flight lower.
            self.stride = self._takeoff_pace = rate
            rate = 1.0
        elif 0.0 < rate < 1.0 and standing_on == 1:
            slowed = single_support_rate(rate, self.p, self.v, p_r, r.com_vel * rate, self.ref.floor,
                                         kin_scale(self.body))
            if self.ref.travels[self.ref.frame(self.phase)]:
                # Travelling, a tired body shortens its steps as well as slowing them: the clock
                # of a step on one foot runs at least at the square root of the tempo, the
                # stride takes the rest (a tired walk at 0.65 of its speed: strides 0.88, cadence
                # 0.72; it kept its footprints and stepped 0.62 as often).
                slowed = max(slowed, math.sqrt(rate))
            self.stride = rate / slowed
            self._takeoff_pace = rate       # stride x clock: the tempo's share of the source's speed
            rate = slowed
        elif standing_on and r.contact.any() and rate > 0.0:
            self.stride = self._takeoff_pace = 1.0
        elif rate == 1.0 and not r.contact.any():
            # Taking off and in the air the body keeps the pace it took off with while the
            # source's clock runs at full rate: its target keeps that pace too (at the stance's
            # stride it ran ahead, and the landing pulled the body back up to speed).
            self.stride = self._takeoff_pace
        return rate

    def _catch_up(self, r: RefSample, rate: float, p_r: np.ndarray) -> float:
        """The clock's rate once it has run ahead of real time (an early landing skipped it on to
        the source's landing, a lower flight played faster): on the ground, outside a flight's
        push-off and landing, it plays slower until it is back on time (tempo.catch_up_pace), the
        strides as long as they were, so the take is never shorter than its source.  On one foot
        it gives way to gravity like the tempo (tempo.single_support_rate).  A tired body keeps
        its pace: slowing its ground frames on top of its tempo weakened an Exhausted run's pushes,
        its flights got lower and played faster still (1.3 s ahead by 7 s, and it knelt); the
        take's end waits for the source's length instead (runtime.simulate)."""
        frame = self.ref.frame(self.phase)
        if rate <= 0.0 or not r.contact.any() or self.ref.ballistic[frame] or self.fatigue is not None:
            return rate
        slowed = catch_up_pace(rate, self.phase - self.time, self.dt, bool(self.ref.still[frame]))
        if slowed < rate and sum(f.stance for f in self.feet) == 1:
            slowed = min(rate, single_support_rate(slowed, self.p, self.v, p_r, r.com_vel * slowed, self.ref.floor,
                                                   kin_scale(self.body)))
        return slowed

    def _centroidal_goal(self, r: RefSample, rate: float, p_r: np.ndarray):
        """(COM target, velocity target, desired acceleration, desired moment about the COM, body
        rotation matrix) this step; a resting body aims for its rest stance instead."""
        s, body = self.s, self.body
        if self.resting:
            # Rest upright over the feet (nearer the ankles when they are weak): anything else
            # keeps the tired legs loaded.
            centre = rest_centre(self, r)
            p_r = np.array([centre[0], centre[1], rest_height(self, r, centre)])
            if self.closing is not None and self.closing.settled(self.time):
                self.closing = None
            if self.closing is not None:
                p_r = closing_target(self, r, p_r)
        v_r = self.rule_velocity(r, rate)
        acc_ff = r.com_acc * (rate * rate)
        if self.stride < 1.0:
            acc_ff[:2] *= self.stride
        if self.controller is not None:
            v_r = v_r + np.array([self.velocity_adjust[0], self.velocity_adjust[1], 0.0])
        acc_des = acc_ff + s.kp * (p_r - self.p) + s.kd * (v_r - self.v)
        self.p_target, self.v_target = p_r, v_r
        R = quat_matrix(self.q)
        if s.orientation == "dynamic":
            rot_err = quat.to_rotvec(quat.multiply(r.rot, quat.conjugate(self.q)))
            feedback = body.inertia_world(R) @ (s.kp_rot * rot_err + s.kd_rot * (r.ang_vel * rate - self.w))
        else:
            feedback = 0.0
        # Moment: the reference's rate of angular momentum (what its contacts supplied), plus
        # orientation feedback when the rotation is simulated.
        moment_des = r.momentum_rate * (rate * rate) + feedback
        return p_r, v_r, acc_des, moment_des, R

    def _land(self, jump_to: float | None, footing: "Footing") -> None:
        """An early landing from a flight moves the clock on to ``jump_to``; otherwise, with a
        foot free, the shift after the last short landing decays."""
        if jump_to is not None and (jump_to > self.phase or self.flight_sped):
            # Landing early from a flight (a lower, shorter jump): the motion goes on from the
            # source's landing, from where the body came down (see com_target).
            self.flight_sped = False
            self.phase = jump_to
            landing = self.ref.sample(jump_to)
            self.shift[:2] = self.p[:2] - landing.com[:2] - self.lag[:2]
            # The body keeps the orientation it landed with (a shorter flight turned it less)
            # and turns onto the source's over LANDING_TURN_DECAY, instead of snapping to it.
            if self.s.orientation != "dynamic":
                self.turn = quat.normalize(quat.multiply(self.q, quat.conjugate(landing.rot)))
            # The landed feet stand where the source's feet land relative to its body, so the
            # legs bend for the landing as the source's do (not stretched toward a spot ahead).
            for foot in self.feet:
                if foot.stance:
                    foot.offset[:2] = self.shift[:2] + self.lag[:2]
        elif len(footing.ankles_xy) < 2:
            # Only while a foot is free to step: with both feet planted, moving the body's
            # target would pull it off its feet (legs stretched, knees straight in a crouch).
            self.shift *= self._shift_keep

    def _contact_forces(self, footing: "Footing", R, acc_des, moment_des):
        """The contact QP under the legs' fatigued bounds: (leg torques, strength per DoF, corner
        forces, their total, their moment about the COM)."""
        body = self.body
        torque = np.zeros(len(body.tau_max))
        self.strength_factor[self.leg_dofs] = yielding_strength(self.v[2], kin_scale(body))
        strength = body.tau_max * self.strength_factor
        if not footing.count:
            return torque, strength, np.zeros((0, 3)), np.zeros(3), np.zeros(3)
        legs, n_c = footing.legs, footing.count
        corners_all = footing.corners[0] if len(footing.corners) == 1 else np.concatenate(footing.corners)
        torque_rows = bounds = effort = within = None
        if self.fatigue is not None:
            rc = self.fatigue.model.residual_capacity
            torque_rows, bounds = self._leg_bounds(footing, rc * strength)
            effort = np.concatenate([leg_effort(rc[body.leg_dofs[k]], strength[body.leg_dofs[k]]) for k, _, _ in legs])
        else:
            within = lambda: self._leg_bounds(footing, strength)    # noqa: E731 (made only where needed)
        forces = solve_contact_forces(body, self.p, R, acc_des, moment_des, corners_all,
                                      torque_rows, bounds, self.s.qp, effort, within)
        for (k, start, count), rows in zip(legs, footing.rows):  # empty unless torques needed
            torque[body.leg_dofs[k]] = rows @ forces[start:start + count].ravel()
        total = forces.sum(axis=0)
        moment = cross_rows(corners_all - self.p, forces).sum(axis=0)
        return torque, strength, forces, total, moment

    def _leg_bounds(self, footing: "Footing", cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The standing legs' torque rows on all corner forces (7 per leg) and their bounds
        -cap..cap per DoF."""
        legs, body = footing.legs, self.body
        rows_all = np.zeros((7 * len(legs), 3 * footing.count))
        bounds = np.empty((7 * len(legs), 2))
        for j, ((k, start, count), rows) in enumerate(zip(legs, footing.leg_rows(body))):
            rows_all[7 * j:7 * j + 7, 3 * start:3 * (start + count)] = rows
            bounds[7 * j:7 * j + 7, 0] = -cap[body.leg_dofs[k]]
            bounds[7 * j:7 * j + 7, 1] = cap[body.leg_dofs[k]]
        return rows_all, bounds

    def _drive_and_book(self, torque: np.ndarray, strength: np.ndarray, rate: float, root_pos, root_R) -> None:
        """Upper body: PyBullet limbs under the same fatigued caps; then every torque is booked by
        the fatigue model (unless another simulator books them) and becomes this step's."""
        ref = self.ref
        if self.limbs is not None:
            # The motors reach their targets by the end of the step, which is where the pose is
            # recorded: aim at the source's pose there, not where this step began (one step late).
            ahead = min(self.phase + rate * self.dt, ref.duration)
            goal = ref.sample(ahead)
            self._next_sample, self._next_sample_phase = goal, ahead
            torque[self.limbs.dofs] = self.drive_limbs(root_pos, matrix_to_quat(root_R), self.acc, goal, rate)
        if self.fatigue is not None:
            torque = self.fatigue.step_torque(torque, strength, self.time, self.dt)
        self.torque = torque
        self.load_avg += (np.minimum(np.abs(torque) / strength, 1.0) - self.load_avg) * self._load_blend

    def _integrate(self, total: np.ndarray, moment: np.ndarray, rate: float, r: RefSample, R) -> float:
        """Semi-implicit Euler of the COM (and of the rotation when simulated; else the
        reference's, with any turn left by a short flight); returns the next phase."""
        ref, body = self.ref, self.body
        if self.push is not None and self.push[0] <= self.time < self.push[0] + self.push[1]:
            total = total + self.push[2]
        self.acc = total / body.mass + GRAVITY
        self.v = self.v + self.acc * self.dt
        self.p = self.p + self.v * self.dt
        next_phase = min(self.phase + rate * self.dt, ref.duration)
        if self.stride < 1.0:
            self.lag[:2] -= (1.0 - self.stride) * rate * self.dt * r.com_vel[:2]
        if self.s.orientation == "dynamic":
            I_w = body.inertia_world(R)
            ang = np.linalg.solve(I_w, moment - cross(self.w, I_w @ self.w))
            self.w = self.w + ang * self.dt
            self.q = quat.normalize(quat.multiply(quat.from_rotvec(self.w * self.dt), self.q))
            return next_phase
        nxt = self._next_sample if self._next_sample_phase == next_phase else ref.sample(next_phase)
        self._next_sample, self._next_sample_phase = nxt, next_phase
        sped = rate > 1.0 and not r.contact.any()
        if sped:
            # A flight played faster (see tempo.flight_rate) does not spin faster: the body turns
            # at the source's rate and keeps the difference as a turn, handled at landing.
            self.q = quat.normalize(quat.multiply(quat.from_rotvec(r.ang_vel * self.dt), self.q))
            self.turn = quat.normalize(quat.multiply(self.q, quat.conjugate(nxt.rot)))
        elif self.turn is None:
            self.q = nxt.rot.copy()
        else:
            self.turn = quat.from_rotvec(quat.to_rotvec(self.turn) * self._turn_keep)
            self.q = quat.normalize(quat.multiply(self.turn, nxt.rot))
            if quat.angle_between(self.turn, _IDENTITY) < 1e-4:
                self.turn = None
        self.w = nxt.ang_vel * (1.0 if sped else rate)
        return next_phase

    def resume_at(self, phase: float, joints: np.ndarray | None = None) -> None:
        """Take the body over at ``phase`` from floor work (runtime.floor.stretches): the reference's
        state there (floor work kept the keyed pose), feet where the reference has them, nothing
        carried over from before but the clock, the fatigue model and the tempo rule.  ``joints``:
        the upper body's pose where it is handed over, when not the reference's (a tired head
        still hanging after a kneel)."""
        ref = self.ref
        r = ref.sample(phase)
        self.phase = phase
        self.p, self.v = r.com.copy(), r.com_vel.copy()
        self.q, self.w = r.rot.copy(), r.ang_vel.copy()
        self.acc = np.zeros(3)
        self.feet = [Foot(bool(r.contact[k]), np.zeros(3), np.zeros(3)) for k in range(2)]
        for k, foot in enumerate(self.feet):
            if not foot.stance:
                foot.lift_phase = phase
                foot.land_phase = ref.next_contact_start(k, phase) or ref.duration
        self.shift = np.zeros(3)
        self.lag = np.zeros(3)
        self.turn = None
        self.flight_sped = False
        self._support, self._off_balance = [], 0.0
        self.sinking, self.stopping, self.closing = 0.0, False, None
        self.rest_wanted, self.rest_due = None, False
        self._next_sample, self._next_sample_phase = None, None
        self.p_target, self.v_target = self.p.copy(), self.v.copy()
        # The posture of before (a tired knee's sag, a rest's hinge) is not carried over either:
        # the first frame after a kneel showed the sag of the rest before it, a knee popping 27 deg.
        self.sag, self._hinge = 0.0, 0.0
        if self.limbs is not None:
            root_pos, root_rot, keyed = ref.clip.sample(phase)
            self.limbs.reset(root_pos, root_rot, keyed if joints is None else joints)

    def continue_from_here(self, r: "RefSample") -> None:
        """The motion goes on from where the body is (stopping, resuming after a rest), drifting
        back onto the source's path as after a short landing (see com_target): a body that has
        stopped off the source's path does not lunge back to it."""
        self.shift[:2] = self.p[:2] - r.com[:2] - self.lag[:2]

    def com_target(self, r: "RefSample") -> np.ndarray:
        """Where the centre of mass should be at reference sample ``r``: the source's, moved by
        ``shift`` after a short landing (the swing feet's landing targets move with it).

        Why: a tired jump is lower, so it is also shorter.  A centre of mass chasing the source's
        landing spot from where the body actually came down drags the body ahead of its planted
        feet (legs stretched back like a plank, a moment no foot could supply).  Instead the
        motion goes on from where the body landed and drifts back onto the source's path over
        about LANDING_SHIFT_DECAY of single support or flight, through the next steps: planted
        feet hold it, so a chain of tired jumps covers less ground than the source's.  Flights
        that land on time never shift.  Shorter tired strides leave it ``lag`` behind the
        source's path (see step), and tired knees lower it by ``sag`` (see effort.KneeSag)."""
        target = r.com + self.shift + self.lag
        target[2] -= self.sag
        return target

    def rule_velocity(self, r: "RefSample", rate: float) -> np.ndarray:
        """The COM velocity the rule aims for at reference sample ``r`` played at ``rate``: the
        source's, with a tired stride's share of its ground speed (no policy correction)."""
        v = r.com_vel * rate
        if self.stride < 1.0:
            v[:2] *= self.stride
        return v

    def drive_limbs(self, root_pos, root_quat, root_acc, goal: "RefSample", rate: float) -> np.ndarray:
        """One step of the simulated upper body on the pelvis at (root_pos, root_quat), tracking
        ``goal`` played at ``rate`` under fatigued caps with the effort economy's yield; returns
        the torques it applied (limb DoFs)."""
        strength = self.body.tau_max[self.limbs.dofs]
        caps = strength
        give = None
        targets = goal.joints
        bend = 0.0
        if self.fatigue is not None:
            residual = self.fatigue.model.residual_capacity
            capacity = residual[self.limbs.dofs]
            caps = strength * capacity
            give = self.limb_give.yields(self.s.effort_economy, capacity, self.body.tau_max_inv[self.limbs.dofs],
                                         self.dt)
            bend = self.posture.update(self.resting, float(capacity[self._arm_dofs].min()))
            lean = tired_lean(weakest_loaded(residual[self.leg_dofs], self.load_avg[self.leg_dofs],
                                             float(residual[self._knee_dofs].min())))
            if self.lean_adjust:
                lean = max(lean + self.lean_adjust, 0.0)
            if lean > 0.0:
                targets = lean_trunk(targets, self.limbs.joint_slots, lean)
        self._hinge = 0.0
        if bend > 0.0:
            # Braced on the thighs, the arms carry the trunk: its motors have the strength the
            # bracing gives, and book only the unbraced share (runtime.reference.rest_posture).
            self._hinge = self.posture.hinge(root_quat)
            root_pos, root_quat = hinged(self.p, root_pos, root_quat, self._hinge)
            targets = self.posture.targets(targets, self.limbs.joint_slots)
            trunk = self._trunk_dofs
            caps = caps.copy()
            caps[trunk] += bend * (strength[trunk] - caps[trunk])
            if give is not None:        # a carried trunk does not sag
                give = give.copy()
                give[trunk] *= 1.0 - bend
        applied = self.limbs.step(root_pos, root_quat, root_acc, targets, goal.joint_vel * rate, caps,
                                  self.dt, give, tired=self.fatigue is not None)
        self.limb_give.book(applied)
        if bend > 0.0:
            applied = applied.copy()
            applied[self._trunk_dofs] *= 1.0 - bend
        return applied

    def _check_fall(self, q_r) -> None:
        """Fallen: the COM sank below 45 % of its standing height; or it stayed further from every
        foot on the ground than the clip itself ever goes (plus a margin) for LOST_BALANCE_TIME,
        which with the orientation following the reference is how a push topples the body; or
        (simulated rotation only) the body tilted more than 70 degrees away from the reference."""
        if self.fallen:
            return
        height = self.p[2] - self.ref.floor
        tilted = self.s.orientation == "dynamic" and float(quat.angle_between(self.q, q_r)) > 1.2
        if self._support:
            p_xy = self.p[:2]
            reach = min(math.sqrt(d.dot(d)) for d in (p_xy - xy for xy in self._support))  # == norm
            limit = self.ref.support_reach + BALANCE_MARGIN * kin_scale(self.body)
            self._off_balance = self._off_balance + self.dt if reach > limit else 0.0
        lost = self._off_balance >= LOST_BALANCE_TIME
        if height < 0.45 * self.ref.standing_com or tilted or lost:
            self.fallen = True
            self.events.append(Event(self.time, "fall"))

    # -- output ------------------------------------------------------------------------------
    def state(self) -> SimState:
        """What the full-body pose needs (pose_output.poses), cheap to take every output frame."""
        limbs = self.limbs.joint_rotations() if self.limbs is not None else None
        return SimState(self.phase, self.p.copy(), self.q.copy(), np.array([f.offset for f in self.feet]),
                        np.array([f.stance for f in self.feet]), self.resting, limbs, self.sag,
                        self._hinge)
