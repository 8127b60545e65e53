"""The Simulator contract: what runtime.simulate's run loop, the strength calibration and the
take's assembly read of whichever simulator steps a take.

Every simulator subclasses it explicitly (runtime.srb.simulator.SrbSimulator,
runtime.floor.work.FloorSimulator, runtime.floor.stretches.MixedSimulator,
runtime.floor.kneel.KneelingRests), so one list says what a new simulator owes the loop, and a
test checks each class defines every member itself.  Torque mode (runtime.torque.samcon) runs
its own sampler, not this loop.

Why here: its members are typed with the reference, the body, the fatigue schedule and the upper
body, and this is the lowest layer that holds them all (the simulators sit above it).  Members
are plain annotations, not properties, so a simulator may keep them as attributes or compute
them (a wrapper forwards them to the simulator it wraps).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from ..engines.limbs import UpperBody
from ..motion.take import Event
from ..reference.pose_output import SimState
from ..reference.reference import Reference
from ..reference.rigid_body import Body
from .schedule import ScheduledModel


class Simulator(Protocol):
    """One take's simulation, stepped by runtime.simulate until the source has played."""

    ref: Reference
    body: Body
    fatigue: ScheduledModel | None   # None: fresh (no fatigue simulated)
    limbs: UpperBody | None          # the simulated upper body, or None (kinematic)
    events: list[Event]
    dt: float                        # s per step
    time: float                      # s simulated
    phase: float                     # s of the source played
    fallen: bool
    need_torques: bool               # the loop sets it: leg torques are needed this step
    on_floor: bool                   # floor work holds the body up now (its pose is the reference's)
    torque: np.ndarray               # per DoF, this step
    residual_moment: np.ndarray      # (3,) what the contacts could not supply
    strength_factor: np.ndarray      # per DoF: the strength this step over tau_max
    load_avg: np.ndarray             # per DoF: the smoothed load over tau_max
    lag: np.ndarray                  # world xy the body is behind the source's path

    def step(self) -> None:
        """Advance one step of ``dt``."""
        ...

    def state(self) -> SimState:
        """The state the recorded pose is built from, now."""
        ...


class Forwarded:
    """A wrapper's Simulator member, read from (and, ``settable``, written to) the simulator it
    steps now: the one its attribute ``to`` holds.  Declared member by member, so the contract
    says what a wrapper forwards (an unknown name is an AttributeError, not the inner one's)."""

    def __init__(self, to: str, settable: bool = False):
        self.to, self.settable = to, settable

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(getattr(obj, self.to), self.name)

    def __set__(self, obj, value) -> None:
        if not self.settable:
            raise AttributeError(f"{type(obj).__name__}.{self.name} is its {self.to}'s: set it there")
        setattr(getattr(obj, self.to), self.name, value)
