"""Where the simulation runs: in Blender's own Python, or in a worker process (runtime/worker.py)
started with that same Python, for crash isolation.  Never a Python the user must install: the
extension carries its physics engine (PyBullet on Linux / Python 3.11, MuJoCo everywhere) as wheels.

No bpy here: the operator and the bake pick the backend (add-on preferences) and drive one of
``InProcessRun`` / ``WorkerRun`` through the same small interface, polled from a modal timer or
waited on synchronously (``run_sync``, used under ``blender -b`` and in tests):

* ``start()``; ``poll()`` -> ``("running", fraction)``, ``("done", Take)`` or ``("error", one line)``;
* ``cancel()`` stops it (kills the worker; the in-process thread stops at its next step);
  nothing is returned afterwards and nothing is written.
"""
from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..runtime.request import bake_option
from .failure import BackendError, BakeCancelled

ROOT = Path(__file__).resolve().parent.parent      # extension root: holds the ``runtime`` package
PLATFORM_FIX = "install the extension zip built for this platform"


def engine_name(preference) -> str:
    """Add-on preference or option (AUTO / PYBULLET / MUJOCO, any case; None or "" = auto) ->
    ``runtime.engines.chooser``'s name; BackendError names the choices for anything else."""
    refusal = bake_option("engine").refusal(preference or "auto")
    if refusal:
        raise BackendError(refusal)
    return (preference or "auto").strip().lower()


def simulation_here(engine: str = "auto") -> str:
    """The engine this Python simulates ``engine`` (a preference) with: resolved, and it and
    quadprog imported here.  BackendError with the fix when one of them does not import.
    Imports compiled wheels: call it when a bake starts, never at register or draw time."""
    from ..runtime.engines import chooser
    from ..runtime.errors import EngineMissing

    try:
        name = chooser.resolve(engine)
    except EngineMissing as exc:
        raise BackendError(str(exc)) from None
    try:
        import quadprog  # noqa: F401
    except Exception:          # a wheel for another Python or platform fails with more than ImportError
        raise BackendError(f"quadprog (the contact solver) does not import in this Python: {PLATFORM_FIX}") from None
    return name


def choose(backend: str, engine: str = "auto") -> tuple[str, str]:
    """Preferences (Simulation backend, Physics engine) -> (where, engine): ("WORKER", name) when
    the backend preference is WORKER (crash isolation), else ("IN_PROCESS", name).  The engine
    must import here either way (the worker is this same Python): BackendError names the fix."""
    name = simulation_here(engine_name(engine))
    return ("WORKER" if backend == "WORKER" else "IN_PROCESS"), name


_FOUND: dict = {}


def engines_installed() -> tuple[str, ...]:
    """Engines whose compiled modules are on sys.path, found without importing them (the panel
    asks on every redraw; a wheel is imported only when a bake starts)."""
    if "engines" not in _FOUND:
        import importlib.util

        def spec(name):
            try:
                return importlib.util.find_spec(name)
            except (ImportError, ValueError):
                return None

        found = []
        if spec("pybullet") is not None:
            found.append("pybullet")
        mujoco = spec("mujoco")          # the wrapper alone is no engine: its compiled core sits beside it
        if mujoco is not None and any(any(Path(d).glob("_structs*")) for d in mujoco.submodule_search_locations or ()):
            found.append("mujoco")
        _FOUND["engines"] = tuple(found)
    return _FOUND["engines"]


def no_engine_note() -> str | None:
    """What the panel says where no physics engine is installed (None where one is): the rig
    tools work, the bake cannot."""
    if engines_installed():
        return None
    import platform

    if sys.platform == "win32" and platform.machine().lower() in ("arm64", "aarch64"):
        return "No physics engine for Windows on ARM: bake in Blender for Windows x64 (it runs emulated)"
    return f"No physics engine here: {PLATFORM_FIX}"


# ============================================================================= in process

