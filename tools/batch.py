"""./fatigue bake: fatigued takes of many .blend files, headless, with the bpy module.

Every take runs in its own Python process (``--jobs`` of them at once), so a crash in one take
fails that take only.  The process opens the file, registers the add-on from this repository and
calls ``bpy.ops.fatigue.bake_take`` -- the same operator an animator presses -- with the options
as operator arguments, then saves.  The takes of one file (its ``--variants``) run one after the
other, each adding its action to a temporary copy; files run in parallel.  The output appears
(one rename) only once every take of its file has run, and the input .blend is never written
unless ``--in-place`` is given.  SIGINT (Ctrl-C) or SIGTERM stops the running takes, starts no
other, removes their temporary files and writes the summary of what was and was not done.

Exit codes: 0 every take baked, 1 some takes failed (the others are written), 2 bad arguments or
input files (one line on stderr, nothing baked), 128 + the signal's number when interrupted (130
SIGINT, 143 SIGTERM; one line on stderr).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))      # runtime/ (numpy only)
sys.path.insert(0, str(ROOT / "tools"))

from runtime.fatigue import params as fatigue_params  # noqa: E402
from runtime.fatigue.direction import tiredness_problem  # noqa: E402
from runtime.motion.take import tempo_phrase  # noqa: E402
from runtime.request import BAKE_OPTIONS, source_frames_problem  # noqa: E402
from batch_take import log_prefix, take_main  # noqa: E402

PRESET_NAMES = tuple(fatigue_params.PRESETS)
VARIANT_NAMES = ("fresh",) + tuple(n.lower() for n in PRESET_NAMES)
SUMMARY_FIELDS = ("file", "out_file", "variant", "armature", "action", "out_action", "frames", "take_frames",
                  "mode", "engine", "support", "seconds_sim", "realtime_x", "duration_stretch", "peak_fatigue_by_region",
                  "residual_force_bw_mean", "fell", "fall_frame", "finished", "behind_source_m", "rests", "kneels", "wall_s",
                  "status",
                  "error", "log", "warnings")


class UsageError(Exception):
    """Bad arguments or input files: exit 2 with this one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):          # one line, exit 2 (argparse prints usage + message)
        raise UsageError(message)


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="./fatigue bake", description="Bake fatigued takes of .blend files headless.")
    ap.add_argument("inputs", nargs="+", type=Path, metavar="IN.blend")
    ap.add_argument("--out", type=Path, help="output .blend (one input) or directory (written as <dir>/<name>.blend)")
    ap.add_argument("--in-place", action="store_true", help="write the takes into the input files themselves")
    ap.add_argument("--armature", help="armature object (default: the active one, or the file's only armature)")
    ap.add_argument("--frames", metavar="A:B", help="source frames to bake (default: the file's bake range)")
    ap.add_argument("--tiredness", metavar="START,END",
                    help="how tired at the first frame and by the end, 0 fresh .. 0.9 spent (directs the preset: "
                         "the bake solves the physics that gets there)")
    ap.add_argument("--variants", help=f"comma-separated, one action each: {', '.join(VARIANT_NAMES)}")
    for option in BAKE_OPTIONS:
        if option.flag is None:
            continue
        if option.kind is bool:     # on unless the file says otherwise: the flag turns it off
            ap.add_argument(option.flag, dest=option.name, action="store_const", const=False, help=option.help)
        else:
            ap.add_argument(option.flag, dest=option.name, type=option.kind, choices=option.choices or None,
                            help=option.help)
    ap.add_argument("--summary", type=Path, help="write a JSON summary of every take here")
    ap.add_argument("--jobs", type=int, default=1, help="takes baked in parallel processes (default 1)")
    ap.add_argument("--timeout", type=float, help="stop a take that runs longer than this many seconds")
    return ap


# Options about the batch as a whole; every other option of parser() is an option of each take, and
# a farm job (tools/farm.py) passes each of those to its Bake tasks: a new one travels by itself.
BATCH_ONLY = ("help", "inputs", "out", "in_place", "summary", "jobs", "variants", "timeout")
FLAG_GIVEN = "yes"        # a flag passed as a value (a farm job's NoBreathing): given; empty: not given


def take_options() -> list[argparse.Action]:
    """The options of ./fatigue bake that shape each take (all but BATCH_ONLY's), in parser order;
    ``nargs == 0`` for a flag (--no-breathing)."""
    return [a for a in parser()._actions if a.option_strings and a.dest not in BATCH_ONLY]


