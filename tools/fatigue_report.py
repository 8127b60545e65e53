"""Plots of the fatigue validation: endurance curves per region and a square-wave load trace."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_endurance(report: dict, path: Path) -> Path:
    """ET vs load per region: integrator (both formulations), closed form, power model."""
    regions = list(report["regions"])
    cols = 4
    rows = int(np.ceil(len(regions) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.ravel(), regions):
        e = report["regions"][name]
        loads = 100 * np.asarray(e["loads"])

        def series(key):
            return np.array([np.nan if v is None else v for v in e[key]], dtype=float)

        ax.semilogy(loads, series("et_power_model"), "k:", lw=2, label="Frey Law & Avin 2010 (power model)")
        ax.semilogy(loads, series("et_closed_form"), "C1--", lw=1.5, label="3CC closed form")
        ax.semilogy(loads, series("et_model"), "C0o-", ms=4, lw=1, label="3CC integrator, dt=1/240 s")
        ax.semilogy(loads, series("et_model_3cc_r"), "C2x", ms=6, label="3CC-r integrator")
        ax.set_title(f"{name}  (F={e['F']:g}, R={e['R']:g} /s)", fontsize=9)
        ax.set_xlabel("sustained load (% of max)")
        ax.set_ylabel("endurance time (s)")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes.ravel()[len(regions):]:
        ax.axis("off")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower right", fontsize=9, frameon=False)
    fig.suptitle(
        f"Endurance time of a sustained load from rest  (max rel. error vs closed form "
        f"{100 * report['max_rel_err_closed_form']:.2f} %, vs power model 20-70 % "
        f"{100 * report['max_rel_err_power_20_70']:.0f} %)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_square_wave(traces: dict[str, dict], title: str, path: Path) -> Path:
    """MA / MR / MF / RC and the target load over time, one panel per formulation."""
    fig, axes = plt.subplots(len(traces), 1, figsize=(10, 3.2 * len(traces)), sharex=True, squeeze=False)
    for ax, (label, tr) in zip(axes[:, 0], traces.items()):
        ax.fill_between(tr["t"], 0, tr["TL"], color="0.85", step="pre", label="target load TL")
        ax.plot(tr["t"], tr["MA"], "C0", label="active MA")
        ax.plot(tr["t"], tr["MR"], "C2", label="resting MR")
        ax.plot(tr["t"], tr["MF"], "C3", label="fatigued MF")
        ax.plot(tr["t"], tr["RC"], "k--", lw=1, label="residual capacity RC")
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("fraction of motor units")
        ax.set_title(label, fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize=8, ncol=5)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
