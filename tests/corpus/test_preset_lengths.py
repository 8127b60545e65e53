"""./fatigue realism --presets: every preset on takes of several lengths, checked against what it promises."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import preset_lengths  # noqa: E402

pytestmark = pytest.mark.corpus


def _row(**changes) -> dict:
    row = {"clip": "walk", "seconds": 10.0, "preset": "Exhausted", "fell": False, "kneels": 0, "rests": 0,
           "rests_per_30s": 0.0, "stretch": 1.3, "speed": 0.7, "tempo_first_tenth": 0.8, "tempo_last_tenth": 0.75,
           "trunk_gain_deg": 8.0, "trunk_last_tenth_deg": 9.0, "head_gain_deg": 30.0, "breaths_per_min": 27.0, "asked": [0.5, 0.5],
           "reached": [0.5, 0.49], "speed_up": 5.0, "endurance_change": 1.0, "wall_s": 1.0}
    return row | changes


def _failed(rows) -> set[str]:
    return {what for what, held, _ in preset_lengths.checks(rows) if not held}


def test_the_checks_hold_for_a_take_that_keeps_its_promise_and_name_each_broken_one():
    assert not _failed([_row()])
    assert _failed([_row(kneels=1)]) == {"Exhausted: no fall, no kneel"}
    assert _failed([_row(speed=0.9)]) == {"Exhausted: speed 0.5-0.85 of fresh"}
    assert _failed([_row(breaths_per_min=20.0)]) == {"Exhausted: breathing at least 26 a minute"}
    assert _failed([_row(reached=[0.5, 0.3])]) == {"Directed tiredness reached within 0.1"}
    assert _failed([_row(), _row(seconds=90.0, speed=0.55)]) == {"Exhausted walk: speed at 10 s and 90 s within 0.1"}
    average = _row(preset="Average", asked=[0.0, 0.35], reached=[0.0, 0.36], speed=0.95, tempo_first_tenth=1.0,
                   tempo_last_tenth=0.95)
    assert _failed([average]) == {"Average, Untrained: last tenth at most 0.9 of fresh, trunk forward there"}
    # Slow enough at the end, but upright there (leaning only earlier) is not tired-looking.
    upright = average | {"tempo_last_tenth": 0.85, "trunk_last_tenth_deg": -0.5}
    assert _failed([upright]) == {"Average, Untrained: last tenth at most 0.9 of fresh, trunk forward there"}


def test_a_short_exhausted_walk_is_measured_beside_its_fresh_twin():
    row = preset_lengths.measure("walk", 2.0, "Exhausted")
    assert row["asked"] == [0.5, 0.5] and abs(row["reached"][1] - 0.5) <= 0.1
    assert 0.5 <= row["speed"] <= 0.85 and row["stretch"] > 1.0 and not row["fell"]
    assert row["trunk_gain_deg"] > 0 and row["head_gain_deg"] > 0 and row["trunk_last_tenth_deg"] > 0


def test_bad_arguments_are_one_line(capsys):
    assert preset_lengths.main(["--presets", "--clips", "nosuch"]) == 2
    assert preset_lengths.main(["--presets", "--lengths", "3,-1"]) == 2
    assert preset_lengths.main(["--presets", "--only", "Sleepy"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 3 and all(line.startswith("fatigue realism: ") for line in lines)
