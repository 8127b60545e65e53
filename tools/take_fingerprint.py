"""sha256 of simulated takes, to show that a change to the simulation leaves every take bit-identical.

    .venv/bin/python tools/take_fingerprint.py --out before.json [--sets srb,torque,demo,exhausted,extra,blend] [--jobs 2]
    .venv/bin/python tools/take_fingerprint.py --out after.json --compare before.json

Sets: ``srb`` and ``torque`` are every bench run (``./fatigue bench``: all clips, fresh, moderate and
tired, 10 s) with the bench's source-balance report; ``demo`` the demo's jump, fresh and tired;
``exhausted`` 20 s takes at the Exhausted preset and at fitness 0 with a high speed-up (rests, halts,
closing steps, floor work); ``extra`` the paths the others miss (learned foot placement, a push,
kinematic limbs, effort economy 0 and 2, the character's proportions); ``blend`` the demo's Blender
bake (needs the bpy module): its take and the keys written; ``corpus_blend`` real corpus files
imported as a user would (one per rig family: BVH, Mixamo FBX, glTF, Unreal names, arms-down and
not-human rests) and a generated Rigify rig, baked Fresh and Exhausted through the button's calls:
each take and every key written (needs the bpy module and ../shared/corpus).  A take's hash covers every array, the
events, notes and stats (less the wall-clock ones): any last-bit difference changes it.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import json
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

SETS = ("srb", "torque", "demo", "exhausted", "extra", "blend", "corpus_blend")
# corpus_blend: one file per rig family the detection and retarget read differently (the manifests'
# naming_family and rest_pose fields), the first action each import assigns, its first seconds.
CORPUS_BLEND_FILES = (
    "bvh/xia_depressed_18_000.bvh",                     # BVH, CMU names, T rest
    "fbx/mixamo_Flair.fbx",                             # Mixamo FBX (mixamorig:)
    "gltf/Soldier.glb",                                 # glTF, reduced Mixamo
    "gltf/mesh2motion_sample-rig_unreal-names.glb",     # Unreal mannequin names, T rest
    "bvh/biovision_Example1.bvh",                       # arms-down rest
    "fbx/kenney_run_control-rig.fbx",                   # arms-down rest, deform bones beside controls
    "bvh/bandai_dataset-1_dash_normal_001.bvh",         # a rest that is not a human shape (body_pose)
)
CORPUS_BLEND_PRESETS = ("Fresh", "Exhausted")
CORPUS_BLEND_SECONDS = 2.0
WALL_STATS = ("wall_seconds", "realtime_x")
WALL_NOTES = ("cost",)        # torque mode: seconds of compute per second of motion, off the wall clock
EXHAUSTED_CLIPS = ("walk", "kick", "dance_a", "dance_b", "run", "jump", "crawl", "roll", "getup_facedown")


def _canonical(value):
    """Plain JSON values (floats by repr) for events, notes and stats, whatever type holds them."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items() }
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_canonical(v) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return repr(float(value))
    return value


def _array(h, name: str, a) -> None:
    a = np.ascontiguousarray(np.asarray(a))
    h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())


def _event(e) -> dict:
    if isinstance(e, dict):
        return e
    return e.as_dict() if hasattr(e, "as_dict") else _canonical(e)


def take_hash(take) -> str:
    h = hashlib.sha256()
    h.update(f"{take.mode}|{take.fps!r}|".encode())
    for name in ("root_pos", "root_rot", "joint_rots"):
        _array(h, name, getattr(take.clip, name))
    h.update(f"{take.clip.name}|{take.clip.fps!r}|{take.clip.loop}|".encode())
    for name in ("reference_time", "torque", "contacts", "residual_force", "com", "tau_max", "strength"):
        value = getattr(take, name)
        if value is not None:
            _array(h, name, value)
    for k in sorted(take.fatigue):
        _array(h, f"fatigue.{k}", take.fatigue[k])
    rest = {"events": [_event(e) for e in take.events], "notes": {k: v for k, v in take.notes.items() if k not in WALL_NOTES},
            "stats": {k: v for k, v in take.stats.items() if k not in WALL_STATS}}
    h.update(json.dumps(_canonical(rest), sort_keys=True).encode())
    return h.hexdigest()


def _dict_hash(d) -> str:
    return hashlib.sha256(json.dumps(_canonical(d), sort_keys=True).encode()).hexdigest()


# -- the jobs: (set, key, args); each runs in a worker process ------------------------------------

