"""./fatigue train-clips: real files read by the bake's own prepare and cached per condition;
the cache round-trips the bake's request, a second run redoes nothing, and training reads it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import corpus_import  # noqa: E402

FILES = [f for f in corpus_import.corpus_files(corpus_import.CORPUS, ("MANIFEST.json", corpus_import.NEXT_MANIFEST))
         if f.humanoid]


def _cache(out: Path, files: str):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "train_clips.py"), "--out", str(out), "--files", files],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not FILES, reason="the real-file corpus (../shared/corpus) is not beside this checkout")
def test_cached_actions_are_the_bakes_requests_and_a_rerun_redoes_nothing(addon_package, tmp_path):
    import bpy

    import corpus
    from fatigued_takes.fatigue_addon import anim, bake
    from fatigued_takes.fatigue_addon.bake_options import BakeOptions
    from runtime.errors import TrainingClipError
    from runtime.train import clip_cache, split, srb_env

    s = split.load()
    # The smallest files of each side (a glTF for training: several actions in one file).
    train = min((f for f in FILES if not s.corpus_is_eval(f.rel) and f.fmt == "gltf"), key=lambda f: f.meta["bytes"])
    held = min((f for f in FILES if s.corpus_is_eval(f.rel)), key=lambda f: f.meta["bytes"])
    first = _cache(tmp_path, f"{train.rel},{held.rel}")
    assert first.returncode == 0, first.stderr
    sides = {a.split for a in clip_cache.actions(tmp_path)}
    assert sides == {"train", "eval"}
    cached = [a for a in clip_cache.actions(tmp_path, "train") if a.file == train.rel]
    assert cached and all(set(a.requests) == set(clip_cache.CONDITIONS) for a in cached)

    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.glob("*.npz")}
    again = _cache(tmp_path, f"{train.rel},{held.rel}")
    assert again.returncode == 0 and again.stdout.count("cached already") == 2
    assert {p: p.stat().st_mtime_ns for p in tmp_path.glob("*.npz")} == stamps

    # The bake's own request for the first action, read here again: the cached one is the same.
    arms = corpus_import.import_file(train.path)
    addon_package.register()
    try:
        obj = next(o for o in arms if o.name == cached[0].armature)
        action = bpy.data.actions[cached[0].action]
        corpus.rest_pose(obj)
        anim.assign_action(obj, action)
        start, end = corpus.bake_range(action, bpy.context.scene.render.fps, None)
        job = bake.prepare(bpy.context, obj, options=BakeOptions(preset="Exhausted", frame_start=start, frame_end=end))
    finally:
        addon_package.unregister()
    back = clip_cache.load(cached[0].requests["exhausted"])
    for name in ("root_pos", "root_rot", "joint_rots"):
        assert np.array_equal(getattr(back.clip, name), getattr(job.request.clip, name))
    assert back.height == job.request.height and back.schedule is not None
    assert np.array_equal(back.schedule.F, job.request.schedule.F)
    assert clip_cache.load(cached[0].requests["fresh"]).schedule is None
    prepared = []
    for a in cached:            # what the SRB carries trains, mirrored too
        try:
            prepared.append(srb_env.prepare(a.requests["fresh"], mirror=True))
        except TrainingClipError:
            continue
    assert prepared and all(p.body.tau_max is not None and p.ref.duration > 0.0 for p in prepared)
