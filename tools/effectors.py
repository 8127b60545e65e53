"""What a viewer sees of a take: its worst end effector, for ./fatigue corpus and ./fatigue realism.

Hands, feet and head against the source's, relative to the hips
(runtime.motion.pose_error.end_effector_error), the worst of them at the 95th percentile over frames,
in metres for a body REPORT_HEIGHT tall (whatever the rig's own height and units).  A fresh take is
held against the source's same frame, a tired one against the moment of the source it shows.  Every
take over LIMIT_M gets a stick strip (the source in grey beside the take, seen from the side in their
own facing, at the moments its worst end effectors are farthest off), and a run ends listing its
worst takes by name.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from runtime.maths import quat
from runtime.motion import gait, pose_error

REPORT_HEIGHT = 1.75       # m: the errors are reported for a body this tall
LIMIT_M = 0.10             # a take whose worst end effector is off by more than this at p95 gets a strip
LISTED = 10                # the worst takes named at the end of a run
MOMENTS = 3                # moments in a strip: where each of the worst end effectors is farthest off


def measure(take, source, fresh: bool) -> dict:
    """The worst end effector's name, its p95 distance (m, REPORT_HEIGHT body) and the take frame where
    it is farthest off, plus every end effector's p95."""
    err = pose_error.end_effector_error(take, source, REPORT_HEIGHT, fresh)
    return {"effector": err.worst, "effector_p95_m": round(err.worst_m, 4), "effector_frame": err.frame,
            "effectors_p95_m": {n: round(x, 4) for n, x in zip(pose_error.END_EFFECTORS, err.percentile_m)}}


def measure_and_strip(label: str, condition: str, take, source, strips: Path | None) -> dict:
    """measure(), and a strip in ``strips`` (its path under "strip") when the take is over LIMIT_M."""
    fresh = condition == "fresh"
    out = measure(take, source, fresh)
    out["strip"] = None
    if strips is not None and out["effector_p95_m"] > LIMIT_M:
        strips.mkdir(parents=True, exist_ok=True)
        name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{label}.{condition}")
        out["strip"] = str(write_strip(f"{label} {condition}", source, take, fresh, strips / f"{name}.png"))
    return out


# -- drawing -----------------------------------------------------------------------------------
def facing_yaw(root_rot: np.ndarray) -> float:
    right = quat.rotate(root_rot, gait.RIGHT)
    forward = np.cross(gait.WORLD_UP, right)
    return float(math.atan2(forward[1], forward[0]))


def side_view(pose: dict, yaw: float) -> dict:
    """Joint positions turned about the root so the body faces +x, root at x = 0."""
    c, s = math.cos(-yaw), math.sin(-yaw)
    root = pose["root"]
    out = {}
    for name, p in pose.items():
        d = p - root
        out[name] = np.array([c * d[0] - s * d[1], s * d[0] + c * d[1], p[2]])
    return out


def with_head(poses: list[dict], clip, frames: list[int], scale: float) -> list[dict]:
    """bench_plots' poses with the head drawn along the head's own axis (it draws it upright)."""
    _, _, head = gait.segment_rotations(clip)
    for pose, frame in zip(poses, frames):
        pose["neck_top"] = pose["neck"] + 0.25 * scale * quat.rotate(head[frame], gait.UP)
    return poses


def draw_pose(ax, view: dict, x0: float, colour: str | None, bones) -> None:
    """One stick figure (``view``: side_view's) at ``x0``; ``colour`` None: right red, left blue."""
    for a, b in bones:
        side = "C3" if "right" in a + b else ("C0" if "left" in a + b else "k")
        ax.plot([view[a][0] + x0, view[b][0] + x0], [view[a][2], view[b][2]], "-", color=colour or side, lw=2)


_DRAWN = {"head": "neck_top"}       # END_EFFECTORS -> the stick figure's point


