"""./fatigue eval-policy NPZ [--clips a,b] [--seconds S] [--card] [--familiarity]: an SRB policy against the rule
alone, side by side on the same clips and fatigue conditions as ./fatigue bench.

Prints one row per clip and condition (survival, root and joint error with and without the
policy) and the medians; ``--card`` writes the numbers into the policy's model card (its
"evaluation"), split into the clips it trained on and the ones it never saw.
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
from runtime.motion import clip as clips  # noqa: E402
from runtime.errors import PolicyError  # noqa: E402
from runtime.srb.policy import FAMILIARITY_NOTE, SrbPolicy  # noqa: E402


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
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--conditions", default=",".join(bench.CONDITIONS))
    ap.add_argument("--card", action="store_true", help="write the results into the model card")
    ap.add_argument("--familiarity", action="store_true",
                    help="first measure the policy's familiarity bounds on rollouts of its training clips "
                         "(see runtime/srb/policy.py; written into the card with --card)")
    args = ap.parse_args(argv)
    try:
        policy = SrbPolicy.load(args.policy)
    except PolicyError as exc:
        print(f"fatigue: {exc}", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