class InProcessRun:
    """``runtime.simulate`` in a background thread of this process (``threaded=False``: inline)."""

    def __init__(self, request, threaded: bool = True):
        self.request = request
        self.threaded = threaded
        self.fraction = 0.0
        self._cancel = False
        self._result = None
        self._thread = None

    def _run(self, progress=None, cancel=None):
        from ..runtime.errors import PolicyError, SimulationCancelled, SimulationError
        from ..runtime.simulate import simulate

        def prog(f):
            self.fraction = f
            if progress is not None:
                progress(f)

        def canc():
            if cancel is not None and cancel():
                self._cancel = True
            return self._cancel

        try:
            take = simulate(self.request, prog, canc)
            self._result = ("done", take)
        except SimulationCancelled:
            self._result = ("cancelled", None)
        except (SimulationError, PolicyError) as exc:
            self._result = ("error", _one_line(exc))
        except Exception as exc:   # a simulator bug: one line, the traceback in a log file
            from . import failure

            self._result = ("error", failure.unexpected(exc, "the simulation"))

    def start(self):
        if self.threaded:
            self._thread = threading.Thread(target=self._run, name="fatigue-bake", daemon=True)
            self._thread.start()
        return self

    def run(self, progress=None, cancel=None):
        """Inline (no thread): returns the poll() result when finished."""
        self._run(progress, cancel)
        return self._result

    def poll(self):
        if self._result is None:
            return ("running", self.fraction)
        return self._result

    def cancel(self):
        self._cancel = True
        if self._thread is not None:
            self._thread.join(timeout=30.0)


# ============================================================================= worker process

_CHECKED: dict = {}
WORKER_MODULES = ("numpy", "quadprog", "pybullet", "mujoco")


def _module_dirs() -> list[str]:
    """Folders holding the simulation's modules in THIS Python, found without importing them
    (passed to a worker of the same Python: Blender adds the extension's wheels to sys.path at
    run time, a child process would not)."""
    import importlib.util

    dirs = []
    for name in WORKER_MODULES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
            continue
        p = Path(spec.origin).resolve().parent                     # the package, or the folder of a module
        d = str(p.parent if spec.submodule_search_locations else p)
        if d not in dirs:
            dirs.append(d)
    return dirs


def worker_env(python: str) -> dict:
    env = dict(os.environ)
    paths = [str(ROOT)]
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        paths += _module_dirs()
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join(paths + ([old] if old else []))
    env["PYTHONUNBUFFERED"] = "1"
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):   # single-threaded sim
        env[var] = "1"
    return env


def worker_python(python: str | None = None, engine: str = "auto") -> str:
    """The Python the worker runs in: Blender's own (``sys.executable``, with the extension's
    wheels on its path), never one the user must install; ``python`` is another executable to
    check (tests).  Checked once per executable and engine: it must import numpy and quadprog and
    resolve ``engine`` in a fresh process.  BackendError names the fix."""
    python = python or sys.executable
    if not python or not os.path.isfile(python) or "blender" in os.path.basename(python).lower():
        raise BackendError(f"Blender's Python executable was not found ({python or 'none'}): set Simulation "
                           f"backend to Automatic in the add-on preferences")
    engine = engine_name(engine)
    key = (python, os.path.getmtime(python), engine)
    if key not in _CHECKED:
        probe = ("import numpy, quadprog\nfrom runtime.engines import chooser\nfrom runtime.errors import EngineMissing\n"
                 f"try:\n    chooser.resolve({engine!r})\nexcept EngineMissing as exc:\n"
                 "    print(exc)\n    raise SystemExit(3)\n")
        try:
            res = subprocess.run([python, "-c", probe], env=worker_env(python), cwd=str(ROOT),
                                 capture_output=True, text=True, timeout=60)
            _CHECKED[key] = (res.returncode == 0, res.stdout.strip().splitlines()[-1:] if res.returncode == 3 else [])
        except (OSError, subprocess.TimeoutExpired):
            _CHECKED[key] = (False, [])
    ok, missing = _CHECKED[key]
    if not ok:
        why = missing[0] if missing else f"it cannot import numpy and quadprog: {PLATFORM_FIX}"
        raise BackendError(f"the simulation worker ({python}) cannot simulate: {why}")
    return python


WATCHDOG_S = 120.0      # default: a worker silent for longer than this is stopped
BANNER = "pybullet build time"   # PyBullet's import banner: never the reason a worker stopped