# ============================================================================= planning (no bpy)

def _frames(text: str | None) -> tuple[int | None, int | None]:
    if text is None:
        return None, None
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        a, b = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise UsageError(f"--frames {text!r}: give A:B, e.g. --frames 1:250") from None
    if a is not None and b is not None and b <= a:
        raise UsageError(f"--frames {text}: the end frame must come after the start frame")
    too_many = None if a is None or b is None else source_frames_problem(a, b)
    if too_many:
        raise UsageError(f"--frames {text}: {too_many}: give fewer (a take refuses frames far past its action's keys)")
    return a, b


def writable_problem(path: Path, folder: bool = False) -> str | None:
    """Why ``path`` cannot be written as a file (or, with ``folder``, made or filled as a folder),
    naming the fix; None when it can: not the wrong kind of thing, and its folder (or the nearest
    folder that exists above it, to be created) writable.  Nothing is created."""
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        return f"{path} is a file, not a folder: give a folder path"
    if not folder and path.is_dir():
        return f"{path} is a directory, not a file: give a file path"
    if path.exists() and not os.access(path, os.W_OK | (os.X_OK if folder else 0)):
        return f"{path} is not writable: give another path or fix its permissions"
    above = path if folder and path.exists() else path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return f"cannot create {path}: {above} is a file, not a folder: give another path"
    try:                   # permissions alone do not tell (root passes them; /proc, a read-only mount)
        with tempfile.TemporaryFile(dir=above):
            pass
    except OSError:
        return f"cannot write into {above}: give another path or fix its permissions"
    return None


def _check_writable(path: Path, option: str) -> None:
    """UsageError unless ``path`` can be written as a file (writable_problem)."""
    problem = writable_problem(path)
    if problem:
        raise UsageError(f"{option}: {problem}")


def _tiredness(value: str | None, args) -> dict:
    """--tiredness START,END as the operator's tiredness_start / tiredness_end (UsageError when bad)."""
    if value is None:
        return {}
    try:
        start, end = (float(v) for v in value.split(","))
    except ValueError:
        raise UsageError(f"--tiredness {value}: give two numbers, START,END (e.g. 0,0.4)") from None
    for v in (start, end):
        if tiredness_problem(v):
            raise UsageError(f"--tiredness {value}: for each, {tiredness_problem(v)}")
    if args.F is not None or (args.preset or "").lower() == "fresh" or args.time_scale is not None:
        raise UsageError("--tiredness directs a preset's fatigue: drop --F --R --r, --time-scale or --preset Fresh")
    return {"tiredness_start": start, "tiredness_end": end}


