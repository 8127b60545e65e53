"""./fatigue bench: simulate the DeepMimic clips fresh, moderately tired and tired, and measure
tracking and fatigue.

The clips are a bench, not a target: nothing here is tuned per clip.  The fatigued conditions are
stated (fitness and speed-up below) so fatigue shows within the run; "moderate" is the shipped
Untrained preset, "tired" the same muscles tiring twice as fast.  Three levels show whether the
effects are graded (jumps get gradually lower) rather than binary.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from runtime.motion import clip as clips  # noqa: E402
from runtime.reference import balance
from runtime.fatigue import params as fatigue_params, schedule
from runtime.engines import chooser
from runtime.errors import EngineMissing, PolicyError
from runtime.motion import metrics
from runtime.body import proxy
from runtime import simulate  # noqa: E402
from runtime.reference.prepare import prepare  # noqa: E402

# The tired condition: untrained muscles, fatigue and recovery 40x faster than published.
TIRED_FITNESS = 0.25
TIRED_TIME_SCALE = 40.0
# The moderate condition: untrained muscles at 20x, fresh at the start (the rates as given, not a
# directed preset, so the bench measures the same physics whatever the presets ask).
MODERATE = fatigue_params.FitnessPreset("moderate", 0.25, 20.0, 0.0, "untrained, 20x")
CONDITIONS = ("fresh", "moderate", "tired")
PUSH_FORCES = (50.0, 100.0, 150.0, 200.0, 300.0, 400.0)   # N, lateral, 0.2 s, mid-clip
FIELDS = ("survived", "fall_time", "joint_err_deg", "root_err_m", "residual_force_bw_mean",
          "residual_force_bw_max", "min_rc", "phase_rate_mean", "realtime_x", "jump_apex_ratio",
          "arm_elevation_drop_deg", "speed_ratio", "knee_flexion_gain_deg", "head_pitch_gain_deg",
          "stance_foot_tilt_deg", "cop_outside_pct", "cop_outside_p90_m")


def tired_schedule(fps: float = 30.0) -> schedule.FatigueSchedule:
    return schedule.from_fitness(TIRED_FITNESS, fps=fps, time_scale=TIRED_TIME_SCALE)


def condition_schedule(condition: str, fps: float = 30.0) -> schedule.FatigueSchedule | None:
    if condition == "tired":
        return tired_schedule(fps)
    if condition == "moderate":
        return schedule.from_fitness(MODERATE.fitness, fps=fps, time_scale=MODERATE.time_scale,
                                     initial_fatigue=MODERATE.initial_fatigue)
    if condition == "fresh":
        return None
    raise ValueError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")


SECONDS = (0.5, 600.0)      # seconds of motion per run a bench or an evaluation accepts


def seconds_problem(seconds: float) -> str | None:
    """The one-line refusal of a --seconds outside SECONDS (None when it is inside)."""
    if SECONDS[0] <= seconds <= SECONDS[1]:
        return None
    return f"--seconds {seconds:g}: give between {SECONDS[0]:g} and {SECONDS[1]:g} seconds of motion"


def run_one(clip: clips.Clip, condition: str, seconds: float, mode: str, push=None, policy=None, engine=None):
    sched = condition_schedule(condition)
    # Non-looping clips play to their end, then hold the last pose for the rest of the run.
    hold = 0.0 if clip.loop else max(1.0, seconds - clip.duration)
    take = simulate.simulate_clip(clip, sched, mode=mode, seconds=seconds, hold=hold, out_fps=30.0, push=push,
                             policy=policy, engine=engine)
    return take


def measure(clip: clips.Clip, take, condition: str) -> dict:
    falls = [e for e in take.events if e["kind"] == "fall"]
    reference = clip.repeated(max(take.reference_time[-1], clip.duration)) if clip.loop else clip
    res_mean, res_max = metrics.residual_force_bw(take, proxy.DEFAULT_MASS)
    return {
        "clip": clip.name,
        "condition": condition,
        "mode": take.mode,
        "survived": not falls,
        "fall_time": falls[0]["time"] if falls else None,
        "joint_err_deg": metrics.joint_error_deg(take, reference),
        "root_err_m": metrics.root_error_m(take, reference),
        "residual_force_bw_mean": res_mean,
        "residual_force_bw_max": res_max,
        "residual_moment_nm_mean": take.stats["residual_moment_nm_mean"],
        "min_rc": metrics.min_residual_capacity(take),
        "phase_rate_mean": metrics.phase_rate_mean(take),
        "duration_stretch": take.duration_stretch(),
        "realtime_x": take.stats["realtime_x"],
        "rests": sum(e["kind"] == "rest" for e in take.events),
        "recovers_in_rests": metrics.recovers_in_rests(take),
        "jump_apex_ratio": metrics.jump_apex_ratio(take),
        "jump_apexes_m": [round(a, 4) for a in metrics.flight_apexes(take, 0.0)],
        "speed_ratio": metrics.speed_ratio(take) if metrics.travels(reference) else None,
    }


def clip_balance(clip: clips.Clip, seconds: float, engine: str = "pybullet") -> dict:
    """balance.report of the source the runs play (whether flat feet can carry it as given);
    None for floor work, which hands, knees or back carry."""
    source = clip.repeated(seconds) if clip.loop else clip
    prepared = prepare(source, chooser.shared_kinematics(proxy.DEFAULT_HEIGHT, engine=engine), proxy.DEFAULT_MASS)
    report = balance.report(prepared.ref, prepared.body)
    if prepared.support.floor_work:
        report = dict.fromkeys(report)
    return report


def push_test(clip: clips.Clip, condition: str, seconds: float, mode: str, policy=None, engine=None) -> float:
    """Largest lateral push (N, 0.2 s at mid-clip) the character survives."""
    mid = 0.5 * (seconds if clip.loop else clip.duration)
    best = 0.0
    for force in PUSH_FORCES:
        take = run_one(clip, condition, seconds, mode, push=(mid, 0.2, np.array([0.0, force, 0.0])), policy=policy,
                       engine=engine)
        if take.fell:
            break
        best = force
    return best


def bench(names: list[str], seconds: float, mode: str, pushes: bool, plots: Path | None = None,
          log=print, conditions=CONDITIONS, policy=None, engine: str | None = None) -> dict:
    """Every clip in every condition; the fatigued ones are compared with fresh (always run).
    ``engine``: runtime.engines.chooser's name (None: automatic)."""
    engine = chooser.resolve(engine)
    conditions = ("fresh",) + tuple(c for c in conditions if c != "fresh")
    runs = []
    for name in names:
        clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
        measured = {}
        takes = {}
        source_balance = clip_balance(clip, seconds, engine)
        for condition in conditions:
            take = takes[condition] = run_one(clip, condition, seconds, mode, policy=policy, engine=engine)
            measured[condition] = measure(clip, take, condition) | source_balance
            if pushes:
                measured[condition]["push_survived_n"] = push_test(clip, condition, seconds, mode, policy, engine)
        fresh = measured["fresh"]
        for condition in conditions[1:]:
            run = measured[condition]
            run["arm_elevation_drop_deg"] = metrics.arm_elevation_drop_deg(takes[condition], takes["fresh"])
            run["knee_flexion_gain_deg"] = metrics.knee_flexion_gain_deg(takes[condition], takes["fresh"])
            run["head_pitch_gain_deg"] = metrics.head_pitch_gain_deg(takes[condition], takes["fresh"])
        fresh.update(arm_elevation_drop_deg=None, knee_flexion_gain_deg=None, head_pitch_gain_deg=None,
                     jump_apex_ratio=None)
        if plots is not None and "tired" in takes:
            _plot(name, takes, plots)
        for run in measured.values():
            for key in [k for k in run if k.startswith("_")]:
                del run[key]
            runs.append(run)
            log(_row(run))
    return {"mode": mode, "engine": engine, "seconds": seconds, "policy": policy.name if policy is not None else None,
            "tired": {"fitness": TIRED_FITNESS, "time_scale": TIRED_TIME_SCALE},
            "moderate": {"preset": MODERATE.name, "fitness": MODERATE.fitness, "time_scale": MODERATE.time_scale},
            "runs": runs, "summary": _summary(runs)}


