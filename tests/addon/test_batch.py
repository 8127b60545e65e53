"""Headless baking: the operator's script arguments (in this process) and ``./fatigue bake`` over
real .blend files (subprocesses with the bpy module, exactly as a technical director runs it)."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import batch  # noqa: E402

from bakes import fcurves, mod, walk_rig  # noqa: E402
from batch_cli import bake_cli, keyframes, make_shot  # noqa: E402


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def shots(tmp_path_factory, addon_package):
    """Three shot files (one without an armature); ``addon_package``: keyframes() reads saved
    files through the extension's own action helpers (the test also passes on its own)."""
    d = tmp_path_factory.mktemp("shots")
    return {"a": make_shot(d / "shot_a.blend"), "b": make_shot(d / "shot_b.blend"),
            "broken": make_shot(d / "broken.blend", empty=True)}


# ----------------------------------------------------------------------------- operator arguments

def test_operator_arguments_override_settings_for_this_bake_only(registered_addon):
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    s.fitness, s.time_scale = 0.7, 5.0
    bpy.context.view_layer.objects.active = None        # headless: nothing active, the argument names it
    assert bpy.ops.fatigue.bake_take(armature=obj.name, action="walk", frame_start=1, frame_end=16,
                                     preset="exhausted", take_name="walk.tired") == {"FINISHED"}
    report = json.loads(s.last_report)
    assert report["action"] == "walk.tired" and report["source"] == "walk"
    assert report["source_frames"] == [1, 16]
    assert (s.preset, s.fitness, s.time_scale) == ("Average", pytest.approx(0.7), pytest.approx(5.0))
    tired_peak = max(report["peak_fatigue_by_region"].values())
    # the proxy has the rig's proportions (the test template's thighs are 0.92x DeepMimic's)
    assert report["proportions"]["thigh"] == pytest.approx(0.92, abs=0.02)
    assert "de Leva" in report["notes"]["proportions"]
    assert bpy.data.actions["walk.tired"]["fatigued_take_of"] == "walk"

    s.proportions = "DEFAULT"
    assert bpy.ops.fatigue.bake_take(armature=obj.name, preset="Fresh", take_name="walk.fresh") == {"FINISHED"}
    fresh = json.loads(s.last_report)
    assert fresh["fatigue"] == "off" and max(fresh["peak_fatigue_by_region"].values()) == 0.0
    assert fresh["proportions"] == "default"
    assert tired_peak > 0.2
    assert bpy.data.actions["walk"].get("fatigued_take_of") is None        # the source is untouched
    assert bpy.ops.fatigue.bake_take(armature=obj.name, F=0.02, R=0.002, r=15.0, time_scale=40.0,
                                     take_name="walk.custom") == {"FINISHED"}
    custom = json.loads(s.last_report)
    assert 0.0 < max(custom["peak_fatigue_by_region"].values())


OPERATOR_ERRORS = {
    "unknown armature": ({"armature": "Nope"}, "no armature named 'Nope' in this file (armatures here: Mixamo)"),
    "unknown action": ({"action": "run"}, "no action named 'run' in this file"),
    "unknown preset": ({"preset": "Sleepy"}, "unknown preset 'Sleepy': use one of Fresh, Athlete"),
    "F alone": ({"F": 0.1}, "only F given: give F, R and r together"),
    "preset and rates": ({"preset": "Average", "F": 0.1, "R": 0.1, "r": 2.0}, "not both"),
    "empty frames": ({"frame_start": 20, "frame_end": 10}, "frames 20:10 are empty"),
    "take over source": ({"take_name": "walk"}, "cannot replace its source action 'walk'"),
    "bad mode": ({"mode": "ragdoll"}, "unknown mode 'ragdoll': use srb or torque"),
    "bad foot placement": ({"foot_placement": "hop"}, "unknown foot placement 'hop': use policy, rule or paced"),
    "bad effort economy": ({"effort_economy": 9.0}, "effort_economy 9: give a number in [0, 5]"),
    "bad mass": ({"mass": 5.0}, "mass 5: give a number in [10, 300]"),
    "bad engine": ({"engine": "havok"}, "unknown physics engine 'havok': use auto, pybullet or mujoco"),
}


