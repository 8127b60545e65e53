"""./fatigue eval-policy NPZ [--clips a,b | --split eval] [--seconds S] [--card] [--familiarity]: an SRB
policy against the rule alone, side by side.

By default on the bench's clips and fatigue conditions (./fatigue bench): one row per clip and
condition (survival, root and joint error with and without the policy) and the medians.
``--split eval``: on the evaluation side of the fixed split (runtime/train/split.json), never
trained on: the bench's evaluation clips at the default body, and every corpus evaluation action as
the bake reads it (cached by ./fatigue train-clips), Fresh and every preset of the panel (Athlete
to Exhausted, and Realistic) in one run; per condition falls, median root and joint error,
finished takes (the whole source played) and the policy's inference time as a share of its bakes'
time.  ``--card`` writes the numbers into the policy's model card (its "evaluation").  ``--realism`` (with ``--split``) also
scores each side's tired takes against its own fresh take in the directions of ./fatigue realism
(tools/realism.py), per clip, per condition and overall, with Exhausted speed, stride and rests of
locomotion.  NPZ may also be a residual on the tempo rule (./fatigue train search; --split eval only):
its rows add kneels and rests.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench  # noqa: E402
import realism  # noqa: E402
from runtime.fatigue import direction, params as fatigue_params  # noqa: E402
from runtime.motion import clip as clips, metrics  # noqa: E402
from runtime.errors import PolicyError  # noqa: E402
from runtime.request import SimulationRequest  # noqa: E402
from runtime.simulate import Tuning, simulate  # noqa: E402
from runtime.srb.policy import FAMILIARITY_NOTE, SrbPolicy  # noqa: E402
from runtime.srb.residual import load_any, ResidualPolicy  # noqa: E402
from runtime.train import clip_cache, split, take_search  # noqa: E402

# Fresh and every preset of the panel (the evaluation's rows hold on each of them).
SPLIT_CONDITIONS = {"fresh": None, **{name.lower(): name for name in fatigue_params.PRESETS}}


class TimedPolicy:
    """The policy as shipped (an SRB policy or a residual on the tempo rule), adding up the time its
    control steps take (its cost in a bake)."""

    def __init__(self, policy):
        self.policy, self.name, self.seconds = policy, policy.name, 0.0

    def control(self, sim) -> None:
        t0 = time.perf_counter()
        self.policy.control(sim)
        self.seconds += time.perf_counter() - t0


def split_requests(cache: Path, seconds: float) -> list[tuple[str, str, SimulationRequest]]:
    """(label, condition, request) of the evaluation side: the bench's evaluation clips at the
    default body for ``seconds`` (as ./fatigue bench plays them), and every cached corpus evaluation
    action's own requests, Fresh and under every preset (SPLIT_CONDITIONS)."""
    out = []
    for name in split.load().bench_eval_clips:
        clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
        hold = 0.0 if clip.loop else max(1.0, seconds - clip.duration)
        for condition, preset in SPLIT_CONDITIONS.items():
            sched = keys = None
            if preset is not None:
                played = seconds if clip.loop else clip.duration
                sched, keys = direction.preset_schedule(preset, 30.0, played)
            out.append((f"bench {name}", condition,
                        SimulationRequest(clip=clip, schedule=sched, seconds=seconds, hold=hold, out_fps=30.0,
                                          tiredness=keys)))
    for action in clip_cache.actions(cache, "eval"):
        for condition, preset in SPLIT_CONDITIONS.items():
            if condition in action.requests:
                request = clip_cache.load(action.requests[condition])
            else:      # a preset the cache does not hold: its fresh request under the preset, as a bake asks
                request = take_search.tired_request(take_search.corpus_source(action), preset)
            out.append((action.label, condition, request))
    return out


