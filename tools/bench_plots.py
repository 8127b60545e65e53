"""Bench figures: stick-figure strips fresh vs tired, fatigue curves per body part, per-joint bars."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from runtime.engines import chooser as engine
from runtime.engines.pybullet import kinematics
from runtime.body import proxy  # noqa: E402

# Bones of the stick figure: pairs of link names (joint centres).
BONES = [("root", "chest"), ("chest", "neck"), ("root", "right_hip"), ("right_hip", "right_knee"),
         ("right_knee", "right_ankle"), ("root", "left_hip"), ("left_hip", "left_knee"),
         ("left_knee", "left_ankle"), ("chest", "right_shoulder"), ("right_shoulder", "right_elbow"),
         ("right_elbow", "right_wrist"), ("chest", "left_shoulder"), ("left_shoulder", "left_elbow"),
         ("left_elbow", "left_wrist")]


def joint_positions(kin: kinematics.Kinematics, take, frames: list[int]) -> list[dict[str, np.ndarray]]:
    out = []
    for t in frames:
        kin.set_pose(take.clip.root_pos[t], take.clip.root_rot[t], take.clip.joint_rots[t])
        kin.link_frames()
        pos = kin.joint_positions()
        named = {n: pos[i] for i, n in enumerate(kin.link_names)}
        named["neck_top"] = named["neck"] + np.array([0.0, 0.0, 0.25 * kin.scale])
        out.append(named)
    return out


def stick_strip(takes: dict[str, object], path: Path, title: str, count: int = 8) -> Path:
    """Side views (x-z) of ``count`` evenly spaced frames, one row per condition."""
    fig, axes = plt.subplots(len(takes), 1, figsize=(14, 2.6 * len(takes)), squeeze=False)
    with engine.kinematics(engine.resolve(), proxy.DEFAULT_HEIGHT) as kin:
        for ax, (label, take) in zip(axes[:, 0], takes.items()):
            frames = np.linspace(0, take.frames - 1, count).astype(int).tolist()
            for k, pose in enumerate(joint_positions(kin, take, frames)):
                shift = np.array([k * 0.9 - pose["root"][0], 0.0, 0.0])
                for a, b in BONES + [("neck", "neck_top")]:
                    pa, pb = pose[a] + shift, pose[b] + shift
                    side = "C3" if a.startswith("right") or b.startswith("right") else "C0"
                    ax.plot([pa[0], pb[0]], [pa[2], pb[2]], "-", color=side if "_" in a + b else "k", lw=2)
                ax.text(k * 0.9, -0.12, f"{frames[k] / take.fps:.1f}s", ha="center", fontsize=8)
            ax.axhline(take.com[:, 2].min() * 0 + 0.0, color="0.6", lw=1)
            ax.set_aspect("equal")
            ax.set_ylim(-0.2, 2.0)
            ax.set_title(label, fontsize=10)
            ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def fatigue_curves(take, path: Path, title: str) -> Path:
    """TL / MA / MF / RC over time, averaged over each body part's DoFs."""
    parts = proxy.dof_body_parts()
    t = np.arange(take.frames) / take.fps
    fig, axes = plt.subplots(1, len(proxy.BODY_PARTS), figsize=(16, 3.2), sharey=True)
    for ax, part in zip(axes, proxy.BODY_PARTS):
        dofs = [d for d, p in enumerate(parts) if p == part]
        for key, style in (("TL", "0.6"), ("MA", "C0"), ("MF", "C3"), ("RC", "k")):
            ax.plot(t, take.fatigue[key][:, dofs].mean(axis=1), color=style, lw=1.2 if key != "TL" else 0.8,
                    label=key)
        for e in take.events:
            if e["kind"] in ("rest", "fall"):
                ax.axvline(e["time"], color="C2" if e["kind"] == "rest" else "r", ls="--", lw=1)
        ax.set_title(part)
        ax.set_xlabel("time (s)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def joint_fatigue_bars(take, path: Path, title: str) -> Path:
    """Peak fatigued fraction (MF) per joint."""
    names, peaks = [], []
    d = 0
    for joint in proxy.DEFAULT_JOINTS:
        names.append(joint.name)
        peaks.append(float(take.fatigue["MF"][:, d:d + joint.dofs].max()))
        d += joint.dofs
    fig, ax = plt.subplots(figsize=(10, 3.2))
    ax.bar(range(len(names)), peaks, color=["C3" if "right" in n else "C0" for n in names])
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("peak MF")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