@pytest.mark.parametrize("case", list(OPERATOR_ERRORS))
def test_operator_argument_errors_are_one_line_and_write_nothing(registered_addon, case):
    kwargs, expected = OPERATOR_ERRORS[case]
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    bpy.data.actions.new("other")
    with pytest.raises(RuntimeError) as err:
        bpy.ops.fatigue.bake_take(**kwargs)
    msg = str(err.value).strip()
    assert msg.startswith("Error: ") and "\n" not in msg and expected in msg, msg
    assert not [a.name for a in bpy.data.actions if a.get("fatigued_take_of")]
    assert obj.fatigue_settings.last_report == "" and obj.animation_data.action.name == "walk"


# ----------------------------------------------------------------------------- ./fatigue bake

def test_batch_with_a_broken_file_bakes_the_others_and_exits_1(shots, tmp_path):
    before = {k: digest(p) for k, p in shots.items()}
    out = tmp_path / "out"
    proc = bake_cli(shots["a"], shots["broken"], shots["b"], "--out", out, "--jobs", "2",
                    "--summary", tmp_path / "summary.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 of 3 take(s) baked" in proc.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    takes = {Path(t["file"]).name: t for t in summary["takes"]}
    assert set(takes) == {"shot_a.blend", "shot_b.blend", "broken.blend"}
    for t in summary["takes"]:
        assert set(batch.SUMMARY_FIELDS) <= set(t)
    bad = takes["broken.blend"]
    assert bad["status"] == "failed" and "no armature in this file" in bad["error"]
    assert not (out / "broken.blend").exists()
    for name in ("shot_a.blend", "shot_b.blend"):
        t = takes[name]
        assert t["status"] == "ok" and t["error"] is None
        assert (t["armature"], t["action"], t["out_action"], t["mode"]) == ("Mixamo", "walk", "walk.fatigued", "srb")
        assert t["engine"] == "PyBullet"          # Automatic, where PyBullet imports
        assert t["frames"] == [1, 31] and t["seconds_sim"] > 0.9 and t["realtime_x"] > 0
        assert t["duration_stretch"] >= 1.0 and t["residual_force_bw_mean"] >= 0.0
        assert t["support"] == "its feet: balance simulated" and t["behind_source_m"] >= 0.0
        assert {"knee", "ankle", "shoulder"} <= set(t["peak_fatigue_by_region"])
        saved = keyframes(out / name)
        assert saved["_assigned"] == {"Mixamo": "walk.fatigued"} and "walk" in saved
    assert {k: digest(p) for k, p in shots.items()} == before        # inputs never written
    assert not list(out.glob(".*part*"))                              # no half-written leftovers


def test_same_file_and_arguments_give_identical_keyframes(shots, tmp_path):
    runs = []
    for i, jobs in enumerate(("1", "2")):
        proc = bake_cli(shots["a"], shots["b"], "--out", tmp_path / f"run{i}", "--preset", "Untrained",
                        "--time-scale", "60", "--jobs", jobs)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        runs.append(keyframes(tmp_path / f"run{i}" / "shot_a.blend"))
    first, second = runs
    take = first["walk.fatigued"]
    assert len(take) > 50
    assert set(take) == set(second["walk.fatigued"])
    for key, co in take.items():
        assert np.array_equal(co, second["walk.fatigued"][key]), key
    assert max(co[1::2].max() for (path, _), co in take.items() if path.endswith('["fatigue"]')) > 0.05


def test_variants_write_one_action_each_into_one_file(shots, tmp_path):
    out = tmp_path / "variants.blend"
    proc = bake_cli(shots["a"], "--variants", "fresh,average,exhausted", "--out", out, "--frames", "1:25",
                    "--summary", tmp_path / "s.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert [t["variant"] for t in summary["takes"]] == ["fresh", "average", "exhausted"]
    assert all(t["frames"] == [1, 25] for t in summary["takes"])
    peaks = {t["variant"]: max(t["peak_fatigue_by_region"].values()) for t in summary["takes"]}
    assert peaks["fresh"] == 0.0 < peaks["average"] < peaks["exhausted"]
    saved = keyframes(out)
    names = [f"walk.fatigued.{v}" for v in ("fresh", "average", "exhausted")]
    assert all(saved["_fake_user"][n] for n in names)                  # every variant survives saving
    source_in = keyframes(shots["a"])["walk"]
    assert set(saved["walk"]) == set(source_in)
    assert all(np.array_equal(saved["walk"][k], source_in[k]) for k in source_in)   # source untouched


def test_in_place_writes_into_the_input(shots, tmp_path):
    shot = tmp_path / "shot.blend"
    shot.write_bytes(shots["a"].read_bytes())
    proc = bake_cli(shot, "--in-place", "--preset", "Average", "--frames", "1:15", "--engine", "mujoco")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "x real time on MuJoCo" in proc.stdout, proc.stdout        # the line says which engine ran
    saved = keyframes(shot)
    assert "walk.fatigued" in saved and "walk" in saved


def test_a_missing_engine_exits_2_in_one_line(shots, tmp_path):
    """--engine naming an engine that does not import (a broken wheel first on the path): one line
    with the fix, nothing baked, no traceback."""
    import os

    broken = tmp_path / "site" / "mujoco"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('mujoco-core is missing')\n")
    env = dict(os.environ, PYTHONPATH=str(broken.parent))
    proc = bake_cli(shots["a"], "--out", tmp_path / "out", "--engine", "mujoco", env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("fatigue bake: --engine mujoco: MuJoCo does not import in this Python: leave "
                                   "--engine out (Automatic), or install it (requirements/runtime.txt)"), proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("variants", [[], ["--variants", "fresh"]])
def test_a_misspelled_armature_names_the_files_armatures(shots, tmp_path, variants):
    """Not 'failed unexpectedly (KeyError)': the operator's own line, listing the armatures there."""
    out = tmp_path / "out"
    proc = bake_cli(shots["a"], "--out", out, "--armature", "Mixamoo", *variants, "--summary", tmp_path / "s.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    take = json.loads((tmp_path / "s.json").read_text())["takes"][0]
    assert take["error"] == "no armature named 'Mixamoo' in this file (armatures here: Mixamo): give one of them"
    assert "unexpectedly" not in proc.stdout + proc.stderr and not (out / "shot_a.blend").exists()


def test_frames_far_past_the_action_fail_the_take_in_the_operators_line(shots, tmp_path):
    out = tmp_path / "out"
    proc = bake_cli(shots["a"], "--out", out, "--frames", "1:40000", "--summary", tmp_path / "s.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    error = json.loads((tmp_path / "s.json").read_text())["takes"][0]["error"]
    assert error.startswith("Frames 1-40000 run 39969 frames past the keys of 'walk' (frames 1-31;"), error
    assert error.endswith("give a frame range (frame_start, frame_end; ./fatigue bake --frames A:B) within 1-331, "
                          "e.g. the keys' 1-31"), error
    assert not (out / "shot_a.blend").exists()


@pytest.mark.parametrize("args, expected", [
    (["{a}"], "no --out"),
    (["{missing}", "--out", "{out}"], "no such file"),
    (["{txt}", "--out", "{out}"], "not a .blend file"),
    (["{a}", "--out", "{a_dir}"], "would overwrite the input"),
    (["{a}", "{b}", "--out", "{out}/one.blend"], "is one file but 2 inputs"),
    (["{a}", "--out", "{out}", "--frames", "30:10"], "end frame must come after"),
    (["{a}", "--out", "{out}", "--frames", "ten"], "give A:B"),
    (["{a}", "--out", "{out}", "--frames", "1:10000000"], "--frames 1:10000000: frames 1-10000000 are 10000000 "
                                                          "frames, more than one bake reads (50000): give fewer"),
    (["{a}", "--out", "{out}", "--F", "0.1"], "give --F, --R and --r together"),
    (["{a}", "--out", "{out}", "--preset", "Sleepy"], "--preset Sleepy: use one of Fresh"),
    (["{a}", "--out", "{out}", "--variants", "fresh,sleepy"], "use names from fresh"),
    (["{a}", "--out", "{out}", "--variants", "fresh", "--preset", "Average"], "drop --preset"),
    (["{a}", "--out", "{out}", "--fitness", "3"], "--fitness 3.0: give a number in [0, 1]"),
    (["{a}", "--out", "{out}", "--jobs", "0"], "--jobs 0"),
    (["{a}", "--out", "{out}", "--mode", "ragdoll"], "invalid choice"),
    (["{a}", "--out", "{out}", "--engine", "havok"], "argument --engine: invalid choice: 'havok'"),
    (["{a}", "--out", "{out}", "--effort-economy", "-1"], "--effort-economy -1.0: give a number in [0, 5]"),
    (["{a}", "--out", "{out}", "--mass", "500"], "--mass 500.0: give a number in [10, 300]"),
    (["{a}", "--out", "{out}", "--in-place"], "drop --out"),
    (["{a}", "--out", "{out}", "--colour"], "unrecognized arguments"),
])
def test_bad_arguments_exit_2_with_one_line_and_bake_nothing(shots, tmp_path, args, expected):
    (tmp_path / "notes.txt").write_text("x")
    names = {"a": shots["a"], "b": shots["b"], "missing": tmp_path / "missing.blend", "out": tmp_path / "out",
             "txt": tmp_path / "notes.txt", "a_dir": shots["a"].parent}
    proc = bake_cli(*[a.format(**names) for a in args], wrapper=(expected == "no --out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fatigue bake: ") and expected in lines[0], proc.stderr
    assert not (tmp_path / "out").exists()


CRASHING_PYTHON = """#!/bin/sh
# The take processes' Python, except that the take of the input file crash.blend dies of SIGSEGV.
case "$(cat "$3")" in *'/crash.blend"'*) kill -SEGV $$;; esac
exec "{python}" "$@"
"""


def test_a_crashing_take_fails_alone_and_a_hung_take_is_stopped(shots, tmp_path, monkeypatch, capsys):
    crash = tmp_path / "crash.blend"
    crash.write_bytes(shots["a"].read_bytes())
    python = tmp_path / "python"
    python.write_text(CRASHING_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    out = tmp_path / "out"
    rc = batch.main([str(shots["a"]), str(crash), "--out", str(out), "--jobs", "2", "--summary", str(tmp_path / "s.json")])
    assert rc == 1
    takes = {Path(t["file"]).name: t for t in json.loads((tmp_path / "s.json").read_text())["takes"]}
    assert takes["crash.blend"]["status"] == "crashed" and "signal 11" in takes["crash.blend"]["error"]
    assert takes["shot_a.blend"]["status"] == "ok" and (out / "shot_a.blend").is_file()
    assert not (out / "crash.blend").exists()

    rc = batch.main([str(shots["a"]), "--out", str(tmp_path / "slow"), "--timeout", "0.2"])
    assert rc == 1 and "ran longer than 0.2 s and was stopped" in capsys.readouterr().out
    assert not (tmp_path / "slow").exists() or not list((tmp_path / "slow").iterdir())


def test_learned_foot_placement_bakes_with_the_shipped_policy_in_both_backends(registered_addon):
    from runtime.srb import policy as pol

    if not pol.DEFAULT_MODEL.is_file():
        pytest.skip("no shipped SRB policy in models/")
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    assert s.foot_placement == "PACED"
    assert bpy.ops.fatigue.bake_take(armature=obj.name, foot_placement="policy", take_name="walk.learned") == {"FINISHED"}
    report = json.loads(s.last_report)
    assert "policy" in report["foot_placement"] and s.foot_placement == "PACED"
    # The worker process loads the same policy from the request and gives the same take.
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    s.foot_placement = "POLICY"
    job = bake.prepare(bpy.context, obj)
    assert job.request.policy == str(pol.DEFAULT_MODEL)
    inline = backend.run_sync(backend.InProcessRun(job.request, threaded=False))
    from types import SimpleNamespace

    run = bake.make_run(job, SimpleNamespace(backend="WORKER"), threaded=False)
    assert isinstance(run, backend.WorkerRun)
    worker = backend.run_sync(run)
    assert np.array_equal(inline.clip.joint_rots, worker.clip.joint_rots)
    assert "policy" in worker.notes["foot_placement"]


def test_paced_foot_placement_is_the_default_and_rule_bakes_without_the_residual(registered_addon):
    """Foot placement Paced (the default): the request carries models/srb_residual and the take says
    so; Rule, for one bake, carries none and leaves the setting as it was."""
    from runtime.srb import residual

    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    assert s.foot_placement == "PACED"
    job = mod("fatigue_addon.bake").prepare(bpy.context, obj)
    assert job.request.policy == str(residual.DEFAULT_MODEL)
    assert bpy.ops.fatigue.bake_take(armature=obj.name, preset="Exhausted", take_name="walk.paced") == {"FINISHED"}
    assert "residual" in json.loads(s.last_report)["foot_placement"]
    assert bpy.ops.fatigue.bake_take(armature=obj.name, foot_placement="rule", preset="Exhausted",
                                     take_name="walk.rule") == {"FINISHED"}
    report = json.loads(s.last_report)
    assert "rule" in report["foot_placement"] and s.foot_placement == "PACED"


def test_mass_bakes_a_heavier_character_and_the_file_keeps_its_setting(registered_addon):
    """The operator's mass (./fatigue bake --mass) is the simulated body's for one bake: its legs
    carry more, so the take differs from the file's own; the armature's Mass stays as it was."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    own = s.mass
    assert bpy.ops.fatigue.bake_take(armature=obj.name, preset="Exhausted", take_name="walk.own") == {"FINISHED"}
    assert bpy.ops.fatigue.bake_take(armature=obj.name, preset="Exhausted", mass=own + 40.0,
                                     take_name="walk.heavy") == {"FINISHED"}
    assert json.loads(s.last_report)["mass"] == own + 40.0 and s.mass == own
    keys = {name: np.array([k.co[1] for fc in fcurves(bpy.data.actions[name]) for k in fc.keyframe_points])
            for name in ("walk.own", "walk.heavy")}
    assert not np.array_equal(keys["walk.own"], keys["walk.heavy"])


def test_effort_economy_reaches_the_simulation_in_both_backends_and_the_file_keeps_its_setting(registered_addon):
    """The operator's effort_economy overrides the armature's setting for one bake; the worker
    process reads it from the request and gives the same take as the in-process run."""
    obj, _, _ = walk_rig(seconds=1.0, mesh=False)
    s = obj.fatigue_settings
    from runtime.srb import simulator as srb

    assert s.effort_economy == srb.SrbSettings().effort_economy
    assert bpy.ops.fatigue.bake_take(armature=obj.name, effort_economy=0.0, take_name="walk.stubborn") == {"FINISHED"}
    report = json.loads(s.last_report)
    assert report["effort_economy"].startswith("off") and s.effort_economy == srb.SrbSettings().effort_economy
    bake, backend = mod("fatigue_addon.bake"), mod("fatigue_addon.backend")
    s.effort_economy = 3.0
    job = bake.prepare(bpy.context, obj)
    assert job.request.effort_economy == 3.0
    inline = backend.run_sync(backend.InProcessRun(job.request, threaded=False))
    from types import SimpleNamespace

    run = bake.make_run(job, SimpleNamespace(backend="WORKER"), threaded=False)
    worker = backend.run_sync(run)
    assert np.array_equal(inline.clip.joint_rots, worker.clip.joint_rots)
    assert worker.notes["effort_economy"].startswith("3:")


def test_every_warning_of_a_bake_reaches_the_batch_and_the_farm_summary(tmp_path):
    """Issue 51: the summary said ``warnings: null`` although the bake warned (units, elbows off
    their hinge): only a take's name notes travelled.  The elbows of this shot bend 35 degrees
    off the hinge; ./fatigue bake's summary and its line, and the farm's summary, say so."""
    shot = make_shot(tmp_path / "shot_tilted.blend", seconds=0.5, off_hinge=True)
    proc = bake_cli(shot, "--out", tmp_path / "out", "--frames", "1:10", "--summary", tmp_path / "summary.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    take = json.loads((tmp_path / "summary.json").read_text())["takes"][0]
    hinge = [w for w in take["warnings"] or [] if "off the proxy's hinge axis" in w]
    assert take["status"] == "ok" and hinge, take["warnings"]
    assert "warning(s), first:" in proc.stdout

    farm = tmp_path / "farm"
    for command in (["bake", "--scene", shot, "--out", farm, "--frames=1:10"],
                    ["summary", "--out", farm, "--summary", "summary.json", "--scene", shot]):
        run = subprocess.run([sys.executable, str(ROOT / "tools" / "farm_task.py"), "--", *map(str, command)],
                             capture_output=True, text=True, cwd=str(ROOT), timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
    farmed = json.loads((farm / "summary.json").read_text())["takes"][0]
    assert farmed["warnings"] == take["warnings"]
