"""Unexpected failures: the full report goes to a log file, the user gets one line.

Expected bad input is a ``BakeInputError`` (or one of its kinds below) whose text names the fix;
every exception the add-on raises on purpose is defined here.  Anything else (a bug, a
crash of a library) must not show a traceback either: ``unexpected`` writes the traceback to a
log file and returns one line saying what failed, where, and where the report is.  No bpy here:
the operator, the backend and ``./fatigue bake`` all use it.
"""
from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

class BakeInputError(Exception):
    """Expected bad input: shown to the user as one line, never as a traceback."""

class BakeCancelled(BakeInputError):
    """The user cancelled the bake (ESC, or a cancel callback)."""

class BackendError(BakeInputError):
    """The simulation failed (SimulationError, worker died, no engine): one line for the user."""

class RetargetError(BakeInputError):
    """Expected bad input for the retarget: one line for the user, naming the fix."""

class RigMappingError(BakeInputError):
    """Expected bad input about the rig: one line for the user, naming the fix."""


_log_dir: Path | None = None     # None: the system's temporary folder
_prefix = "fatigue-bake"
_last_log: Path | None = None


def set_log_dir(path, prefix: str = "fatigue-bake") -> None:
    """Write reports into ``path`` (``./fatigue bake``: beside its output) as ``<prefix>-...log``;
    None: the temp folder."""
    global _log_dir, _prefix
    _log_dir = Path(path) if path is not None else None
    _prefix = prefix


def last_log() -> Path | None:
    """The report written last in this process (the batch puts it in its summary)."""
    return _last_log


def write_log(text: str, prefix: str | None = None, folder=None) -> Path | None:
    """``text`` in a new file ``<prefix>-<time>-<pid>.log`` in ``folder`` (default: the one set,
    else the temp folder, which is also the fallback); None when nothing can be written."""
    global _last_log
    prefix = prefix or _prefix
    stamp = time.strftime("%Y%m%d-%H%M%S")
    first = Path(folder) if folder is not None else _log_dir
    for where in ([first] if first is not None else []) + [Path(tempfile.gettempdir())]:
        path = where / f"{prefix}-{stamp}-{os.getpid()}.log"
        n = 1
        while path.exists():
            n += 1
            path = where / f"{prefix}-{stamp}-{os.getpid()}-{n}.log"
        try:
            where.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError:
            continue
        _last_log = path
        return path
    return None


def one_line(text: str, limit: int = 200) -> str:
    """The first line of ``text`` that is not a traceback header, at most ``limit`` characters."""
    lines = [s.strip() for s in str(text).splitlines() if s.strip()]
    lines = [s for s in lines if "Traceback (most recent call last)" not in s]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def unexpected(exc: BaseException, what: str = "the bake", context: str = "") -> str:
    """Log ``exc`` with its traceback; return the user's line: what failed, in which function,
    that nothing was written, and the report's path."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        f = Path(frames[-1].filename)
        where = f" in {f.parent.name if f.stem == '__init__' else f.stem}.{frames[-1].name}"
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    path = write_log(f"{what} failed unexpectedly{where}\n{context}\n\n{text}")
    detail = one_line(str(exc), 120)
    line = f"{what} failed unexpectedly ({type(exc).__name__}{where}" + (f": {detail}" if detail else "") + ")"
    line += "; nothing was written"
    return line + (f"; full report in {path}: please send it with the .blend" if path is not None else "")
