"""How a tired neck carries the head: drooping forward as far as it can hold, hanging when it cannot.

Why: a neck motor tracking the source's head under 3CC caps loses to gravity once its capacity
drops below the head's weight moment; the head then fell onto the neck's anatomical end of range
(60 degrees) and the body's turns threw it about there (Exhausted takes bent the head 50-80
degrees against the chest, some backwards, and whipped it 40-110 degrees in a frame).  A tired
person's head does three things instead, all driven by the neck's own fatigue state:
- it droops forward, chin toward the chest (effort.LimbGive's droop), but only as far as its
  weight moment stays within HOLD_SHARE of what the neck has left (RC * tau_max): the rest of
  the capacity moves it (held_droop);
- a neck that cannot hold it at all lets it hang at HANG_RANGE, chin toward the chest, where
  stretched extensors and ligaments carry it, not at the anatomical end;
- the passive tissue damps its motion against the chest (HEAD_DAMPING_RATE), so the body's turns
  and landings do not throw a head the muscles no longer steer.
These act only where fatigue is simulated: a fresh take's motors hold the head themselves, and
its bits stay the same.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..maths import quat
from . import proxy
from .description import proxy_links

HOLD_SHARE = 0.5                  # of the neck's capacity (RC * tau_max) the drooped head's weight moment may take
HANG_RANGE = math.radians(40.0)   # where a neck that cannot hold the head lets it hang (chin toward the chest)
HANG_MARGIN = 0.05                # rad past a source pose that bends further (limbs.PASSIVE_MARGIN's tired twin)
DROOP_SEARCH_STEPS = 8            # bisections of the droop's share (1/256 of it)
# 1/s: the tired neck's passive damping over the head's smallest moment of inertia (its twist).
# Sized on the twist, the explicitly applied damper stays stable at any body size (c dt / I = 0.5
# at 120 Hz, the limbs' slowest rate).
HEAD_DAMPING_RATE = 60.0
GRAVITY = 9.81


class HeadLoad(NamedTuple):
    """The head as the neck carries it."""
    weight: float        # N
    com: np.ndarray      # (3,) m: the head's centre of mass in the neck joint's frame
    damping: float       # N*m*s/rad: the tired neck's passive damping (HEAD_DAMPING_RATE)


def head_load(height: float = proxy.DEFAULT_HEIGHT, mass: float = proxy.DEFAULT_MASS, plan=None) -> HeadLoad:
    """The head of the proxy at ``height`` and ``mass`` (shaped by ``plan``, if any)."""
    link = next(link for link in proxy_links(height, plan) if link.name == "neck")
    ratio = mass / proxy.DEFAULT_MASS
    return HeadLoad(link.mass * ratio * GRAVITY, np.asarray(link.com, dtype=float),
                    HEAD_DAMPING_RATE * float(np.min(link.inertia)) * ratio)


def held_tilt(head: HeadLoad, strength: float) -> float:
    """The furthest the head may lean from upright (rad) with its weight moment within
    ``strength`` (N*m)."""
    reach = head.weight * math.sqrt(float(head.com @ head.com))
    if strength >= reach:
        return math.pi
    return math.asin(max(strength, 0.0) / reach)


def tilt(neck: np.ndarray, chest_world: np.ndarray, head: HeadLoad) -> float:
    """How far (rad) the head leans from upright with the neck at ``neck`` (chest frame)."""
    com = quat.rotate(quat.multiply(chest_world, neck), head.com)
    return math.acos(min(max(float(com[2]) / math.sqrt(float(com @ com)), -1.0), 1.0))


def held_droop(source_neck: np.ndarray, droop: np.ndarray, chest_world: np.ndarray, head: HeadLoad,
               strength: float) -> np.ndarray:
    """The neck rotation (chest frame) with as much of ``droop`` (a rotation vector in the neck's
    frame) as the neck can hold at ``strength`` (N*m): all of it where the drooped head's weight
    moment stays within it (or leans no further than the source's head), else the largest share
    that does, found by bisection."""
    def turned(share: float) -> np.ndarray:
        return quat.multiply(source_neck, quat.from_rotvec(droop * share))

    allowed = max(held_tilt(head, strength), tilt(source_neck, chest_world, head))
    full = turned(1.0)
    if tilt(full, chest_world, head) <= allowed:
        return full
    low, high = 0.0, 1.0
    for _ in range(DROOP_SEARCH_STEPS):
        mid = 0.5 * (low + high)
        if tilt(turned(mid), chest_world, head) <= allowed:
            low = mid
        else:
            high = mid
    return turned(low)
