"""./fatigue sampler: the sampling-based whole-body tracker (runtime.torque.samcon) on the bench clips,
no root help, fresh and under the bench's fatigue conditions, and what it costs.

Per clip and condition: whether it stayed up (and where it fell), the median joint rotation error
(degrees, every joint, every frame), the median root position error (m), the lowest residual
capacity, and the compute it took per second of motion on this machine's cores.  A tired run's
strength is calibrated on the fresh one (1.05 x its largest torque per DoF, never below the
proxy's default, left and right alike), as the bake calibrates SRB mode's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import asdict
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.motion import clip as C  # noqa: E402
from runtime.engines import chooser
from runtime.motion import metrics
from runtime.torque import samcon  # noqa: E402

import bench  # noqa: E402

S1 = ("walk", "run", "jump", "kick", "punch", "dance_a", "dance_b", "spin")


def measure(name: str, seconds: float, settings: samcon.SamconSettings, condition: str = "fresh",
            tau_max=None) -> tuple[dict, samcon.SamconResult, object]:
    """The bench's measurements (tools/bench.measure) of one sampled track, the track and its Take."""
    clip = C.load_deepmimic(C.deepmimic_clip_path(name))
    floor = chooser.shared_kinematics(engine="mujoco").analyse(clip).floor_height
    sched = bench.condition_schedule(condition)
    result = samcon.track(clip, seconds, settings, floor=floor, tau_max=tau_max, schedule=sched)
    take = result.take(name)
    row = bench.measure(clip, take, condition)
    row.update(seconds=result.seconds, compute_s_per_motion_s=result.wall_seconds / max(result.seconds, 1e-9),
               cores=result.threads, simulated_steps=result.simulated_steps)
    return row, result, take


EFFECTS = (("apex", "jump_apex_ratio"), ("speed", "speed_ratio"), ("knee", "knee_flexion_gain_deg"),
           ("head", "head_pitch_gain_deg"), ("arm", "arm_elevation_drop_deg"))


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./fatigue sampler", description=__doc__)
    ap.add_argument("--clips", default=",".join(S1))
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds of motion per clip (default 10)")
    ap.add_argument("--samples", type=int, default=samcon.SamconSettings.samples)
    ap.add_argument("--keep", type=int, default=samcon.SamconSettings.keep)
    ap.add_argument("--threads", type=int, default=0, help="simulation threads (default: one per core)")
    ap.add_argument("--conditions", default="fresh", help="fresh, moderate, tired (comma-separated; fresh always runs)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    settings = samcon.SamconSettings(samples=args.samples, keep=args.keep, threads=args.threads)
    conditions = [c for c in args.conditions.split(",") if c]
    rows = []
    print(f"sampling {settings.samples} per {settings.window:g} s window, {settings.keep} kept, "
          f"{args.threads or os.cpu_count()} threads, {settings.lookahead} windows of look-ahead; no root help")
    for name in args.clips.split(","):
        fresh = None
        for condition in ["fresh"] + [c for c in conditions if c != "fresh"]:
            strength = samcon.strength_for(fresh) if fresh is not None else None
            row, result, take = measure(name, args.seconds, settings, condition, strength)
            if fresh is None:
                fresh, fresh_take = result, take
                row.update(jump_apex_ratio=None, arm_elevation_drop_deg=None, knee_flexion_gain_deg=None,
                           head_pitch_gain_deg=None)
            else:
                row.update(arm_elevation_drop_deg=metrics.arm_elevation_drop_deg(take, fresh_take),
                           knee_flexion_gain_deg=metrics.knee_flexion_gain_deg(take, fresh_take),
                           head_pitch_gain_deg=metrics.head_pitch_gain_deg(take, fresh_take))
            rows.append(row)
            fell = f"FELL at {row['fall_time']:.1f} s" if not row["survived"] else "stood"
            effects = " ".join(f"{label} {_fmt(row[key])}" for label, key in EFFECTS) if condition != "fresh" else ""
            print(f"{name:10s} {condition:9s} {fell:16s} {row['seconds']:5.1f} s  joint {row['joint_err_deg']:5.2f} deg  "
                  f"root {row['root_err_m']:.3f} m  min RC {row['min_rc']:.2f}  tempo x{row['duration_stretch']:.2f}  "
                  f"rests {row['rests']}  "
                  f"{row['compute_s_per_motion_s']:4.1f} s compute per s ({row['cores']} cores)  {effects}", flush=True)
    stood = sum(r["survived"] for r in rows)
    print(f"{stood}/{len(rows)} runs stood; median compute {statistics.median(r['compute_s_per_motion_s'] for r in rows):.1f} s "
          "per s of motion")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"settings": asdict(settings), "seconds": args.seconds, "conditions": conditions, "runs": rows}, indent=1))
        print(f"wrote {args.json}")
    return 0
