"""./fatigue train srb: a tiny real run (spawned workers, torch update), its outputs, --resume,
and argument errors.  Learning itself is measured by the shipped model's card, not here."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))


def _train(*args, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "train.py"), "srb", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_tiny_run_writes_weights_card_curve_and_resumes(tmp_path):
    pytest.importorskip("torch")
    from runtime.srb import policy as pol

    out = tmp_path / "run"
    common = ["--clips", "walk", "--held-out", "run", "--out", str(out), "--workers", "1", "--envs", "2"]
    first = _train(*common, "--steps", "128")
    assert first.returncode == 0, first.stderr
    for name in ("srb_policy.npz", "srb_policy.json", "learning_curve.json", "learning_curve.png", "checkpoint.pt"):
        assert (out / name).is_file(), name
    card = json.loads((out / "srb_policy.json").read_text())
    assert card["training"]["clips"] == ["walk"] and card["training"]["held_out"] == ["run"]
    assert card["training"]["steps"] == 128 and card["observation"]["kind"] == "window"
    assert card["training"]["data"]["bench"] == ["walk"] and card["training"]["data"]["corpus"] == []
    assert "fall" in card["training"]["reward"] and "ACTION_PENALTY" not in card["training"]["reward"]
    low, high = card["observation"]["familiar_z2"]      # measured on rollouts of its training clips
    assert 0.0 < low < high
    assert card["gate"]["fatigue_rc"] == [0.9, 0.6] and card["action"]["layout"][-1] == "tempo kept"
    against = card["training"]["mean_action_against_rule"]   # the same episodes, rule alone and policy
    assert against["rule"]["steps"] > 0 and against["rule"]["episodes"] == against["policy"]["episodes"]
    policy = pol.SrbPolicy.load(out / "srb_policy.npz")
    assert policy.mlp(np.zeros(pol.observation_size("window"))).shape == (pol.ACTION_SIZE,)
    assert policy.gate == (0.9, 0.6)

    again = _train(*common, "--steps", "256", "--resume")
    assert again.returncode == 0, again.stderr
    assert "resumed at iteration 1" in again.stdout
    curve = json.loads((out / "learning_curve.json").read_text())
    assert [row["steps"] for row in curve] == [128, 256]

    # Same seed, same run: bit-identical weights.
    twin = tmp_path / "twin"
    _train("--clips", "walk", "--held-out", "run", "--out", str(twin), "--workers", "1", "--envs", "2", "--steps", "128")
    with np.load(twin / "srb_policy.npz") as a, np.load(tmp_path / "run" / "srb_policy.npz") as b:
        assert set(a.files) == set(b.files)
    first_curve = json.loads((twin / "learning_curve.json").read_text())
    assert first_curve[0]["reward_per_step"] == curve[0]["reward_per_step"]


@pytest.mark.slow
def test_an_ungated_landing_only_policy_trains_as_before(tmp_path):
    pytest.importorskip("torch")
    from runtime.srb import policy as pol

    out = tmp_path / "run"
    done = _train("--clips", "walk", "--out", str(out), "--workers", "1", "--envs", "2", "--steps", "128",
                  "--no-tempo", "--gate", "none")
    assert done.returncode == 0, done.stderr
    card = json.loads((out / "srb_policy.json").read_text())
    assert "gate" not in card and card["action"]["size"] == pol.LANDING_VELOCITY
    policy = pol.SrbPolicy.load(out / "srb_policy.npz")
    assert policy.gate is None and policy.mlp.biases[-1].shape == (pol.LANDING_VELOCITY,)


@pytest.mark.slow
def test_minutes_stops_on_a_saved_iteration_and_resume_continues(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "run"
    common = ["--clips", "walk", "--out", str(out), "--workers", "1", "--envs", "2"]
    first = _train(*common, "--steps", "100000", "--minutes", "0")
    assert first.returncode == 0, first.stderr
    assert "time limit of this call reached" in first.stdout and "stopped at 128 steps" in first.stdout
    assert (out / "checkpoint.pt").is_file() and (out / "srb_policy.npz").is_file()
    again = _train(*common, "--steps", "256", "--resume")
    assert again.returncode == 0, again.stderr
    assert "resumed at iteration 1, 128 steps" in again.stdout and "finished at 256 steps" in again.stdout
    curve = json.loads((out / "learning_curve.json").read_text())
    assert [row["steps"] for row in curve] == [128, 256]


@pytest.mark.parametrize("args, message", [
    (["--clips", "moonwalk", "--steps", "10"], "unknown clip"),
    (["--clips", "crawl", "--steps", "10"], "floor work"),
    (["--clips", "walk,run", "--kind", "phase", "--steps", "10"], "per clip"),
    (["--clips", "walk", "--held-out", "walk", "--steps", "10"], "both trained on and held out"),
    (["--clips", "walk", "--steps", "0"], "positive"),
    (["--clips", "walk", "--steps", "10", "--resume"], "no checkpoint"),
    (["--clips", "walk", "--kind", "phase", "--augment", "--steps", "10"], "--augment is for window policies"),
    (["--steps", "10"], "either --clips or --split train"),
    (["--clips", "walk", "--steps", "10", "--gate", "0.5,0.9"], "--gate"),
    (["--clips", "walk", "--split", "train", "--steps", "10"], "either --clips or --split train"),
    (["--split", "train", "--cache", "/nonexistent/train_clips", "--steps", "10"], "run ./fatigue train-clips first"),
])
def test_bad_arguments_exit_2_with_one_line(tmp_path, args, message):
    pytest.importorskip("torch")
    result = _train(*args, "--out", str(tmp_path / "o"), timeout=120)
    assert result.returncode == 2
    ours = [line for line in result.stderr.splitlines() if not line.startswith("pybullet build time")]
    assert len(ours) == 1 and message in ours[0]
    assert not (tmp_path / "o" / "srb_policy.npz").exists()


def test_augmented_training_adds_mirrored_and_time_scaled_copies():
    from runtime.train import srb_env

    assert srb_env.variants(["walk"], False) == [("walk", False, 1.0)]
    both = srb_env.variants(["walk", "jump"], True)
    assert len(both) == 2 * (2 + len(srb_env.AUGMENT_SPEEDS)) and ("jump", True, 1.0) in both
    fast = srb_env.prepare("walk", seconds=2.0, speed=1.25)
    plain = srb_env.prepare("walk", seconds=2.0)
    mirror = srb_env.prepare("walk", seconds=2.0, mirror=True)
    assert fast.name == "walk@1.25x" and mirror.name == "walk~mirror"
    assert fast.ref.clip.fps == pytest.approx(1.25 * plain.ref.clip.fps)
    speed = lambda p: np.linalg.norm(p.ref.com_vel[:, :2], axis=1).mean()   # noqa: E731
    assert speed(fast) == pytest.approx(1.25 * speed(plain), rel=0.05)
    assert np.allclose(mirror.ref.com[:, 1], -plain.ref.com[:, 1], atol=1e-6)



def test_augmented_variants_that_are_floor_work_are_left_out_not_raised():
    from runtime.errors import TrainingClipError
    from runtime.train import srb_env

    for name in ("backflip", "walk"):
        kept = srb_env.prepare_all([name], True)
        assert 1 <= len(kept) <= len(srb_env.variants([name], True))
        assert kept[0].name == name                     # the clip as it is comes first
    with pytest.raises(TrainingClipError):
        srb_env.prepare("crawl")
    assert srb_env.prepare_all(["crawl"], True) == []
