"""The residual's episodes (runtime/train/take_search.py): held-back sources by a rule on names,
a tired request is the preset's, the recording residual sums what it saw, a take's terms."""
from __future__ import annotations

import numpy as np

from runtime.fatigue import direction
from runtime.srb import residual
from runtime.train import split, take_search


def test_held_back_sources_are_a_fixed_share_by_name():
    labels = [f"source {k}" for k in range(400)]
    held = [lbl for lbl in labels if take_search.held_back(lbl)]
    assert held == [lbl for lbl in labels if take_search.held_back(lbl)]      # a rule, not a draw
    assert 0.15 < len(held) / len(labels) < 0.35
    assert not set(split.load().bench_eval_clips) & set(split.load().bench_train_clips)


def test_a_tired_request_is_the_preset_as_a_take_asks_for_it():
    source = take_search.bench_source("walk", seconds=3.0)
    assert source.request.schedule is None and source.played == 3.0
    req = take_search.tired_request(source, "Exhausted")
    sched, keys = direction.preset_schedule("Exhausted", 30.0, 3.0)
    assert req.tiredness == keys and np.array_equal(req.schedule.F, sched.F)
    assert req.clip is source.request.clip and req.seconds == source.request.seconds


def test_the_recording_residual_sums_what_it_acted_on_and_terms_read_the_take():
    source = take_search.bench_source("walk", seconds=2.0)
    rec = take_search.Recording(residual.Linear.zero())
    take = take_search.run(take_search.tired_request(source, "Exhausted"), rec)
    assert rec.count > 10 and np.isfinite(rec.total).all()
    assert (rec.squares >= 0.0).all() and rec.squares.shape == (residual.observation_size(),)
    t = take_search.terms(take, source.reference())
    assert not t.fell and t.kneels == 0 and 0.0 <= t.over_share <= 1.0
    assert 0.0 <= t.height_err_m <= t.root_err_m + 1e-12 and t.joint_err_deg > 0.0