def bake_one(request: SimulationRequest, policy: TimedPolicy | None) -> tuple[dict, object]:
    """(measures, take) of one request baked by the rule (``policy`` None) or the policy."""
    t0 = time.perf_counter()
    take = simulate(request, tuning=Tuning(policy=policy))
    wall = time.perf_counter() - t0
    clip = request.clip
    reference = clip.repeated(max(take.reference_time[-1], clip.duration)) if clip.loop else clip
    return {"fell": any(e["kind"] == "fall" for e in take.events), "finished": bool(take.finished),
            "kneels": sum(e["kind"] == "kneel" for e in take.events),
            "rests": sum(e["kind"] in ("rest", "halt") for e in take.events),
            "root_err_m": metrics.root_error_m(take, reference), "joint_err_deg": metrics.joint_error_deg(take, reference),
            "wall_s": wall}, take


def realism_source(request: SimulationRequest) -> clips.Clip:
    """The source a request plays, as ./fatigue realism measures it (a loop repeated for its seconds)."""
    clip = request.clip
    return clip.repeated(request.seconds) if clip.loop and request.seconds else clip


def realism_records(label: str, source: clips.Clip, takes: dict[str, dict], height: float) -> dict[str, dict]:
    """Per side (rule, policy): ./fatigue realism's record of one clip's takes (condition -> Take,
    fresh among them), its tired takes scored against its own fresh take."""
    return {side: realism.measure_clip(label, source, by_condition, height, None) for side, by_condition in takes.items()}


def _direction_score(record: dict) -> str:
    right = [s["right"] for c in record["scores"].values() for s in c]
    return f"{sum(right)}/{len(right)}" if right else "-"


def realism_line(label: str, records: dict[str, dict]) -> str:
    """One clip's direction score per side and, for locomotion, Exhausted speed and stride ratios
    and rests per 10 s of source."""
    rule, learned = records["rule"], records["policy"]
    line = f"{label[:58]:58s} realism   directions right {_direction_score(rule)} | {_direction_score(learned)}"
    if rule["applies"]["locomotion"] and "exhausted" in rule["changes"]:
        cells = []
        for key, unit in (("speed_ratio", "x"), ("stride_ratio", "x"), ("rests_per_10s", "")):
            pair = [r["changes"].get("exhausted", {}).get(key) for r in (rule, learned)]
            cells.append(f"{key.replace('_ratio', '').replace('_per_10s', '/10s')} "
                         + " / ".join("-" if v is None else f"{v:.2f}{unit}" for v in pair))
        line += "  exhausted " + "  ".join(cells)
    return line + "  (rule / policy)"


def summarise_realism(records: list[dict[str, dict]]) -> dict:
    """Per side: ./fatigue realism's summary over the clips, and the Exhausted locomotion numbers."""
    out = {}
    for side in ("rule", "policy"):
        mine = [r[side] for r in records]
        s = realism.summarise(mine, list(SPLIT_CONDITIONS))
        s["by_condition"] = {c: _direction_count(mine, c) for c in SPLIT_CONDITIONS if c != "fresh"}
        walks = [r["changes"]["exhausted"] for r in mine if r["applies"]["locomotion"] and "exhausted" in r["changes"]]
        for key in ("speed_ratio", "stride_ratio", "rests_per_10s"):
            s[f"exhausted_locomotion_{key}"] = [w[key] for w in walks]
        out[side] = {k: s[k] for k in ("direction_right", "directions", "direction_right_pct", "by_expectation", "by_condition",
                                       "exhausted_locomotion_speed_ratio", "exhausted_locomotion_stride_ratio",
                                       "exhausted_locomotion_rests_per_10s")}
    return out


def _direction_count(records: list[dict], condition: str) -> list[int]:
    """[right, scored] realism directions of one condition's takes over ``records``."""
    right = [s["right"] for r in records for s in r["scores"].get(condition, [])]
    return [sum(right), len(right)]


