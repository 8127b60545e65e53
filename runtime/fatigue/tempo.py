"""The tempo and rest rule: how fast a tired body plays its source, when it stops to rest and when
it goes on.

Why one object: a tired person slows down, pauses and recovers, whatever carries the load.  SRB
mode (runtime.srb.simulator: the legs) and floor work (runtime.floor.work: whichever joints hold the body up)
run the same rule on different joints, through TempoRule's calls, each deciding where a rest may
begin.  The phase rates of flights and single support are here too: they are the other half of
what the reference clock does.
"""
from __future__ import annotations

import math

import numpy as np

from ..motion.take import Event

MAX_STRETCH = 3.0         # a take may last at most this many times its source motion
CAPTURE_SLACK = 0.05      # m (1.62 m body): capture point ahead of the slowed motion's before the tempo gives way
MAX_FLIGHT_RATE = 3.0     # the source's flight plays at most this much faster when the body lands sooner
FLIGHT_RATE_SLACK = 0.05  # ... and only when it lands more than this much sooner (fresh flights keep time)
FLIGHT_TIME_SLACK = 0.03  # s: ... and by more than this (near touchdown both times are tiny)
PERFORMANCE_STRETCH = 2.4 # a tired take plays its whole source within this many times its length ...
LAST_RESORT_STRETCH = 2.8 # ... or, where its legs give out (below exhausted_rc), within this (the hard stop is MAX_STRETCH)
REST_ALLOWANCE = 0.5      # s: the shortest rest worth taking, when judging whether one still fits
EFFORT_MEMORY = 1.0       # s: the relative effort judged is its recent peak, over about a stride
TEMPO_EASE = 1.0          # s: the tempo eases towards the effort's over about this long
LAUNCH_LEAD = 1.5         # s of source: tired legs with a take-off this soon stand and gather first ...
LAUNCH_FLIGHT = 0.2       # ... into a flight at least this long (a jump; not a dance's foot-switch nor a run's stride)
LOADED = 0.02             # a joint whose load (share of strength) is above this is carrying the motion
CATCH_UP = 0.1            # a clock ahead of real time (an early landing) plays at most this share slower on the ground until it is back