def _jobs(sets) -> list[tuple]:
    from runtime.motion import clip as clips

    jobs = []
    for mode in ("srb", "torque"):
        if mode in sets:
            for name in clips.DEEPMIMIC_CLIPS:
                jobs.append((mode, f"{mode}/{name}/balance", ("balance", name)))
                for condition in ("fresh", "moderate", "tired"):
                    jobs.append((mode, f"{mode}/{name}/{condition}", ("bench", name, condition, mode)))
    if "demo" in sets:
        for label in ("fresh", "tired"):
            jobs.append(("demo", f"demo/jump/{label}", ("demo", label)))
    if "exhausted" in sets:
        for name in EXHAUSTED_CLIPS:
            jobs.append(("exhausted", f"exhausted/{name}/preset", ("exhausted", name, "preset")))
        for name in ("walk", "kick", "crawl"):
            jobs.append(("exhausted", f"exhausted/{name}/fitness0x60", ("exhausted", name, "fitness0")))
    if "extra" in sets:
        for variant in ("policy", "push", "no_limbs", "economy0", "economy2", "plan", "hold", "fps24"):
            jobs.append(("extra", f"extra/{variant}", ("extra", variant)))
    return jobs


def _load(name):
    from runtime.motion import clip as clips

    return clips.load_deepmimic(clips.deepmimic_clip_path(name))


def _run(job) -> tuple[str, str, float]:
    kind = job[2]
    t0 = time.perf_counter()
    digest = _compute(kind)
    return job[1], digest, time.perf_counter() - t0


def _compute(kind) -> str:
    import bench
    import cli
    from runtime.fatigue import schedule
    from runtime import simulate

    if kind[0] == "balance":
        return _dict_hash(bench.clip_balance(_load(kind[1]), 10.0))
    if kind[0] == "bench":
        _, name, condition, mode = kind
        return take_hash(bench.run_one(_load(name), condition, 10.0, mode))
    if kind[0] == "demo":
        sched, keys = (None, None) if kind[1] == "fresh" else cli.demo_tired_request()
        return take_hash(simulate.simulate_clip(_load(cli.DEMO_CLIP), sched, seconds=cli.DEMO_SECONDS, out_fps=30,
                                           tiredness=keys, progress=lambda f: None))
    if kind[0] == "exhausted":
        _, name, how = kind
        sched = (schedule.from_preset("Exhausted", fps=30.0) if how == "preset"
                 else schedule.from_fitness(0.0, fps=30, time_scale=60))
        return take_hash(simulate.simulate_clip(_load(name), sched, seconds=20.0, hold=1.0, out_fps=30.0))
    if kind[0] == "extra":
        return take_hash(_extra(kind[1]))
    raise ValueError(kind)


def _extra(variant: str):
    from runtime.body import anthropometry
    from runtime.fatigue import schedule
    from runtime import simulate

    tired = schedule.from_fitness(0.25, fps=30, time_scale=40)
    if variant == "policy":
        from runtime.srb.policy import SrbPolicy
        policy = SrbPolicy.load(ROOT / "models" / "srb_general.npz")
        return simulate.simulate_clip(_load("run"), tired, seconds=8.0, out_fps=30, policy=policy)
    if variant == "push":
        return simulate.simulate_clip(_load("walk"), tired, seconds=8.0, out_fps=30,
                                 push=(4.0, 0.2, np.array([0.0, 200.0, 0.0])))
    if variant == "no_limbs":
        return simulate.simulate_clip(_load("punch"), tired, seconds=8.0, out_fps=30, simulate_limbs=False)
    if variant in ("economy0", "economy2"):
        return simulate.simulate_clip(_load("dance_a"), tired, seconds=8.0, out_fps=30,
                                 effort_economy=float(variant[-1]))
    if variant == "plan":
        lengths = anthropometry.default_lengths(1.62)
        lengths = {k: v * (1.1 if i % 2 else 0.95) for i, (k, v) in enumerate(sorted(lengths.items()))}
        plan = anthropometry.plan_from_lengths(lengths, 1.62, sex="female")
        return simulate.simulate_clip(_load("jump"), tired, seconds=6.0, out_fps=30, height=1.62, mass=58.0, plan=plan)
    if variant == "hold":
        return simulate.simulate_clip(_load("kick"), schedule.from_preset("Exhausted", fps=30.0), hold=5.0, out_fps=30.0)
    if variant == "fps24":
        return simulate.simulate_clip(_load("walk"), tired, seconds=6.0, out_fps=24.0)
    raise ValueError(variant)


def _blend() -> dict:
    """The demo's Blender bake: the take simulate() returned and the keys the bake wrote."""

    import bpy
    import demo_blend

    demo_blend.load_addon()
    sim_mod = importlib.import_module(f"{demo_blend.PACKAGE}.runtime.simulate")
    takes = []
    original = sim_mod.simulate

    def capture(*args, **kwargs):
        take = original(*args, **kwargs)
        takes.append(take)
        return take

    sim_mod.simulate = capture
    try:
        demo_blend.build_demo(Path("/tmp") / "take_fingerprint_demo", render=False)
    finally:
        sim_mod.simulate = original
    out = {f"blend/take{i}": take_hash(t) for i, t in enumerate(takes)}
    h = hashlib.sha256()
    for action in sorted(bpy.data.actions, key=lambda a: a.name):
        if not action.name.endswith(".fatigued"):
            continue
        anim = importlib.import_module(f"{demo_blend.PACKAGE}.fatigue_addon.anim")
        for fc in sorted(anim.all_action_fcurves(action), key=lambda f: (f.data_path, f.array_index)):
            co = np.zeros(2 * len(fc.keyframe_points), dtype=np.float32)
            fc.keyframe_points.foreach_get("co", co)
            h.update(f"{action.name}|{fc.data_path}|{fc.array_index}|".encode())
            h.update(co.tobytes())
    out["blend/keys"] = h.hexdigest()
    return out


