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
from functools import partial
from typing import Callable

import numpy as np

from .body import proxy
from .body.anthropometry import BodyPlan
from .fatigue import params as fatigue_params
from .fatigue.direction import TirednessKeys, tiredness_problem
from .fatigue.schedule import FatigueSchedule
from .motion.clip import Clip

HEIGHT_RANGE = (0.5, 3.0)        # m: a rig outside this is in other units (the bake then uses the panel's height)
MASS_RANGE = (10.0, 300.0)       # kg
OUTPUT_FPS_RANGE = (1.0, 1000.0)
MAX_SOURCE_FRAMES = 50_000       # frames one bake reads (about 9 KB each while prepared: under 0.5 GB)
PROTOCOL = 1                     # the file format's version (runtime.worker speaks it)
_SCHEDULE_FIELDS = ("F", "R", "r", "LD", "LR", "initial_fatigue")
_WRITTEN_APART = ("clip", "schedule", "mode", "height", "mass", "plan", "tiredness")   # arrays, types, the meta's own


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
    if not _within(economy, 0.0, fatigue_params.MAX_EFFORT_ECONOMY):
        return f"effort economy {economy!r}: use 0 (hold every pose) to {fatigue_params.MAX_EFFORT_ECONOMY:g}"
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


@dataclass(frozen=True)
class BakeOption:
    """One option a bake can be asked for, declared once: BakeOptions' field, the bake operator's
    argument and the ./fatigue bake flag (a farm job's parameter is read off the flag) are made
    from it, and every entry point refuses the same values with the same one line."""
    name: str                        # the BakeOptions field and the operator's argument
    kind: type                       # str, int, float or bool
    label: str                       # its name in Blender
    help: str                        # what it does and what it defaults to
    flag: str | None = None          # ./fatigue bake's flag (None: given another way: --frames, --tiredness, --variants)
    choices: tuple[str, ...] = ()    # the words a word option takes (any case)
    check: Callable[[object], str | None] | None = None   # a number's range: None when usable, else what to give
    setting: bool = False            # replaces the armature's Fatigue setting of the same name, as is

    def problem(self, value) -> str | None:
        """None when ``value`` is usable; else what to give."""
        if self.choices and str(value).strip().lower() not in self.choices:
            return f"use {', '.join(self.choices[:-1])} or {self.choices[-1]}"
        return self.check(value) if self.check is not None else None

    def refusal(self, value, called: str | None = None, shown: str | None = None) -> str | None:
        """The one line refusing ``value`` (None: usable), the option ``called`` as its entry point
        names it (default: its name) and the value ``shown`` as it was given."""
        problem = self.problem(value)
        if problem is None:
            return None
        if self.choices:
            return f"unknown {called or self.label.lower()} '{value}': {problem}"
        if shown is None:
            shown = f"{value:.6g}" if isinstance(value, float) else repr(value)   # operator floats are 32-bit
        return f"{called or self.name} {shown}: {problem}"

    def setting_value(self, value):
        """``value`` as the armature's setting holds it (a word upper-case, as its enum item)."""
        return str(value).strip().upper() if self.choices else self.kind(value)


def _rate(name: str) -> Callable[[object], str | None]:
    return partial(fatigue_params.option_problem, name)


# Every option of a bake, in the order ./fatigue bake lists them.
BAKE_OPTIONS = (
    BakeOption("action", str, "Action", "bake this action (default: the armature's assigned action)", "--action"),
    BakeOption("frame_start", int, "Start", "first source frame (default: the file's bake range)"),
    BakeOption("frame_end", int, "End", "last source frame (default: the file's bake range)"),
    BakeOption("preset", str, "Preset", "fitness preset: one of "
               + ", ".join(("Fresh", *fatigue_params.PRESETS)) + " (Fresh: no fatigue)", "--preset"),
    BakeOption("fitness", float, "Fitness", "0 exhausted .. 0.5 average adult .. 1 athlete", "--fitness",
               check=_rate("fitness")),
    BakeOption("F", float, "F", "fatigue rate 1/s (with R and r)", "--F", check=_rate("F")),
    BakeOption("R", float, "R", "recovery rate 1/s (with F and r)", "--R", check=_rate("R")),
    BakeOption("r", float, "r", "rest recovery multiplier (with F and R)", "--r", check=_rate("r")),
    BakeOption("time_scale", float, "Fatigue speed-up",
               "fatigue runs this many times faster (default: the preset's; 1 with F, R, r)", "--time-scale",
               check=_rate("time_scale")),
    BakeOption("tiredness_start", float, "Tired at start",
               "how tired at the first frame, 0 fresh .. 0.9 spent (directs the preset's fatigue)",
               check=tiredness_problem),
    BakeOption("tiredness_end", float, "Tired by the end",
               "how tired by the end of the range, 0 fresh .. 0.9 spent (directs the preset's fatigue)",
               check=tiredness_problem),
    BakeOption("mode", str, "Mode", "simulation mode (default: the armature's setting)", "--mode",
               choices=("srb", "torque"), setting=True),
    BakeOption("foot_placement", str, "Foot placement", "SRB foot placement: the shipped learned policy, the "
               "rule, or the rule paced by the shipped residual (default: the armature's setting)", "--foot-placement",
               choices=("policy", "rule", "paced"), setting=True),
    BakeOption("effort_economy", float, "Effort economy", "how far tired joints (limbs, knees) yield to their "
               f"loads: 0 never .. 1 default .. {fatigue_params.MAX_EFFORT_ECONOMY:g} (default: the armature's setting)",
               "--effort-economy", check=_rate("effort_economy"),
               setting=True),
    BakeOption("breathing", bool, "Breathing", "a tired take breathes; off: it does not (default: the armature's "
               "Breathing setting)",
               "--no-breathing", setting=True),
    BakeOption("kneeling", bool, "Kneel to recover", "exhausted legs rest kneeling; off: every rest is taken "
               "standing (default: the armature's Kneel to recover setting)", "--no-kneeling", setting=True),
    BakeOption("mass", float, "Mass", "body mass of the simulated character, kg (default: the armature's Mass "
               "setting)", "--mass", check=partial(fatigue_params.range_problem, lo=MASS_RANGE[0], hi=MASS_RANGE[1]),
               setting=True),
    BakeOption("take_name", str, "Take name", "name of the new action (default <action>.fatigued)"),
    BakeOption("engine", str, "Physics engine", "physics engine (default: the add-on preference; auto: PyBullet "
               "where it imports, else MuJoCo)", "--engine", choices=("auto", "pybullet", "mujoco")),
)


def bake_option(name: str) -> BakeOption:
    """The declaration of the bake option ``name`` (KeyError for none)."""
    for option in BAKE_OPTIONS:
        if option.name == name:
            return option
    raise KeyError(f"no bake option {name!r}")


def enum_items(name: str, shown: dict[str, tuple[str, str]]) -> tuple[tuple[str, str, str], ...]:
    """A Blender enum's items for the word option ``name``: one per declared choice, in its order
    (identifier upper-case, as BakeOption.setting_value gives it), named and described by
    ``shown`` (choice -> (name, description); KeyError where it misses one)."""
    return tuple((choice.upper(), *shown[choice]) for choice in bake_option(name).choices)


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
        # Every plain field that is not its default travels as JSON, so a new one travels by itself.
        kwargs = {f.name: getattr(self, f.name) for f in fields(self)
                  if f.name not in _WRITTEN_APART and getattr(self, f.name) != f.default}
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