def write_strip(title: str, source, take, fresh: bool, path: Path) -> Path:
    """The source (grey) beside the take (coloured) at the moments the worst end effectors are
    farthest off, the end effector ringed on both."""
    import bench_plots
    import matplotlib.pyplot as plt

    from runtime.engines import chooser as engine

    err = pose_error.end_effector_error(take, source, REPORT_HEIGHT, fresh)
    times = pose_error.viewer_source_time(take, fresh)
    ranked = sorted(zip(err.percentile_m, pose_error.END_EFFECTORS), reverse=True)[:MOMENTS]
    moments = []
    for _, name in ranked:
        frame = err.farthest[pose_error.END_EFFECTORS.index(name)]
        if frame not in [f for _, f in moments]:
            moments.append((name, frame))
    frames = [f for _, f in moments]
    pos, rot, joints = source.sample_many(times[frames])
    src = SimpleNamespace(clip=SimpleNamespace(root_pos=pos, root_rot=rot, joint_rots=joints))
    height = REPORT_HEIGHT
    fig, ax = plt.subplots(1, 1, figsize=(max(3.2 * len(moments), 6.0), 4.2))
    bones = bench_plots.BONES + [("neck", "neck_top")]
    with engine.kinematics(engine.resolve(), height) as kin:
        mine = with_head(bench_plots.joint_positions(kin, take, frames), take.clip, frames, kin.scale)
        theirs = with_head(bench_plots.joint_positions(kin, src, list(range(len(frames)))), src.clip,
                           list(range(len(frames))), kin.scale)
    lowest = min(-0.3, *(p[2] for pose in mine + theirs for p in pose.values()))   # a short rig's legs may dip below
    for k, (name, frame) in enumerate(moments):
        point = _DRAWN.get(name, name)
        for j, (pose, rr, colour) in enumerate(((theirs[k], rot[k], "0.65"), (mine[k], take.clip.root_rot[frame], None))):
            x0 = 2.4 * k + 0.9 * j
            view = side_view(pose, facing_yaw(rr))
            draw_pose(ax, view, x0, colour, bones)
            ax.plot([view[point][0] + x0], [view[point][2]], "o", mfc="none", mec="C2", ms=12, mew=2)
        ax.text(2.4 * k + 0.45, lowest - 0.05, f"{name} @ {frame / take.fps:.2f} s\n(source {times[frame]:.2f} s)",
                ha="center", va="top", fontsize=7)
    ax.axhline(0.0, color="0.8", lw=1)
    ax.set_aspect("equal")
    ax.set_ylim(lowest - 0.4, 1.2 * height)
    ax.set_xlim(-0.8, 2.4 * (len(moments) - 1) + 1.7)
    ax.axis("off")
    ax.set_title(f"{title}\nworst end effector {err.worst} {err.worst_m:.3f} m at p95 ({REPORT_HEIGHT:g} m body); "
                 "source (grey) beside the take, from the side", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# -- the run's summary --------------------------------------------------------------------------
def summary(entries: list[tuple[str, str, dict]]) -> dict:
    """Over ``entries`` (label, condition, measure()): per condition how many takes are over LIMIT_M,
    the median, and the worst LISTED by name."""
    out = {}
    for condition in dict.fromkeys(c for _, c, _ in entries):
        cells = sorted(((m["effector_p95_m"], label, m) for label, c, m in entries if c == condition),
                       key=lambda x: -x[0])
        out[condition] = {
            "takes": len(cells), "over_limit": sum(v > LIMIT_M for v, _, _ in cells),
            "median_m": statistics.median(v for v, _, _ in cells) if cells else None,
            "worst": [{"take": label, "effector": m["effector"], "p95_m": v, "strip": m.get("strip")}
                      for v, label, m in cells[:LISTED]]}
    return out


def summary_lines(s: dict) -> list[str]:
    lines = []
    for condition, c in s.items():
        median = "-" if c["median_m"] is None else f"{c['median_m']:.3f} m"
        lines.append(f"worst end effector (hands, feet, head relative to the hips; 95th percentile over frames; "
                     f"metres for a {REPORT_HEIGHT:g} m body), {condition}: {c['over_limit']}/{c['takes']} takes over "
                     f"{LIMIT_M:.2f} m, median {median}; worst:")
        for w in c["worst"]:
            lines.append(f"  {w['p95_m']:.3f} m {w['effector']:11s} {w['take']}"
                         + (f"  (strip {w['strip']})" if w.get("strip") else ""))
    return lines