def print_realism_table(summary: dict) -> None:
    for side, s in summary.items():
        pct = "-" if s["direction_right_pct"] is None else f"{s['direction_right_pct']:.0f} %"
        walks = ", ".join(f"{sp:.2f}x/{st:.2f}x/{re:.1f}" if None not in (sp, st, re) else "-"
                          for sp, st, re in zip(s["exhausted_locomotion_speed_ratio"],
                                                s["exhausted_locomotion_stride_ratio"],
                                                s["exhausted_locomotion_rests_per_10s"]))
        per = ", ".join(f"{c} {r}/{n}" for c, (r, n) in s.get("by_condition", {}).items())
        print(f"realism {side:6s} directions right {s['direction_right']}/{s['directions']} ({pct}; {per}); "
              f"exhausted locomotion speed/stride/rests per 10 s: {walks or 'none'}")


def evaluate_split(policy: SrbPolicy, cache: Path, seconds: float, log=print, with_realism: bool = False) -> dict:
    """Rule and policy on every evaluation request; rows and a summary per condition (and with
    ``with_realism`` the realism records and their summary)."""
    rows, records = [], []
    clip_takes: dict = {}

    def close_clip():
        if with_realism and clip_takes:
            recs = realism_records(clip_takes["label"], clip_takes["source"], clip_takes["takes"], clip_takes["height"])
            records.append(recs)
            log(realism_line(clip_takes["label"], recs))
        clip_takes.clear()

    for label, condition, request in split_requests(cache, seconds):
        if clip_takes.get("label") != label:
            close_clip()
            clip_takes.update(label=label, source=realism_source(request), takes={"rule": {}, "policy": {}},
                              height=float(request.height))
        timed = TimedPolicy(policy)
        (rule, rule_take), (learned, learned_take) = bake_one(request, None), bake_one(request, timed)
        clip_takes["takes"]["rule"][condition], clip_takes["takes"]["policy"][condition] = rule_take, learned_take
        learned["inference_share"] = timed.seconds / max(learned["wall_s"], 1e-9)
        rows.append({"clip": label, "condition": condition, "rule": rule, "policy": learned})
        log(f"{label[:58]:58s} {condition:9s} fell {_yes(rule['fell'])}/{_yes(learned['fell'])}"
            f"  kneels {rule['kneels']}/{learned['kneels']}  rests {rule['rests']}/{learned['rests']}"
            f"  root {rule['root_err_m']:.3f} / {learned['root_err_m']:.3f} m"
            f"  joint {rule['joint_err_deg']:.1f} / {learned['joint_err_deg']:.1f} deg"
            f"  finished {_yes(rule['finished'])}/{_yes(learned['finished'])}  (rule / policy)")
    close_clip()
    out = {"rows": rows, "summary": summarise_split(rows)}
    if with_realism:
        out["realism"] = {"records": [{side: {k: r[k] for k in ("clip", "applies", "changes", "scores")}
                                       for side, r in recs.items()} for recs in records],
                          "summary": summarise_realism(records)}
    return out


def summarise_split(rows: list[dict]) -> dict:
    out = {}
    for condition in SPLIT_CONDITIONS:
        sel = [r for r in rows if r["condition"] == condition]
        if not sel:
            continue
        s = {"runs": len(sel)}
        for side in ("rule", "policy"):
            s[side] = {"falls": sum(r[side]["fell"] for r in sel), "finished": sum(r[side]["finished"] for r in sel),
                       "kneels": sum(r[side].get("kneels", 0) for r in sel),
                       "rests": sum(r[side].get("rests", 0) for r in sel),
                       "root_err_m_median": statistics.median(r[side]["root_err_m"] for r in sel),
                       "joint_err_deg_median": statistics.median(r[side]["joint_err_deg"] for r in sel)}
        s["policy"]["inference_share_median"] = statistics.median(r["policy"]["inference_share"] for r in sel)
        s["policy"]["inference_share_max"] = max(r["policy"]["inference_share"] for r in sel)
        out[condition] = s
    return out


