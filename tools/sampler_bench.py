"""./fatigue sampler: the sampling-based whole-body tracker (runtime.samcon) on the bench clips,
fresh, no root help, and what it costs.

Per clip: whether it stayed up (and where it fell), the median joint rotation error (degrees,
every joint, every frame), the median root position error (m), and the compute it took per
second of motion on this machine's cores.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime import clip as C  # noqa: E402
from runtime import kinematics, samcon  # noqa: E402

S1 = ("walk", "run", "jump", "kick", "punch", "dance_a", "dance_b", "spin")


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 2.0 * np.arccos(np.minimum(np.abs((a * b).sum(axis=-1)), 1.0))


def measure(name: str, seconds: float, settings: samcon.SamconSettings) -> dict:
    clip = C.load_deepmimic(C.deepmimic_clip_path(name))
    floor = kinematics.shared(engine="mujoco").analyse(clip).floor_height
    result = samcon.track(clip, seconds, settings, floor=floor)
    pos, _, joints = clip.sample_many(np.arange(len(result.root_pos)) / clip.fps)
    return {
        "clip": name, "survived": result.fell_at is None, "fall_time": result.fell_at,
        "seconds": result.seconds,
        "joint_err_deg": float(np.degrees(np.median(_angles(result.joint_rots, joints)))),
        "root_err_m": float(np.median(np.linalg.norm(result.root_pos - pos, axis=1))),
        "compute_s_per_motion_s": result.wall_seconds / max(result.seconds, 1e-9),
        "cores": result.workers, "simulated_steps": result.simulated_steps,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./fatigue sampler", description=__doc__)
    ap.add_argument("--clips", default=",".join(S1))
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds of motion per clip (default 10)")
    ap.add_argument("--samples", type=int, default=samcon.SamconSettings.samples)
    ap.add_argument("--keep", type=int, default=samcon.SamconSettings.keep)
    ap.add_argument("--workers", type=int, default=0, help="simulation threads (default: one per core)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    settings = samcon.SamconSettings(samples=args.samples, keep=args.keep, workers=args.workers)
    rows = []
    print(f"sampling {settings.samples} per {settings.window:g} s window, {settings.keep} kept, "
          f"{args.workers or os.cpu_count()} threads, {settings.lookahead} windows of look-ahead; fresh, no root help")
    for name in args.clips.split(","):
        row = measure(name, args.seconds, settings)
        rows.append(row)
        fell = f"FELL at {row['fall_time']:.1f} s" if not row["survived"] else "stood"
        print(f"{name:10s} {fell:16s} {row['seconds']:5.1f} s  joint {row['joint_err_deg']:5.2f} deg  "
              f"root {row['root_err_m']:.3f} m  {row['compute_s_per_motion_s']:5.1f} s compute per s of motion "
              f"({row['cores']} cores)", flush=True)
    stood = sum(r["survived"] for r in rows)
    print(f"{stood}/{len(rows)} stood; median compute {statistics.median(r['compute_s_per_motion_s'] for r in rows):.1f} s "
          "per s of motion")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"settings": asdict(settings), "seconds": args.seconds, "runs": rows}, indent=1))
        print(f"wrote {args.json}")
    return 0
