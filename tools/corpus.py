"""./fatigue corpus: bake every real file of ../shared/corpus the way a user would, and measure.

Every file is imported with Blender's own importer at its defaults (BVH also with "Update Scene
FPS/Duration" ticked, with ``--bvh-import update`` or ``both``), every armature and every action
it brings is baked over its whole length with the panel's defaults, in each condition (Fresh: no
fatigue; the Average and Exhausted presets), through the same ``bake`` calls the button makes.
Reported per file and action: baked or refused (and the one line a user reads), what held the
body up, whether and where it fell, the fresh tracking error (mean joint position error relative
to the root, and the root's error, in metres for a 1.75 m body), the worst end effector (hands, feet,
head relative to the hips, 95th percentile over frames, metres for a 1.75 m body: tools/effectors.py;
a stick strip for each take over 0.10 m, the worst takes listed by name at the end), the duration
stretch, realtime_x, and the retarget round trip (source -> proxy -> rig, no simulation: degrees and
metres).

Each file runs in its own process (``--jobs`` at once): a crash in one file fails that file only.
Nothing here knows a file by name: the corpus is a sample of what users have.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import batch  # noqa: E402
import corpus_import  # noqa: E402
import effectors  # noqa: E402
from runtime.fatigue import params as fatigue_params  # noqa: E402

CONDITIONS = {"fresh": "Fresh", "average": "Average", "exhausted": "Exhausted"}   # what a run bakes unless told
PRESETS = {"fresh": "Fresh", **{name.lower(): name for name in fatigue_params.PRESETS}}   # what --conditions may name
REPORT_HEIGHT = effectors.REPORT_HEIGHT     # errors are reported in metres for a body this tall
ROUND_TRIP_SAMPLES = 24


def load_addon():
    tests = ROOT / "tests"
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    import conftest

    return conftest.load_addon_package()


def bake_range(action, fps: float, seconds: float | None) -> tuple[int, int]:
    """The action's whole keyed range in whole frames, or its first ``seconds``."""
    start, end = action.frame_range
    start, end = int(math.floor(start + 1e-6)), int(math.ceil(end - 1e-6))
    if end <= start:
        end = start + 1
    if seconds is not None:
        end = min(end, start + max(2, int(round(seconds * fps))))
    return start, end


