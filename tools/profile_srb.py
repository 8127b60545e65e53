"""Profile the SRB simulation: real-time factor per clip, end to end, and a cProfile of one clip.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tools/profile_srb.py [--clips walk,run] [--seconds 10]
        [--limbs | --no-limbs] [--tired] [--repeat N] [--profile CLIP | --no-profile]
        [--save DIR] [--compare DIR] [--json PATH]

realtime_x is take.stats["realtime_x"]: simulated seconds over wall seconds of the whole
``simulate`` call (kinematic analysis, reference, calibration, stepping and pose assembly).
``--save`` writes every take's arrays to DIR/<clip>.npz; ``--compare`` checks them against a
saved run and reports the largest difference per array (0 everywhere: bit-identical).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.motion import clip as clips  # noqa: E402
from runtime.fatigue import schedule as schedules  # noqa: E402
from runtime import simulate  # noqa: E402

DEFAULT_CLIPS = ("walk", "run", "jump", "kick", "punch")
TIRED_FITNESS = 0.25
TIRED_TIME_SCALE = 40.0


def take_arrays(take) -> dict[str, np.ndarray]:
    """Everything a take computed, as named arrays (what --save writes and --compare checks)."""
    out = {
        "root_pos": take.clip.root_pos, "root_rot": take.clip.root_rot, "joint_rots": take.clip.joint_rots,
        "reference_time": take.reference_time, "torque": take.torque, "contacts": take.contacts,
        "com": take.com, "tau_max": take.tau_max if take.tau_max is not None else np.zeros(0),
        "events": np.array([[e["time"], e["frame"]] for e in take.events], dtype=np.float64).reshape(-1, 2),
    }
    for k, v in take.fatigue.items():
        out[f"fatigue_{k}"] = v
    return out


def run_clip(name: str, seconds: float, limbs: bool, tired: bool):
    clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
    sched = schedules.from_fitness(TIRED_FITNESS, fps=30, time_scale=TIRED_TIME_SCALE) if tired else None
    return simulate.simulate_clip(clip, sched, mode="srb", seconds=seconds, out_fps=30, simulate_limbs=limbs)


def compare(take, path: Path) -> tuple[float, list[str]]:
    """Largest absolute difference over all arrays, and the names of arrays that differ."""
    saved = np.load(path)
    arrays = take_arrays(take)
    worst, differing = 0.0, []
    for k, v in arrays.items():
        if k not in saved.files:
            differing.append(f"{k} (missing)")
            continue
        old = saved[k]
        if old.shape != v.shape:
            differing.append(f"{k} (shape {old.shape} -> {v.shape})")
            worst = float("inf")
            continue
        if not np.array_equal(old, v):
            d = float(np.max(np.abs(old.astype(np.float64) - v.astype(np.float64))))
            differing.append(f"{k} ({d:.3g})")
            worst = max(worst, d)
    return worst, differing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", default=",".join(DEFAULT_CLIPS))
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--limbs", dest="limbs", action="store_true", default=False,
                    help="simulate the upper body in PyBullet (hybrid; the simulate() default)")
    ap.add_argument("--no-limbs", dest="limbs", action="store_false", help="SRB only (default here)")
    ap.add_argument("--tired", action="store_true", help=f"fitness {TIRED_FITNESS}, fatigue {TIRED_TIME_SCALE:g}x")
    ap.add_argument("--repeat", type=int, default=1, help="runs per clip (median reported)")
    ap.add_argument("--profile", default=None, help="clip to profile (default: the first)")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--save", type=Path, default=None, help="write each take's arrays to DIR/<clip>.npz")
    ap.add_argument("--compare", type=Path, default=None, help="compare each take with DIR/<clip>.npz")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    names = [c.strip() for c in args.clips.split(",") if c.strip()]
    label = ("hybrid" if args.limbs else "srb-only") + (", tired" if args.tired else ", fresh")
    print(f"{label}, {args.seconds:g} s of source motion per clip, {args.repeat} run(s) each")
    results: dict[str, dict] = {}
    identical = True
    for name in names:
        xs, walls = [], []
        take = None
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            take = run_clip(name, args.seconds, args.limbs, args.tired)
            walls.append(time.perf_counter() - t0)
            xs.append(take.stats["realtime_x"])
        row = {"realtime_x": statistics.median(xs), "runs": xs, "wall_s": statistics.median(walls),
               "seconds_simulated": take.stats["seconds_simulated"], "frames": take.frames}
        line = (f"{name:10s} realtime_x {row['realtime_x']:7.2f}  (runs {', '.join(f'{x:.2f}' for x in xs)})"
                f"  wall {row['wall_s']:6.2f} s  simulated {row['seconds_simulated']:6.2f} s")
        if args.save is not None:
            args.save.mkdir(parents=True, exist_ok=True)
            np.savez(args.save / f"{name}.npz", **take_arrays(take))
        if args.compare is not None:
            worst, differing = compare(take, args.compare / f"{name}.npz")
            row["max_abs_diff"] = worst
            row["differing"] = differing
            identical = identical and not differing
            line += "  identical" if not differing else f"  DIFFERS max {worst:.3g}: {', '.join(differing)}"
        results[name] = row
        print(line, flush=True)
    med = statistics.median(r["realtime_x"] for r in results.values())
    print(f"{'median':10s} realtime_x {med:7.2f}")

    if not args.no_profile:
        target = args.profile or names[0]
        prof = cProfile.Profile()
        prof.enable()
        run_clip(target, args.seconds, args.limbs, args.tired)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(args.top)
        print(f"\ncProfile of {target} ({label}), top {args.top} by cumulative time:")
        print(buf.getvalue())
    if args.json is not None:
        args.json.write_text(json.dumps({"label": label, "seconds": args.seconds, "clips": results,
                                         "median_realtime_x": med}, indent=2))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
