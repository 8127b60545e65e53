"""Whether the farm's takes equal ./fatigue bake's bit for bit, on the corpus's humanoids.

    python tools/farm_parity.py [--files PART,PART] [--variants fresh,exhausted] [--seconds 2]
                                [--update-fps] [--blender BLENDER] [--keep DIR]

Each humanoid file of both corpus manifests (MANIFEST.json and MANIFEST.next.json; ``--files``:
those whose path contains a part) is imported as a user would (tools/corpus_import.py) and saved as
a scene of its first armature and action, its first ``--seconds``.  That scene is baked by
./fatigue bake (tools/batch.py: its variants one after the other, in one output file) and by the
job of ./fatigue farm with the same options, run here by ``openjd run`` (tools/farm.py run_local:
one Bake task per variant, tools/farm_task.py under ``--blender``, default a real ``blender`` on
the PATH, else tools/blender_standin.py).  Printed: per file and variant, how
many of the take's curves equal the local take's keyframe for keyframe, bit for bit, and the
largest difference; last, how many takes are equal, per variant and in all.  Slow (an import and 1 + variants bakes per
file); each step runs in its own process.  Exit 0 when every take is equal, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus_import  # noqa: E402
import farm  # noqa: E402
from blender_standin import blender_command  # noqa: E402

ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


# ============================================================================= children (own processes)

def make_scene(source: Path, out: Path, seconds: float, update_fps: bool = False) -> int:
    """Import ``source``, keep its first armature and action over the first ``seconds``, save ``out``."""
    import bpy

    import corpus

    arms = corpus_import.import_file(source, update_scene_fps=update_fps)
    actions = corpus_import.armature_actions(arms[0]) if arms else []
    if not actions:
        print(json.dumps({"error": "no armature with an action"}))
        return 0
    obj, action = arms[0], actions[0]
    corpus.rest_pose(obj)
    scene = bpy.context.scene
    start, end = corpus.bake_range(action, scene.render.fps / scene.render.fps_base, seconds)
    scene.frame_start, scene.frame_end = start, end
    obj.animation_data.action = action
    if obj.name not in bpy.context.view_layer.objects:      # a glTF scene's armature outside the view layer
        bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.wm.save_as_mainfile(filepath=str(out))
    print(json.dumps({"armature": obj.name, "action": action.name, "frames": [start, end]}))
    return 0


def _curves(path: Path) -> dict:
    """take action name -> {(data path, index): keyframe co (float32)} of a saved file."""
    import bpy
    import numpy as np

    import demo_blend

    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    anim = demo_blend.addon_module("fatigue_addon.anim")
    out = {}
    for action in bpy.data.actions:
        if ".fatigued" not in action.name:
            continue
        curves = {}
        for fc in anim.all_action_fcurves(action):
            co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
            fc.keyframe_points.foreach_get("co", co)
            curves[(fc.data_path, fc.array_index)] = co
        out[action.name] = curves
    return out


def compare(local: Path, farmed: list[Path]) -> int:
    """Print, per farm file, its take against the local file's take of the same name (JSON)."""
    import numpy as np

    import demo_blend

    demo_blend.load_addon()
    mine = _curves(local) if local.is_file() else {}
    rows = []
    for path in farmed:
        theirs = _curves(path) if path.is_file() else {}
        for name, curves in theirs.items():
            base = mine.get(name, {})
            differ = [k for k, co in curves.items() if k not in base or not np.array_equal(co, base[k])]
            worst = max((float(np.abs(curves[k] - base[k]).max()) for k in differ
                         if k in base and base[k].shape == curves[k].shape), default=0.0)
            rows.append({"farm": path.name, "take": name, "curves": len(curves), "differ": len(differ),
                         "missing": len(set(base) ^ set(curves)), "max_diff": worst,
                         "examples": sorted({k[0].rsplit(".", 1)[-1] for k in differ})[:4]})
        if not theirs:
            rows.append({"farm": path.name, "take": None, "error": "no take in the farm's file"})
    print(json.dumps(rows))
    return 0


# ============================================================================= the run (parent)

def _child(*args, timeout=1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(Path(__file__).resolve()), *map(str, args)], capture_output=True,
                          text=True, env=ENV, timeout=timeout)


def _last_json(proc: subprocess.CompletedProcess):
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(("{", "[")):
            return json.loads(line)
    raise RuntimeError(f"exit {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")


