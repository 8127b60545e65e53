"""A simulation request: everything simulate() needs for one take, as one type from the bake
through the backend (in this process or a worker process) to runtime.simulate, and the one home
of the rules its numbers must keep.

Why a type: the request used to be a dict whose keys were retyped in the bake, the backend (twice)
and the worker; a field added in one place was silently dropped in another.  Its file format (an
``.npz`` of arrays plus one JSON ``meta``, no pickles) is defined here too, next to the fields.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields

import numpy as np

from .body import proxy
from .body.anthropometry import BodyPlan
from .fatigue.direction import TirednessKeys
from .fatigue.effort import MAX_EFFORT_ECONOMY
from .fatigue.schedule import FatigueSchedule
from .motion.clip import Clip

HEIGHT_RANGE = (0.5, 3.0)        # m: a rig outside this is in other units (the bake then uses the panel's height)
MASS_RANGE = (10.0, 300.0)       # kg
OUTPUT_FPS_RANGE = (1.0, 1000.0)
MAX_SOURCE_FRAMES = 50_000       # frames one bake reads (about 9 KB each while prepared: under 0.5 GB)
PROTOCOL = 1                     # the file format's version (runtime.worker speaks it)
_SCHEDULE_FIELDS = ("F", "R", "r", "LD", "LR", "initial_fatigue")


def _within(value, lo: float, hi: float) -> bool:
    return bool(np.isfinite(value) and lo <= value <= hi)


def height_problem(height) -> str | None:
    """What is wrong with a character ``height`` (m); None when usable."""
    if not _within(height, *HEIGHT_RANGE):
        return f"character height {height!r} m: use {HEIGHT_RANGE[0]:g} to {HEIGHT_RANGE[1]:g} m (check the rig's units)"
    return None


def mass_problem(mass) -> str | None:
    if not _within(mass, *MASS_RANGE):
        return f"character mass {mass!r} kg: use {MASS_RANGE[0]:g} to {MASS_RANGE[1]:g} kg"
    return None


def effort_economy_problem(economy) -> str | None:
    if not _within(economy, 0.0, MAX_EFFORT_ECONOMY):
        return f"effort economy {economy!r}: use 0 (hold every pose) to {MAX_EFFORT_ECONOMY:g}"
    return None


def output_fps_problem(fps) -> str | None:
    if not _within(fps, *OUTPUT_FPS_RANGE):
        return f"output frame rate {fps!r}: use {OUTPUT_FPS_RANGE[0]:g} to {OUTPUT_FPS_RANGE[1]:g} fps"
    return None


def source_frames_problem(start: int, end: int) -> str | None:
    """What is wrong with baking source frames ``start``..``end`` whatever the action (its memory);
    None when usable."""
    if end - start + 1 > MAX_SOURCE_FRAMES:
        return f"frames {start}-{end} are {end - start + 1} frames, more than one bake reads ({MAX_SOURCE_FRAMES})"
    return None


@dataclass
class SimulationRequest:
    """One take to simulate (see runtime.simulate.simulate for what each field does)."""
    clip: Clip
    schedule: FatigueSchedule | None = None    # None: fatigue off
    mode: str = "srb"
    height: float = proxy.DEFAULT_HEIGHT
    mass: float = proxy.DEFAULT_MASS
    plan: BodyPlan | None = None               # the character's proportions (None: the default humanoid)
    policy: str | None = None                  # path of an SRB policy (.npz; None: the rule alone)
    effort_economy: float | None = None        # None: SrbSettings' default
    seconds: float | None = None
    hold: float = 0.0
    out_fps: float | None = None
    engine: str = "auto"                       # runtime.engines.chooser: auto, pybullet or mujoco
    breathing: bool = True                     # a take under fatigue breathes (runtime.fatigue.breathing)
    kneeling: bool = True                      # legs that cannot recover standing rest kneeling (runtime.floor.kneel)
    tiredness: TirednessKeys | None = None     # how tired, when (runtime.fatigue.direction; None: the schedule as given)


    # -- the file a worker process reads ---------------------------------------------------------
    def write(self, path) -> None:
        """The request as one ``.npz`` (written to a temporary name, then renamed into place)."""
        clip, schedule = self.clip, self.schedule
        kwargs = {f.name: getattr(self, f.name) for f in fields(self)
                  if f.name in ("policy", "effort_economy", "seconds", "out_fps", "engine") and getattr(self, f.name) is not None}
        if self.hold:
            kwargs["hold"] = self.hold
        if not self.breathing:
            kwargs["breathing"] = False
        if not self.kneeling:
            kwargs["kneeling"] = False
        if self.tiredness is not None:
            kwargs["tiredness"] = {"times": list(self.tiredness.times), "values": list(self.tiredness.values)}
        if self.plan is not None:
            kwargs["plan"] = {"ratios": dict(self.plan.ratios), "sex": self.plan.sex, "notes": list(self.plan.notes)}
        arrays = {
            "meta": np.array(json.dumps({
                "protocol": PROTOCOL, "mode": self.mode, "height": float(self.height), "mass": float(self.mass),
                "clip_name": clip.name, "clip_fps": float(clip.fps), "clip_loop": bool(clip.loop),
                "joints": list(clip.joints), "has_schedule": schedule is not None,
                "schedule_fps": float(schedule.fps) if schedule is not None else 0.0, "kwargs": kwargs})),
            "root_pos": clip.root_pos, "root_rot": clip.root_rot, "joint_rots": clip.joint_rots,
        }
        if schedule is not None:
            for k in _SCHEDULE_FIELDS:
                arrays["schedule_" + k] = getattr(schedule, k)
        path = os.fspath(path)
        with open(path + ".part", "wb") as f:
            np.savez(f, **arrays)
        os.replace(path + ".part", path)

    @classmethod
    def read(cls, path) -> "SimulationRequest":
        """The request ``write`` wrote (ValueError for another protocol)."""
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta.get("protocol") != PROTOCOL:
                raise ValueError(f"request protocol {meta.get('protocol')!r}, this worker speaks {PROTOCOL}")
            clip = Clip(name=meta["clip_name"], fps=meta["clip_fps"], root_pos=z["root_pos"], root_rot=z["root_rot"],
                        joint_rots=z["joint_rots"], loop=meta["clip_loop"], joints=tuple(meta["joints"]))
            schedule = None
            if meta["has_schedule"]:
                schedule = FatigueSchedule(fps=meta["schedule_fps"],
                                           **{k: z["schedule_" + k] for k in _SCHEDULE_FIELDS})
        kwargs = dict(meta.get("kwargs", {}))
        if kwargs.get("plan") is not None:
            p = kwargs["plan"]
            kwargs["plan"] = BodyPlan(ratios=dict(p["ratios"]), sex=p["sex"], notes=tuple(p.get("notes", ())))
        if kwargs.get("tiredness") is not None:
            keys = kwargs["tiredness"]
            kwargs["tiredness"] = TirednessKeys(tuple(keys["times"]), tuple(keys["values"]))
        known = {f.name for f in fields(cls)}
        return cls(clip=clip, schedule=schedule, mode=meta["mode"], height=meta["height"], mass=meta["mass"],
                   **{k: v for k, v in kwargs.items() if k in known})
