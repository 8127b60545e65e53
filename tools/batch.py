"""./fatigue bake: fatigued takes of many .blend files, headless, with the bpy module.

Every take runs in its own Python process (``--jobs`` of them at once), so a crash in one take
fails that take only.  The process opens the file, registers the add-on from this repository and
calls ``bpy.ops.fatigue.bake_take`` -- the same operator an animator presses -- with the options
as operator arguments, then saves.  The takes of one file (its ``--variants``) run one after the
other, each adding its action to the same output file; files run in parallel.  An output is
written under a temporary name and moved into place only when complete, and the input .blend is
never written unless ``--in-place`` is given.

Exit codes: 0 every take baked, 1 some takes failed (the others are written), 2 bad arguments or
input files (one line on stderr, nothing baked).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))      # runtime/ (numpy only)
sys.path.insert(0, str(ROOT / "tools"))

from runtime import fatigue_params  # noqa: E402
from runtime.srb import MAX_EFFORT_ECONOMY  # noqa: E402

PRESET_NAMES = tuple(fatigue_params.PRESETS)
VARIANT_NAMES = ("fresh",) + tuple(n.lower() for n in PRESET_NAMES)
SUMMARY_FIELDS = ("file", "out_file", "variant", "armature", "action", "out_action", "frames", "take_frames",
                  "mode", "engine", "support", "seconds_sim", "realtime_x", "duration_stretch", "peak_fatigue_by_region",
                  "residual_force_bw_mean", "fell", "fall_frame", "finished", "behind_source_m", "rests", "wall_s", "status",
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
    ap.add_argument("--action", help="action to bake (default: the armature's assigned action)")
    ap.add_argument("--frames", metavar="A:B", help="source frames to bake (default: the file's bake range)")
    fit = ap.add_argument_group("fatigue (default: each armature's own Fatigue settings)")
    fit.add_argument("--preset", help=f"one of {', '.join(('Fresh',) + PRESET_NAMES)} (Fresh: no fatigue)")
    fit.add_argument("--fitness", type=float, help="0 exhausted .. 0.5 average adult .. 1 athlete")
    fit.add_argument("--F", dest="F", type=float, help="fatigue rate 1/s (with --R and --r)")
    fit.add_argument("--R", dest="R", type=float, help="recovery rate 1/s (with --F and --r)")
    fit.add_argument("--r", dest="r", type=float, help="rest recovery multiplier (with --F and --R)")
    fit.add_argument("--time-scale", type=float,
                     help="fatigue runs this many times faster (default: the preset's; 1 with --F --R --r)")
    ap.add_argument("--variants", help=f"comma-separated, one action each: {', '.join(VARIANT_NAMES)}")
    ap.add_argument("--mode", choices=("srb", "torque"), help="simulation mode (default: the file's setting)")
    ap.add_argument("--foot-placement", choices=("policy", "rule"),
                    help="SRB foot placement: the shipped learned policy or the rule (default: the file's setting)")
    ap.add_argument("--effort-economy", type=float,
                    help=f"how far tired joints (limbs, knees) yield to their loads: 0 never .. 1 default .. {MAX_EFFORT_ECONOMY:g} "
                         "(default: the file's setting)")
    ap.add_argument("--engine", choices=("auto", "pybullet", "mujoco"),
                    help="physics engine (default auto: PyBullet where it imports, else MuJoCo)")
    ap.add_argument("--summary", type=Path, help="write a JSON summary of every take here")
    ap.add_argument("--jobs", type=int, default=1, help="takes baked in parallel processes (default 1)")
    ap.add_argument("--timeout", type=float, help="stop a take that runs longer than this many seconds")
    return ap


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
    return a, b


def _positive(name: str, value: float | None, lo: float = 0.0, hi: float = math.inf, lo_open: bool = True):
    if value is None:
        return
    bad = not math.isfinite(value) or value > hi or (value <= lo if lo_open else value < lo)
    if bad:
        rng = f"({lo:g}, {hi:g}]" if lo_open else f"[{lo:g}, {hi:g}]"
        raise UsageError(f"{name} {value!r}: give a number in {rng}")


def _check_writable(path: Path, option: str) -> None:
    """UsageError unless ``path`` can be written as a file: not a directory, and its folder (or
    the nearest folder that exists above it, to be created) writable."""
    if path.is_dir():
        raise UsageError(f"{option}: {path} is a directory, not a file: give a file path")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{option}: {path} is not writable: give another path or fix its permissions")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{option}: cannot create {path}: {folder} is a file, not a folder: give another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot write into {folder}: give another path or fix its permissions")


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
    for name, flag in (("fitness", "--fitness"), ("F", "--F"), ("R", "--R"), ("r", "--r"),
                       ("time_scale", "--time-scale")):
        value = getattr(args, name)
        problem = None if value is None else fatigue_params.option_problem(name, value)
        if problem:
            raise UsageError(f"{flag} {value!r}: {problem}")
    _positive("--effort-economy", args.effort_economy, 0.0, MAX_EFFORT_ECONOMY, lo_open=False)
    if args.mode == "torque" and args.engine == "pybullet":
        raise UsageError("--mode torque --engine pybullet: torque mode runs on MuJoCo only: leave --engine out")
    if args.engine not in (None, "auto"):
        from runtime import engine     # the takes run in this same Python: a missing engine fails here, once
        if not engine.importable(args.engine):
            raise UsageError(f"--engine {args.engine}: {engine.LABELS[args.engine]} does not import in this Python: "
                             f"leave --engine out (Automatic), or install it (requirements/runtime.txt)")
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give 1 or more")
    _positive("--timeout", args.timeout)
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

    base = {"armature": args.armature, "action": args.action, "frame_start": frame_start, "frame_end": frame_end,
            "preset": args.preset, "fitness": args.fitness, "time_scale": args.time_scale, "mode": args.mode,
            "foot_placement": args.foot_placement, "effort_economy": args.effort_economy, "timeout": args.timeout,
            "engine": args.engine,
            **rates}
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

def _run_take(spec: dict, read_from: Path) -> dict:
    """One take in its own process; a crash there is this take's failure only."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fatigue-take-") as tmp:
        spec_path, result_path = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(dict(spec, read_from=str(read_from), result=str(result_path))),
                             encoding="utf-8")
        result = None
        try:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--take", str(spec_path)],
                                  capture_output=True, text=True, cwd=str(ROOT), timeout=spec.get("timeout"))
        except subprocess.TimeoutExpired:
            proc = None
            result = {"status": "timeout", "error": f"the take ran longer than {spec['timeout']:g} s and was stopped"}
        if proc is not None and result_path.is_file():
            try:
                result = json.loads(result_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                result = None
    if result is None and proc is not None:
        result = _crashed(spec, proc)
    if result["status"] != "ok":          # a process stopped while saving leaves its temporary file
        Path(spec["part"]).unlink(missing_ok=True)
    result.update({k: spec[k] for k in ("file", "out_file", "variant")})
    result["wall_s"] = time.perf_counter() - t0
    return {k: result.get(k) for k in SUMMARY_FIELDS}


def _log_prefix(spec: dict) -> str:
    out = Path(spec["out_file"])
    return out.stem + (f".{spec['variant']}" if spec.get("variant") else "")


def _crashed(spec: dict, proc) -> dict:
    """A take whose process died: one line (its last words, without PyBullet's banner or a
    traceback) and its whole output in a log file beside the output."""
    lines = [line.strip() for line in (proc.stderr or "").splitlines() if line.strip()]
    lines = [x for x in lines if not x.startswith("pybullet build time") and not x.startswith("Traceback (")
             and not x.startswith("File \"")]
    how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
    from fatigue_addon import failure      # no bpy in it: the batch's own process can use it

    log = failure.write_log(f"the take's process ended with {how}\n\n--- stdout\n{proc.stdout or ''}\n"
                            f"--- stderr\n{proc.stderr or ''}", prefix=_log_prefix(spec) + ".crash",
                            folder=Path(spec["out_file"]).parent)
    error = f"the take's process ended with {how}: {failure.one_line(lines[-1], 160) if lines else 'no output'}"
    return {"status": "crashed", "error": error + (f"; its output is in {log}" if log else ""),
            "log": str(log) if log else None}


def _run_chain(chain: list[dict], report) -> list[dict]:
    """The takes of one file, one after the other; each reads what the previous one saved."""
    results = []
    read_from = Path(chain[0]["file"])
    for spec in chain:
        result = _run_take(spec, read_from)
        if result["status"] == "ok":
            read_from = Path(spec["out_file"])
        results.append(result)
        report(result)
    return results


def _describe(r: dict) -> str:
    name = Path(r["file"]).name + (f" [{r['variant']}]" if r.get("variant") else "")
    if r["status"] != "ok":
        return f"{name}: FAILED: {r['error']}"
    peak = max((r.get("peak_fatigue_by_region") or {"-": 0.0}).items(), key=lambda kv: kv[1])
    return (f"{name}: '{r['out_action']}' {r['take_frames'][1] - r['take_frames'][0] + 1} frames, "
            f"x{r['duration_stretch']:.2f} tempo, peak fatigue {peak[1]:.0%} ({peak[0]}), "
            f"{r['realtime_x']:.1f}x real time on {r['engine']}"
            + ((f", FELL at frame {r['fall_frame']}" if r.get("fall_frame") is not None else ", FELL")
               if r.get("fell") else "")
            + ("" if r.get("finished", True) else ", UNFINISHED: too tired to play the whole source"))


def run(args) -> int:
    chains = plan(args)
    total = sum(len(c) for c in chains)
    print(f"fatigue bake: {total} take(s) from {len(chains)} file(s), {args.jobs} at a time", flush=True)
    done = [0]

    def report(result):
        done[0] += 1
        print(f"[{done[0]}/{total}] {_describe(result)}", flush=True)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(args.jobs, len(chains))) as pool:
        results = [r for rs in pool.map(lambda c: _run_chain(c, report), chains) for r in rs]
    wall = time.perf_counter() - t0
    failed = [r for r in results if r["status"] != "ok"]
    print(f"fatigue bake: {total - len(failed)} of {total} take(s) baked in {wall:.1f} s"
          + (f"; {len(failed)} failed" if failed else ""), flush=True)
    if args.summary is not None:
        try:
            args.summary.parent.mkdir(parents=True, exist_ok=True)
            args.summary.write_text(json.dumps({"jobs": args.jobs, "wall_s": wall, "baked": total - len(failed),
                                                "failed": len(failed), "takes": results}, indent=1),
                                    encoding="utf-8")
        except OSError as exc:          # checked before baking; something changed since
            print(f"fatigue bake: cannot write the summary {args.summary} ({exc.strerror or exc}): the baked "
                  f"files are written; the lines above are the summary", file=sys.stderr)
            return 1
        print(f"wrote {args.summary}")
    return 1 if failed else 0