def _plot(name: str, takes: dict, out: Path) -> None:
    import bench_plots

    out.mkdir(parents=True, exist_ok=True)
    tired = takes["tired"]
    bench_plots.stick_strip({f"{name}: fresh": takes["fresh"],
                             f"{name}: tired (fitness {TIRED_FITNESS}, {TIRED_TIME_SCALE:g}x)": tired},
                            out / f"{name}_strip.png", f"{name}: fresh vs tired")
    bench_plots.fatigue_curves(tired, out / f"{name}_fatigue.png", f"{name}, tired: fatigue per body part")
    bench_plots.joint_fatigue_bars(tired, out / f"{name}_joints.png", f"{name}, tired: peak fatigue per joint")


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    return f"{v:.3g}"


def _row(run: dict) -> str:
    keys = ("survived", "fall_time", "joint_err_deg", "root_err_m", "min_rc", "phase_rate_mean",
            "realtime_x", "jump_apex_ratio", "speed_ratio", "knee_flexion_gain_deg", "rests",
            "residual_force_bw_mean", "residual_moment_nm_mean", "cop_outside_pct")
    return f"{run['clip']:15s} {run['condition']:8s} " + " ".join(f"{k}={_fmt(run[k])}" for k in keys)


def _summary(runs: list[dict]) -> dict:
    out = {}
    for condition in CONDITIONS:
        sel = [r for r in runs if r["condition"] == condition]
        if not sel:
            continue
        out[condition] = {
            "survived": sum(r["survived"] for r in sel),
            "runs": len(sel),
            "root_err_m_median": statistics.median(r["root_err_m"] for r in sel),
            "joint_err_deg_median": statistics.median(r["joint_err_deg"] for r in sel),
            "realtime_x_median": statistics.median(r["realtime_x"] for r in sel),
        }
    return out


