"""./fatigue farm: an Open Job Description job bundle for the headless bake of ./fatigue bake.

``./fatigue farm IN.blend ... --out DIR [every option of ./fatigue bake]`` checks the arguments
and input files exactly as ``./fatigue bake`` does (tools/batch.py's ``plan``, the same one-line
errors) and writes ``DIR/template.yaml`` (an OpenJD job template, specification 2023-09, no
extensions: what AWS Deadline Cloud runs) and ``DIR/parameter_values.yaml`` (Deadline Cloud's
form of the job's parameter values).  Nothing is baked here.

The job has three steps:

- ``Clean``: removes what a previous run into the same output folder left (its takes' JSON, its
  summary), so the Summary reads this run's takes alone.
- ``Bake``: one task per take (scene x variant; the action is the one ``--action`` names or each
  file's assigned one).  A task runs ``<BlenderExecutable> -b --python <FatigueTools>/farm_task.py
  -- bake ...``: the same per-take code as ``./fatigue bake`` (batch_take.bake_one through
  batch_take.take_main) on one take, writing ``<OutputDir>/<scene>[.<variant>].blend`` and a per-take
  ``.json``; it prints ``openjd_progress`` / ``openjd_status`` lines as it simulates and fails
  alone with the one-line reason (``openjd_fail:``).  Every take option of ./fatigue bake is a job
  parameter, read off its parser (batch.take_options): a new option travels by itself.
- ``Summary`` (depends on ``Bake``, which depends on ``Clean``): merges the per-take JSON into the
  summary ``./fatigue bake --summary`` writes, failed takes included.

Exit codes: 0 the bundle was written, 2 bad arguments or input files (one line on stderr).
"""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import batch  # noqa: E402

TOOLS = ROOT / "tools"


def _param_name(flag: str) -> str:
    """A bake option's job parameter: --time-scale -> TimeScale, --no-breathing -> NoBreathing, --r -> r."""
    word = flag.lstrip("-")
    return word if len(word) == 1 else "".join(w[:1].upper() + w[1:] for w in word.split("-"))


class JobOption(NamedTuple):
    """A bake option as a job parameter: its name, the ./fatigue bake option, the argparse dest,
    its description, and whether it is a flag (given as batch.FLAG_GIVEN, else empty)."""
    name: str
    flag: str
    dest: str
    description: str
    is_flag: bool


def _option(action) -> JobOption:
    flag, text, is_flag = action.option_strings[0], " ".join((action.help or "").split()), action.nargs == 0
    given = f"'{batch.FLAG_GIVEN}' gives {flag}: " if is_flag else f"{flag}: "
    return JobOption(_param_name(flag), flag, action.dest, f"{given}{text}; empty: not given", is_flag)


# Every option of a take of ./fatigue bake (batch.take_options, read off its parser): the job
# passes each to its Bake tasks, so a new option of ./fatigue bake travels without a word here.
OPTIONS = tuple(_option(a) for a in batch.take_options())
OPENJD_PARAMETERS = "openjd_parameters.json"
THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def parser():
    ap = batch.parser()
    ap.prog = "./fatigue farm"
    ap.description = ("Write an Open Job Description job bundle (template.yaml, parameter_values.yaml) that bakes "
                      "the takes of ./fatigue bake on a render farm, one task per take.")
    for action in ap._actions:        # the bundle's folder, not the takes' (those go to DIR/out by default)
        if action.dest == "out":
            action.help = "the job bundle's folder: DIR/template.yaml, DIR/parameter_values.yaml; takes in DIR/out/"
        elif action.dest == "jobs":
            action.help = "not used by the job (the farm's workers bake in parallel); checked as in ./fatigue bake"
        elif action.dest == "in_place":
            action.help = "refused: a farm job writes its takes under its output directory"
    ap.add_argument("--blender", default="blender", help="the Blender executable on the workers (default blender)")
    ap.add_argument("--extension-zip", type=Path,
                    help="the extension zip (./fatigue build) installed on a worker that does not have it")
    ap.add_argument("--output-dir", type=Path, help="where the job writes its takes and summary (default DIR/out)")
    return ap