# ============================================================================= one take (child process)

def _armature(bpy, name: str | None):
    """The armature to bake: the named one, else the active object, else the file's only armature."""
    if name:
        return name
    active = bpy.context.view_layer.objects.active if bpy.context.view_layer else None
    if active is not None and active.type == "ARMATURE":
        return active.name
    arms = sorted(o.name for o in bpy.data.objects if o.type == "ARMATURE")
    if len(arms) == 1:
        return arms[0]
    if not arms:
        raise ValueError("no armature in this file: bake a file with an animated character")
    raise ValueError(f"{len(arms)} armatures in this file ({', '.join(arms[:6])}): choose one with --armature")


def bake_one(spec: dict) -> dict:
    """Open ``spec['read_from']``, bake one take with the operator, save ``spec['out_file']``."""
    import bpy
    import demo_blend

    demo_blend.load_addon()
    failure = demo_blend._mod("fatigue_addon.failure")      # the operator's: its logs go beside the output
    failure.set_log_dir(Path(spec["out_file"]).parent, _log_prefix(spec) + ".error")
    out = Path(spec["out_file"])
    result = {"status": "failed", "error": None}
    try:
        bpy.ops.wm.open_mainfile(filepath=spec["read_from"], load_ui=False)
    except RuntimeError as exc:
        result["error"] = f"cannot open {spec['read_from']}: {str(exc).strip().splitlines()[-1]}"
        return result
    try:
        armature = _armature(bpy, spec.get("armature"))
    except ValueError as exc:
        result["error"] = str(exc)
        return result
    result["armature"] = armature
    kwargs = {k: spec[k] for k in ("action", "frame_start", "frame_end", "preset", "fitness", "F", "R", "r",
                                   "time_scale", "mode", "foot_placement", "effort_economy", "engine")
              if spec.get(k) is not None}
    obj = bpy.data.objects[armature]
    if spec.get("variant"):
        source = kwargs.get("action")
        if source is None:
            found = demo_blend._mod("fatigue_addon.bake").source_action(obj, obj.fatigue_settings)
            source = found.name if found is not None else None
        if source is not None:
            kwargs["take_name"] = f"{source}.fatigued.{spec['variant']}"
    before = failure.last_log()
    try:
        bpy.ops.fatigue.bake_take(armature=armature, **kwargs)
    except RuntimeError as exc:
        text = str(exc).strip()
        if "Traceback" in text:        # a Python error that escaped the operator: its report goes to a file
            log = failure.write_log(text)
            last = failure.one_line(text.splitlines()[-1], 160)
            result["error"] = (f"the bake failed unexpectedly ({last}); nothing was written"
                               + (f"; full report in {log}" if log else ""))
        else:
            message = text.splitlines()[0] if text else "the bake failed"
            result["error"] = message[len("Error: "):] if message.startswith("Error: ") else message
        if failure.last_log() != before:
            result["log"] = str(failure.last_log())
        return result
    report = json.loads(obj.fatigue_settings.last_report)
    action = bpy.data.actions[report["action"]]
    action.use_fake_user = True            # every variant survives saving, assigned or not
    out.parent.mkdir(parents=True, exist_ok=True)
    part = Path(spec["part"])
    try:
        bpy.ops.wm.save_as_mainfile(filepath=str(part), copy=True, compress=False)
        os.replace(part, out)
    except (RuntimeError, OSError) as exc:
        part.unlink(missing_ok=True)
        result["error"] = f"cannot write {out}: {exc}"
        return result
    result.update(
        status="ok", action=report["source"], out_action=report["action"], frames=report["source_frames"],
        take_frames=report["take_frames"], mode=report["mode"], engine=report.get("engine"), support=report.get("support"),
        seconds_sim=report["seconds_sim"],
        realtime_x=report["realtime_x"], duration_stretch=report["duration_stretch"],
        peak_fatigue_by_region=report["peak_fatigue_by_region"],
        residual_force_bw_mean=report["residual_force_bw_mean"], fell=report["fell"],
        fall_frame=report.get("fall_frame"), finished=report["finished"], behind_source_m=report.get("behind_source_m"),
        rests=report["rests"], warnings=report.get("name_notes") or None)
    return result


def take_main(spec_path: Path) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    try:
        result = bake_one(spec)
    except Exception as exc:     # noqa: BLE001 -- reported as this take's failure, the batch goes on
        import demo_blend

        failure = sys.modules.get(f"{demo_blend.PACKAGE}.fatigue_addon.failure")   # the add-on's, once loaded
        if failure is None:
            from fatigue_addon import failure
        failure.set_log_dir(Path(spec["out_file"]).parent, _log_prefix(spec) + ".error")
        result = {"status": "failed", "error": failure.unexpected(exc, "the take", context=json.dumps(spec)),
                  "log": str(failure.last_log()) if failure.last_log() else None}
    Path(spec["result"]).write_text(json.dumps(result, default=float), encoding="utf-8")
    return 0


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
    except Exception as exc:       # noqa: BLE001 -- a bug: one line and a log file, never a traceback
        from fatigue_addon import failure

        print(f"fatigue bake: {failure.unexpected(exc, './fatigue bake', context=' '.join(argv))}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
