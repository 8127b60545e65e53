"""Worker process for the bake: ``python -m runtime.worker REQUEST.npz TAKE.npz``.

Blender starts this in a separate Python (add-on preferences: *Worker Python*, or Blender's own
when it can import pybullet) so that a simulator crash cannot take an unsaved session down, and
so platforms without a pybullet wheel for Blender's Python can still bake.  numpy + pybullet only.

Protocol:
* the request is an ``.npz`` written by ``write_request`` (Clip, FatigueSchedule, mode, height,
  mass; no pickles);
* stdout carries lines ``@@progress 0.42`` (about 100 of them) and ``@@alive`` (at least one a second
  while it simulates: the backend stops a worker silent for longer than its watchdog), then
  ``@@done``; anything else on stdout (PyBullet's build banner) is to be ignored;
* failures the user can fix end with ``@@error <one line>`` and exit status 2;
* the Take is written to a temporary file next to TAKE.npz and renamed into place when complete,
  so a reader never sees half a take.  Killing the process (ESC in Blender) leaves no take.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

if __package__ in (None, ""):          # ``python runtime/worker.py``: make ``runtime`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "runtime"            # noqa: A001

from .clip import Clip  # noqa: E402
from .anthropometry import BodyPlan  # noqa: E402
from .schedule import FatigueSchedule  # noqa: E402
from .take import FATIGUE_FIELDS, Take  # noqa: E402

PROTOCOL = 1
_SCHEDULE_FIELDS = ("F", "R", "r", "LD", "LR", "initial_fatigue")


# ============================================================================= serialisation

def _json(a) -> np.ndarray:
    return np.array(json.dumps(a))


def _unjson(a):
    return json.loads(str(a))


def write_request(path, clip: Clip, schedule: FatigueSchedule | None, mode: str = "srb",
                  height: float = 1.62, mass: float = 70.0, plan: BodyPlan | None = None, **kwargs) -> None:
    """Everything ``simulate`` needs, as one npz (``kwargs``: other JSON-able simulate arguments)."""
    if plan is not None:
        kwargs["plan"] = {"ratios": dict(plan.ratios), "sex": plan.sex, "notes": list(plan.notes)}
    arrays = {
        "meta": _json({"protocol": PROTOCOL, "mode": mode, "height": float(height), "mass": float(mass),
                       "clip_name": clip.name, "clip_fps": float(clip.fps), "clip_loop": bool(clip.loop),
                       "joints": list(clip.joints), "has_schedule": schedule is not None,
                       "schedule_fps": float(schedule.fps) if schedule is not None else 0.0,
                       "kwargs": kwargs}),
        "root_pos": clip.root_pos, "root_rot": clip.root_rot, "joint_rots": clip.joint_rots,
    }
    if schedule is not None:
        for k in _SCHEDULE_FIELDS:
            arrays["schedule_" + k] = getattr(schedule, k)
    _save_atomic(path, arrays)


def read_request(path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        meta = _unjson(z["meta"])
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
    return {"clip": clip, "schedule": schedule, "mode": meta["mode"], "height": meta["height"],
            "mass": meta["mass"], **kwargs}


def write_take(path, take: Take) -> None:
    c = take.clip
    arrays = {
        "meta": _json({"protocol": PROTOCOL, "mode": take.mode, "fps": float(take.fps), "clip_name": c.name,
                       "clip_fps": float(c.fps), "clip_loop": bool(c.loop), "joints": list(c.joints),
                       "events": take.events, "notes": take.notes, "stats": take.stats}),
        "root_pos": c.root_pos, "root_rot": c.root_rot, "joint_rots": c.joint_rots,
        "reference_time": take.reference_time, "torque": take.torque, "contacts": take.contacts,
        "residual_force": take.residual_force, "com": take.com,
    }
    for k in FATIGUE_FIELDS:
        arrays["fatigue_" + k] = take.fatigue[k]
    for k in ("tau_max", "strength"):
        if getattr(take, k) is not None:
            arrays[k] = getattr(take, k)
    _save_atomic(path, arrays)


def read_take(path) -> Take:
    with np.load(path, allow_pickle=False) as z:
        meta = _unjson(z["meta"])
        clip = Clip(name=meta["clip_name"], fps=meta["clip_fps"], root_pos=z["root_pos"], root_rot=z["root_rot"],
                    joint_rots=z["joint_rots"], loop=meta["clip_loop"], joints=tuple(meta["joints"]))
        return Take(mode=meta["mode"], fps=meta["fps"], clip=clip, reference_time=z["reference_time"],
                    fatigue={k: z["fatigue_" + k] for k in FATIGUE_FIELDS}, torque=z["torque"],
                    contacts=z["contacts"], residual_force=z["residual_force"], com=z["com"],
                    events=meta["events"], notes=meta["notes"], stats=meta["stats"],
                    **{k: z[k] for k in ("tau_max", "strength") if k in z.files})


def check_take(take: Take, clip: Clip) -> None:
    """Raise ValueError unless ``take`` is a whole, finite take of ``clip`` (what the worker was
    asked for): a take file can be complete as a zip and still be wrong."""
    T = take.frames
    c = take.clip
    if T < 1 or tuple(c.joints) != tuple(clip.joints):
        raise ValueError(f"{T} frames of joints {len(c.joints)}, expected joints {len(clip.joints)}")
    shapes = {"root_pos": (c.root_pos, (T, 3)), "root_rot": (c.root_rot, (T, 4)),
              "joint_rots": (c.joint_rots, (T, len(clip.joints), 4)), "reference_time": (take.reference_time, (T,))}
    for k in FATIGUE_FIELDS:
        shapes["fatigue_" + k] = (take.fatigue[k], (T, np.shape(take.fatigue["MF"])[1]))
    for name, (a, shape) in shapes.items():
        a = np.asarray(a)
        if a.shape != shape:
            raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"{name} holds non-finite values")


def _save_atomic(path, arrays: dict) -> None:
    path = os.fspath(path)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


# ============================================================================= the process

def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2:
        sys.stderr.write("usage: python -m runtime.worker REQUEST.npz TAKE.npz\n")
        return 2
    from .simulate import SimulationError, simulate   # pybullet is imported here, not at load

    try:
        req = read_request(argv[0])
    except (OSError, ValueError, KeyError) as exc:
        _say(f"@@error cannot read the bake request: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return 2
    last = [-1]
    said = [time.monotonic()]
    _say("@@alive")

    def progress(fraction: float) -> None:
        pct = int(round(100 * fraction))
        if pct != last[0]:
            last[0] = pct
            said[0] = time.monotonic()
            _say(f"@@progress {fraction:.4f}")

    def alive() -> bool:
        """Called every simulation step: a line a second tells the backend's watchdog it is not hung
        (a rest can hold the progress still for a while)."""
        now = time.monotonic()
        if now - said[0] >= 1.0:
            said[0] = now
            _say("@@alive")
        return False

    kwargs = {k: req[k] for k in ("seconds", "hold", "out_fps", "plan", "effort_economy") if k in req}
    try:
        if req.get("policy"):
            from .policy import SrbPolicy
            kwargs["policy"] = SrbPolicy.load(req["policy"])
        take = simulate(req["clip"], req["schedule"], mode=req["mode"], height=req["height"], mass=req["mass"],
                        progress=progress, cancel=alive, **kwargs)
    except (SimulationError, ValueError) as exc:   # PolicyError is a ValueError
        _say(f"@@error {str(exc).splitlines()[0]}")
        return 2
    write_take(argv[1], take)
    _say("@@done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
