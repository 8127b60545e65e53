"""A task of the ./fatigue farm job, run by Blender on a worker (tools/farm.py writes the job):

    blender -b --python tools/farm_task.py -- clean --out DIR --summary S.json --scene S.blend ... [--variant V ...]
    blender -b --python tools/farm_task.py -- bake --scene S.blend [--variant V] --out DIR [--Name=value ...]
    blender -b --python tools/farm_task.py -- summary --out DIR --summary S.json --scene S.blend ... [--variant V ...]

``clean`` removes a previous run's take records and summary from DIR (a re-run's Summary reads
its own run's alone).
``bake`` bakes one take with ./fatigue bake's own per-take code (tools/batch.py: ``plan`` checks
the options, batch_take's ``take_main`` / ``bake_one`` open the file, run the operator and save), writes
``DIR/<scene>[.<variant>].blend`` and ``DIR/<scene>[.<variant>].json`` (the take's summary row),
prints ``openjd_progress: N`` and ``openjd_status: ...`` as it simulates, and fails alone with
``openjd_fail: <one line>`` (exit 1).  ``summary`` merges the per-take JSON into the summary of
``./fatigue bake --summary``, failed and missing takes included.  The job passes every take option
of ./fatigue bake as ``--option=value`` (empty: the file's own; a flag as ``--no-breathing=yes``).

The add-on the take runs: the extension installed in this Blender, else the checkout these
scripts come from, else the extension zip given with ``--extension-zip`` (installed once per
worker, under a lock).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PKG_ID = "fatigued_takes"
PROGRESS = re.compile(r"^Fatigue bake: (\d+)%$")


class TaskError(Exception):
    """The task fails with this one line."""


def emit(line: str) -> None:
    sys.__stdout__.write(line + "\n")
    sys.__stdout__.flush()


# ============================================================================= the add-on

def _installed_extension() -> Path | None:
    import bpy

    for repo in bpy.context.preferences.extensions.repos:
        folder = Path(repo.directory) / PKG_ID if repo.directory else None
        if folder is not None and (folder / "blender_manifest.toml").is_file():
            return folder
    return None


def _lock(file) -> None:
    """Hold ``file`` exclusively until it is closed (the other tasks of this worker wait)."""
    try:
        import fcntl
    except ImportError:            # Windows
        import msvcrt

        msvcrt.locking(file.fileno(), msvcrt.LK_LOCK, 1)
        return
    fcntl.flock(file, fcntl.LOCK_EX)


def _install(zip_path: Path) -> Path:
    """Install the extension zip into this Blender's user repository (once: a lock keeps two
    tasks of one worker from installing it at the same time)."""
    import bpy

    if not zip_path.is_file():
        raise TaskError(f"ExtensionZip {zip_path}: no such file on this worker: give the zip of ./fatigue build")
    base = Path(bpy.utils.user_resource("EXTENSIONS"))
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f".{PKG_ID}.install.lock", "w") as lock:
        _lock(lock)
        found = _installed_extension()
        if found is not None:
            return found
        emit(f"openjd_status: installing the Fatigued Takes extension from {zip_path.name}")
        try:
            bpy.ops.extensions.package_install_files(filepath=str(zip_path), repo="user_default",
                                                     enable_on_install=True)
        except (RuntimeError, AttributeError) as exc:
            message = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise TaskError(f"cannot install {zip_path.name} into this Blender ({message}): install the "
                            f"extension on the worker, or give the zip for its platform") from None
    found = _installed_extension()
    if found is None:
        raise TaskError(f"{zip_path.name} installed no Fatigued Takes extension: give the zip of ./fatigue build")
    return found


def addon_root(zip_text: str) -> Path:
    """The folder holding the add-on (``__init__.py``, ``fatigue_addon/``, ``runtime/``)."""
    found = _installed_extension()
    if found is not None:
        return found
    checkout = HERE.parent
    if (checkout / "blender_manifest.toml").is_file() and (checkout / "fatigue_addon").is_dir():
        return checkout
    if zip_text and not Path(zip_text).is_dir():     # an empty PATH parameter is the template's folder
        return _install(Path(zip_text))
    raise TaskError("the Fatigued Takes extension is not installed on this worker: set the job parameter "
                    "ExtensionZip to the zip of ./fatigue build, or install the extension in the workers' Blender")


def load_batch(zip_text: str):
    """tools/batch.py, with the add-on's ``runtime`` importable and its package loaded from ``root``."""
    root = addon_root(zip_text)
    for path in (str(HERE), str(root)):
        if path not in sys.path:
            sys.path.insert(0, path)
    import demo_blend

    demo_blend.ROOT = root        # batch_take.bake_one registers the add-on from here (a no-op where Blender has it)
    import batch

    return batch


