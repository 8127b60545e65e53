"""./fatigue train-clips [--files a,b] [--out DIR]: the corpus's humanoid actions as training data.

Every humanoid file of both corpus manifests is imported as a user would (tools/corpus_import.py:
Blender's importer at its defaults, BVH with "Update Scene FPS/Duration" ticked so mocap plays at
the speed it was performed) and every armature and action is read by the bake's own
``bake.prepare``: the proxy clip, the character's height and proportions and the schedule, once per
condition (Fresh, Average, Exhausted), cached as SimulationRequest files under DIR (default
out/train_clips) with an index naming each file's side of the split (runtime/train/split.json).
A file already cached from the same content (its manifest sha256) is skipped; each file runs in its
own process, so one crash fails that file only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import corpus  # noqa: E402
import corpus_import  # noqa: E402
from runtime.train import clip_cache, split  # noqa: E402

DEFAULT_OUT = ROOT / "out" / "train_clips"


def cache_file(path: Path, rel: str, out: Path) -> list[dict]:
    """Every armature and action of one file, read by bake.prepare in every condition and written
    under ``out``; one row per action (status cached, refused or error)."""
    import bpy

    addon = corpus.load_addon()
    from fatigued_takes.fatigue_addon import anim, bake
    from fatigued_takes.fatigue_addon.bake_options import BakeOptions
    from fatigued_takes.fatigue_addon.failure import BakeInputError

    arms = corpus_import.import_file(path, update_scene_fps=path.name.lower().removesuffix(".gz").endswith(".bvh"))
    addon.register()
    rows = []
    try:
        for obj in arms:
            for action in corpus_import.armature_actions(obj):
                corpus.rest_pose(obj)
                scene = bpy.context.scene
                start, end = corpus.bake_range(action, scene.render.fps / scene.render.fps_base, None)
                row = {"armature": obj.name, "action": action.name, "range": [start, end], "status": "cached",
                       "message": "", "requests": {}}
                try:
                    for condition in clip_cache.CONDITIONS:
                        anim.assign_action(obj, action)
                        job = bake.prepare(bpy.context, obj, options=BakeOptions(
                            preset=corpus.CONDITIONS[condition], frame_start=start, frame_end=end))
                        name = f"{clip_cache.slug(rel, obj.name, action.name)}.{condition}.npz"
                        job.request.write(out / name)
                        row["requests"][condition] = name
                        row.update(frames=job.request.clip.frames, fps=job.request.clip.fps,
                                   height_m=round(float(job.request.height), 3))
                except BakeInputError as exc:
                    row.update(status="refused", message=str(exc), requests={})
                except Exception as exc:        # reported, never raised: the next action still runs
                    row.update(status="error", message=f"{type(exc).__name__}: {exc}", requests={},
                               traceback=traceback.format_exc()[-4000:])
                rows.append(row)
    finally:
        addon.unregister()
    return rows


def _child(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", type=Path, required=True)
    ap.add_argument("--rel", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", type=Path, required=True)
    a = ap.parse_args(argv)
    a.rows.write_text(json.dumps(cache_file(a.one, a.rel, a.out)), encoding="utf-8")
    return 0


def run(files: list, out: Path, log=print) -> dict:
    """Cache every file of ``files`` (corpus_import.CorpusFile) not already current; the index."""
    out.mkdir(parents=True, exist_ok=True)
    index = clip_cache.read_index(out)
    s = split.load()
    for cf in files:
        sha = cf.meta.get("sha256", "")
        if clip_cache.is_current(out, index, cf.rel, sha):
            log(f"{cf.rel}: cached already")
            continue
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            rows_path = Path(tmp) / "rows.json"
            env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", str(cf.path), "--rel", cf.rel,
                                   "--out", str(out), "--rows", str(rows_path)], capture_output=True, text=True, env=env)
            if proc.returncode == 0 and rows_path.is_file():
                rows = json.loads(rows_path.read_text(encoding="utf-8"))
            else:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
                rows = [{"armature": None, "action": None, "status": "error",
                         "message": f"the import process exited with {proc.returncode}: {tail[0]}", "requests": {}}]
        index["files"][cf.rel] = {"sha256": sha, "source": cf.meta.get("source_repo", ""),
                                  "split": "eval" if s.corpus_is_eval(cf.rel) else "train", "actions": rows}
        clip_cache.write_index(out, index)
        ok = sum(r["status"] == "cached" for r in rows)
        log(f"{cf.rel}: {ok}/{len(rows)} actions cached ({time.perf_counter() - t0:.0f} s)"
            + "".join(f"\n  {r['action']}: {r['status']}: {r['message']}" for r in rows if r["status"] != "cached"))
    return index


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--one":
        return _child(argv)
    ap = argparse.ArgumentParser(prog="./fatigue train-clips", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--files", help="comma-separated parts of corpus paths (default: every humanoid file)")
    ap.add_argument("--corpus", type=Path, default=corpus_import.CORPUS)
    a = ap.parse_args(argv)
    files = [f for f in corpus_import.corpus_files(a.corpus, ("MANIFEST.json", corpus_import.NEXT_MANIFEST))
             if f.humanoid]
    if not files:
        print(f"fatigue: no corpus at {a.corpus} (MANIFEST.json missing)", file=sys.stderr)
        return 2
    files = corpus_import.matching(files, a.files)
    index = run(files, a.out)
    counts = {side: len(clip_cache.actions(a.out, side)) for side in ("train", "eval")}
    print(f"{counts['train']} training and {counts['eval']} evaluation actions cached in {a.out}")
    return 0 if index["files"] else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