def plan(args) -> list[dict]:
    """Check the arguments and input files; return the chains of takes (one chain per input file).
    Raises UsageError (exit 2) before anything is baked."""
    inputs = [p.resolve() for p in args.inputs]
    for src, given in zip(inputs, args.inputs):
        if src.suffix.lower() != ".blend":
            raise UsageError(f"{given}: not a .blend file")
        if src.is_dir():
            raise UsageError(f"{given} is a directory, not a .blend file: give the .blend files inside it")
        if not src.is_file():
            raise UsageError(f"{given}: no such file")
    if len(set(inputs)) != len(inputs):
        raise UsageError("an input file is given twice")
    frame_start, frame_end = _frames(args.frames)
    rates = {k: getattr(args, k) for k in ("F", "R", "r")}
    given = [f"--{k}" for k, v in rates.items() if v is not None]
    if given and len(given) < 3:
        raise UsageError(f"{' '.join(given)} given alone: give --F, --R and --r together")
    if given and (args.preset or args.fitness is not None or args.variants):
        raise UsageError("give either --F --R --r or --preset / --fitness / --variants, not both")
    if args.variants and (args.preset or args.fitness is not None):
        raise UsageError("--variants sets the fitness of each take: drop --preset / --fitness")
    if args.preset is not None and args.preset.lower() not in VARIANT_NAMES:
        raise UsageError(f"--preset {args.preset}: use one of {', '.join(('Fresh',) + PRESET_NAMES)}")
    if args.preset is not None and args.preset.lower() == "fresh" and args.fitness is not None:
        raise UsageError("--preset Fresh has no fitness: drop --fitness")
    for option in BAKE_OPTIONS:
        value = getattr(args, option.name, None)
        refusal = None if value is None or option.choices else option.refusal(value, option.flag, repr(value))
        if refusal:
            raise UsageError(refusal)
    tired = _tiredness(args.tiredness, args)
    if args.mode == "torque" and args.engine == "pybullet":
        raise UsageError("--mode torque --engine pybullet: torque mode runs on MuJoCo only: leave --engine out")
    if args.engine not in (None, "auto"):
        from runtime.engines import chooser as engine     # the takes run in this same Python: a missing engine fails here, once
        if not engine.importable(args.engine):
            raise UsageError(f"--engine {args.engine}: {engine.LABELS[args.engine]} does not import in this Python: "
                             f"leave --engine out (Automatic), or install it (requirements/runtime.txt)")
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give 1 or more")
    problem = None if args.timeout is None else fatigue_params.range_problem(args.timeout, 0.0, math.inf, lo_open=True)
    if problem:
        raise UsageError(f"--timeout {args.timeout!r}: {problem}")
    variants = [None]
    if args.variants:
        variants = [v.strip().lower() for v in args.variants.split(",") if v.strip()]
        bad = [v for v in variants if v not in VARIANT_NAMES]
        if bad or not variants:
            raise UsageError(f"--variants {args.variants}: use names from {', '.join(VARIANT_NAMES)}")
        if len(set(variants)) != len(variants):
            raise UsageError(f"--variants {args.variants}: a variant is given twice")

    if args.in_place:
        if args.out is not None:
            raise UsageError("--in-place writes into the inputs: drop --out")
        outs = list(inputs)
    else:
        if args.out is None:
            raise UsageError("no --out: give an output file or directory (or --in-place to write into the inputs)")
        out = args.out.resolve()
        if out.suffix.lower() == ".blend":
            if len(inputs) > 1:
                raise UsageError(f"--out {args.out} is one file but {len(inputs)} inputs are given: give a directory")
            outs = [out]
        else:
            if out.exists() and not out.is_dir():
                raise UsageError(f"--out {args.out} is a file: give a directory or a .blend path")
            outs = [out / src.name for src in inputs]
        for src, dst in zip(inputs, outs):
            if dst == src:
                raise UsageError(f"{src.name}: the output would overwrite the input: give another --out "
                                 f"(or --in-place)")
        if len(set(outs)) != len(outs):
            raise UsageError("two inputs share a file name and would write the same output: bake them "
                             "into different --out directories")
    for dst in outs:
        _check_writable(dst, "--in-place" if args.in_place else "--out")
    if args.summary is not None:
        summary = args.summary.resolve()
        if summary in outs or summary in inputs:
            raise UsageError(f"--summary {args.summary} is also a .blend of this batch: give another path")
        _check_writable(summary, "--summary")

    base = {option.name: getattr(args, option.name, None) for option in BAKE_OPTIONS}
    base.update(armature=args.armature, frame_start=frame_start, frame_end=frame_end, timeout=args.timeout, **tired)
    chains = []
    for src, dst in zip(inputs, outs):
        chain = []
        for variant in variants:
            # the exact temporary file this take may leave: the only one its failure removes
            part = dst.with_name(f".{dst.stem}.{uuid.uuid4().hex[:12]}.part.blend")
            spec = dict(base, file=str(src), out_file=str(dst), variant=variant, part=str(part))
            if variant is not None:
                spec["preset"] = variant
            chain.append(spec)
        chains.append(chain)
    return chains


# ============================================================================= running (parent)

NOT_DONE = ("interrupted", "not run")     # the statuses of takes an interrupted batch did not write
INTERRUPTED_EARLY = "fatigue bake: interrupted (SIGINT) before anything was baked"


class _Stop:
    """Set by SIGINT or SIGTERM (the handler of ``run``): the running takes are stopped, no other
    take starts, and no output file that misses a take appears."""

    def __init__(self):
        self.event = threading.Event()
        self.signum: int | None = None

    def __call__(self, signum, _frame=None):
        self.signum = self.signum or signum
        self.event.set()

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "SIGINT"


def remove_part(path) -> None:
    """A take's temporary output, and Blender's own temporary file of a save it was stopped in."""
    for p in (Path(path), Path(f"{path}@")):
        p.unlink(missing_ok=True)