def parse(argv: list[str]):
    """The bench's arguments checked: (args, clip names, conditions, policy, engines resolved), or
    an exit status (2) after one line on stderr.  ./fatigue bench (tools/cli.py) runs one engine
    here (run) or two side by side (tools/parity.py)."""
    ap = argparse.ArgumentParser(prog="./fatigue bench", description=__doc__)
    ap.add_argument("--json", type=Path, required=True, help="write the results here")
    ap.add_argument("--mode", default="srb", choices=simulate.MODES)
    ap.add_argument("--clips", default=",".join(clips.DEEPMIMIC_CLIPS),
                    help="comma-separated DeepMimic clip names (default: all 15)")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds of motion per run (default 10)")
    ap.add_argument("--conditions", default=",".join(CONDITIONS),
                    help=f"comma-separated fatigue conditions (default: {','.join(CONDITIONS)}; fresh always runs)")
    ap.add_argument("--policy", type=Path, metavar="NPZ", help="SRB policy to run (default: none, the rule alone)")
    ap.add_argument("--push", action="store_true", help="also find the largest survived lateral push")
    ap.add_argument("--plots", type=Path, metavar="DIR", help="write stick-figure strips and fatigue plots here")
    ap.add_argument("--engine", default="auto",
                    help="physics engine: auto (PyBullet where it imports, else MuJoCo), pybullet, mujoco, or "
                         "pybullet,mujoco: both side by side in one run, with their parity table")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.clips.split(",") if n.strip()]
    unknown = [n for n in names if n not in clips.DEEPMIMIC_CLIPS]
    if unknown:
        print(f"fatigue: unknown clip {unknown[0]!r}; choose from {', '.join(clips.DEEPMIMIC_CLIPS)}",
              file=sys.stderr)
        return 2
    conditions = tuple(c.strip() for c in args.conditions.split(",") if c.strip())
    if not conditions or any(c not in CONDITIONS for c in conditions):
        print(f"fatigue: --conditions takes some of {', '.join(CONDITIONS)}", file=sys.stderr)
        return 2
    if seconds_problem(args.seconds):
        print(f"fatigue: {seconds_problem(args.seconds)}", file=sys.stderr)
        return 2
    policy = None
    if args.policy is not None:
        from runtime.srb.policy import SrbPolicy
        try:
            policy = SrbPolicy.load(args.policy)
        except PolicyError as exc:
            print(f"fatigue: {exc}", file=sys.stderr)
            return 2
    wanted = [e.strip() for e in args.engine.split(",") if e.strip()] or ["auto"]
    try:
        wanted = [chooser.resolve(e) for e in wanted]
    except EngineMissing as exc:
        print(f"fatigue: {exc}", file=sys.stderr)
        return 2
    return args, names, conditions, policy, wanted


def run(args, names: list[str], conditions: tuple[str, ...], policy, engine: str) -> int:
    """The bench on one engine: the results to ``args.json``, a summary line per condition."""
    wanted = [engine]
    t0 = time.perf_counter()
    result = bench(names, args.seconds, args.mode, args.push, args.plots, conditions=conditions, policy=policy,
                   engine=wanted[0])
    result["wall_seconds"] = time.perf_counter() - t0
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    for condition, s in result["summary"].items():
        print(f"{condition} ({chooser.LABELS[wanted[0]]}): {s['survived']}/{s['runs']} survived, median root error {s['root_err_m_median']:.3f} m, "
              f"joint error {s['joint_err_deg_median']:.1f} deg, {s['realtime_x_median']:.0f}x real time")
    print(f"wrote {args.json} ({result['wall_seconds']:.0f} s)")
    return 0


def main(argv: list[str]) -> int:
    """The bench on one engine (two: tools/cli.py hands them to tools/parity.py)."""
    parsed = parse(argv)
    if isinstance(parsed, int):
        return parsed
    args, names, conditions, policy, wanted = parsed
    if len(wanted) > 1:
        print("fatigue: two engines side by side run through ./fatigue bench (tools/parity.py)", file=sys.stderr)
        return 2
    return run(args, names, conditions, policy, wanted[0])
