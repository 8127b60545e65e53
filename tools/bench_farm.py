"""./fatigue bench-farm: throughput of the farm job run here by two workers against ./fatigue bake --jobs 2.

Makes ``--scenes`` shot files (the Mixamo test rig walking ``--seconds`` of the DeepMimic walk),
writes the job with ``./fatigue farm`` (``--variants``: one take per scene and variant) and bakes
the same takes alternately with ``./fatigue bake --jobs W`` and with the job run by ``openjd run``
(tools/farm.run_local, W workers: W ``openjd run`` sessions side by side, each running its share
of the Bake tasks, then the Summary step; and, reported beside it, every Bake task its own session,
the next free worker taking the next task, as a farm schedules them), ``--repeats`` times each.  The Blender of the job is a real ``blender`` where one is on the
PATH, else tools/blender_standin.py (this Python's bpy module).  Prints every wall time, the
medians and the throughput ratio farm / bake (takes per second; above 1: the farm job is faster).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import farm  # noqa: E402
from blender_standin import blender_command  # noqa: E402


def make_shots(folder: Path, count: int, seconds: float) -> list[str]:
    """``count`` shot files (tests/support/shots.py), made two at a time."""
    paths = [folder / f"shot_{i}.blend" for i in range(count)]
    for pair in (paths[i:i + 2] for i in range(0, count, 2)):
        procs = [subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "shots.py"), str(p), "--seconds", str(seconds)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(ROOT)) for p in pair]
        if any(proc.wait() for proc in procs):
            raise SystemExit("bench-farm: tests/support/shots.py could not make a shot file")
    return [str(p) for p in paths]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./fatigue bench-farm", description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each shot's walk")
    ap.add_argument("--variants", default="fresh,exhausted")
    ap.add_argument("--workers", type=int, default=2, help="farm workers, and --jobs of ./fatigue bake")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the measurements here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fatigue-bench-farm-") as tmp:
        tmp = Path(tmp)
        shots = make_shots(tmp, args.scenes, args.seconds)
        takes = args.scenes * len(args.variants.split(","))
        blender = blender_command(tmp)
        print(f"{takes} takes ({args.scenes} shots of {args.seconds:g} s x variants {args.variants}); "
              f"./fatigue bake --jobs {args.workers} vs the farm job under openjd run with {args.workers} workers "
              f"(Blender: {blender}); {args.repeats} alternating repeats", flush=True)
        walls = {"bake": [], "farm": [], "farm_bake_step": [], "farm_task_sessions": []}
        for rep in range(args.repeats):
            out = tmp / f"bake_{rep}"
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "batch.py"), *shots, "--out", str(out),
                                   "--variants", args.variants, "--jobs", str(args.workers)],
                                  capture_output=True, text=True, cwd=str(ROOT))
            walls["bake"].append(time.perf_counter() - t0)
            if proc.returncode != 0:
                print(proc.stdout + proc.stderr, file=sys.stderr)
                return 1
            line = f"  repeat {rep + 1}: bake --jobs {args.workers}: {walls['bake'][-1]:6.2f} s"
            for session_per, key in (("worker", "farm"), ("task", "farm_task_sessions")):
                bundle = tmp / f"job_{rep}_{session_per}"
                with contextlib.redirect_stdout(io.StringIO()):
                    made = farm.main([*shots, "--out", str(bundle), "--variants", args.variants, "--blender", blender])
                if made != 0:
                    return 1
                t0 = time.perf_counter()
                run = farm.run_local(bundle, workers=args.workers, session_per=session_per)
                walls[key].append(time.perf_counter() - t0)
                if session_per == "worker":
                    walls["farm_bake_step"].append(run["bake_wall_s"])
                bad = [t for t in run["bake"] if t["returncode"] != 0]
                if bad or run["summary"]["returncode"] != 0:
                    print((bad[0] if bad else run["summary"])["output"][-3000:], file=sys.stderr)
                    return 1
                summary = json.loads((bundle / "out" / "summary.json").read_text())
                if summary["baked"] != takes:
                    print(f"the farm job baked {summary['baked']} of {takes} takes", file=sys.stderr)
                    return 1
                line += (f"; farm job, a session per {session_per}: {walls[key][-1]:6.2f} s (Bake step "
                         f"{run['bake_wall_s']:.2f} s, Summary {run['summary_wall_s']:.2f} s)")
            print(line, flush=True)
    med = {k: statistics.median(v) for k, v in walls.items()}
    ratio, per_task = med["bake"] / med["farm"], med["bake"] / med["farm_task_sessions"]
    print(f"median wall: bake --jobs {args.workers} {med['bake']:.2f} s ({takes / med['bake']:.3f} takes/s); farm job, "
          f"{args.workers} openjd run sessions side by side, each a share of the tasks, {med['farm']:.2f} s "
          f"({takes / med['farm']:.3f} takes/s; Bake step alone {med['farm_bake_step']:.2f} s); a session per task, "
          f"the next free worker taking the next task, {med['farm_task_sessions']:.2f} s "
          f"({takes / med['farm_task_sessions']:.3f} takes/s)")
    print(f"throughput ratio farm job ({args.workers} openjd sessions) / bake --jobs {args.workers}: {ratio:.3f} "
          f"(a session per task: {per_task:.3f})")
    if args.json is not None:
        args.json.write_text(json.dumps({"takes": takes, "scenes": args.scenes, "seconds": args.seconds,
                                         "variants": args.variants, "workers": args.workers, "walls": walls,
                                         "median": med, "throughput_ratio": ratio,
                                         "throughput_ratio_session_per_task": per_task}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
