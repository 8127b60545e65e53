"""Corpus actions retargeted as the bake does, cached for training and evaluation.

Why a cache: importing a real file and retargeting it needs Blender (``tools/train_clips.py`` does
it once, through the bake's own ``prepare``); training workers and the evaluation read only numpy
files.  Each action is kept as the bake's SimulationRequest (runtime.request: the proxy clip, the
character's height and proportions, the schedule) once per condition, so an evaluation run is the
bake itself with and without the policy.  ``index.json`` lists every file with its manifest
sha256 and its side of the split: a file already cached with the same sha256 is not redone.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..request import SimulationRequest

INDEX = "index.json"
CONDITIONS = ("fresh", "average", "exhausted")     # the bake's presets Fresh, Average, Exhausted
FORMAT = 1


@dataclass(frozen=True)
class CachedAction:
    file: str               # corpus path (manifest key)
    armature: str
    action: str
    split: str              # "train" or "eval" (runtime.train.split)
    requests: dict          # condition -> absolute path of the cached SimulationRequest (.npz)

    @property
    def label(self) -> str:
        return f"{self.file} [{self.action}]"


def slug(file: str, armature: str, action: str) -> str:
    """A file name for one action: the corpus path, armature and action, unsafe characters out."""
    raw = f"{file}__{armature}__{action}"
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in raw)


def read_index(cache: Path) -> dict:
    path = Path(cache) / INDEX
    if not path.is_file():
        return {"format": FORMAT, "files": {}}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if data.get("format") == FORMAT else {"format": FORMAT, "files": {}}


def write_index(cache: Path, index: dict) -> None:
    path = Path(cache) / INDEX
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".part").write_text(json.dumps(index, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(path.with_suffix(".part"), path)


def is_current(cache: Path, index: dict, file: str, sha256: str) -> bool:
    """Whether ``file`` is cached from this very content (every request it lists still on disk)."""
    entry = index["files"].get(file)
    if entry is None or entry.get("sha256") != sha256:
        return False
    return all((Path(cache) / name).is_file() for row in entry["actions"] for name in row.get("requests", {}).values())


def actions(cache: Path, split: str | None = None) -> list[CachedAction]:
    """Every cached action (of one side of the split, when ``split`` is given), in index order."""
    out = []
    for file, entry in sorted(read_index(cache)["files"].items()):
        if split is not None and entry["split"] != split:
            continue
        for row in entry["actions"]:
            if row.get("status") == "cached":
                out.append(CachedAction(file, row["armature"], row["action"], entry["split"],
                                        {c: str(Path(cache).resolve() / n) for c, n in row["requests"].items()}))
    return out


def load(path) -> SimulationRequest:
    return SimulationRequest.read(path)
