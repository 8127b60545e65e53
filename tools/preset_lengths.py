"""Do the presets read as their names on any take length?  Every preset on looping bench clips
played for about 3, 10, 30 and 90 s, each beside a fresh take of the same length, measured as a
viewer judges a tired take and checked against what each preset promises (docs/usage.md).

    ./fatigue realism --presets [--clips walk,run] [--lengths 3,10,30,90] [--json PATH] [--jobs 2]

Why beside a fresh take of the same length: speed and posture are ratios to what the same body
does fresh, so the clip's own pace and lean cancel out.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.fatigue import direction, params as fatigue_params  # noqa: E402
from runtime.motion import clip as clips, gait  # noqa: E402

CLIPS = ("walk", "run")
LENGTHS = (3.0, 10.0, 30.0, 90.0)
PRESETS = tuple(fatigue_params.PRESETS)
TENTH = 0.1
# What the presets promise (issue "tiredness an animator can direct").
EXHAUSTED_SPEED = (0.5, 0.85)      # locomotion speed, share of fresh
EXHAUSTED_MAX_STRETCH = 1.6        # take length over source, walks
EXHAUSTED_BREATHS = 26.0           # a minute, at least
RESTS_PER_30S = 1.0
REACHED = direction.REACHED
VISIBLY_TIRED = 0.9                # Average, Untrained: last tenth's speed or tempo at most this share of fresh
FRESH_START = 0.95                 # ... and the first tenth's at least this


def _tenth_rates(take, fresh) -> tuple[float, float]:
    """Tempo (source seconds per second) of the first and the last tenth of ``take``'s source,
    each over fresh's at the same stretch of the source."""
    def rate(t, lo: float, hi: float) -> float:
        ref = t.reference_time
        inside = np.flatnonzero((ref >= lo) & (ref <= hi))
        if len(inside) < 2:
            return float("nan")
        return float((ref[inside[-1]] - ref[inside[0]]) / ((inside[-1] - inside[0]) / t.fps))
    end = float(fresh.reference_time[-1])
    first = rate(take, 0.0, TENTH * end) / rate(fresh, 0.0, TENTH * end)
    last = rate(take, (1 - TENTH) * end, end) / rate(fresh, (1 - TENTH) * end, end)
    return first, last


def measure(clip_name: str, seconds: float, preset: str) -> dict:
    """One take of ``preset`` and its fresh twin, measured."""
    from runtime.simulate import simulate_clip

    clip = clips.load_deepmimic(clips.deepmimic_clip_path(clip_name))
    source = clip.repeated(seconds) if clip.loop else clip
    t0 = time.perf_counter()
    fresh = simulate_clip(source, None, out_fps=30.0)
    sched, keys = direction.preset_schedule(preset, 30.0, source.duration)
    take = simulate_clip(source, sched, out_fps=30.0, tiredness=keys)
    wall = time.perf_counter() - t0
    f, ff = gait.features(take, source.duration), gait.features(fresh, source.duration)
    first, last = _tenth_rates(take, fresh)
    kinds = [e["kind"] for e in take.events]
    stats = take.stats
    return {
        "clip": clip_name, "seconds": seconds, "preset": preset,
        "fell": bool(take.fell), "kneels": kinds.count("kneel"), "rests": kinds.count("rest"),
        "rests_per_30s": 30.0 * kinds.count("rest") / source.duration,
        "stretch": take.frames / fresh.frames,
        "speed": (f.speed_mps / ff.speed_mps) if f.speed_mps and ff.speed_mps else None,
        "tempo_first_tenth": first, "tempo_last_tenth": last,
        "trunk_gain_deg": gait.posture_gain(take, fresh, gait.trunk_pitch_series),
        "trunk_last_tenth_deg": _last_tenth_gain(take, fresh, gait.trunk_pitch_series),
        "head_gain_deg": gait.posture_gain(take, fresh, gait.head_pitch_series),
        "breaths_per_min": stats.get("breaths_per_min_peak"),
        "asked": [stats.get("tiredness_start_asked"), stats.get("tiredness_end_asked")],
        "reached": [stats.get("tiredness_start"), stats.get("tiredness_end")],
        "speed_up": stats.get("speed_up"), "endurance_change": stats.get("endurance_change"),
        "wall_s": wall,
    }


def _last_tenth_gain(take, fresh, series) -> float | None:
    """gait.posture_gain over the frames showing the last tenth of the source (where Average and
    Untrained are meant to look tired)."""
    end = float(fresh.reference_time[-1])
    return gait.posture_gain(take, fresh, series, during=take.reference_time >= (1.0 - TENTH) * end)


