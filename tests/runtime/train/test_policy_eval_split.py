"""./fatigue eval-policy NPZ --split eval: the evaluation side, rule and policy side by side in
Fresh, Average and Exhausted, the table's rows; argument errors in one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runtime.fatigue import params, schedule
from runtime.motion import clip as clips
from runtime.request import SimulationRequest
from runtime.srb import policy as pol
from runtime.train import clip_cache, split

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))


EVERY_CONDITION = ("fresh", *(name.lower() for name in params.PRESETS))   # the cache holds three: the rest derived


def _eval(*args, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "policy_eval.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _cache_one_eval_action(cache: Path) -> None:
    """A short clip standing in for a corpus evaluation action, cached as train-clips caches one."""
    clip = clips.load_deepmimic(clips.deepmimic_clip_path("punch"))
    preset = {"average": params.preset("Average"), "exhausted": params.preset("Exhausted")}
    names = {}
    for condition in clip_cache.CONDITIONS:
        p = preset.get(condition)
        sched = None if p is None else schedule.from_fitness(p.fitness, 30.0, p.time_scale, p.initial_fatigue)
        names[condition] = f"x.{condition}.npz"
        SimulationRequest(clip=clip, schedule=sched, out_fps=30.0).write(cache / names[condition])
    clip_cache.write_index(cache, {"format": clip_cache.FORMAT, "files": {"bvh/x.bvh": {
        "sha256": "0", "source": "s", "split": "eval",
        "actions": [{"armature": "A", "action": "punch", "status": "cached", "requests": names}]}}})


@pytest.mark.slow
def test_split_eval_prints_every_row_and_the_table(tmp_path):
    _cache_one_eval_action(tmp_path)
    result = _eval(str(pol.DEFAULT_MODEL), "--split", "eval", "--cache", str(tmp_path), "--seconds", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    labels = [f"bench {c}" for c in split.load().bench_eval_clips] + ["bvh/x.bvh [punch]"]
    for label in labels:
        for condition in EVERY_CONDITION:
            assert any(line.startswith(label) and f" {condition} " in line for line in lines), (label, condition)
    table = lines[lines.index(next(l for l in lines if "runs" in l and "falls" in l)):]
    for condition in EVERY_CONDITION:
        row = next(l for l in table if l.startswith(condition))
        assert row.split()[1] == str(len(labels)) and "%" in row


def test_split_eval_refuses_without_a_cache(tmp_path):
    result = _eval(str(pol.DEFAULT_MODEL), "--split", "eval", "--cache", str(tmp_path / "none"), timeout=120)
    ours = [line for line in result.stderr.splitlines() if not line.startswith("pybullet build time")]
    assert result.returncode == 2 and len(ours) == 1 and "train-clips" in ours[0]