# ============================================================================= one take

class _Progress(io.TextIOBase):
    """stdout during the bake: the operator's ``Fatigue bake: N%`` lines become OpenJD's."""

    def __init__(self, label: str):
        self.label, self.pending = label, ""

    def writable(self):
        return True

    def write(self, text):
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            m = PROGRESS.match(line.strip())
            if m:
                emit(f"openjd_progress: {m[1]}")
                emit(f"openjd_status: baking {self.label}: {m[1]} %")
            else:
                emit(line)
        return len(text)

    def flush(self):
        sys.__stdout__.flush()


def take_name(scene: str, variant: str | None) -> str:
    return Path(scene).stem + (f".{variant}" if variant else "")


def bake_argv(extra: list[str], batch) -> list[str]:
    """./fatigue bake's arguments from the options the job passed as ``--name=value``: an empty
    value is the file's own setting, a flag's value (--no-breathing=yes) gives the flag alone."""
    flags = {a.option_strings[0] for a in batch.take_options() if a.nargs == 0}
    out = []
    for item in extra:
        if not item.startswith("--") or "=" not in item:
            raise TaskError(f"unexpected task argument {item!r}: regenerate the job with ./fatigue farm")
        key, value = item.split("=", 1)
        value = value.strip()
        if key in flags and value not in ("", batch.FLAG_GIVEN):
            raise TaskError(f"{key}={value}: give '{batch.FLAG_GIVEN}' or leave it empty (the job's parameters)")
        if value:
            out += [key] if key in flags else [key, value]
    return out


def _write_record(path: Path, row: dict, started: float) -> None:
    """The take's summary row, with when and where it ran (the Summary step reads it)."""
    record = {"take": row, "started": started, "ended": time.time(), "host": socket.gethostname(), "pid": os.getpid()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1, default=float), encoding="utf-8")
    except OSError as exc:
        raise TaskError(f"cannot write {path} ({exc.strerror or exc}): check the OutputDir parameter") from None


def bake_parser() -> argparse.ArgumentParser:
    """A Bake task's own arguments; the rest (parse_known_args) are the take's options (bake_argv)."""
    ap = argparse.ArgumentParser(prog="farm_task.py bake", add_help=False)
    ap.add_argument("--scene", required=True)
    ap.add_argument("--variant")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--extension-zip", default="")
    return ap


def bake(argv: list[str]) -> int:
    known, extra = bake_parser().parse_known_args(argv)
    name = take_name(known.scene, known.variant)
    emit(f"openjd_status: starting {name}")
    t0 = time.time()
    record = known.out / f"{name}.json"
    try:       # a previous run's record is not this run's: a task stopped before it writes its own leaves none
        record.unlink(missing_ok=True)
    except OSError as exc:
        raise TaskError(f"cannot remove the previous run's {record} ({exc.strerror or exc}): check the OutputDir "
                        f"parameter") from None
    batch = load_batch(known.extension_zip)
    import batch_take         # beside batch, on the path load_batch set

    out_blend = known.out / f"{name}.blend"
    bake_args = [known.scene, "--out", str(out_blend)] + (["--variants", known.variant] if known.variant else [])
    try:
        spec = batch.plan(batch.parser().parse_args(bake_args + bake_argv(extra, batch)))[0][0]
    except batch.UsageError as exc:       # a job parameter: the take is listed as failed, with the reason
        error = f"{exc} (the job's parameters)"
        row = {k: None for k in batch.SUMMARY_FIELDS} | {
            "file": str(Path(known.scene).resolve()), "out_file": str(out_blend), "variant": known.variant,
            "status": "failed", "error": error}
        _write_record(record, row, t0)
        raise TaskError(error) from None
    w0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fatigue-farm-take-") as tmp:
        spec_path, result_path = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(dict(spec, read_from=spec["file"], result=str(result_path))),
                             encoding="utf-8")
        sys.stdout = _Progress(name)
        try:
            batch_take.take_main(spec_path)
        finally:
            sys.stdout.flush()
            sys.stdout = sys.__stdout__
        result = json.loads(result_path.read_text(encoding="utf-8"))
    if result["status"] == "ok":
        try:
            os.replace(spec["part"], out_blend)
        except OSError as exc:
            result.update(status="failed", error=f"cannot write {out_blend}: {exc.strerror or exc}")
    if result["status"] != "ok":
        batch.remove_part(spec["part"])
    result.update({k: spec[k] for k in ("file", "out_file", "variant")})
    result["wall_s"] = time.perf_counter() - w0
    row = {k: result.get(k) for k in batch.SUMMARY_FIELDS}
    _write_record(record, row, t0)
    emit(batch.describe(row))
    if row["status"] != "ok":
        raise TaskError(row["error"] or "the take failed")
    emit("openjd_progress: 100")
    emit(f"openjd_status: baked {name}")
    return 0