def _keys_hash(anim, action) -> str:
    """Every key of ``action``: data path, index, (frame, value) as float32."""
    h = hashlib.sha256()
    for fc in sorted(anim.all_action_fcurves(action), key=lambda f: (f.data_path, f.array_index)):
        co = np.zeros(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        h.update(f"{fc.data_path}|{fc.array_index}|".encode())
        h.update(co.tobytes())
    return h.hexdigest()


def _bake_both(obj, action, key: str, out: dict) -> None:
    """``action`` on ``obj`` baked at each CORPUS_BLEND_PRESETS through the button's calls."""
    import bpy

    import corpus as corpus_tool

    anim = importlib.import_module("fatigued_takes.fatigue_addon.anim")
    bake = importlib.import_module("fatigued_takes.fatigue_addon.bake")
    backend = importlib.import_module("fatigued_takes.fatigue_addon.backend")
    BakeOptions = importlib.import_module("fatigued_takes.fatigue_addon.bake_options").BakeOptions
    scene = bpy.context.scene
    start, end = corpus_tool.bake_range(action, scene.render.fps / scene.render.fps_base, CORPUS_BLEND_SECONDS)
    for preset in CORPUS_BLEND_PRESETS:
        anim.assign_action(obj, action)
        try:
            job = bake.prepare(bpy.context, obj, options=BakeOptions(preset=preset, frame_start=start, frame_end=end))
            take = backend.run_sync(bake.make_run(job, None, threaded=False), None, None)
            bake.write(bpy.context, job, take)
        except Exception as exc:        # a refusal is part of the fingerprint: its one line
            print(f"take_fingerprint: {key} {preset}: {type(exc).__name__}: {exc}", file=sys.stderr)
            out[f"corpus_blend/{key}/{preset}/refused"] = hashlib.sha256(str(exc).encode()).hexdigest()
            continue
        out[f"corpus_blend/{key}/{preset}/take"] = take_hash(take)
        out[f"corpus_blend/{key}/{preset}/keys"] = _keys_hash(anim, bpy.data.actions[job.take_name])
    anim.assign_action(obj, action)


def _corpus_blend() -> dict:
    """Real files (corpus_import, as ./fatigue corpus imports them) and a generated Rigify rig,
    baked Fresh and tired: each take and the keys written."""
    import bpy

    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import addon_package
    import corpus as corpus_tool
    import corpus_import

    pkg = addon_package.load_addon_package()
    out: dict[str, str] = {}
    for rel in CORPUS_BLEND_FILES:
        path = corpus_import.CORPUS / rel
        if not path.is_file():
            print(f"take_fingerprint: {path} is missing: corpus_blend skips it", file=sys.stderr)
            continue
        arms = corpus_import.import_file(path)
        pkg.register()
        try:
            obj = arms[0]
            action = corpus_import.armature_actions(obj)[0]
            corpus_tool.rest_pose(obj)
            _bake_both(obj, action, rel, out)
        finally:
            pkg.unregister()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    pkg.register()
    try:
        import rigify_takes

        rig = rigify_takes.generate()
        _bake_both(rig, rigify_takes.walk_source(rig), "rigify/walk", out)
    finally:
        pkg.unregister()
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="write {key: sha256} here")
    ap.add_argument("--sets", default="srb,torque,demo,exhausted,extra", help=f"some of {','.join(SETS)}")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--compare", type=Path, help="a fingerprint file to compare with: exit 1 on any difference")
    args = ap.parse_args(argv)
    sets = {s.strip() for s in args.sets.split(",") if s.strip()}
    if not sets <= set(SETS):
        print(f"take_fingerprint: --sets takes some of {','.join(SETS)}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    result: dict[str, str] = {}
    jobs = _jobs(sets)
    if jobs:
        with get_context("fork").Pool(max(1, args.jobs)) as pool:
            for key, digest, _ in pool.imap_unordered(_run, jobs):
                result[key] = digest
    if "corpus_blend" in sets:
        result.update(_corpus_blend())
    if "blend" in sets:
        result.update(_blend())
    result = dict(sorted(result.items()))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{len(result)} fingerprints in {time.perf_counter() - t0:.0f} s")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    common = sorted(set(before) & set(result))
    differ = [k for k in common if before[k] != result[k]]
    for k in differ:
        print(f"DIFFERS {k}")
    print(f"{len(common) - len(differ)}/{len(common)} identical"
          + (f"; {len(set(result) - set(before))} new, {len(set(before) - set(result))} not run" if set(result) ^ set(before) else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
