"""./fatigue eval-policy, train and corpus: a bad policy file, a bad --seconds, an --out or --json
that cannot be written, a --files that matches nothing: one line naming the fix, exit 2, nothing
run and nothing written."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))

import corpus  # noqa: E402
import policy_eval  # noqa: E402
import train  # noqa: E402
from runtime.srb import policy as pol  # noqa: E402


def _shipped() -> tuple[dict, dict]:
    with np.load(pol.DEFAULT_MODEL) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(pol.DEFAULT_MODEL.with_suffix(".json").read_text(encoding="utf-8"))


def _truncated(folder: Path) -> Path:
    path = folder / "p.npz"
    data = pol.DEFAULT_MODEL.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    (folder / "p.json").write_text(pol.DEFAULT_MODEL.with_suffix(".json").read_text(encoding="utf-8"))
    return path


def _changed(arrays_change=None, card_change=None, card_text=None):
    def make(folder: Path) -> Path:
        arrays, card = _shipped()
        if arrays_change:
            arrays_change(arrays)
        if card_change:
            card_change(card)
        np.savez(folder / "p.npz", **arrays)
        (folder / "p.json").write_text(card_text if card_text is not None else json.dumps(card))
        return folder / "p.npz"
    return make


def _nan(arrays):
    arrays["w0"] = arrays["w0"].copy()
    arrays["w0"][0, 0] = np.nan


BAD_POLICIES = {
    "truncated": (_truncated, "not a readable policy"),
    "inner layers": (_changed(lambda a: a.update(w1=a["w1"][:-3])), "layer 1 takes"),
    "nan weights": (_changed(_nan), "NaN"),
    "bad json card": (_changed(card_text="{not json"), "not readable JSON"),
    "missing array": (_changed(lambda a: a.pop("b1")), "lack b1"),
    "card action count": (_changed(card_change=lambda c: c["action"].update(size=c["action"]["size"] + 1)),
                          "actions, its network has"),
}


def _one_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("pybullet build time")]
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("case", BAD_POLICIES)
def test_eval_policy_refuses_a_bad_policy_file_in_one_line(tmp_path, capsys, case):
    make, message = BAD_POLICIES[case]
    path = make(tmp_path)
    assert policy_eval.main([str(path), "--clips", "walk"]) == 2
    line = _one_line(capsys)
    assert message in line and "./fatigue train srb" in line


@pytest.mark.parametrize("seconds", ["-2", "0", "nan", "1e9"])
def test_eval_policy_refuses_seconds_outside_the_bench_range(capsys, seconds):
    assert policy_eval.main([str(pol.DEFAULT_MODEL), "--clips", "walk", "--seconds", seconds]) == 2
    assert "give between 0.5 and 600 seconds" in _one_line(capsys)


def _blocked(tmp_path: Path) -> Path:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    return blocker


@pytest.mark.parametrize("where,message", [
    (lambda tmp: _blocked(tmp), "is a file, not a folder: give a folder path"),
    (lambda tmp: _blocked(tmp) / "run", "is a file, not a folder: give another path"),
    (lambda tmp: Path("/proc/fatigue_no/run"), "cannot write into /proc"),
])
def test_train_refuses_an_out_it_cannot_write(tmp_path, capsys, where, message):
    out = where(tmp_path)
    assert train.main(["srb", "--clips", "walk", "--steps", "10", "--out", str(out)]) == 2
    assert message in _one_line(capsys)


def _corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "MANIFEST.json").write_text(json.dumps({"files": [{"path": "bvh/walk_01.bvh"},
                                                                  {"path": "fbx/run.fbx"}]}))
    return folder


def test_corpus_refuses_files_that_match_nothing_naming_the_files_it_has(tmp_path, capsys):
    assert corpus.main(["--corpus", str(_corpus(tmp_path)), "--files", "walk,nosuch"]) == 2
    line = _one_line(capsys)
    assert "'nosuch'" in line and "bvh/walk_01.bvh" in line and "fbx/run.fbx" in line


@pytest.mark.parametrize("where,message", [
    (lambda tmp: tmp, "is a directory, not a file"),
    (lambda tmp: _blocked(tmp) / "r.json", "is a file, not a folder"),
    (lambda tmp: Path("/proc/fatigue_no.json"), "cannot write into /proc"),
])
def test_corpus_refuses_a_json_it_cannot_write_before_baking(tmp_path, capsys, where, message):
    assert corpus.main(["--corpus", str(_corpus(tmp_path)), "--json", str(where(tmp_path))]) == 2
    assert message in _one_line(capsys)
