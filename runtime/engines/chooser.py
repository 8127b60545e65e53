"""Which physics engine simulates the proxy: PyBullet or MuJoCo, chosen once per take.

Why two: PyBullet has wheels for Linux x86_64 / CPython 3.11 only, MuJoCo (``mujoco`` +
``mujoco-core``) for CPython 3.11 and 3.13 on Linux, Windows and macOS.  Both build the proxy from
the same body description (the URDF shipped in ``runtime/data``, shaped by the character's plan)
and give the SRB simulation the same two services: forward kinematics with distances to the floor
(``Kinematics``) and the fatigue-bounded upper body (``LimbSimulator``).  Same inputs, same engine:
the same take, bit for bit; the Take says which engine ran.

Nothing here imports an engine at module level: a missing wheel is found when a take asks for it,
and said in one line naming the fix (``EngineMissing``).
"""
from __future__ import annotations

import importlib
import os
import threading

from ..body.proxy import DEFAULT_HEIGHT
from ..errors import EngineMissing

ENGINES = ("pybullet", "mujoco")
AUTO = "auto"
LABELS = {"pybullet": "PyBullet", "mujoco": "MuJoCo"}
_probed: dict[str, bool] = {}


def importable(name: str) -> bool:
    """Whether engine ``name`` imports here (probed once per process)."""
    if name not in _probed:
        try:
            importlib.import_module(name)      # each engine's module bears its name
            _probed[name] = True
        except Exception:       # a broken wheel (wrong Python, missing DLL) is as missing as an absent one
            _probed[name] = False
    return _probed[name]


def available() -> tuple[str, ...]:
    """Engines that import here, in order of preference."""
    return tuple(e for e in ENGINES if importable(e))


def resolve(preference: str | None = AUTO) -> str:
    """``auto`` (or None) -> PyBullet where it imports, else MuJoCo; a named engine -> itself.
    EngineMissing when the engine (or every engine) is missing."""
    preference = (preference or AUTO).lower()
    if preference == AUTO:
        found = available()
        if not found:
            raise EngineMissing("no physics engine imports in this Python: install the extension zip built for "
                                "this platform (it carries MuJoCo), or pip install mujoco-core mujoco")
        return found[0]
    if preference not in ENGINES:
        raise EngineMissing(f"unknown physics engine {preference!r}: use auto, {', '.join(ENGINES)}")
    if not importable(preference):
        other = [e for e in available() if e != preference]
        hint = (f"set Physics engine to Automatic or {LABELS[other[0]]} in the add-on preferences" if other
                else "install the extension zip built for this platform")
        raise EngineMissing(f"{LABELS[preference]} does not import in this Python: {hint}")
    return preference


def kinematics(engine: str, height: float, plan=None):
    """A new forward-kinematics body of the proxy in ``engine`` (close() it, or use ``with``)."""
    if engine == "mujoco":
        from .mujoco.kinematics import MujocoKinematics
        return MujocoKinematics(height, plan)
    from .pybullet.kinematics import Kinematics
    return Kinematics(height, plan)


def limb_simulator(engine: str, height: float, rate: float, mass: float, plan=None):
    """A new fatigue-bounded upper body of the proxy in ``engine``."""
    if engine == "mujoco":
        from .mujoco.limbs import MujocoLimbSimulator
        return MujocoLimbSimulator(height, rate=rate, mass=mass, plan=plan)
    from .pybullet.limbs import LimbSimulator
    return LimbSimulator(height, rate=rate, mass=mass, plan=plan)


SHARED_CLIENTS = 4   # Kinematics kept open per thread (one per character size met lately)
_shared = threading.local()


def shared_kinematics(height: float = DEFAULT_HEIGHT, plan=None, engine: str = "pybullet"):
    """An open Kinematics for this height and proportions, kept for later calls in this thread
    (and process): don't close it.

    Why: opening a PyBullet client and loading the proxy costs about 20 ms, a tenth of a 10 s
    SRB take, and a batch bakes take after take of the same character.  Per thread, since a
    client is not safe to share between threads (Blender bakes in the background); per process,
    since a forked worker must not use its parent's."""
    if getattr(_shared, "pid", None) != os.getpid():
        _shared.pid, _shared.clients = os.getpid(), {}
    clients = _shared.clients
    key = (engine, float(height), None if plan is None else plan.key())
    kin = clients.pop(key, None)
    if kin is None or kin.closed:
        kin = kinematics(engine, height, plan)
    clients[key] = kin                      # the most recently used last
    while len(clients) > SHARED_CLIENTS:
        clients.pop(next(iter(clients))).close()
    return kin