def _measure(task: tuple) -> dict:
    return measure(*task)


def checks(rows: list[dict]) -> list[tuple[str, bool, str]]:
    """(what, held, the numbers) for each promise the presets make over these rows."""
    out = []

    def add(what: str, bad: list[dict], show) -> None:
        out.append((what, not bad, "; ".join(show(r) for r in bad[:4]) or "all"))

    ex = [r for r in rows if r["preset"] == "Exhausted"]
    label = lambda r: f"{r['clip']} {r['seconds']:g} s"      # noqa: E731
    add("Exhausted: no fall, no kneel", [r for r in ex if r["fell"] or r["kneels"]],
        lambda r: f"{label(r)} fell={r['fell']} kneels={r['kneels']}")
    add(f"Exhausted: at most {RESTS_PER_30S:g} rest per 30 s", [r for r in ex if r["rests_per_30s"] > RESTS_PER_30S + 1e-9],
        lambda r: f"{label(r)} {r['rests']} rests")
    add(f"Exhausted walks: at most {EXHAUSTED_MAX_STRETCH:g}x long",
        [r for r in ex if r["clip"] == "walk" and r["stretch"] > EXHAUSTED_MAX_STRETCH],
        lambda r: f"{label(r)} x{r['stretch']:.2f}")
    add(f"Exhausted: speed {EXHAUSTED_SPEED[0]:g}-{EXHAUSTED_SPEED[1]:g} of fresh",
        [r for r in ex if r["speed"] is None or not EXHAUSTED_SPEED[0] <= r["speed"] <= EXHAUSTED_SPEED[1]],
        lambda r: f"{label(r)} {r['speed']}")
    for clip_name in sorted({r["clip"] for r in ex}):
        mine = {r["seconds"]: r["speed"] for r in ex if r["clip"] == clip_name and r["speed"] is not None}
        if len(mine) >= 2:
            short, long_ = mine[min(mine)], mine[max(mine)]
            out.append((f"Exhausted {clip_name}: speed at {min(mine):g} s and {max(mine):g} s within 0.1",
                        abs(short - long_) <= 0.1, f"{short:.2f} vs {long_:.2f}"))
    add("Exhausted: trunk and head forward", [r for r in ex if not ((r["trunk_gain_deg"] or 0) > 0 and (r["head_gain_deg"] or 0) > 0)],
        lambda r: f"{label(r)} trunk {r['trunk_gain_deg']}, head {r['head_gain_deg']}")
    add(f"Exhausted: breathing at least {EXHAUSTED_BREATHS:g} a minute",
        [r for r in ex if (r["breaths_per_min"] or 0) < EXHAUSTED_BREATHS],
        lambda r: f"{label(r)} {r['breaths_per_min']}")
    directed = [r for r in rows if r["asked"][1] is not None]
    add(f"Directed tiredness reached within {REACHED:g}", [r for r in directed if abs(r["asked"][1] - r["reached"][1]) > REACHED],
        lambda r: f"{label(r)} {r['preset']} asked {r['asked'][1]:.2f} reached {r['reached'][1]:.2f}")
    tiring = [r for r in rows if r["preset"] in ("Average", "Untrained") and r["seconds"] >= 10.0]
    add(f"Average, Untrained: last tenth at most {VISIBLY_TIRED:g} of fresh, trunk forward there",
        [r for r in tiring if not (min(r["tempo_last_tenth"], r["speed"] or 1.0) <= VISIBLY_TIRED
                                   and (r["trunk_last_tenth_deg"] or 0) > 0)],
        lambda r: f"{label(r)} {r['preset']} tempo {r['tempo_last_tenth']:.2f} trunk {r['trunk_last_tenth_deg']}")
    add(f"Average, Untrained: first tenth within {1 - FRESH_START:.0%} of fresh",
        [r for r in tiring if r["tempo_first_tenth"] < FRESH_START],
        lambda r: f"{label(r)} {r['preset']} {r['tempo_first_tenth']:.2f}")
    return out


def _cell(v, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, fmt)


