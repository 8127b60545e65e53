"""./fatigue validate-fatigue: the published-data validation, end to end (about a minute)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLI = [sys.executable, str(ROOT / "tools" / "cli.py")]


@pytest.mark.slow
def test_validate_fatigue_meets_the_published_data(tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.run([*CLI, "validate-fatigue", "--json", str(out), "--plot", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert set(report["regions"]) == {"ankle", "knee", "trunk", "shoulder", "elbow", "grip", "general"}
    for entry in report["regions"].values():
        assert entry["loads"] == pytest.approx([0.1 * k for k in range(1, 10)])
        for key in ("et_model", "et_closed_form", "et_power_model", "et_model_3cc_r"):
            assert len(entry[key]) == 9 and all(v is None or v > 0 for v in entry[key])
        # Heavier loads fail sooner.
        et = entry["et_model"]
        assert all(a > b for a, b in zip(et, et[1:]))
    assert report["max_rel_err_closed_form"] <= 0.01
    assert report["max_rel_err_power_20_70"] <= 0.40
    for name in ("endurance_time.png", "square_wave.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    assert "max rel. error vs closed form" in proc.stdout


def test_bad_arguments_exit_2_with_one_line():
    proc = subprocess.run([*CLI, "validate-fatigue", "--dt", "-1"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--dt" in proc.stderr
    proc = subprocess.run([*CLI, "frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown command" in proc.stderr