# ============================================================================= the summary

def _parallel(records: list[dict]) -> int:
    """The most takes that were baking at one time."""
    edges = sorted([(r["started"], 1) for r in records] + [(r["ended"], -1) for r in records])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def _takes_parser(prog: str) -> argparse.ArgumentParser:
    """The arguments of the steps that see every take: the output folder, the summary, the scenes
    and variants."""
    ap = argparse.ArgumentParser(prog=prog, add_help=False)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--scene", action="append", required=True)
    ap.add_argument("--variant", action="append")
    ap.add_argument("--extension-zip", default="")
    return ap


def _summary_path(args) -> Path:
    path = Path(args.summary)
    return path if path.is_absolute() else args.out / path


def clean(argv: list[str]) -> int:
    """Before the Bake step: remove what a previous run of the job left in the output folder (its
    takes' records, its summary), so the Summary reads this run's alone: a Bake task stopped before
    it writes its record (a --timeout, a lost worker) is listed as not run, not as the last run's take."""
    args = _takes_parser("farm_task.py clean").parse_args(argv)
    stale = [args.out / f"{take_name(s, v)}.json" for s in args.scene for v in args.variant or [None]]
    removed = 0
    for path in stale + [_summary_path(args)]:
        try:
            if path.is_file():
                path.unlink()
                removed += 1
        except OSError as exc:
            raise TaskError(f"cannot remove the previous run's {path} ({exc.strerror or exc}): check the OutputDir "
                            f"parameter") from None
    emit(f"openjd_status: removed {removed} file(s) of a previous run" if removed else "openjd_status: nothing to clean")
    return 0


def summary(argv: list[str]) -> int:
    args = _takes_parser("farm_task.py summary").parse_args(argv)
    batch = load_batch(args.extension_zip)
    rows, records = [], []
    for scene in args.scene:
        for variant in args.variant or [None]:
            name = take_name(scene, variant)
            path = args.out / f"{name}.json"
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                record = None
            if record is None:
                row = {k: None for k in batch.SUMMARY_FIELDS} | {
                    "file": str(Path(scene).resolve()), "out_file": str(args.out / f"{name}.blend"),
                    "variant": variant, "status": "not run",
                    "error": f"no result: its Bake task did not run or ended before writing {path.name}"}
            else:
                records.append(record)
                row = record["take"]
            rows.append(row)
            emit(f"[{len(rows)}] {batch.describe(row)}")
    baked = sum(r["status"] == "ok" for r in rows)
    not_done = sum(r["status"] in batch.NOT_DONE for r in rows)
    failed = len(rows) - baked - not_done
    wall = (max(r["ended"] for r in records) - min(r["started"] for r in records)) if records else 0.0
    path = _summary_path(args)
    if not batch.write_summary(path, {"jobs": _parallel(records), "wall_s": wall, "baked": baked, "failed": failed,
                                       "not_done": not_done, "interrupted": None, "takes": rows}):
        raise TaskError(f"cannot write the summary {path}: check the OutputDir / Summary parameters")
    emit(f"fatigue farm: {baked} of {len(rows)} take(s) baked" + (f"; {failed} failed" if failed else "")
         + (f"; {not_done} not run" if not_done else ""))
    emit(f"wrote {path}")
    return 0


def main(argv: list[str]) -> int:
    commands = {"clean": clean, "bake": bake, "summary": summary}
    if not argv or argv[0] not in commands:
        emit(f"openjd_fail: farm_task.py: give clean, bake or summary after '--' (got {argv[:1]}): regenerate the job "
             f"with ./fatigue farm")
        return 2
    try:
        return commands[argv[0]](argv[1:])
    except TaskError as exc:
        emit(f"openjd_fail: {exc}")
        return 1
    except Exception as exc:       # noqa: BLE001 -- a bug: one line and a log file, never a traceback
        try:
            from fatigue_addon import failure

            line = failure.unexpected(exc, "the farm task", context=" ".join(argv))
        except Exception:          # noqa: BLE001 -- not even the add-on imports
            line = f"the farm task failed unexpectedly ({type(exc).__name__}: {exc})"
        emit(f"openjd_fail: {line}")
        return 1


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    code = main(argv)
    # Leave without the interpreter's teardown (as a take of ./fatigue bake does): the bpy module
    # of some Blenders crashes or hangs there.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