class TempoRule:
    """Pace a tired body: slower as its weakest loaded joint loses capacity; rest only when the
    motion asks for more than that joint has left (its relative effort, see relative_effort),
    or almost nothing is left, and a rest can still be afforded; resume once the joint could
    carry the motion again easily, or recovery has stalled.  Rests and resumes are recorded as
    events.

    Why the tempo follows capacity: effort is felt relative to what is left, so the same motion
    feels 1/RC times as hard; tired people slow down to 0.52-0.79 of their fresh speed and keep
    going, with shorter steps and no stops (../shared/reference/fatigue_kinematics.json).  Why
    rests follow effort: a walk asks a tenth to a third of a leg's strength, which a leg at half
    capacity still has; judged by capacity alone, an exhausted walk stopped eight times in 9 s,
    though its rests, barely recovering, did not help.  Why the budget: the animator keyed a
    whole performance, and a take that ran out of length before the source ended lost the rest
    of it.  A tired performer paces themselves to finish: rests are taken only while the
    remaining source still fits in PERFORMANCE_STRETCH times its length at the slowest tempo,
    and the tempo never falls below what finishes it there.

    ``settings`` gives the thresholds (runtime.srb.simulator.SrbSettings: full_tempo_rc, exhausted_rc,
    min_tempo, rest_effort, resume_effort, resume_rc, rest_stall, min_motion_between_rests);
    ``duration``: the source motion's length (s of phase)."""

    def __init__(self, settings, events: list[Event], duration: float):
        self.s = settings
        self.events = events
        self.duration = float(duration)
        self.tempo = 1.0                # phase rate while moving
        self.paced = False              # pace() has set the tempo once
        self.resting = False
        self.effort = 0.0               # the weakest loaded joint's relative effort, its recent peak
        self.best = 0.0                 # the weakest joint's capacity this rest has recovered to ...
        self.best_time = 0.0            # ... and when
        self.demand = 0.0               # the share of strength the motion asked before this rest
        self.no_rest_before = 0.0       # phase: some motion between two rests
        self.futile_rests = 0           # rests in a row that ended without recovering
        self.needed = True              # this rest was needed to go on (not standing easy or gathering)
        self.last_resort = False        # this rest began with the joint giving out (see may_rest)

    def pace(self, capacity: float, effort: float, phase: float, time: float, dt: float) -> None:
        """While moving: the weakest loaded joint's residual ``capacity`` sets the tempo (full
        above full_tempo_rc, min_tempo at exhausted_rc), eased over TEMPO_EASE and never below
        what still finishes the performance within its budget; its relative ``effort`` (see
        relative_effort) is kept, as its recent peak, to judge whether it can go on.  The first
        call starts at the tempo its capacity asks for: a take that begins tired (the Exhausted
        preset starts at half capacity) does not set off at full speed and slow over a second,
        which on a 1.6 s walk was most of the clip."""
        s = self.s
        self.effort = max(effort, self.effort * math.exp(-dt / EFFORT_MEMORY))
        share = (capacity - s.exhausted_rc) / (s.full_tempo_rc - s.exhausted_rc)
        target = s.min_tempo + (1.0 - s.min_tempo) * min(max(share, 0.0), 1.0)
        if not self.paced:          # a body tired from the start sets off at its tired pace
            self.paced = True
            self.tempo = min(self.tempo, target)
        self.tempo += (target - self.tempo) * min(dt / TEMPO_EASE, 1.0)
        self.tempo = min(max(self.tempo, self.tempo_floor(phase, time)), 1.0)

    def tempo_floor(self, phase: float, time: float) -> float:
        """The slowest the motion may play now: what finishes it within PERFORMANCE_STRETCH; once
        that time is spent, what finishes it within LAST_RESORT_STRETCH (a take whose budget ran
        out played on at full speed on exhausted legs, and fell in its last seconds)."""
        floor = self.finishing_tempo(phase, time)
        if floor >= 1.0:
            floor = self.finishing_tempo(phase, time, LAST_RESORT_STRETCH)
        return floor

    def finishing_tempo(self, phase: float, time: float, stretch: float = PERFORMANCE_STRETCH) -> float:
        """The slowest tempo that still plays the rest of the source by ``stretch`` times its
        length (1 when that time is spent)."""
        left = stretch * self.duration - time
        remaining = max(self.duration - phase, 0.0)
        if remaining <= 0.0:
            return 0.0
        return 1.0 if left <= remaining else remaining / left

    def cannot_go_on(self, capacity: float) -> bool:
        """The weakest loaded joint cannot carry the motion: it asks for all it has left, or
        almost nothing is left (``capacity`` below exhausted_rc)."""
        return self.effort >= self.s.rest_effort or capacity < self.s.exhausted_rc

    def may_rest(self, phase: float, ended: bool, time: float, giving_out: bool = False) -> bool:
        """Enough motion since the last rest (more after each rest that did not recover), and
        time left for a rest and the rest of the source at the slowest tempo (or the source has
        ended): within PERFORMANCE_STRETCH, or LAST_RESORT_STRETCH for legs ``giving_out``
        (below exhausted_rc, or no longer holding the body up), which fall if they go on."""
        if ended:
            return True
        spacing = phase >= self.no_rest_before
        remaining = max(self.duration - phase, 0.0)
        stretch = LAST_RESORT_STRETCH if giving_out else PERFORMANCE_STRETCH
        affordable = (stretch * self.duration - time - REST_ALLOWANCE) * self.s.min_tempo >= remaining
        return spacing and affordable

    def performance_goes_on(self, phase: float, time: float) -> bool:
        """The rest of the source needs the time left (at the slowest tempo): this rest must end.
        A rest begun with the joint giving out (below exhausted_rc) may last into
        LAST_RESORT_STRETCH; any other only into PERFORMANCE_STRETCH."""
        stretch = LAST_RESORT_STRETCH if self.last_resort else PERFORMANCE_STRETCH
        return self.finishing_tempo(phase, time, stretch) > self.s.min_tempo

    def begin_rest(self, capacity: float, time: float, until_recovered: bool = False, giving_out: bool = False) -> None:
        """Start a rest (event "rest"); ``capacity``: the weakest joint's now, to measure recovery
        by.  ``until_recovered``: a rest the motion does not need now (gathering before a
        take-off, whose push-off asks more than the motion so far did; standing easy in a still
        stretch).  Those, rests with almost nothing left (below exhausted_rc) and rests of legs
        ``giving_out`` (no longer holding the body up, whatever their capacity) last until the
        joint is back above resume_rc or recovery stalls (a sinking body whose motion asked
        little rested for no time at all)."""
        self.resting = True
        self.best, self.best_time = capacity, time
        self.last_resort = capacity < self.s.exhausted_rc
        self.demand = math.inf if until_recovered or self.last_resort or giving_out else self.effort * capacity
        self.needed = not until_recovered
        self.events.append(Event(time, "rest"))

    def rest_over(self, capacity: float, ended: bool, time: float, phase: float | None = None) -> str | None:
        """While resting: why the rest ends now, given the weakest joint's ``capacity``:
        "recovered" (back above resume_rc, or above exhausted_rc with the motion asking at most
        resume_effort of what it has), "recovery stalled" (no gain for rest_stall: standing
        costs what recovery gives back; not after the source has ended) or "the performance goes on" (the rest of the
        source needs the time left, ``phase`` given); None to rest on."""
        s = self.s
        if capacity > self.best + 0.01:
            self.best, self.best_time = capacity, time
        if capacity >= s.resume_rc or (capacity >= s.exhausted_rc and self.demand <= s.resume_effort * capacity):
            return "recovered"
        if ended:
            return None
        if time - self.best_time > s.rest_stall:
            return "recovery stalled"
        if phase is not None and self.performance_goes_on(phase, time):
            return "the performance goes on"
        return None

    def end_rest(self, reason: str, time: float, phase: float) -> None:
        """Carry on (event "resume"), slowly; rest again only after some of the motion, the more
        the more rests the motion needed in a row have not helped (standing easy and gathering
        are not counted: they cost the performance little)."""
        self.resting = False
        if self.needed:
            self.futile_rests = 0 if reason == "recovered" else self.futile_rests + 1
        self.no_rest_before = phase + self.s.min_motion_between_rests * 2.0 ** self.futile_rests
        self.effort = 0.0
        self.events.append(Event(time, "resume", reason))