def _stop_process(proc) -> None:
    """Kill a take's process and whatever it started (its own process group), and wait for them."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _wait(proc, timeout: float | None, stop: _Stop) -> str:
    """'exited', or 'timeout' / 'interrupted' once the take's process was stopped for that."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while proc.poll() is None:
        if stop.event.wait(0.05) or (deadline is not None and time.monotonic() > deadline):
            _stop_process(proc)
            return "interrupted" if stop.event.is_set() else "timeout"
    return "exited"


def _run_take(spec: dict, read_from: Path, stop: _Stop) -> dict:
    """One take in its own process (its own process group, so that a Ctrl-C in the terminal
    reaches the batch alone, which stops it); a crash there is this take's failure only.  Its
    output and temporary files (Blender's among them) stay in a folder removed with it."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fatigue-take-") as tmp:
        folder = Path(tmp)
        spec_path, result_path, scratch = folder / "spec.json", folder / "result.json", folder / "tmp"
        scratch.mkdir()
        spec_path.write_text(json.dumps(dict(spec, read_from=str(read_from), result=str(result_path))),
                             encoding="utf-8")
        result = None
        with open(folder / "stdout", "w+", encoding="utf-8", errors="replace") as out, \
                open(folder / "stderr", "w+", encoding="utf-8", errors="replace") as err:
            proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--take", str(spec_path)],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=str(ROOT),
                                    env=dict(os.environ, TMPDIR=str(scratch)), start_new_session=True)
            ended = _wait(proc, spec.get("timeout"), stop)
            if ended == "timeout":
                result = {"status": "timeout",
                          "error": f"the take ran longer than {spec['timeout']:g} s and was stopped"}
            elif ended == "interrupted":
                result = {"status": "interrupted",
                          "error": f"interrupted ({stop.name}) while baking: nothing of it was written"}
            elif result_path.is_file():
                try:
                    result = json.loads(result_path.read_text(encoding="utf-8"))
                except json.JSONDecodeError:
                    result = None
            if result is None:
                out.seek(0)
                err.seek(0)
                result = _crashed(spec, proc.returncode, out.read(), err.read())
    if result["status"] != "ok":          # a process stopped while saving leaves its temporary file
        remove_part(spec["part"])
    result.update({k: spec[k] for k in ("file", "out_file", "variant")})
    result["wall_s"] = time.perf_counter() - t0
    return {k: result.get(k) for k in SUMMARY_FIELDS}


def _crashed(spec: dict, returncode: int, stdout: str, stderr: str) -> dict:
    """A take whose process died: one line (its last words, without PyBullet's banner or a
    traceback) and its whole output in a log file beside the output."""
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    lines = [x for x in lines if not x.startswith("pybullet build time") and not x.startswith("Traceback (")
             and not x.startswith("File \"")]
    how = f"signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
    from fatigue_addon import failure      # no bpy in it: the batch's own process can use it

    log = failure.write_log(f"the take's process ended with {how}\n\n--- stdout\n{stdout or ''}\n"
                            f"--- stderr\n{stderr or ''}", prefix=log_prefix(spec) + ".crash",
                            folder=Path(spec["out_file"]).parent)
    error = f"the take's process ended with {how}: {failure.one_line(lines[-1], 160) if lines else 'no output'}"
    return {"status": "crashed", "error": error + (f"; its output is in {log}" if log else ""),
            "log": str(log) if log else None}


def _run_chain(chain: list[dict], report, stop: _Stop) -> list[dict]:
    """The takes of one file, one after the other, each reading the temporary file the previous
    good one saved.  The output file appears (one rename) only once every take of it has run, and
    not after an interrupt: an interrupted chain leaves no file that misses a take, and no
    temporary file."""
    results = []
    read_from = Path(chain[0]["file"])
    kept = None                 # the temporary file holding every good take so far
    for spec in chain:
        if stop.event.is_set():
            results.append({k: spec.get(k) for k in SUMMARY_FIELDS}
                           | {"status": "not run", "error": f"not run: the batch was interrupted ({stop.name})"})
            continue
        result = _run_take(spec, read_from, stop)
        if result["status"] == "ok":
            if kept is not None:
                remove_part(kept)
            kept = read_from = Path(spec["part"])
        results.append(result)
        if result["status"] != "interrupted":
            report(result)
    if kept is None:
        return results
    out = Path(chain[0]["out_file"])
    problem = None
    if stop.event.is_set():           # nothing is written after an interrupt, not even a complete file
        problem = "interrupted", (f"baked, but not written: the batch was interrupted ({stop.name}) before "
                                  f"{out.name} was written")
    else:
        try:
            os.replace(kept, out)
        except OSError as exc:
            problem = "failed", f"cannot write {out}: {exc.strerror or exc}"
    if problem is not None:
        remove_part(kept)
        for r in results:
            if r["status"] == "ok":
                r["status"], r["error"] = problem
    return results


def describe(r: dict) -> str:
    name = Path(r["file"]).name + (f" [{r['variant']}]" if r.get("variant") else "")
    if r["status"] != "ok":
        return f"{name}: FAILED: {r['error']}"
    peak = max((r.get("peak_fatigue_by_region") or {"-": 0.0}).items(), key=lambda kv: kv[1])
    frames = r["take_frames"][1] - r["take_frames"][0] + 1
    tempo = tempo_phrase(frames, r["duration_stretch"], r.get("fell"), r["frames"][1] - r["frames"][0] + 1)
    return (f"{name}: '{r['out_action']}' {frames} frames, {tempo}, peak fatigue {peak[1]:.0%} ({peak[0]}), "
            f"{r['realtime_x']:.1f}x real time on {r['engine']}"
            + ((f", FELL at frame {r['fall_frame']}" if r.get("fall_frame") is not None else ", FELL")
               if r.get("fell") else "")
            + ("" if r.get("finished", True) else ", UNFINISHED: too tired to play the whole source")
            + (f"; {len(r['warnings'])} warning(s), first: {r['warnings'][0]}" if r.get("warnings") else ""))


def _catch_signals(stop: _Stop) -> dict:
    """SIGINT and SIGTERM set ``stop`` instead of ending the batch at once; the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}