def table(rows: list[dict]) -> list[str]:
    head = (f"{'clip':6} {'s':>3} {'preset':10} {'fall':>4} {'kneel':>5} {'rests':>5} {'long':>5} {'speed':>5} "
            f"{'1st':>5} {'last':>5} {'trunk':>6} {'late':>6} {'head':>6} {'breath':>6} {'asked':>9} {'reached':>9} {'x':>6}")
    lines = [head]
    for r in rows:
        a, g = r["asked"], r["reached"]
        lines.append(
            f"{r['clip']:6} {r['seconds']:3.0f} {r['preset']:10} {'yes' if r['fell'] else 'no':>4} {r['kneels']:5d} "
            f"{r['rests']:5d} {r['stretch']:5.2f} {_cell(r['speed'], '5.2f'):>5} {_cell(r['tempo_first_tenth'], '5.2f'):>5} "
            f"{_cell(r['tempo_last_tenth'], '5.2f'):>5} {_cell(r['trunk_gain_deg'], '+6.1f'):>6} "
            f"{_cell(r['trunk_last_tenth_deg'], '+6.1f'):>6} "
            f"{_cell(r['head_gain_deg'], '+6.1f'):>6} {_cell(r['breaths_per_min'], '6.0f'):>6} "
            f"{(f'{a[0]:.2f}>{a[1]:.2f}' if a[1] is not None else '-'):>9} "
            f"{(f'{g[0]:.2f}>{g[1]:.2f}' if g[1] is not None else '-'):>9} {_cell(r['speed_up'], '6.3g'):>6}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fatigue realism --presets", description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--clips", default=",".join(CLIPS), help="looping bench clips (default walk,run)")
    ap.add_argument("--lengths", default=",".join(f"{s:g}" for s in LENGTHS), help="seconds (default 3,10,30,90)")
    ap.add_argument("--only", help="comma-separated presets (default: every preset)")
    ap.add_argument("--json", type=Path, help="write every row and check here")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes at once (default 2)")
    a = ap.parse_args(argv)
    names = [c for c in a.clips.split(",") if c]
    known = {p.stem.replace("humanoid3d_", "") for p in clips.deepmimic_clip_path("walk").parent.glob("*.txt")}
    bad = [c for c in names if c not in known]
    try:
        lengths = [float(s) for s in a.lengths.split(",") if s]
    except ValueError:
        lengths = []
    presets = [p for p in (a.only.split(",") if a.only else PRESETS) if p]
    problem = (f"unknown clip {bad[0]!r}: use some of {', '.join(sorted(known))}" if bad
               else "--lengths takes positive seconds, e.g. 3,10,30,90" if not lengths or min(lengths) <= 0
               else f"unknown preset {[p for p in presets if p not in PRESETS][0]!r}: use {', '.join(PRESETS)}"
               if any(p not in PRESETS for p in presets)
               else "--jobs takes a positive number" if a.jobs < 1 else None)
    if problem:
        print(f"fatigue realism: {problem}", file=sys.stderr)
        return 2
    if a.json is not None and not os.access(a.json.parent if str(a.json.parent) else Path("."), os.W_OK):
        print(f"fatigue realism: cannot write {a.json}: give a writable path for --json", file=sys.stderr)
        return 2
    tasks = [(c, s, p) for c in names for s in lengths for p in presets]
    # The longest first, so two processes finish together.
    tasks.sort(key=lambda t: -t[1])
    print(f"{len(tasks)} takes (each beside a fresh one), {a.jobs} at once", flush=True)
    rows = []
    with get_context("spawn").Pool(a.jobs) as pool:
        for row in pool.imap_unordered(_measure, tasks):
            rows.append(row)
            print(f"  {row['clip']} {row['seconds']:g} s {row['preset']}: x{row['stretch']:.2f}, "
                  f"{row['rests']} rests, {row['kneels']} kneels ({row['wall_s']:.0f} s)", flush=True)
    order = {p: i for i, p in enumerate(PRESETS)}
    rows.sort(key=lambda r: (r["clip"], r["seconds"], order[r["preset"]]))
    print()
    print("\n".join(table(rows)))
    print("\nlong: take length over the fresh take's; speed: over fresh; 1st, last: tempo of the first and last "
          "tenth over fresh; trunk, head: forward pitch over fresh (deg; late: the trunk's over the last tenth); asked, reached: tiredness at the first "
          "frame > by the end; x: the solved speed-up")
    found = checks(rows)
    print()
    for what, held, numbers in found:
        print(f"{'ok  ' if held else 'FAIL'} {what}: {numbers}")
    if a.json is not None:
        a.json.write_text(json.dumps({"rows": rows, "checks": [{"what": w, "held": h, "numbers": n}
                                                               for w, h, n in found]}, indent=1))
    return 0
