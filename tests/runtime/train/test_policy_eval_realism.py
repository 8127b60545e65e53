"""./fatigue eval-policy --split eval --realism: per clip the realism direction score of the rule
and the policy side by side, Exhausted speed, stride and rests for locomotion, and a summary per side."""
from __future__ import annotations

import sys
from pathlib import Path

from runtime.fatigue import params, schedule
from runtime.motion import clip as clips
from runtime.request import SimulationRequest
from runtime.srb import policy as pol

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))

import policy_eval  # noqa: E402


def _walk_requests(cache, seconds):
    """One short locomotion clip in the three conditions, standing in for the evaluation side."""
    clip = clips.load_deepmimic(clips.deepmimic_clip_path("walk"))
    out = []
    for condition, preset in policy_eval.SPLIT_CONDITIONS.items():
        sched = None
        if preset is not None:
            p = params.preset(preset)
            sched = schedule.from_fitness(p.fitness, 30.0, p.time_scale, p.initial_fatigue)
        out.append(("bench walk", condition, SimulationRequest(clip=clip, schedule=sched, seconds=seconds, out_fps=30.0)))
    return out


def test_realism_prints_direction_scores_and_tired_locomotion_side_by_side(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(policy_eval, "split_requests", _walk_requests)
    monkeypatch.setattr(policy_eval.clip_cache, "actions", lambda cache, side: ["cached"])
    assert policy_eval.main([str(pol.DEFAULT_MODEL), "--split", "eval", "--realism", "--cache", str(tmp_path),
                             "--seconds", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("bench walk") and " realism " in line)
    assert "directions right" in row and "exhausted speed" in row and "stride" in row and "rests/10s" in row
    for side in ("rule", "policy"):
        summary = next(line for line in lines if line.startswith(f"realism {side}"))
        assert "directions right" in summary and "exhausted locomotion speed/stride/rests" in summary


def test_realism_needs_the_split(capsys):
    assert policy_eval.main([str(pol.DEFAULT_MODEL), "--realism"]) == 2
    assert "--split eval" in capsys.readouterr().err
