"""The clip as the sampler (runtime.torque.samcon) reads it: servo targets and the features its cost
compares against, at any point of the clip's own clock.

Why a clock of its own: a tired body plays its source slower and stops to rest (runtime.fatigue.tempo),
so a window of the search no longer covers a fixed stretch of the clip.  Everything is tabulated
at every physics step of the clip (the hinge angles, their rates, the pelvis orientation, the
feet, hands and centre of mass) and read between steps by linear interpolation; at whole steps
the numbers are the tabulated ones exactly, so a take played at full tempo is the one the
sampler found before it had a clock.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..engines import chooser
from ..fatigue.tempo import LAUNCH_LEAD, relative_effort, TempoRule, weakest_loaded
from ..srb.simulator import SrbSettings

DAMPING_RATIO = 0.1       # s: kd / kp of every servo (runtime.torque.samcon's servos)
GROUND_MARGIN = 0.02      # m: a link of the clip this near the floor is on it (a hand in a cartwheel; a shin clears it by 2.4 cm or more in the bench clips)
GROUND_SLACK = 0.1        # s: ... and may touch it this long before and after (the body is never exactly on time)
UPRIGHT = 0.95            # share of the clip's standing height (centre of mass over the lower foot) that is standing


@dataclass(frozen=True)
class Reaching:
    """Links besides the feet that the clip puts on the floor though its pose leaves them a little
    above it (runtime.reference.support.reaching: a cartwheel's hands that a retarget left short of the floor),
    per frame of the clip the sampler tracks: touching the floor there is the motion, not a fall."""
    links: tuple[str, ...]     # the links of the columns
    frames: np.ndarray         # (clip frames, links) bool


@dataclass(frozen=True)
class WindowEnd:
    """The clip's features where a window ends (what a sample is scored against)."""
    root: np.ndarray           # (4,) pelvis orientation, x y z w
    angles: np.ndarray         # (28,) hinge angles
    tips: np.ndarray           # (4, 3) feet and hands
    com: np.ndarray            # (3,) centre of mass
    com_vel: np.ndarray        # (3,) its velocity at the body's tempo


class SampledReference:
    """The clip tabulated at every physics step (positions ``x`` are in steps of ``dt`` from the
    clip's start; ``total`` steps long, whole windows of ``window_steps``)."""

    def __init__(self, clip, duration: float, rate: float, window: float, body, reaching: Reaching | None = None):
        self.dt = 1.0 / rate
        self.window_steps = max(1, int(round(window * rate)))
        windows = int(math.ceil(duration / (self.window_steps * self.dt) - 1e-9))
        self.windows = windows
        self.total = windows * self.window_steps
        times = np.arange(self.total + 1) * self.dt
        self.pos, self.rot, joints = clip.sample_many(times)
        self.angles = np.unwrap(body.angles_of(joints), axis=0)
        # The servos aim at the clip's angle plus its rate times kd / kp: with the damping that is a
        # PD on both (a servo aiming at the angle alone lags a fast arm by a tenth of a second).
        self.rates = np.gradient(self.angles, self.dt, axis=0)
        # With the features, the links besides the feet that the clip itself puts on the floor (the
        # body's touch sensors): touching the floor there is the motion, not a fall.  On the floor:
        # within GROUND_MARGIN of it and of the lower foot (a shin that grazes the floor at a run's
        # toe-off, over a foot sunk into it, carries nothing).
        tips, com, down = [], [], []
        for i in range(self.total + 1):
            body.set_state(body.qpos_of(self.pos[i], self.rot[i], self.angles[i]), np.zeros(body.model.nv))
            t, c, _ = body.features()
            tips.append(t)
            com.append(c)
            links, feet = body.clearance()
            down.append((links < GROUND_MARGIN) & (links < feet.min() + GROUND_MARGIN))
        self.tips, self.com = np.array(tips), np.array(com)
        down = np.array(down)
        if reaching is not None:
            frame = np.minimum(np.round(times * clip.fps).astype(int), len(reaching.frames) - 1)
            down |= reaching.frames[frame][:, [reaching.links.index(n) for n in body.touch_links]]
        slack = int(round(GROUND_SLACK * rate))
        self.grounded = down.copy()
        for k in range(1, slack + 1):
            self.grounded[k:] |= down[:-k]
            self.grounded[:-k] |= down[k:]

    def feet(self, clip, height: float) -> np.ndarray:
        """(total + 1, 2) whether each of the clip's feet (right, left) is on the floor at every
        physics step (a looping clip's feet cycle with it, over the whole take)."""
        frames = clip.repeated(self.total * self.dt)
        contact = chooser.shared_kinematics(height, None, "mujoco").analyse(frames).foot_contact
        at = np.round(np.arange(self.total + 1) * self.dt * clip.fps).astype(int)
        return contact[np.minimum(at, len(contact) - 1)]

    @staticmethod
    def _at(table: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Rows of ``table`` at positions ``x`` (steps; exact at whole steps)."""
        i = np.floor(x).astype(int)
        a = x - i
        j = np.minimum(i + 1, len(table) - 1)
        shape = (-1,) + (1,) * (table.ndim - 1)
        between = table[i] + a.reshape(shape) * (table[j] - table[i])
        return np.where((a == 0.0).reshape(shape), table[i], between)

    def clamp(self, x):
        return np.minimum(x, float(self.total))

    def targets(self, start: float, tempo: float, steps: int) -> np.ndarray:
        """(steps, 28) servo targets for the physics steps after position ``start`` at ``tempo``
        (clip steps per physics step; 0: holding still), each aimed where that step ends."""
        x = self.clamp(start + tempo * np.arange(1, steps + 1))
        return self._at(self.angles, x) + DAMPING_RATIO * (tempo * self._at(self.rates, x))

    def on_floor(self, start: float, tempo: float, steps: int) -> np.ndarray:
        """(steps, touch sensors) whether the clip has each link besides the feet on the floor
        (within GROUND_SLACK) at the physics steps after position ``start`` at ``tempo``."""
        x = self.clamp(start + tempo * np.arange(1, steps + 1))
        return self.grounded[np.round(x).astype(int)]

    def end(self, x: float, tempo: float) -> WindowEnd:
        """The features at position ``x`` for a body playing the clip at ``tempo``.  The centre of
        mass's velocity is taken over a window either side (one-sided at the clip's ends, over
        the whole clip where it is one window long)."""
        x = float(self.clamp(x))
        at = np.array([x])
        root = self._at(self.rot, at)[0]
        if x != math.floor(x):
            root = root / math.sqrt(float(root @ root))
        h = self.window_steps * self.dt
        n = self.window_steps
        if x - n < 0.0 and x + n > self.total:      # a clip of one window: over all of it
            vel = (self.com[-1] - self.com[0]) / (self.total * self.dt)
        elif x - n < 0.0:
            vel = (self._at(self.com, np.array([x + n]))[0] - self._at(self.com, at)[0]) / h
        elif x + n > self.total:
            vel = (self._at(self.com, at)[0] - self._at(self.com, np.array([x - n]))[0]) / h
        else:
            vel = (self._at(self.com, np.array([x + n]))[0] - self._at(self.com, np.array([x - n]))[0]) / (2.0 * h)
        return WindowEnd(root, self._at(self.angles, at)[0], self._at(self.tips, at)[0], self._at(self.com, at)[0],
                         tempo * vel)


class Clock:
    """Where the sampler is in its clip and how fast it plays it: SRB mode's tempo rule
    (runtime.fatigue.tempo.TempoRule, its thresholds) on the weakest loaded leg joint of the best path so
    far, window by window; a rest (the clip held) where both of the clip's feet are down, until
    the legs recover or recovery stalls; and, legs below SRB mode's resume threshold, a rest
    before a take-off (gathering, standing upright within LAUNCH_LEAD of it, once per take-off).
    Fatigue off (no model): full tempo throughout.

    Why the legs, as in SRB mode: they carry the motion; a tired arm or neck yields to its load
    (the sampler's effort economy) rather than stopping the body (on every joint, a walk spent
    three quarters of its time resting for its arms).  Why gather: a push-off scales with what the
    legs have left, and from a tired crouch the body pitched forward, landed running and fell
    (the bench's tired jump); a tired person stops and gathers before a jump.  Upright only: in
    the clip's crouch a rest loads the knees it is meant to spare."""

    def __init__(self, ref: SampledReference, feet: np.ndarray):
        self.ref = ref
        self.both_down = feet.all(axis=1)     # (total + 1,) the clip's feet (``feet``: right, left) both down
        self.airborne = ~feet.any(axis=1)     # ... neither down: a flight
        self.feet = feet
        # ... standing on both, upright (where the clip crouches, a rest would load the legs it is for)
        tall = ref.com[:, 2] - ref.tips[:, :2, 2].min(axis=1)
        self.standing = self.both_down & (tall >= UPRIGHT * (tall[self.both_down].max() if self.both_down.any() else 0.0))
        self.gathered_for = -1                # the take-off the body last rested before
        self.settings = SrbSettings()
        self.events: list = []
        self.rule = TempoRule(self.settings, self.events, ref.total * ref.dt)
        self.last_time = 0.0                  # s: when the tempo was last set
        self.x = 0.0
        self.legs = np.array(proxy.leg_dofs()).ravel()
        self.flying = False                   # the body has left the floor during the clip's flight

    @property
    def ended(self) -> bool:
        return self.x >= self.ref.total

    @property
    def fraction(self) -> float:
        return min(self.x / self.ref.total, 1.0)

    def tempo(self, time: float, model) -> float:
        """Clip steps per physics step for the window starting at ``time`` (s), given the best
        path's 3CC model (runtime.fatigue.model.ThreeCompartmentModel; None: fatigue off)."""
        if model is None:
            return 1.0
        rule, s = self.rule, self.settings
        rc = model.residual_capacity[self.legs]
        load = model.target_load[self.legs]
        weakest = weakest_loaded(rc, load)
        phase = self.x * self.ref.dt
        dt, self.last_time = time - self.last_time, time
        if rule.resting:
            reason = rule.rest_over(float(rc.min()), self.ended, time, phase)
            if reason is None:
                return 0.0
            rule.end_rest(reason, time, phase)
        rule.pace(weakest, relative_effort(load, rc), phase, time, dt)
        step = min(int(round(self.x)), self.ref.total)
        if rule.cannot_go_on(weakest) and self.both_down[step] and rule.may_rest(phase, self.ended, time):
            rule.begin_rest(float(rc.min()), time)
            return 0.0
        takeoff = self._takeoff_within(step, LAUNCH_LEAD)
        if (takeoff is not None and takeoff != self.gathered_for and weakest < s.resume_rc
                and self.standing[step] and rule.may_rest(phase, self.ended, time)):
            # Legs too tired to launch the flight ahead: stand and gather first, once per take-off.
            self.gathered_for = takeoff
            rule.begin_rest(float(rc.min()), time, until_recovered=True)
            return 0.0
        # A flight keeps its own pace, as in SRB mode: gravity sets that clock (a jump played
        # slower asks the body for a slow-motion flight).
        return 1.0 if self.airborne[step] else rule.tempo

    def _next(self, flying: bool, start: int, stop: int | None = None) -> int | None:
        """The first step from ``start`` (before ``stop``) where the clip is in the air
        (``flying``) or on the floor (not ``flying``); None if there is none."""
        seen = self.airborne[start:stop] if flying else ~self.airborne[start:stop]
        return start + int(np.argmax(seen)) if seen.any() else None

    def _takeoff_within(self, step: int, lead: float) -> int | None:
        """The step where the clip next leaves the floor, if within ``lead`` seconds of it."""
        if self.airborne[step]:
            return None
        return self._next(True, step, min(step + int(round(lead / self.ref.dt)), self.ref.total) + 1)

    def windows_to_land(self, x: float, tempo: float, ahead: int, most: int) -> int:
        """Windows of look-ahead that follow a window starting at clip step ``x`` past the end
        of a flight the clip begins within the usual ``ahead`` windows (one more past its
        landing), at most ``most``; 0 where it begins none.

        Why: a push-off scored only on what it does in the air is chosen for height; a tired
        body's legs then meet a landing they cannot absorb.  Seen to the landing and past it,
        a sample whose landing collapses costs a fall."""
        if tempo <= 0.0 or most <= ahead:
            return 0
        n = self.ref.window_steps
        start = min(int(round(x)), self.ref.total)
        horizon = min(int(round(x + tempo * n * (1 + ahead))), self.ref.total)
        takeoff = self._next(True, start, horizon + 1)
        if takeoff is None:
            return 0
        landing = self._next(False, takeoff)
        landing = self.ref.total if landing is None else landing
        # This window and those up to the landing (at least this one: the landing is after x),
        # less this one, and one more past the landing.
        return min(most, int(math.ceil((landing - x) / (tempo * n) - 1e-9)))

    def advance(self, tempo: float) -> None:
        self.x = float(self.ref.clamp(self.x + tempo * self.ref.window_steps))

    def land(self, feet: np.ndarray) -> None:
        """After a window (``feet``: (steps, 2) the best path's feet on the floor at each of its
        steps): a body that left the floor and is down again while the clip is still in its
        flight has landed early, and the clip goes on from its own landing (from where it next has
        down a foot the body landed on, if its landing has not: ``_agreeing``).

        Why: a tired push makes a lower jump that lands sooner (SRB mode's early landing).  Held
        to the clip's flight, the servos would meet the floor with the legs in the air's pose."""
        step = int(round(self.x))
        if step >= self.ref.total or not self.airborne[step]:
            self.flying = False
            return
        self.flying = self.flying or bool((~feet.any(axis=1)).any())
        if self.flying and feet[-1].any():
            landing = self._next(False, step)
            if landing is not None:
                self.x = float(self._agreeing(landing, feet[-1]))
                self.flying = False

    def _agreeing(self, landing: int, down: np.ndarray) -> int:
        """The first step from the clip's ``landing`` on, before it flies again, where the clip
        has down a foot the body landed on (``down``: right, left); the landing itself if none.

        Why: a tired hop-turn comes back down on its take-off foot while the clip lands on the
        other; gone on from the clip's landing, the servos lifted the foot the body stood on."""
        end = self._next(True, landing)
        agree = np.flatnonzero((self.feet[landing:end] & down).any(axis=1))
        return landing + int(agree[0]) if len(agree) else landing