def one_file(cf, variants: list[str], seconds: float, blender: str, work: Path, update_fps: bool) -> list[dict]:
    work.mkdir(parents=True, exist_ok=True)
    scene = work / (Path(cf.rel).name.split(".")[0] + ".blend")
    made = _last_json(_child("--make-scene", cf.path, scene, "--seconds", seconds,
                             *(["--update-fps"] if update_fps and cf.fmt == "bvh" else [])))
    if "error" in made:
        return [{"file": cf.rel, "variant": v, "error": made["error"]} for v in variants]
    local = work / "local" / scene.name
    proc = subprocess.run([sys.executable, str(HERE / "batch.py"), str(scene), "--out", str(local),
                           "--variants", ",".join(variants)], capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        print(f"  ./fatigue bake: exit {proc.returncode}: {(proc.stdout + proc.stderr).strip()[-300:]}")
    bundle = work / "job"
    made_job = subprocess.run([sys.executable, str(HERE / "farm.py"), str(scene), "--variants", ",".join(variants),
                               "--out", str(bundle)], capture_output=True, text=True, env=ENV)
    if made_job.returncode != 0:
        print(f"  ./fatigue farm: exit {made_job.returncode}: {(made_job.stdout + made_job.stderr).strip()[-300:]}")
    else:
        run = farm.run_local(bundle, workers=1, overrides={"BlenderExecutable": blender})
        for session in run["bake"]:
            if session["returncode"] != 0:
                fail = [line for line in session["output"].splitlines() if "openjd_fail" in line]
                print(f"  farm task {session['task']}: exit {session['returncode']}: "
                      f"{fail[-1] if fail else session['output'][-300:]}")
    farmed = [bundle / "out" / f"{scene.stem}.{v}.blend" for v in variants]
    rows = _last_json(_child("--compare", local, *farmed))
    return [dict(r, file=cf.rel, frames=made["frames"], action=made["action"]) for r in rows]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--make-scene"]:
        ap = argparse.ArgumentParser()
        ap.add_argument("source", type=Path)
        ap.add_argument("out", type=Path)
        ap.add_argument("--seconds", type=float, default=2.0)
        ap.add_argument("--update-fps", action="store_true")
        a = ap.parse_args(argv[1:])
        code = make_scene(a.source, a.out, a.seconds, a.update_fps)
    elif argv[:1] == ["--compare"]:
        code = compare(Path(argv[1]), [Path(p) for p in argv[2:]])
    else:
        return run(argv)
    sys.stdout.flush()
    os._exit(code)          # no interpreter teardown: some bpy modules crash or hang in it


def _variant(row: dict, variants: list[str]) -> str:
    """The variant a result row is of: named by the row, or by its farm file (``<scene>.<variant>.blend``)."""
    if row.get("variant"):
        return row["variant"]
    name = str(row.get("farm") or "")
    return next((v for v in variants if name.endswith(f".{v}.blend")), name or "?")


def run(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="farm_parity.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", help="comma-separated parts of corpus paths (default: every humanoid)")
    ap.add_argument("--variants", default="fresh,exhausted")
    ap.add_argument("--seconds", type=float, default=2.0, help="the first seconds of each file's action")
    ap.add_argument("--blender", help="the farm's Blender (default: blender on the PATH, else the stand-in)")
    ap.add_argument("--update-fps", action="store_true", help="BVH imported with Update Scene FPS ticked")
    ap.add_argument("--keep", type=Path, help="keep the scenes and takes in this folder")
    a = ap.parse_args(argv)
    files = [f for f in corpus_import.matching(corpus_import.corpus_files(
        manifests=("MANIFEST.json", corpus_import.NEXT_MANIFEST)), a.files) if f.humanoid]
    if not files:
        print(f"farm_parity: no humanoid corpus file matches {a.files!r} (corpus: {corpus_import.CORPUS})",
              file=sys.stderr)
        return 2
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    with tempfile.TemporaryDirectory(prefix="farm-parity-") as tmp:
        work = a.keep or Path(tmp)
        blender = a.blender or blender_command(Path(tmp))
        equal = total = 0
        per: dict[str, list[int]] = {}          # variant -> [equal, total]
        for cf in files:
            try:
                rows = one_file(cf, variants, a.seconds, blender, work / Path(cf.rel).name.split(".")[0],
                                a.update_fps)
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                rows = [{"file": cf.rel, "variant": v, "error": str(exc).strip().splitlines()[-1]} for v in variants]
            for row in rows:
                total += 1
                variant = _variant(row, variants)
                per.setdefault(variant, [0, 0])[1] += 1
                if "error" in row:
                    print(f"{row['file']} [{row.get('variant') or row.get('farm')}]: {row['error']}")
                    continue
                same = row["differ"] == 0 and row["missing"] == 0
                equal += same
                per[variant][0] += same
                print(f"{row['file']} {row['take']} (frames {row['frames'][0]}-{row['frames'][1]}): "
                      f"{row['curves'] - row['differ']}/{row['curves']} curves bit for bit"
                      + ("" if same else f", {row['differ']} differ by up to {row['max_diff']:.3g} "
                                         f"({', '.join(row['examples'])})"), flush=True)
        for variant, (e, t) in per.items():
            print(f"farm_parity: {variant}: {e} of {t} farm take(s) equal")
        print(f"farm_parity: {equal} of {total} farm take(s) equal ./fatigue bake's bit for bit")
    return 0 if equal == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