class WorkerRun:
    """``python -m runtime.worker request.npz take.npz``, progress streamed from its stdout.

    The worker says something at least every second while it simulates; one silent for longer
    than ``watchdog_s`` (hung, or stopped by the system) is killed and the run fails in one line.
    Its strength calibration, a fresh pass over the clip before the first word, runs faster than
    real time: the bound is at least the clip's length, so a long clip is not stopped there."""

    def __init__(self, request, python: str, watchdog_s: float = WATCHDOG_S):
        self.request = request
        self.python = python
        clip = request.clip
        self.watchdog_s = max(float(watchdog_s), (clip.frames - 1) / max(float(clip.fps), 1e-9))
        self._heard = time.monotonic()
        self.proc = None
        self.fraction = 0.0
        self._lines: queue.Queue = queue.Queue()
        self._stderr: list[str] = []
        self._error = None
        self._done = False
        self._result = None
        self._dir = None

    def start(self):
        self._dir = tempfile.mkdtemp(prefix="fatigue_bake_")
        req = os.path.join(self._dir, "request.npz")
        self.take_path = os.path.join(self._dir, "take.npz")
        self.request.write(req)
        try:
            self.proc = subprocess.Popen(
                [self.python, "-m", "runtime.worker", req, self.take_path], cwd=str(ROOT),
                env=worker_env(self.python), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, bufsize=1)
        except OSError as exc:
            self._cleanup()
            raise BackendError(f"cannot start the simulation worker '{self.python}' ({exc.strerror or exc}): "
                               f"set Simulation backend to Automatic in the add-on preferences") from None
        self._heard = time.monotonic()
        threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True).start()
        return self

    def _read(self, stream, is_stdout):
        for line in stream:
            if is_stdout:
                self._heard = time.monotonic()
                self._lines.put(line.rstrip("\n"))
            elif not line.startswith(BANNER):
                self._stderr.append(line.rstrip("\n"))
                del self._stderr[:-200]
        stream.close()

    def poll(self):
        if self._result is not None:
            return self._result
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line.startswith("@@progress "):
                try:
                    self.fraction = float(line.split()[1])
                except ValueError:
                    pass
            elif line.startswith("@@error "):
                self._error = line[len("@@error "):].strip()
            elif line.strip() == "@@done":
                self._done = True
        rc = self.proc.poll()
        if rc is None:
            silent = time.monotonic() - self._heard
            if silent <= self.watchdog_s:
                return ("running", self.fraction)
            self._kill()
            self._result = ("error", f"the simulation worker was silent for {silent:.0f} s (limit {self.watchdog_s:g} s) "
                                     f"and was stopped; nothing was written: bake again, raise Worker watchdog in "
                                     f"the add-on preferences for very long clips")
            self._cleanup()
            return self._result
        self.proc.wait()
        time.sleep(0.01)
        self._drain()
        try:
            self._result = self._outcome(rc)
        finally:
            self._cleanup()
        return self._result

    def _outcome(self, rc: int):
        """The run's result once the worker has exited: its take (checked), or one line."""
        if self._error:
            return ("error", self._error)
        if rc == 0 and self._done and os.path.exists(self.take_path):
            from ..runtime import worker
            try:
                take = worker.read_take(self.take_path)
                worker.check_take(take, self.request.clip)
            except Exception as exc:     # any damage to the file (truncated, not a zip, wrong arrays)
                return ("error", f"the simulation worker's take is unreadable ({type(exc).__name__}: "
                                 f"{_one_line(exc)[:120]}): nothing was written; bake again")
            return ("done", take)
        how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
        if rc == 0:
            how = "exit code 0 without a take"
        last = next((s for s in reversed(self._stderr) if s.strip()), "")
        detail = f": {last.strip()[:160]}" if last else ""
        log = None
        if any("Traceback" in s for s in self._stderr):     # a crash: its report goes to a file, not to the user
            from . import failure

            log = failure.write_log("the simulation worker stopped\n\n" + "\n".join(self._stderr))
        return ("error", f"the simulation worker stopped ({how}{detail}); nothing was written: "
                         f"bake again" + (f"; its output is in {log}" if log else ""))

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def _drain(self):
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line.startswith("@@error "):
                self._error = line[len("@@error "):].strip()
            elif line.strip() == "@@done":
                self._done = True

    def cancel(self):
        self._kill()
        self._result = ("cancelled", None)
        self._cleanup()

    def _cleanup(self):
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def run_sync(run, progress=None, cancel=None, interval: float = 0.02):
    """Drive a run to its end in this thread: returns the Take or raises BakeCancelled / BackendError."""
    if isinstance(run, InProcessRun) and not run.threaded:
        state, value = run.run(progress, cancel)
    else:
        run.start()
        last = -1.0
        while True:
            state, value = run.poll()
            if state != "running":
                break
            if cancel is not None and cancel():
                run.cancel()
                state, value = "cancelled", None
                break
            if progress is not None and value != last:
                last = value
                progress(value)
            time.sleep(interval)
    if state == "done":
        return value
    if state == "cancelled":
        raise BakeCancelled("Bake cancelled: nothing was written")
    raise BackendError(value)


def _one_line(exc) -> str:
    s = str(exc).strip()
    return s.splitlines()[0] if s else type(exc).__name__
