"""What a residual on the rule changes in one take, shown: one bench clip of the evaluation side baked
by the rule and by the residual under one preset, their rests, pace and jumps printed, a plot over
the take (centre of mass height, source time shown, lowest residual capacity; a dotted line where a
rest begins) and a stick strip of both at the same moments of the take.

    .venv/bin/python tools/residual_show.py [NPZ] [--clip jump] [--condition exhausted] [--seconds 10] [--out DIR]

Why both pictures: a rest the rule takes and the residual does not is a flat stretch of source time
and a standing body; numbers alone (rests 3 against 1) do not say whether the take still looks tired.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_plots  # noqa: E402
import effectors  # noqa: E402
import policy_eval  # noqa: E402
from runtime.engines import chooser as engine  # noqa: E402
from runtime.motion import metrics  # noqa: E402
from runtime.srb import residual  # noqa: E402

RESTING = ("rest", "halt", "kneel")     # events the plot marks


def describe(side: str, take, measures: dict, seconds: float) -> str:
    events = ", ".join(f"{e['kind']} {e['time']:.1f} s" + (f" ({e['reason']})" if e.get("reason") else "")
                       for e in take.events)
    rises = ", ".join(f"{h:.2f}" for h in metrics.flight_apexes(take, 0.0))
    return (f"{side}: {take.frames / take.fps:.2f} s for {seconds:g} s of source, fell {measures['fell']}, "
            f"rests {measures['rests']}, kneels {measures['kneels']}, joint error {measures['joint_err_deg']:.1f} deg; "
            f"events: {events or 'none'}; jumps rise {rises or '-'} m above standing; lowest capacity "
            f"{float(take.fatigue['RC'].min()):.3f}")


def plot(takes: dict, title: str, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(11, 7), sharex=True)
    for (side, take), colour in zip(takes.items(), ("C0", "C3")):
        time = np.arange(take.frames) / take.fps
        axes[0].plot(time, take.com[:, 2], colour, label=side)
        axes[1].plot(time, take.reference_time, colour, label=side)
        axes[2].plot(time, take.fatigue["RC"].min(axis=1), colour, label=side)
        for e in take.events:
            if e["kind"] in RESTING:
                for ax in axes:
                    ax.axvline(e["time"], color=colour, ls=":", lw=1)
    axes[0].set_ylabel("centre of mass height m")
    axes[1].set_ylabel("source time shown s")
    axes[2].set_ylabel("lowest residual capacity")
    axes[2].set_xlabel("take time s (dotted: a rest begins)")
    axes[0].legend()
    axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def strip(takes: dict, times: list[float], title: str, path: Path, height: float = 1.75) -> None:
    """Both takes at the same take times, side by side, seen from the side in their own facing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 1, figsize=(3.0 * len(times), 4.2))
    bones = bench_plots.BONES + [("neck", "neck_top")]
    with engine.kinematics(engine.resolve(), height) as kin:
        for j, (side, take) in enumerate(takes.items()):
            frames = [min(take.frames - 1, int(round(t * take.fps))) for t in times]
            poses = effectors.with_head(bench_plots.joint_positions(kin, take, frames), take.clip, frames, kin.scale)
            for k, (pose, frame) in enumerate(zip(poses, frames)):
                x0 = 2.4 * k + 0.9 * j
                effectors.draw_pose(ax, effectors.side_view(pose, effectors.facing_yaw(take.clip.root_rot[frame])),
                                    x0, "C0" if j == 0 else "C3", bones)
                resting = any(start <= frame < (end if end is not None else take.frames)
                              for start, end in metrics.rest_spans(take) + metrics.kneel_spans(take))
                ax.text(x0, -0.15 - 0.28 * j, f"{side} {frame / take.fps:.1f} s\nsource {take.reference_time[frame]:.1f} s"
                        + ("\nresting" if resting else ""), ha="center", va="top", fontsize=7,
                        color="C0" if j == 0 else "C3")
    ax.axhline(0.0, color="0.8", lw=1)
    ax.set_aspect("equal")
    ax.set_ylim(-1.0, 1.2 * height)
    ax.set_xlim(-0.8, 2.4 * (len(times) - 1) + 1.7)
    ax.axis("off")
    ax.set_title(title + "\nthe rule (blue) beside the residual (red) at the same moments of the take", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="residual_show", description=__doc__.split("\n\n")[0])
    ap.add_argument("policy", type=Path, nargs="?", default=residual.DEFAULT_MODEL)
    ap.add_argument("--clip", default="jump", help="a bench clip of the evaluation side")
    ap.add_argument("--condition", default="exhausted", choices=list(policy_eval.SPLIT_CONDITIONS))
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--times", default="2.5,5,10,12.5", help="take times (s) the strip shows")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "residual_show")
    args = ap.parse_args(argv)
    wanted = [r for r in policy_eval.split_requests(ROOT / "out" / "train_clips", args.seconds)
              if r[0] == f"bench {args.clip}" and r[1] == args.condition]
    if not wanted:
        print(f"fatigue: no bench clip '{args.clip}' on the evaluation side: give one of its bench clips", file=sys.stderr)
        return 2
    label, condition, request = wanted[0]
    policy = policy_eval.TimedPolicy(residual.load_any(args.policy))
    takes = {}
    for side, p in (("rule", None), ("residual", policy)):
        measures, takes[side] = policy_eval.bake_one(request, p)
        print(describe(side, takes[side], measures, args.seconds))
    args.out.mkdir(parents=True, exist_ok=True)
    title = f"{label}, {condition}, {args.seconds:g} s of source: the rule and {args.policy.name}"
    name = f"{args.clip}_{condition}"
    plot(takes, title, args.out / f"{name}.png")
    strip(takes, [float(t) for t in args.times.split(",")], title, args.out / f"{name}_strip.png")
    print(f"wrote {args.out / (name + '.png')} and {args.out / (name + '_strip.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
