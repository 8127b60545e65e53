"""The SRB policy's fixed split: what it trains on and what only evaluates it.

Why fixed and in data (split.json beside this module): a policy is judged on clips it never saw,
and that only means something if the unseen set is chosen before training and never changes with
results.  Bench clips: one evaluation clip per kind of movement (walk, jump, dance, strike); the
rest of each kind trains.  Corpus files: one per source repository with two or more humanoid files,
picked by a rule that knows nothing of how anything does on them (``rule_pick``); every armature and
action of an evaluation file is evaluation-only, so no performer or rig is on both sides.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SPLIT_FILE = Path(__file__).with_name("split.json")


@dataclass(frozen=True)
class Split:
    bench_eval: dict[str, str]              # kind -> the one evaluation clip of that kind
    bench_kinds: dict[str, tuple[str, ...]]  # kind -> every standing bench clip of that kind
    bench_floor_work: tuple[str, ...]       # bench clips the SRB does not carry (no policy acts)
    corpus_eval: tuple[str, ...]            # corpus paths (manifest keys) never trained on
    corpus_rule: str

    @property
    def bench_eval_clips(self) -> list[str]:
        return list(self.bench_eval.values())

    @property
    def bench_train_clips(self) -> list[str]:
        held = set(self.bench_eval.values())
        return [c for kind in self.bench_kinds.values() for c in kind if c not in held]

    def corpus_is_eval(self, rel: str) -> bool:
        return rel in self.corpus_eval


def load(path: Path = SPLIT_FILE) -> Split:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return Split(bench_eval=dict(data["bench_eval"]),
                 bench_kinds={k: tuple(v) for k, v in data["bench_kinds"].items()},
                 bench_floor_work=tuple(data["bench_floor_work"]), corpus_eval=tuple(data["corpus_eval"]),
                 corpus_rule=data["corpus_rule"])


def rule_pick(files: list[tuple[str, str, str]]) -> list[str]:
    """The corpus evaluation files by the split's rule, from humanoid (path, source repository,
    sha256) rows: for each source with two or more files, the file whose sha256 is smallest."""
    by_source: dict[str, list[tuple[str, str]]] = {}
    for rel, source, sha in files:
        by_source.setdefault(source, []).append((sha, rel))
    return sorted(min(rows)[1] for rows in by_source.values() if len(rows) >= 2)
