"""./fatigue bench --engine pybullet,mujoco: the bench on two physics engines side by side, in one
run on one machine, and whether they agree on what matters to an animator.

Agreement (issue 25): the same clips survive in every condition; root and joint errors within
20 % of each other (or better on the second engine); the fatigue fields (jump apex ratio, speed
ratio, knee, head and arm gains) with the same sign and within 25 %.  A fatigue field below its
noise floor (FIELD_FLOOR: a few millimetres' worth of a metric) agrees with anything as small.
"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import bench

ERROR_FIELDS = ("root_err_m", "joint_err_deg")
FATIGUE_FIELDS = ("jump_apex_ratio", "speed_ratio", "knee_flexion_gain_deg", "head_pitch_gain_deg",
                  "arm_elevation_drop_deg")
ERROR_TOLERANCE = 0.20
FATIGUE_TOLERANCE = 0.25
# Below these a field is noise (a degree of gain, a hundredth of a ratio's distance from 1).
FIELD_FLOOR = {"knee_flexion_gain_deg": 1.0, "head_pitch_gain_deg": 1.0, "arm_elevation_drop_deg": 1.0}


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-12)


def compare(first: dict, second: dict) -> list[str]:
    """Where run ``second`` (the candidate engine) disagrees with run ``first``; [] when it agrees."""
    problems = []
    if first["survived"] != second["survived"]:
        problems.append(f"survived {first['survived']} vs {second['survived']}")
    for key in ERROR_FIELDS:
        a, b = first.get(key), second.get(key)
        if a is not None and b is not None and b > a and not _close(a, b, ERROR_TOLERANCE):
            problems.append(f"{key} {a:.3g} vs {b:.3g}")
    for key in FATIGUE_FIELDS:
        a, b = first.get(key), second.get(key)
        if a is None or b is None:
            if (a is None) != (b is None):
                problems.append(f"{key} {a} vs {b}")
            continue
        if key.endswith("_ratio"):      # a ratio's effect is its distance from 1
            a, b = a - 1.0, b - 1.0
            floor = 0.01
        else:
            floor = FIELD_FLOOR[key]
        if abs(a) < floor and abs(b) < floor:
            continue
        if (a > 0) != (b > 0) or not _close(a, b, FATIGUE_TOLERANCE):
            problems.append(f"{key} {first.get(key):.3g} vs {second.get(key):.3g}")
    return problems


def main(names: list[str], seconds: float, mode: str, conditions: tuple[str, ...], engines: list[str],
         out: Path) -> int:
    """Bench every engine in turn, print the side-by-side table, write both results and the
    verdict to ``out``; exit status 0 either way (a benchmark measures, it does not gate)."""
    from runtime.engines import chooser as engine_names

    results = {}
    for engine in engines:
        t0 = time.perf_counter()
        results[engine] = bench.bench(names, seconds, mode, False, conditions=conditions, engine=engine,
                                      log=lambda line: None)
        results[engine]["wall_seconds"] = time.perf_counter() - t0
    first, second = engines[0], engines[1]
    label = {e: engine_names.LABELS[e] for e in engines}
    rows, disagreements = [], 0
    head = (f"{'clip':12s} {'condition':9s} | " + " | ".join(
        f"{label[e]:>8s} surv  root_m  joint  apex  speed  knee  head   arm  rt_x" for e in engines) + " | agree")
    print(head)
    for a, b in zip(results[first]["runs"], results[second]["runs"]):
        problems = compare(a, b)
        disagreements += bool(problems)
        rows.append({"clip": a["clip"], "condition": a["condition"], "problems": problems})
        cells = []
        for run in (a, b):
            cells.append(f"{'':8s} {'yes' if run['survived'] else 'FELL':>4s} {_f(run['root_err_m'], 3):>7s} "
                         f"{_f(run['joint_err_deg'], 1):>6s} {_f(run.get('jump_apex_ratio'), 2):>5s} "
                         f"{_f(run.get('speed_ratio'), 2):>6s} {_f(run.get('knee_flexion_gain_deg'), 1):>5s} "
                         f"{_f(run.get('head_pitch_gain_deg'), 1):>5s} {_f(run.get('arm_elevation_drop_deg'), 1):>5s} "
                         f"{_f(run['realtime_x'], 0):>5s}")
        print(f"{a['clip']:12s} {a['condition']:9s} | " + " | ".join(cells) + " | "
              + ("yes" if not problems else "; ".join(problems)))
    for engine in engines:
        runs = results[engine]["runs"]
        print(f"{label[engine]}: {sum(r['survived'] for r in runs)}/{len(runs)} survived, median root error "
              f"{statistics.median(r['root_err_m'] for r in runs):.3f} m, joint error "
              f"{statistics.median(r['joint_err_deg'] for r in runs):.2f} deg, median {statistics.median(r['realtime_x'] for r in runs):.0f}x "
              f"real time, bench {results[engine]['wall_seconds']:.0f} s")
    print(f"{label[second]} agrees with {label[first]} on {len(rows) - disagreements}/{len(rows)} runs")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"engines": engines, "results": results, "parity": rows,
                               "agree": len(rows) - disagreements, "runs": len(rows)}, indent=1), encoding="utf-8")
    print(f"wrote {out}")
    return 0


def _f(v, digits: int) -> str:
    return "-" if v is None else f"{v:.{digits}f}"
