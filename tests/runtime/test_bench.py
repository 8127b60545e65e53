"""./fatigue bench: the conditions it runs, the fields it reports, its argument errors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import bench  # noqa: E402


@pytest.mark.slow
def test_fatigued_conditions_are_compared_with_fresh_and_graded_in_strength():
    result = bench.bench(["jump"], seconds=1.5, mode="srb", pushes=False, log=lambda *_: None)
    rows = {r["condition"]: r for r in result["runs"]}
    assert list(rows) == ["fresh", "moderate", "tired"]
    for field in bench.FIELDS:
        assert all(field in r for r in rows.values()), field
    assert rows["fresh"]["knee_flexion_gain_deg"] is None
    assert rows["moderate"]["knee_flexion_gain_deg"] is not None
    # Tired muscles have less left than moderately tired ones, which have less than fresh ones.
    assert rows["fresh"]["min_rc"] == 1.0
    assert rows["tired"]["min_rc"] < rows["moderate"]["min_rc"] < 1.0
    assert (result["moderate"]["fitness"], result["moderate"]["time_scale"]) == (0.25, 20.0)
    assert set(result["summary"]) == {"fresh", "moderate", "tired"}


def test_conditions_option_limits_the_runs(tmp_path):
    out = tmp_path / "b.json"
    assert bench.main(["--json", str(out), "--clips", "walk", "--seconds", "1", "--conditions", "tired"]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [r["condition"] for r in runs] == ["fresh", "tired"]


@pytest.mark.parametrize("argv", [["--conditions", "sleepy"], ["--conditions", ","], ["--clips", "moonwalk"],
                                  ["--seconds", "0.1"]])
def test_bad_arguments_exit_2_and_write_nothing(tmp_path, argv, capsys):
    out = tmp_path / "b.json"
    assert bench.main(["--json", str(out), *argv]) == 2
    assert not out.exists()
    assert capsys.readouterr().err.count("\n") == 1


def test_balance_of_the_source_is_reported_for_feet_not_for_floor_work():
    """Whether flat feet can carry the clip: measured for a walk, not asked of a crawl."""
    walk = bench.clip_balance(bench.clips.load_deepmimic(bench.clips.deepmimic_clip_path("walk")), 2.0)
    assert 0.0 < walk["cop_outside_pct"] < 100.0 and walk["stance_foot_tilt_deg"] < 10.0
    crawl = bench.clip_balance(bench.clips.load_deepmimic(bench.clips.deepmimic_clip_path("crawl")), 2.0)
    assert crawl == {"stance_foot_tilt_deg": None, "cop_outside_pct": None, "cop_outside_p90_m": None}