def weakest_loaded(capacity: np.ndarray, load: np.ndarray, otherwise: float | None = None) -> float:
    """The residual ``capacity`` of the weakest joint carrying more than LOADED of its strength
    (``load``, per joint); where none does, ``otherwise`` (default: the weakest of them all)."""
    loaded = load > LOADED
    if loaded.any():
        return float(capacity[loaded].min())
    return float(capacity.min()) if otherwise is None else otherwise


def relative_effort(load: np.ndarray, capacity: np.ndarray) -> float:
    """The largest share of what a loaded joint has left that the motion asks of it: ``load``
    (torque over strength, recent average) over ``capacity`` (residual capacity), per joint,
    over the joints carrying more than LOADED."""
    loaded = load > LOADED
    if not loaded.any():
        return 0.0
    return float((load[loaded] / np.maximum(capacity[loaded], 1e-3)).max())


def flight_rate(ref, phase: float, p: np.ndarray, v: np.ndarray, com_target) -> tuple[float, bool]:
    """Phase rate in the air: 1, or faster when the body (centre of mass ``p``, velocity ``v``)
    will land sooner than the source (a lower, shorter flight), so that the source's landing pose
    arrives when the body lands; and whether the flight is sped up (its landing is then handled
    like an early one).  ``com_target(sample)``: where the body's centre of mass should be at a
    reference sample.

    Why: a tired flight is lower, hence shorter; played at full rate the legs were still in
    mid-flight pose at touchdown and snapped into the landing pose (phase skipped ahead,
    knees and hips turning up to 70 deg in one frame)."""
    land = min((t for t in (ref.next_contact_start(k, phase) for k in range(2)) if t is not None),
               default=None)
    if land is None or land <= phase:
        return 1.0, False
    drop = p[2] - com_target(ref.sample(land))[2]
    vz = v[2]
    if drop <= 0.0 and vz <= 0.0 and land - phase > FLIGHT_TIME_SLACK:
        return MAX_FLIGHT_RATE, True
    body_left = (vz + math.sqrt(max(vz * vz + 2.0 * 9.81 * drop, 0.0))) / 9.81
    source_left = land - phase
    if body_left <= 0.0 or source_left <= (1.0 + FLIGHT_RATE_SLACK) * body_left + FLIGHT_TIME_SLACK:
        return 1.0, False
    return min(source_left / body_left, MAX_FLIGHT_RATE), True


def catch_up_pace(pace: float, ahead: float, dt: float, still: bool) -> float:
    """The pace on the ground (not a flight's push-off or landing) while the source's clock is
    ``ahead`` s of real time: standing ``still`` the source waits (a still pose played later
    shows nothing), moving it plays up to CATCH_UP slower until the clock is back on time; at
    or behind real time (every tired take, a fresh take that kept time) ``pace`` as it is."""
    if ahead <= 1e-9:
        return pace
    if still:
        return min(pace, max(1.0 - ahead / dt, 0.0))
    return min(pace, 1.0 - min(CATCH_UP, ahead / dt))


def single_support_rate(tempo: float, p: np.ndarray, v: np.ndarray, p_r: np.ndarray, v_r: np.ndarray,
                        floor: float, scale: float) -> float:
    """Phase rate on one foot: the tempo while the body (``p``, ``v``) keeps up with the slowed
    motion (``p_r``, ``v_r``), rising to 1 as its capture point (where it would come to rest,
    x + v/omega) runs ahead of the slowed reference's.

    Why: a slowed weight shift or hold is still balanced, but when the source motion lets the
    body fall onto the next step (dancing, turning), gravity sets that clock: a slow-motion
    swing foot would land after the body had fallen past it.  A steady slowed walk or run keeps
    up (the feet land closer) and stays slow.  A tired character slows its holds, steps and
    strides, not its falls."""
    height = max(p[2] - floor, 0.3 * scale)
    root = math.sqrt(height / 9.81)
    d = (p[:2] - p_r[:2]) + (v[:2] - v_r[:2]) * root
    ahead = math.sqrt(d @ d) - CAPTURE_SLACK * scale
    return tempo + (1.0 - tempo) * min(max(ahead / (CAPTURE_SLACK * scale), 0.0), 1.0)