def round_trip(obj, mapping, start: int, end: int, height: float) -> dict:
    """Source -> Clip -> a new action, unmodified: how far the mapped bones' world rotations and the
    pelvis (metres at the simulated size) come back from where the source puts them."""
    import bpy
    import numpy as np

    from fatigued_takes.fatigue_addon import anim, retarget

    source = anim.active_action(obj)
    clip, info = retarget.action_to_clip(obj, mapping, start, end, proxy_height=height)
    name = "__fatigue_round_trip__"
    back = retarget.clip_to_action(obj, mapping, clip, info, name)
    frames = np.unique(np.linspace(start, end, ROUND_TRIP_SAMPLES).round().astype(int))
    bones = [mapping[k] for k in retarget.rigmap.HUMANOID_KEYS]
    scene = bpy.context.scene

    def sample(action):
        anim.assign_action(obj, action)
        out = []
        for f in frames:
            scene.frame_set(int(f))
            mw = np.array(obj.matrix_world)
            out.append([mw @ np.array(obj.pose.bones[b].matrix) for b in bones])
        return np.array(out)

    keep_slot = getattr(obj.animation_data, "action_slot", None)
    try:
        a, b = sample(source), sample(back)
    finally:
        anim.assign_action(obj, source, keep_slot)
        bpy.data.actions.remove(back)
    ra, rb = retarget.polar(a[..., :3, :3]), retarget.polar(b[..., :3, :3])
    cos = np.clip((np.trace(np.swapaxes(ra, -1, -2) @ rb, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
    pelvis = bones.index(mapping["pelvis"])
    dist = np.linalg.norm(a[:, pelvis, :3, 3] - b[:, pelvis, :3, 3], axis=-1) * info.scale
    return {"round_trip_deg": float(np.degrees(np.arccos(cos)).max()), "round_trip_m": float(dist.max())}


def bake_one(obj, action, condition: str, start: int, end: int, engine: str | None = None,
             mode: str | None = None, on_take=None, strips: Path | None = None, label: str = "") -> dict:
    """One bake through the button's own calls; a dict of what the user and the bench see.
    ``on_take(take, job)``, when given, also receives the Take and the bake.BakeJob (its request
    holds the source clip and the height): ``./fatigue realism`` measures them.  A take whose worst
    end effector is over effectors.LIMIT_M gets a strip in ``strips`` named after ``label``."""
    import bpy

    from fatigued_takes.fatigue_addon import anim, backend, bake
    from fatigued_takes.fatigue_addon import report as bake_report
    from fatigued_takes.fatigue_addon.bake_options import BakeOptions
    from fatigued_takes.runtime.motion import metrics, pose_error

    anim.assign_action(obj, action)
    options = BakeOptions(preset=PRESETS[condition], frame_start=start, frame_end=end, engine=engine,
                               mode=mode)
    t0 = time.perf_counter()
    job = bake.prepare(bpy.context, obj, options=options)
    run = bake.make_run(job, None, threaded=False)
    take = backend.run_sync(run, None, None)
    job.timings["simulate"] = time.perf_counter() - t0
    report = bake.write(bpy.context, job, take)
    if on_take is not None:
        on_take(take, job)
    height = float(job.request.height)
    k = REPORT_HEIGHT / height
    source_clip = job.request.clip
    out = {
        "baked_range": [job.frame_start, job.frame_end],
        "frames": report["frames"],
        "support": report["support"],
        "fell": report["fell"],
        "fall_frame": report["fall_frame"],
        "rests": report["rests"],
        "kneels": report.get("kneels", 0),
        "tiredness": report.get("tiredness"),
        "duration_stretch": round(report["duration_stretch"], 3),
        "realtime_x": round(report["realtime_x"], 2),
        "height_m": round(height, 3),
        "engine": report.get("engine"),
        "joint_err_m": round(k * pose_error.joint_position_error_m(take, source_clip, height), 4),
        "root_err_m": round(k * metrics.root_error_m(take, source_clip), 4),
        "joint_err_deg": round(metrics.joint_error_deg(take, source_clip), 2),
        **effectors.measure_and_strip(label, condition, take, source_clip, strips),
        "warnings": report["warnings"],
        "summary": bake_report.summary(report),
    }
    anim.assign_action(obj, action)
    return out


def run_file(path: Path, conditions: list[str], seconds: float | None, update_fps: bool, log_dir: Path,
             actions: list[str] | None = None, engine: str | None = None, mode: str | None = None,
             on_take=None, strips: Path | None = None) -> list[dict]:
    """Every armature and action of one file, baked in every condition (rows of the report).
    ``on_take(row, condition, take, job)``, when given, receives every Take as it is baked."""
    import bpy

    addon = load_addon()
    from fatigued_takes.fatigue_addon import anim, bake
    from fatigued_takes.fatigue_addon.failure import BakeInputError

    arms = corpus_import.import_file(path, update_scene_fps=update_fps)
    addon.register()
    rows = []
    try:
        if not arms:
            return [{"armature": None, "action": None, "status": "refused", "message": "no armature in the file"}]
        for obj in arms:
            for action in corpus_import.armature_actions(obj):
                if actions and action.name not in actions:
                    continue
                rest_pose(obj)              # as freshly imported: channels this action does not key read rest
                scene = bpy.context.scene
                fps = scene.render.fps / scene.render.fps_base
                start, end = bake_range(action, fps, seconds)
                row = {"armature": obj.name, "action": action.name, "scene_fps": fps, "range": [start, end],
                       "status": "baked", "message": "", "conditions": {}}
                try:
                    for condition in conditions:
                        hook = None if on_take is None else (
                            lambda take, job, c=condition: on_take(row, c, take, job))
                        row["conditions"][condition] = bake_one(obj, action, condition, start, end, engine, mode, hook,
                                                                strips, f"{path.name}{' (fps updated)' if update_fps else ''} "
                                                                f"[{action.name}]")
                    anim.assign_action(obj, action)
                    mapping = bake.resolve_mapping(obj, obj.fatigue_settings)
                    height = row["conditions"][conditions[0]]["height_m"] if conditions else 1.75
                    lo, hi = row["conditions"][conditions[0]]["baked_range"] if conditions else (start, end)
                    row.update(round_trip(obj, mapping, lo, hi, height))
                except BakeInputError as exc:
                    row["status"], row["message"] = "refused", str(exc)
                except Exception as exc:        # reported, never raised: the next action still runs
                    log = log_dir / f"{path.stem}.{obj.name}.{action.name}.log".replace("/", "_").replace("|", "_")
                    log.write_text(traceback.format_exc(), encoding="utf-8")
                    row["status"] = "error"
                    row["message"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} (log: {log})"
                rows.append(row)
    finally:
        addon.unregister()
    return rows


def rest_pose(obj) -> None:
    """Every pose channel at rest: an action that does not key a bone would otherwise read the pose
    the previous action (or take) left on it."""
    for pb in obj.pose.bones:
        pb.location = (0.0, 0.0, 0.0)
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        pb.rotation_euler = (0.0, 0.0, 0.0)
        pb.rotation_axis_angle = (0.0, 0.0, 1.0, 0.0)
        pb.scale = (1.0, 1.0, 1.0)


def _child(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--conditions", default="fresh,average,exhausted")
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--update-fps", action="store_true")
    ap.add_argument("--log-dir", type=Path, required=True)
    ap.add_argument("--actions")
    ap.add_argument("--engine")
    ap.add_argument("--mode")
    ap.add_argument("--strips", type=Path)
    a = ap.parse_args(argv)
    rows = run_file(a.one, a.conditions.split(","), a.seconds, a.update_fps, a.log_dir,
                    a.actions.split(",") if a.actions else None, a.engine, a.mode, strips=a.strips)
    a.out.write_text(json.dumps(rows), encoding="utf-8")
    return 0


def run_in_child(cf, bvh_import: str, conditions: list[str], seconds, log_dir: Path, actions=None,
                 engine: str | None = None, mode: str | None = None, strips: Path | None = None) -> dict:
    """One file in its own Python process; a crash there is this file's error, not the run's."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(cf.path), "--out", str(out),
               "--conditions", ",".join(conditions), "--log-dir", str(log_dir)]
        if seconds is not None:
            cmd += ["--seconds", str(seconds)]
        if bvh_import == "update":
            cmd.append("--update-fps")
        if actions:
            cmd += ["--actions", ",".join(actions)]
        if engine:
            cmd += ["--engine", engine]
        if mode:
            cmd += ["--mode", mode]
        if strips is not None:
            cmd += ["--strips", str(strips)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode == 0 and out.is_file():
            rows = json.loads(out.read_text(encoding="utf-8"))
        else:
            log = log_dir / f"{Path(cf.rel).name}.{bvh_import}.crash.log"
            log.write_text(proc.stdout[-20000:] + "\n" + proc.stderr[-20000:], encoding="utf-8")
            rows = [{"armature": None, "action": None, "status": "error",
                     "message": f"the import or bake process exited with {proc.returncode} (log: {log})"}]
    return {"file": cf.rel, "format": cf.fmt, "humanoid": cf.humanoid, "import": bvh_import if cf.fmt == "bvh" else "default",
            "rows": rows, "wall_s": round(time.perf_counter() - t0, 1)}


def summarise(results: list[dict], conditions: list[str]) -> dict:
    """Corpus-wide numbers: what the issue's Done-when asks about."""
    rows = [(r, row) for r in results for row in r["rows"]]
    human = [(r, row) for r, row in rows if r["humanoid"]]
    baked = [(r, row) for r, row in human if row["status"] == "baked"]
    out = {"files": len(results), "humanoid_rows": len(human), "baked_rows": len(baked),
           "not_baked": [f"{r['file']} [{row.get('action')}]: {row['message']}" for r, row in human if row["status"] != "baked"],
           "non_humanoid": [f"{r['file']} [{row.get('action')}]: {row['status']}: {row['message']}"
                            for r, row in rows if not r["humanoid"]]}
    for c in conditions:
        cells = [row["conditions"][c] for _, row in baked if c in row["conditions"]]
        out[c] = {
            "takes": len(cells),
            "falls": [f"{r['file']} [{row['action']}] frame {row['conditions'][c]['fall_frame']}"
                      for r, row in baked if c in row["conditions"] and row["conditions"][c]["fell"]],
            "median_joint_err_m": statistics.median(x["joint_err_m"] for x in cells) if cells else None,
            "median_root_err_m": statistics.median(x["root_err_m"] for x in cells) if cells else None,
            "median_realtime_x": statistics.median(x["realtime_x"] for x in cells) if cells else None,
        }
    out["effectors"] = effectors.summary(
        [(f"{r['file']}{' (fps updated)' if r['import'] == 'update' else ''} [{row['action']}]", c, x)
         for r, row in baked for c, x in row["conditions"].items()])
    trips = [row for _, row in baked if "round_trip_deg" in row]
    out["round_trip_max_deg"] = max((row["round_trip_deg"] for row in trips), default=None)
    out["round_trip_max_m"] = max((row["round_trip_m"] for row in trips), default=None)
    return out


def print_table(results: list[dict], conditions: list[str]) -> None:
    for r in results:
        for row in r["rows"]:
            head = f"{r['file']}{' (fps updated)' if r['import'] == 'update' else ''} [{row.get('action')}]"
            if row["status"] != "baked":
                print(f"{head}: {row['status'].upper()}: {row['message']}")
                continue
            cells = []
            for c in conditions:
                x = row["conditions"][c]
                fell = f"FELL@{x['fall_frame']}" if x["fell"] else "stood"
                tired = x.get("tiredness")
                cells.append(f"{c} {fell} j{x['joint_err_m']:.3f} e{x['effector_p95_m']:.3f} r{x['root_err_m']:.3f} "
                             f"x{x['duration_stretch']:.2f} {x['realtime_x']:.1f}rt {x['rests']}rest {x['kneels']}kneel"
                             + (f" tired {tired['reached'][0]:.2f}>{tired['reached'][1]:.2f}" if tired else ""))
            sup = row["conditions"][conditions[0]]["support"] if conditions else ""
            print(f"{head}: {'; '.join(cells)}; trip {row.get('round_trip_deg', float('nan')):.2f}deg "
                  f"{row.get('round_trip_m', float('nan')):.4f}m; {sup}")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--one":
        return _child(argv)
    ap = argparse.ArgumentParser(prog="./fatigue corpus", description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the full report here")
    ap.add_argument("--files", help="comma-separated parts of corpus paths to run (default: all)")
    ap.add_argument("--conditions", default=",".join(CONDITIONS),
                    help=f"comma-separated presets (default {','.join(CONDITIONS)}; any of {','.join(PRESETS)})")
    ap.add_argument("--seconds", type=float, help="bake only the first S seconds of each action")
    ap.add_argument("--bvh-import", choices=("default", "update", "both"), default="both",
                    help="BVH: importer defaults, 'Update Scene FPS/Duration' ticked, or both")
    ap.add_argument("--actions", help="comma-separated action names to run (default: every action)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--corpus", type=Path, default=corpus_import.CORPUS)
    ap.add_argument("--engine", choices=("auto", "pybullet", "mujoco"),
                    help="physics engine (default: the add-on preference, Automatic)")
    ap.add_argument("--mode", choices=("srb", "torque"),
                    help="simulation mode (default: the panel's, SRB; torque: the whole body sampled, slower)")
    ap.add_argument("--strips", type=Path, metavar="DIR",
                    help=f"write a stick strip of each take whose worst end effector is over {effectors.LIMIT_M:.2f} m "
                         "here (default: a new temporary folder)")
    a = ap.parse_args(argv)
    conditions = [c for c in a.conditions.split(",") if c]
    bad = [c for c in conditions if c not in PRESETS]
    if bad:
        print(f"fatigue corpus: unknown condition {bad[0]!r}: use {', '.join(PRESETS)}", file=sys.stderr)
        return 2
    problem = None if a.json is None else batch.writable_problem(a.json)
    if problem:
        print(f"fatigue corpus: --json: {problem}", file=sys.stderr)
        return 2
    files = corpus_import.corpus_files(a.corpus, ("MANIFEST.json", corpus_import.NEXT_MANIFEST))
    if not files:
        print(f"fatigue corpus: no corpus at {a.corpus} (MANIFEST.json missing)", file=sys.stderr)
        return 2
    unmatched = [p for p in (a.files or "").split(",") if p and not corpus_import.matching(files, p)]
    if unmatched:
        names = ", ".join(f.rel for f in files[:8]) + (f" ... ({len(files)} files)" if len(files) > 8 else "")
        print(f"fatigue corpus: --files {unmatched[0]!r} is part of no corpus path: give parts of {names}",
              file=sys.stderr)
        return 2
    files = corpus_import.matching(files, a.files)
    jobs = []
    for f in files:
        modes = ("default", "update") if (f.fmt == "bvh" and a.bvh_import == "both") else (a.bvh_import,)
        jobs += [(f, m) for m in modes]
    log_dir = Path(tempfile.mkdtemp(prefix="fatigue_corpus_logs_"))
    strips = (a.strips or Path(tempfile.mkdtemp(prefix="fatigue_corpus_strips_"))).resolve()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        actions = [x for x in a.actions.split(",") if x] if a.actions else None
        results = list(pool.map(lambda fm: run_in_child(fm[0], fm[1], conditions, a.seconds, log_dir, actions, a.engine,
                                                          a.mode, strips),
                                jobs))
    print_table(results, conditions)
    summary = summarise(results, conditions)
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    summary["jobs"] = a.jobs
    summary["cores"] = os.cpu_count()
    print(json.dumps(summary, indent=1))
    for line in effectors.summary_lines(summary["effectors"]):
        print(line)
    print(f"strips in {strips}")
    if a.json is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"summary": summary, "results": results}, indent=1), encoding="utf-8")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
