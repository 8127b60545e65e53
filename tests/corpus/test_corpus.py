"""Real files, imported as users import them (Blender's importers at their defaults; BVH also with
"Update Scene FPS/Duration" ticked), baked over a short stretch fresh and Exhausted with the
panel's defaults: every humanoid bakes without a fall or a traceback, its retarget round trip is
exact, and a creature that is not a person is refused in one line.  ``./fatigue corpus`` runs the
same over every action at full length and reports the numbers."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("bpy")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import corpus  # noqa: E402
import corpus_import  # noqa: E402

FILES = corpus_import.corpus_files()
CASES = [(f, update) for f in FILES for update in ((False, True) if f.fmt == "bvh" else (False,))]
SECONDS = 1.0


def _id(case):
    f, update = case
    return f.rel + (" fps-updated" if update else "")


@pytest.fixture(scope="module")
def addon(addon_package):
    return addon_package


@pytest.mark.skipif(not FILES, reason="the real-file corpus (../shared/corpus) is not beside this checkout")
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_real_file_bakes_as_imported(addon, tmp_path, case):
    f, update = case
    rows = corpus.run_file(f.path, ["fresh", "exhausted"], SECONDS, update, tmp_path)
    assert rows, f"{f.rel}: nothing was baked or refused"
    for row in rows:
        label = f"{f.rel} [{row.get('action')}]"
        message = row["message"]
        assert "Traceback" not in message and "\n" not in message, label
        assert row["status"] != "error", f"{label}: {message}"
        if not f.humanoid:
            assert row["status"] == "refused" and "humanoid" in message, f"{label} was not refused: {row}"
            continue
        assert row["status"] == "baked", f"{label}: {message}"
        fresh = row["conditions"]["fresh"]
        assert not fresh["fell"], f"{label}: the fresh take fell at frame {fresh['fall_frame']}"
        assert row["round_trip_deg"] <= 1.0 and row["round_trip_m"] <= 0.01, f"{label}: round trip {row}"
        for cell in row["conditions"].values():
            assert all("Traceback" not in w for w in cell["warnings"])