def print_split_table(summary: dict) -> None:
    print(f"{'':10s} {'runs':>4s}  {'falls':>11s}  {'kneels':>11s}  {'rests':>11s}  {'root err m (median)':>19s}  "
          f"{'joint err deg':>13s}  {'finished':>11s}  inference")
    print(f"{'':10s} {'':>4s}  {'rule/policy':>11s}  {'rule/policy':>11s}  {'rule/policy':>11s}  {'rule / policy':>19s}  "
          f"{'rule/policy':>13s}  {'rule/policy':>11s}  share of bake (median, max)")
    for condition, s in summary.items():
        r, p = s["rule"], s["policy"]
        print(f"{condition:10s} {s['runs']:4d}  {r['falls']:5d}/{p['falls']:<5d}  "
              f"{r.get('kneels', 0):5d}/{p.get('kneels', 0):<5d}  {r.get('rests', 0):5d}/{p.get('rests', 0):<5d}  "
              f"{r['root_err_m_median']:9.3f}/{p['root_err_m_median']:<9.3f}  "
              f"{r['joint_err_deg_median']:6.1f}/{p['joint_err_deg_median']:<6.1f}  "
              f"{r['finished']:5d}/{p['finished']:<5d}  "
              f"{100 * p['inference_share_median']:.1f} %, {100 * p['inference_share_max']:.1f} %")


def evaluate(policy: SrbPolicy, names: list[str], seconds: float, conditions=bench.CONDITIONS, log=print) -> dict:
    rows = []
    for name in names:
        clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
        for condition in conditions:
            pair = {}
            for label, p in (("rule", None), ("policy", policy)):
                take = bench.run_one(clip, condition, seconds, "srb", policy=p)
                m = bench.measure(clip, take, condition)
                pair[label] = {k: m[k] for k in ("survived", "fall_time", "root_err_m", "joint_err_deg",
                                                 "jump_apex_ratio", "speed_ratio", "phase_rate_mean")}
            row = {"clip": name, "condition": condition, **{f"{k}_{label}": v for label, d in pair.items()
                                                            for k, v in d.items()}}
            rows.append(row)
            log(f"{name:10s} {condition:8s} survived {_yes(row['survived_rule'])}/{_yes(row['survived_policy'])}"
                f"  root err {row['root_err_m_rule']:.3f} / {row['root_err_m_policy']:.3f} m"
                f"  joint err {row['joint_err_deg_rule']:.1f} / {row['joint_err_deg_policy']:.1f} deg  (rule / policy)")
    return {"rows": rows, "summary": summarise(rows, policy.card.get("training", {}))}


def _yes(v: bool) -> str:
    return "yes" if v else "NO"


