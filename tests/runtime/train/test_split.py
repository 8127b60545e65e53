"""The policy's fixed split: disjoint, one evaluation clip per kind, the corpus files by its rule."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))


def test_every_kind_has_one_evaluation_clip_and_the_sides_are_disjoint():
    from runtime.motion import clip as clips
    from runtime.train import split

    s = split.load()
    assert set(s.bench_eval) == set(s.bench_kinds) == {"walk", "jump", "dance", "strike"}
    for kind, clip in s.bench_eval.items():
        assert clip in s.bench_kinds[kind]
        assert [c for c in s.bench_kinds[kind] if c != clip], f"{kind}: nothing of this kind left to train on"
    assert not set(s.bench_eval_clips) & set(s.bench_train_clips)
    every = [c for kind in s.bench_kinds.values() for c in kind] + list(s.bench_floor_work)
    assert sorted(every) == sorted(clips.DEEPMIMIC_CLIPS)      # each bench clip placed exactly once


def test_the_corpus_evaluation_files_are_the_rules_pick_and_about_a_quarter():
    import corpus_import
    from runtime.train import split

    files = [f for f in corpus_import.corpus_files(corpus_import.CORPUS, ("MANIFEST.json", corpus_import.NEXT_MANIFEST))
             if f.humanoid]
    if not files:
        pytest.skip("no corpus beside this checkout")
    s = split.load()
    rows = [(f.rel, f.meta["source_repo"], f.meta["sha256"]) for f in files]
    assert sorted(s.corpus_eval) == split.rule_pick(rows)
    assert 0.2 <= len(s.corpus_eval) / len(files) <= 0.35
    sources = {f.meta["source_repo"] for f in files if s.corpus_is_eval(f.rel)}
    assert len(sources) == len(s.corpus_eval)          # across sources: one file each
    assert any(not s.corpus_is_eval(f.rel) for f in files)


def test_rule_pick_takes_the_smallest_hash_of_sources_with_two_files():
    from runtime.train import split

    rows = [("a", "one", "f0"), ("b", "one", "0a"), ("c", "two", "00"), ("d", "three", "9"), ("e", "three", "1")]
    assert split.rule_pick(rows) == ["b", "e"]
