"""./fatigue bench-bake: wall time of a batch of takes with --jobs 1 and --jobs N, side by side.

Makes ``--takes`` shot files (the Mixamo test rig walking ``--seconds`` of the DeepMimic walk),
then bakes the batch alternately with one job and with ``--jobs`` jobs, ``--repeats`` times each,
and prints every wall time, the medians and their ratio (the issue's bar: <= 0.65 with 2 jobs on
2 cores).  Alternating runs share the machine's load fairly between the two settings.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./fatigue bench-bake", description=__doc__.splitlines()[0])
    ap.add_argument("--takes", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each shot's walk")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--preset", default="Untrained")
    ap.add_argument("--json", type=Path, help="write the measurements here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fatigue-bench-bake-") as tmp:
        tmp = Path(tmp)
        shots = []
        for i in range(args.takes):
            shot = tmp / f"shot_{i}.blend"
            subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "shots.py"), str(shot), "--seconds",
                            str(args.seconds)], check=True, capture_output=True, cwd=str(ROOT))
            shots.append(str(shot))
        print(f"{args.takes} shots of {args.seconds:g} s ({int(round(args.seconds * 30)) + 1} frames at 30 fps), "
              f"preset {args.preset}; jobs 1 vs {args.jobs}, {args.repeats} alternating repeats")
        walls = {1: [], args.jobs: []}
        for rep in range(args.repeats):
            for jobs in (1, args.jobs):
                out = tmp / f"out_{rep}_{jobs}"
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, str(ROOT / "tools" / "batch.py"), *shots, "--out", str(out),
                                       "--preset", args.preset, "--jobs", str(jobs)],
                                      capture_output=True, text=True, cwd=str(ROOT))
                wall = time.perf_counter() - t0
                if proc.returncode != 0:
                    print(proc.stdout + proc.stderr, file=sys.stderr)
                    return 1
                walls[jobs].append(wall)
                print(f"  repeat {rep + 1}: --jobs {jobs}: {wall:6.2f} s", flush=True)
    med1, medn = statistics.median(walls[1]), statistics.median(walls[args.jobs])
    ratio = medn / med1
    print(f"median wall: --jobs 1 {med1:.2f} s, --jobs {args.jobs} {medn:.2f} s, ratio {ratio:.3f} "
          f"(bar <= 0.65: {'ok' if ratio <= 0.65 else 'NOT MET'})")
    if args.json is not None:
        args.json.write_text(json.dumps({"takes": args.takes, "seconds": args.seconds, "jobs": args.jobs,
                                         "walls": {str(k): v for k, v in walls.items()},
                                         "median": {"1": med1, str(args.jobs): medn}, "ratio": ratio}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
