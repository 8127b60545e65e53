"""How many times slower than it was performed a clip plays, read off its flights.

A capture recorded at 100-120 fps and imported one capture frame per scene frame (Blender's BVH
importer does this unless "Update Scene FPS/Duration" is ticked) plays four to five times slower
than it was performed.  Simulated as keyed, such a take is not the performance: every hold lasts
four times longer, so the same dance tires the body four times as much (a one-legged pose held
12 s instead of 3 wore a knee out at the Average preset), and no flight can be simulated at all.
A slow-motion shot still shows a real-speed performance; so the simulation runs at the real
speed, and the take is played back at the clip's (runtime.simulate).

Gravity is the clock: in a flight the centre of mass falls at g.  Played k times slower it falls
at g / k^2, so each flight's fitted vertical acceleration gives k.  Only flights that agree, and
only a clear slow-down, count: a clip keyed at its real speed, or whose flights are not free
(lifted, hanging), plays as keyed.
"""
from __future__ import annotations

import math

import numpy as np

from ..body import proxy
from ..motion.contacts import straight_legs
from .rigid_body import GRAVITY

MIN_FLIGHT = 0.2          # s of clip time: a flight shorter than this is too short to time
MIN_FLIGHTS = 2           # flights that must agree
AGREEMENT = 0.2           # ... each within this share of their median slow-down
SLOW = 1.5                # a clip slower than this plays in slow motion
MAX_SLOW = 10.0           # ... and no slower than this (beyond it, the flight is not free)
FIT = 0.05                # a free flight's height keeps to its parabola within this share of the parabola's span
SIDEWAYS = 0.25           # ... and its centre of mass accelerates sideways at most this share of its fall
HELD = 0.4                # a hand this far (legs' lengths) above the centre of mass on average over a flight may hold it up
KEYED_FAST = 1.5          # a flight whose centre of mass comes down at more than this many g ...
KEYED_SLOW = 0.5          # ... or less than this many (and is not a slow-motion one) was keyed, not thrown


def flight_slowdowns(com: np.ndarray, airborne: np.ndarray, fps: float, hands: np.ndarray | None = None,
                     legs: float = 1.0) -> list[float]:
    """Per flight (runs of ``airborne`` frames at least MIN_FLIGHT long): how many times slower
    than free fall its centre of mass (``com``, (T, 3) m) comes down; NaN where the flight is not
    free: a hand (``hands``: (T, H, 3) m) may hold it from above (a bar, rings, a partner: HELD
    ``legs`` above the centre of mass on average over the flight, over the shoulders), it does
    not fall, its height strays from a parabola (FIT) or it is pushed sideways (SIDEWAYS).  Why
    the last two: feet the contact test missed (a walk over unseen steps) leave "flights" of
    seconds whose centre of mass bobs with each step; a free one is a clean parabola (residual
    0.2 % of its span in a captured hop, 16-27 % in such a walk)."""
    return [k for _, _, k in _flights(com, airborne, fps, hands, legs)]


def _flights(com: np.ndarray, airborne: np.ndarray, fps: float, hands: np.ndarray | None, legs: float):
    """(first frame, frame after the last, slow-down or NaN) of each flight flight_slowdowns times."""
    for a, b in _spans(airborne, fps):
        t = np.arange(b - a) / fps
        fit = np.polyfit(t, com[a:b], 2)                 # (3, 3): per axis, t^2 t 1
        fall = -2.0 * fit[0, 2]
        height = np.polyval(fit[:, 2], t)
        strays = float(np.sqrt(np.mean((com[a:b, 2] - height) ** 2)))
        sideways = 2.0 * float(np.hypot(fit[0, 0], fit[0, 1]))
        held = hands is not None and bool(((hands[a:b, :, 2] - com[a:b, 2, None]).mean(axis=0) > HELD * legs).any())
        free = not held and fall > 0.0 and strays <= FIT * float(np.ptp(height)) and sideways <= SIDEWAYS * fall
        yield int(a), int(b), (math.sqrt(-GRAVITY[2] / fall) if free else float("nan"))


def _spans(airborne: np.ndarray, fps: float):
    """(first frame, frame after the last) of each run of ``airborne`` frames long enough to time:
    at least MIN_FLIGHT and 4 frames."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], airborne.astype(np.int8), [0]])))
    for a, b in zip(edges[0::2], edges[1::2]):
        if (b - a) / fps >= MIN_FLIGHT and b - a >= 4:
            yield int(a), int(b)


def _airborne(ck) -> np.ndarray:
    """(T,) nothing of the analysed clip ``ck`` on the floor."""
    return ~ck.foot_contact.any(axis=1) & ~ck.non_foot_touching()


def slowed_flights(ck, off_the_floor: np.ndarray) -> np.ndarray:
    """(T,) the frames of each stretch of ``off_the_floor`` (nothing of the analysed clip ``ck``
    on the floor, yet not falling at g) that is a free flight played SLOW to MAX_SLOW times slower
    than it was performed: its centre of mass keeps to a parabola that falls at g / k^2.

    Why: such a stretch is a flight in slow motion wherever it lies, even alone or cut by the
    clip's first or last frame; with its feet nearly still (a capture played at a fifth of its
    speed) it passed for feet standing on an unseen step or box."""
    out = np.zeros(len(off_the_floor), dtype=bool)
    for a, b, k in _flights(ck.com, off_the_floor, ck.fps, _hands(ck), straight_legs(ck)):
        out[a:b] = SLOW <= k <= MAX_SLOW
    return out


def keyed_flights(ck) -> np.ndarray:
    """(T,) the frames of each flight (nothing of the analysed clip ``ck`` on the floor, at least
    MIN_FLIGHT and 4 frames) whose centre of mass comes down at a pace gravity does not set:
    more than KEYED_FAST g or less than KEYED_SLOW g, fitted as a parabola.

    Why: cartoon timing.  A hop keyed a metre up and down in a quarter of a second (7 g) threw
    the simulated body on a real parabola that carried it 3 m up by the clip's end; a dance whose
    root stays level while both feet leave the floor (0.1 g) landed the body early and skipped
    its clock 0.25 s ahead at every hop.  Captured flights fit 0.9-1.1 g (runtime.reference.support
    keeps such flights as keyed; a slow-motion one is found there first, see slowed_flights)."""
    airborne = _airborne(ck)
    out = np.zeros(len(airborne), dtype=bool)
    for a, b in _spans(airborne, ck.fps):
        t = np.arange(b - a) / ck.fps
        fall = -2.0 * float(np.polyfit(t, ck.com[a:b, 2], 2)[0]) / -GRAVITY[2]
        out[a:b] = not KEYED_SLOW <= fall <= KEYED_FAST
    return out


def _hands(ck) -> np.ndarray:
    """(T, 2, 3) the hands of the analysed clip ``ck``."""
    return ck.link_pos[:, [ck.link_names.index(n) for n in proxy.HAND_LINKS]]


def slowdown(ck) -> float | None:
    """How many times slower than it was performed the analysed clip ``ck``
    (runtime.motion.contacts.ClipKinematics) plays; None when it plays at its
    real speed or its flights cannot tell."""
    airborne = _airborne(ck)
    ks = np.array(flight_slowdowns(ck.com, airborne, ck.fps, _hands(ck), straight_legs(ck)))
    if len(ks) < MIN_FLIGHTS or not np.isfinite(ks).all():
        return None
    k = float(np.median(ks))
    if not SLOW <= k <= MAX_SLOW or np.any(np.abs(ks - k) > AGREEMENT * k):
        return None
    return k
