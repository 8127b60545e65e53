"""The tempo and rest rule: how fast a tired body plays its source, when it stops to rest and when
it goes on.

Why one object: a tired person slows down, pauses and recovers, whatever carries the load.  SRB
mode (runtime.srb: the legs) and floor work (runtime.floor: whichever joints hold the body up)
run the same rule on different joints, through TempoRule's calls, each deciding where a rest may
begin.  The phase rates of flights and single support are here too: they are the other half of
what the reference clock does.
"""
from __future__ import annotations

import math

import numpy as np

from .take import Event

MAX_STRETCH = 3.0         # a take may last at most this many times its source motion
CAPTURE_SLACK = 0.05      # m (1.62 m body): capture point ahead of the slowed motion's before the tempo gives way
MAX_FLIGHT_RATE = 3.0     # the source's flight plays at most this much faster when the body lands sooner
FLIGHT_RATE_SLACK = 0.05  # ... and only when it lands more than this much sooner (fresh flights keep time)
FLIGHT_TIME_SLACK = 0.03  # s: ... and by more than this (near touchdown both times are tiny)


class TempoRule:
    """Slow down as the weakest loaded joint loses capacity; rest when it cannot go on; resume once
    it has recovered or recovery has stalled.  Rests and resumes are recorded as events.

    ``settings`` gives the thresholds (runtime.srb.SrbSettings: full_tempo_rc, rest_rc, min_tempo,
    resume_rc, rest_stall, min_motion_between_rests)."""

    def __init__(self, settings, events: list[Event]):
        self.s = settings
        self.events = events
        self.tempo = 1.0                # phase rate while moving
        self.resting = False
        self.best = 0.0                 # the weakest joint's capacity this rest has recovered to ...
        self.best_time = 0.0            # ... and when
        self.no_rest_before = 0.0       # phase: some motion between two rests

    def tempo_for(self, capacity: float) -> float:
        """Phase rate for the weakest loaded joint's residual ``capacity``: full above
        full_tempo_rc, down to min_tempo towards rest_rc."""
        s = self.s
        return min(max((capacity - s.rest_rc) / (s.full_tempo_rc - s.rest_rc), s.min_tempo), 1.0)

    def may_rest(self, phase: float, ended: bool) -> bool:
        """Enough motion since the last rest (or the source has ended)."""
        return phase >= self.no_rest_before or ended

    def begin_rest(self, capacity: float, time: float) -> None:
        """Start a rest (event "rest"); ``capacity``: the weakest joint's now, to measure recovery by."""
        self.resting = True
        self.best, self.best_time = capacity, time
        self.events.append(Event(time, "rest"))

    def rest_over(self, capacity: float, ended: bool, time: float) -> str | None:
        """While resting: why the rest ends now, given the weakest joint's ``capacity``:
        "recovered" (back above resume_rc) or "recovery stalled" (no gain for rest_stall: standing
        costs what recovery gives back; not after the source has ended); None to rest on."""
        s = self.s
        if capacity > self.best + 0.01:
            self.best, self.best_time = capacity, time
        if capacity >= s.resume_rc:
            return "recovered"
        if time - self.best_time > s.rest_stall and not ended:
            return "recovery stalled"
        return None

    def end_rest(self, reason: str, time: float, phase: float) -> None:
        """Carry on (event "resume"), slowly; rest again only after some of the motion."""
        self.resting = False
        self.no_rest_before = phase + self.s.min_motion_between_rests
        self.events.append(Event(time, "resume", reason))


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