def summarise(rows: list[dict], training: dict) -> dict:
    trained = set(training.get("clips", []))
    out = {}
    for group, sel in (("all", rows), ("trained", [r for r in rows if r["clip"] in trained]),
                       ("held_out", [r for r in rows if r["clip"] not in trained])):
        if not sel:
            continue
        out[group] = {
            "runs": len(sel),
            "survived_rule": sum(r["survived_rule"] for r in sel),
            "survived_policy": sum(r["survived_policy"] for r in sel),
            "root_err_m_median_rule": statistics.median(r["root_err_m_rule"] for r in sel),
            "root_err_m_median_policy": statistics.median(r["root_err_m_policy"] for r in sel),
            "joint_err_deg_median_rule": statistics.median(r["joint_err_deg_rule"] for r in sel),
            "joint_err_deg_median_policy": statistics.median(r["joint_err_deg_policy"] for r in sel),
        }
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./fatigue eval-policy", description=__doc__)
    ap.add_argument("policy", type=Path, help="the policy's .npz (its .json card beside it)")
    ap.add_argument("--clips", help="comma-separated clips (default: its training and held-out clips)")
    ap.add_argument("--split", choices=["eval"], help="the evaluation side of the fixed split, Fresh and every preset "
                    "(corpus actions cached by ./fatigue train-clips)")
    ap.add_argument("--cache", type=Path, default=ROOT / "out" / "train_clips",
                    help="where ./fatigue train-clips cached the corpus (for --split)")
    ap.add_argument("--realism", action="store_true", help="with --split: also score the realism directions "
                    "(./fatigue realism) of the rule's and the policy's takes")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--conditions", default=",".join(bench.CONDITIONS))
    ap.add_argument("--card", action="store_true", help="write the results into the model card")
    ap.add_argument("--familiarity", action="store_true",
                    help="first measure the policy's familiarity bounds on rollouts of its training clips "
                         "(see runtime/srb/policy.py; written into the card with --card)")
    args = ap.parse_args(argv)
    if bench.seconds_problem(args.seconds):
        print(f"fatigue: {bench.seconds_problem(args.seconds)}", file=sys.stderr)
        return 2
    try:
        policy = load_any(args.policy)
    except PolicyError as exc:
        print(f"fatigue: {exc}", file=sys.stderr)
        return 2
    if args.split:
        return _main_split(args, policy)
    if args.realism:
        print("fatigue: --realism needs --split eval", file=sys.stderr)
        return 2
    if isinstance(policy, ResidualPolicy):
        print("fatigue: a residual on the tempo rule is evaluated on whole takes: give --split eval", file=sys.stderr)
        return 2
    training = policy.card.get("training", {})
    names = ([n.strip() for n in args.clips.split(",") if n.strip()] if args.clips
             else training.get("clips", []) + training.get("held_out", []))
    bad = [n for n in names if n not in clips.DEEPMIMIC_CLIPS]
    conditions = tuple(c.strip() for c in args.conditions.split(",") if c.strip())
    if not names or bad or any(c not in bench.CONDITIONS for c in conditions):
        print(f"fatigue: give known --clips and --conditions (unknown: {bad or conditions})", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    if args.familiarity:
        from runtime.train import srb_env
        policy.familiar_z2 = tuple(srb_env.familiar_z2(policy.mlp, policy.kind, srb_env.prepare_all(
            training.get("clips", []), training.get("config", {}).get("augment", False)),
            seed=training.get("seed", 0)))
        print(f"familiarity bounds {policy.familiar_z2[0]:.3f} .. {policy.familiar_z2[1]:.3f}")
    result = evaluate(policy, names, args.seconds, conditions)
    result.update(seconds=args.seconds, conditions=list(conditions), wall_s=round(time.perf_counter() - t0, 1))
    for group, s in result["summary"].items():
        print(f"{group}: survived {s['survived_rule']}/{s['runs']} rule, {s['survived_policy']}/{s['runs']} policy; "
              f"median root error {s['root_err_m_median_rule']:.3f} / {s['root_err_m_median_policy']:.3f} m; "
              f"joint error {s['joint_err_deg_median_rule']:.1f} / {s['joint_err_deg_median_policy']:.1f} deg")
    if args.card:
        card_path = args.policy.with_suffix(".json")
        card = json.loads(card_path.read_text(encoding="utf-8"))
        card["evaluation"] = result
        if policy.familiar_z2 is not None:
            card["observation"]["familiar_z2"] = list(policy.familiar_z2)
            card["observation"]["familiarity"] = FAMILIARITY_NOTE
        card_path.write_text(json.dumps(card, indent=1), encoding="utf-8")
        print(f"wrote the evaluation into {card_path}")
    return 0


def _main_split(args, policy: SrbPolicy) -> int:
    if args.clips:
        print("fatigue: give --clips or --split eval, not both", file=sys.stderr)
        return 2
    if not clip_cache.actions(args.cache, "eval"):
        print(f"fatigue: --split eval: no corpus cached in {args.cache}: run ./fatigue train-clips first",
              file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    result = evaluate_split(policy, args.cache, args.seconds, with_realism=args.realism)
    result.update(split="eval", seconds=args.seconds, conditions=list(SPLIT_CONDITIONS),
                  wall_s=round(time.perf_counter() - t0, 1))
    print_split_table(result["summary"])
    if args.realism:
        print_realism_table(result["realism"]["summary"])
    if args.card:
        card_path = args.policy.with_suffix(".json")
        card = json.loads(card_path.read_text(encoding="utf-8"))
        card["evaluation_split"] = result
        card_path.write_text(json.dumps(card, indent=1, default=float), encoding="utf-8")
        print(f"wrote the evaluation into {card_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