def write_summary(path: Path, summary: dict) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    except OSError as exc:          # checked before baking; something changed since
        print(f"fatigue bake: cannot write the summary {path} ({exc.strerror or exc}): the lines above are "
              f"the summary", file=sys.stderr)
        return False
    return True


def run(args) -> int:
    chains = plan(args)
    total = sum(len(c) for c in chains)
    print(f"fatigue bake: {total} take(s) from {len(chains)} file(s), {args.jobs} at a time", flush=True)
    done = [0]

    def report(result):
        done[0] += 1
        print(f"[{done[0]}/{total}] {describe(result)}", flush=True)

    stop = _Stop()
    previous = _catch_signals(stop)
    try:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=min(args.jobs, len(chains))) as pool:
            results = [r for rs in pool.map(lambda c: _run_chain(c, report, stop), chains) for r in rs]
        wall = time.perf_counter() - t0
        baked = sum(r["status"] == "ok" for r in results)
        not_done = sum(r["status"] in NOT_DONE for r in results)
        failed = total - baked - not_done
        interrupted = stop.name if stop.event.is_set() else None
        if interrupted is None:
            print(f"fatigue bake: {baked} of {total} take(s) baked in {wall:.1f} s"
                  + (f"; {failed} failed" if failed else ""), flush=True)
        wrote = args.summary is not None and write_summary(args.summary, {
            "jobs": args.jobs, "wall_s": wall, "baked": baked, "failed": failed, "not_done": not_done,
            "interrupted": interrupted, "takes": results})
        if interrupted is not None:
            print(f"fatigue bake: interrupted ({interrupted}): {baked} of {total} take(s) written, {not_done} not "
                  f"done" + (f", {failed} failed" if failed else "") + (f"; summary in {args.summary}" if wrote else ""),
                  file=sys.stderr, flush=True)
            return 128 + stop.signum
        if wrote:
            print(f"wrote {args.summary}")
        return 1 if failed or (args.summary is not None and not wrote) else 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--take"] and len(argv) == 2:      # internal: one take, in its own process
        code = take_main(Path(argv[1]))
        # The take is saved and its result written: leave without the interpreter's teardown,
        # where the bpy module of Blender 4.2 crashes and that of 4.5 hangs while classes are
        # registered (a hung take would hold up the whole batch).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    try:
        return run(parser().parse_args(argv))
    except UsageError as exc:
        print(f"fatigue bake: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:      # Ctrl-C before the takes start (then the batch stops them itself)
        print(INTERRUPTED_EARLY, file=sys.stderr)
        return 130
    except Exception as exc:       # noqa: BLE001 -- a bug: one line and a log file, never a traceback
        from fatigue_addon import failure

        print(f"fatigue bake: {failure.unexpected(exc, './fatigue bake', context=' '.join(argv))}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
