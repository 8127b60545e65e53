"""Worker process for the bake: ``python -m runtime.worker REQUEST.npz TAKE.npz``.

Blender starts this with its own Python (``sys.executable``, the extension's wheels on its path)
when the add-on preferences ask for a separate process, so that a simulator crash cannot take an
unsaved session down.  numpy, quadprog and a physics engine (runtime.engines.chooser) only.

Protocol:
* the request is an ``.npz`` written by ``runtime.request.SimulationRequest.write`` (Clip,
  FatigueSchedule, mode, height, mass; no pickles);
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

from .errors import SimulationError  # noqa: E402
from .motion.clip import Clip  # noqa: E402
from .motion.take import FATIGUE_FIELDS, Take  # noqa: E402
from .request import SimulationRequest  # noqa: E402

from .request import PROTOCOL  # noqa: E402  (requests and takes share the version)


# ============================================================================= serialisation

def _json(a) -> np.ndarray:
    return np.array(json.dumps(a))


def _unjson(a):
    return json.loads(str(a))


def write_take(path, take: Take) -> None:
    c = take.clip
    arrays = {
        "meta": _json({"protocol": PROTOCOL, "mode": take.mode, "fps": float(take.fps), "clip_name": c.name,
                       "clip_fps": float(c.fps), "clip_loop": bool(c.loop), "joints": list(c.joints),
                       "events": take.events, "notes": take.notes, "stats": take.stats,
                       "engine": take.engine}),
        "root_pos": c.root_pos, "root_rot": c.root_rot, "joint_rots": c.joint_rots,
        "reference_time": take.reference_time, "torque": take.torque, "contacts": take.contacts,
        "residual_force": take.residual_force, "com": take.com,
    }
    for k in FATIGUE_FIELDS:
        arrays["fatigue_" + k] = take.fatigue[k]
    for k in ("tau_max", "strength", "breath"):
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
                    events=meta["events"], notes=meta["notes"], stats=meta["stats"], engine=meta.get("engine", ""),
                    **{k: z[k] for k in ("tau_max", "strength", "breath") if k in z.files})


def check_take(take: Take, clip: Clip) -> None:
    """Raise ValueError unless ``take`` is a whole, finite take of ``clip`` (what the worker was
    asked for): a take file can be complete as a zip and still be wrong."""
    T = take.frames
    c = take.clip
    if T < 1 or tuple(c.joints) != tuple(clip.joints):
        raise ValueError(f"{T} frames of joints {len(c.joints)}, expected joints {len(clip.joints)}")
    shapes = {"root_pos": (c.root_pos, (T, 3)), "root_rot": (c.root_rot, (T, 4)),
              "joint_rots": (c.joint_rots, (T, len(clip.joints), 4)), "reference_time": (take.reference_time, (T,))}
    if take.breath is not None:
        shapes["breath"] = (take.breath, (T,))
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
    from .simulate import simulate   # the simulation's modules load here, not at start-up

    try:
        req = SimulationRequest.read(argv[0])
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

    try:
        take = simulate(req, progress, alive)
    except (SimulationError, ValueError) as exc:   # PolicyError is a ValueError
        _say(f"@@error {str(exc).splitlines()[0]}")
        return 2
    write_take(argv[1], take)
    _say("@@done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