def _quote(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(str(text))


def _option_text(value, flag: bool = False) -> str:
    if value is None:
        return ""
    if flag:
        return batch.FLAG_GIVEN
    if isinstance(value, float):
        return repr(value)
    return str(value)


def bundle_plan(args) -> dict:
    """Check the arguments as ./fatigue bake does; the job's parameters.  Raises batch.UsageError."""
    if args.out is None:
        raise batch.UsageError("no --out: give the folder to write the job bundle into")
    if args.in_place:
        raise batch.UsageError("--in-place: a farm job writes its takes under its output directory: drop --in-place")
    bundle = args.out.resolve()
    if bundle.suffix.lower() == ".blend" or (bundle.exists() and not bundle.is_dir()):
        raise batch.UsageError(f"--out {args.out}: give a folder for the job bundle, not a file")
    if args.extension_zip is not None:
        if args.extension_zip.suffix.lower() != ".zip" or not args.extension_zip.is_file():
            raise batch.UsageError(f"--extension-zip {args.extension_zip}: no such zip: give the zip of ./fatigue build")
    if not args.blender.strip():
        raise batch.UsageError("--blender: give the Blender executable of the workers (default blender)")
    output = (args.output_dir or bundle / "out").resolve()
    variants = args.variants
    args.out = output                # the takes' folder: every take's own file, checked as ./fatigue bake checks it
    chains = batch.plan(args)
    args.out = bundle
    scenes = [c[0]["file"] for c in chains]
    stems = [Path(s).stem for s in scenes]
    if len(set(stems)) != len(stems):
        raise batch.UsageError("two inputs share a file name and would write the same takes: give them different names")
    summary = str(args.summary.resolve()) if args.summary is not None else "summary.json"
    return {"bundle": bundle, "scenes": scenes, "variants": [s["variant"] for s in chains[0]] if variants else [],
            "options": {o.name: _option_text(getattr(args, o.dest), o.is_flag) for o in OPTIONS},
            "output": str(output), "summary": summary, "blender": args.blender,
            "zip": str(args.extension_zip.resolve()) if args.extension_zip is not None else "",
            "timeout": args.timeout, "takes": sum(len(c) for c in chains)}


def _param(name: str, kind: str, default: str | None, description: str, **extra) -> list[str]:
    lines = [f"- name: {name}", f"  type: {kind}", f"  description: {_quote(description)}"]
    for key, value in extra.items():
        if isinstance(value, list):
            lines.append(f"  {key}: [{', '.join(_quote(v) for v in value)}]")
        else:
            lines.append(f"  {key}: {value}")
    if default is not None:
        lines.append(f"  default: {_quote(default)}")
    return lines


def _relative(path: str, bundle: Path) -> str | None:
    """A PATH parameter's default: OpenJD joins it to the template's folder, so only a path inside
    the bundle can be one (None: no default; parameter_values.yaml gives the value)."""
    if not path:
        return ""
    rel = os.path.relpath(path, bundle)
    return None if rel == ".." or rel.startswith(".." + os.sep) else rel



def template_text(p: dict) -> str:
    """The job template (YAML), this bundle's values as the parameters' defaults (PATH ones
    relative to the bundle's folder, as OpenJD requires)."""
    rel = lambda path: _relative(path, p["bundle"])  # noqa: E731
    n_s, n_v = len(p["scenes"]), len(p["variants"])
    out = ["specificationVersion: jobtemplate-2023-09",
           "name: " + _quote(f"Fatigued Takes: {p['takes']} take(s)"),
           f"description: {_quote('Bake fatigued takes headless (./fatigue farm): one Bake task per take, then a Summary.')}",
           "parameterDefinitions:"]
    for i, scene in enumerate(p["scenes"], 1):
        out += _param(f"Scene{i}", "PATH", rel(scene), f"scene {i} of {n_s}: a .blend with an animated character",
                      objectType="FILE", dataFlow="IN")
    for i, variant in enumerate(p["variants"], 1):
        out += _param(f"Variant{i}", "STRING", variant, f"variant {i} of {n_v}: one take of every scene each",
                      allowedValues=list(batch.VARIANT_NAMES))
    for o in OPTIONS:
        out += _param(o.name, "STRING", p["options"][o.name], o.description)
    out += _param("OutputDir", "PATH", rel(p["output"]), "where the takes (.blend, .json) and the summary are written",
                  objectType="DIRECTORY", dataFlow="OUT")
    out += _param("Summary", "STRING", p["summary"], "the summary JSON (a path relative to OutputDir, or absolute)")
    out += _param("BlenderExecutable", "STRING", p["blender"], "the Blender executable on the workers")
    out += _param("ExtensionZip", "PATH", rel(p["zip"]),
                  "the Fatigued Takes extension zip (./fatigue build), installed on a worker that does not have "
                  "the extension (empty: the worker must have it)", objectType="FILE", dataFlow="IN")
    out += _param("FatigueTools", "PATH", rel(str(TOOLS)), "this repository's tools/ folder: the task scripts",
                  objectType="DIRECTORY", dataFlow="IN")
    options = [f"{o.flag}={{{{Param.{o.name}}}}}" for o in OPTIONS]
    run = ["-b", "--python", "{{Param.FatigueTools}}/farm_task.py", "--"]
    common = ["--out", "{{Param.OutputDir}}", "--extension-zip={{Param.ExtensionZip}}"]
    bake_args = run + ["bake", "--scene", "{{Task.Param.Scene}}"] + (
        ["--variant", "{{Task.Param.Variant}}"] if n_v else []) + common + options
    takes = ["--summary", "{{Param.Summary}}"] + [
        a for i in range(1, n_s + 1) for a in ("--scene", f"{{{{Param.Scene{i}}}}}")] + [
        a for i in range(1, n_v + 1) for a in ("--variant", f"{{{{Param.Variant{i}}}}}")]
    clean_args = run + ["clean", "--out", "{{Param.OutputDir}}"] + takes
    summary_args = run + ["summary"] + common + takes
    timeout = f"        timeout: {max(1, math.ceil(p['timeout']))}" if p["timeout"] is not None else None
    out += ["jobEnvironments:", "- name: OneThreadPerTake",
            "  description: \"one simulation per process, single-threaded by design (determinism)\"",
            "  variables:"] + [f"    {k}: \"{v}\"" for k, v in THREADS.items()]
    out += ["steps:", "- name: Clean", "  script:", "    actions:", "      onRun:",
            "        command: \"{{Param.BlenderExecutable}}\"",
            f"        args: [{', '.join(_quote(a) for a in clean_args)}]"]
    out += ["- name: Bake", "  dependencies:", "  - dependsOn: Clean", "  parameterSpace:", "    taskParameterDefinitions:",
            "    - name: Scene", "      type: PATH",
            f"      range: [{', '.join(_quote(f'{{{{RawParam.Scene{i}}}}}') for i in range(1, n_s + 1))}]"]
    if n_v:
        out += ["    - name: Variant", "      type: STRING",
                f"      range: [{', '.join(_quote(f'{{{{RawParam.Variant{i}}}}}') for i in range(1, n_v + 1))}]"]
    out += ["  script:", "    actions:", "      onRun:", "        command: \"{{Param.BlenderExecutable}}\"",
            f"        args: [{', '.join(_quote(a) for a in bake_args)}]"] + ([timeout] if timeout else [])
    out += ["- name: Summary", "  dependencies:", "  - dependsOn: Bake", "  script:", "    actions:", "      onRun:",
            "        command: \"{{Param.BlenderExecutable}}\"",
            f"        args: [{', '.join(_quote(a) for a in summary_args)}]"]
    return "\n".join(out) + "\n"


def parameter_values(p: dict) -> list[tuple[str, str]]:
    """This bundle's value of every job parameter (absolute paths)."""
    values = [(f"Scene{i}", s) for i, s in enumerate(p["scenes"], 1)]
    values += [(f"Variant{i}", v) for i, v in enumerate(p["variants"], 1)]
    values += [(o.name, p["options"][o.name]) for o in OPTIONS]
    values += [("OutputDir", p["output"]), ("Summary", p["summary"]), ("BlenderExecutable", p["blender"]),
               ("ExtensionZip", p["zip"]), ("FatigueTools", str(TOOLS))]
    return values


def parameter_values_text(p: dict) -> str:
    """Deadline Cloud's parameter_values.yaml (``deadline bundle submit`` reads it)."""
    lines = ["parameterValues:"]
    for name, value in parameter_values(p):
        lines += [f"- name: {name}", f"  value: {_quote(value)}"]
    return "\n".join(lines) + "\n"


def write_bundle(p: dict) -> list[Path]:
    bundle = p["bundle"]
    try:
        bundle.mkdir(parents=True, exist_ok=True)
        files = [bundle / "template.yaml", bundle / "parameter_values.yaml", bundle / OPENJD_PARAMETERS]
        files[0].write_text(template_text(p), encoding="utf-8")
        files[1].write_text(parameter_values_text(p), encoding="utf-8")
        # the same values as the mapping `openjd run -p file://...` reads (it does not read Deadline's list)
        files[2].write_text(json.dumps(dict(parameter_values(p)), indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise batch.UsageError(f"cannot write the job bundle into {bundle} ({exc.strerror or exc}): "
                               f"give another --out") from None
    return files


# ============================================================================= running a bundle here

def bake_tasks(values: dict) -> list[dict]:
    """The Bake step's tasks of a bundle's parameter values: scene x variant, in ./fatigue bake's order."""
    scenes = [values[f"Scene{i}"] for i in range(1, len(values) + 1) if f"Scene{i}" in values]
    variants = [values[f"Variant{i}"] for i in range(1, len(values) + 1) if f"Variant{i}" in values]
    return [{"Scene": s} | ({"Variant": v} if v else {}) for s in scenes for v in (variants or [None])]


def openjd_command(bundle: Path, overrides: dict | None = None) -> list[str]:
    """``openjd run DIR/template.yaml -p file://DIR/openjd_parameters.json [-p NAME=VALUE ...]``."""
    import shutil

    openjd = Path(sys.executable).with_name("openjd")
    openjd = str(openjd) if openjd.is_file() else shutil.which("openjd") or "openjd"
    return [openjd, "run", str(bundle / "template.yaml"), "-p", f"file://{bundle / OPENJD_PARAMETERS}"] + [
        a for k, v in (overrides or {}).items() for a in ("-p", f"{k}={v}")]


def run_local(bundle: Path, workers: int = 2, overrides: dict | None = None, session_per: str = "task") -> dict:
    """Run a bundle's job here with ``openjd run``, as a farm of ``workers`` workers would, then the
    Summary step.  ``session_per="task"``: every Bake task in its own session, the next free worker
    taking the next task (a failed take fails its task alone); ``"worker"``: one session per
    worker running its share of the tasks (the next len/workers of them, in order; a session stops at
    its first failed task).  Returns each Bake session's tasks, exit code and output, the Summary's,
    and the wall time of each step."""
    import subprocess
    import threading
    import time

    if session_per not in ("task", "worker"):
        raise ValueError(f"session_per={session_per!r}: use 'task' or 'worker'")
    values = json.loads((bundle / OPENJD_PARAMETERS).read_text(encoding="utf-8")) | dict(overrides or {})
    base = openjd_command(bundle, overrides)
    tasks = bake_tasks(values)
    workers = max(1, workers)
    if session_per == "task":
        sessions = [[t] for t in tasks]
    else:
        size = -(-len(tasks) // workers)       # whole scenes together, as ./fatigue bake --jobs shares its files
        sessions = [tasks[i:i + size] for i in range(0, len(tasks), size)]
    pending, lock, done = list(enumerate(sessions)), threading.Lock(), {}

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                i, chunk = pending.pop(0)
            proc = subprocess.run(base + ["--step", "Bake", "--tasks", json.dumps(chunk)],
                                  capture_output=True, text=True)
            done[i] = {"tasks": chunk, "task": chunk[0], "returncode": proc.returncode,
                       "output": proc.stdout + proc.stderr}

    clean = subprocess.run(base + ["--step", "Clean"], capture_output=True, text=True)
    if clean.returncode != 0:
        raise RuntimeError(f"the job's Clean step failed:\n{clean.stdout}{clean.stderr}")
    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t1 = time.perf_counter()
    proc = subprocess.run(base + ["--step", "Summary"], capture_output=True, text=True)
    return {"bake": [done[i] for i in range(len(sessions))], "bake_wall_s": t1 - t0,
            "summary": {"returncode": proc.returncode, "output": proc.stdout + proc.stderr},
            "summary_wall_s": time.perf_counter() - t1}


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
        p = bundle_plan(args)
        files = write_bundle(p)
    except batch.UsageError as exc:
        print(f"fatigue farm: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:       # noqa: BLE001 -- a bug: one line and a log file, never a traceback
        from fatigue_addon import failure

        print(f"fatigue farm: {failure.unexpected(exc, './fatigue farm', context=' '.join(argv))}", file=sys.stderr)
        return 1
    print(f"fatigue farm: a job of {p['takes']} take(s) ({len(p['scenes'])} scene(s) x "
          f"{max(1, len(p['variants']))} variant(s)), takes and summary in {p['output']}")
    for f in files:
        print(f"wrote {f}")
    params = f"-p file://{files[2]}"
    print(f"run it here: " + "; ".join(f"openjd run {files[0]} --step {step} {params}"
                                       for step in ("Clean", "Bake", "Summary")))
    print(f"submit it:   deadline bundle submit {p['bundle']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
