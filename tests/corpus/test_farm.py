"""./fatigue farm: the Open Job Description job bundle, checked and run for real with openjd-cli
(the runtime a Deadline Cloud worker uses), against ./fatigue bake of the same inputs.

Where no Blender binary exists, the job's BlenderExecutable is tools/blender_standin.py: this
Python's bpy module behind Blender's command line (``-b --python SCRIPT -- ARGS``).  OpenJD is
never mocked: ``openjd check`` and ``openjd run`` are the real commands.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import batch  # noqa: E402
import farm  # noqa: E402
import farm_task  # noqa: E402
from blender_standin import blender_command  # noqa: E402

from batch_cli import bake_cli, keyframes, make_shot  # noqa: E402

VARIANTS = ("fresh", "exhausted")
FRAMES = "1:16"              # short takes: half a second each
HUMANS = ("shot_a", "shot_b")
NOT_HUMAN = "wolf"           # tests/support/rigs.py's quadruped: refused as not humanoid
REFUSED = "does not look like a humanoid"
# Numbers of a take that depend on the machine's speed, not on the take.
TIMING = ("wall_s", "realtime_x")

WOLF_SHOT = """
import os, sys
sys.path[:0] = [{tests!r}, {support!r}, {root!r}]
import bpy
import conftest
bpy.ops.wm.read_factory_settings(use_empty=True)
conftest.load_addon_package().register()
import rigs
rig = rigs.quadruped_rig()
rigs.animate(rig.obj, [b.name for b in rig.obj.pose.bones], "spine", 20)
bpy.context.view_layer.objects.active = rig.obj
bpy.ops.wm.save_as_mainfile(filepath={path!r})
sys.stdout.flush()
os._exit(0)
"""


def farm_cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "farm.py"), *map(str, args)], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=120)


def fail_lines(output: str) -> list[str]:
    return [line.split("openjd_fail: ", 1)[1] for line in output.splitlines() if "openjd_fail: " in line]


@pytest.fixture(scope="module")
def scenes(tmp_path_factory, addon_package):
    d = tmp_path_factory.mktemp("farm_scenes")
    found = {name: make_shot(d / f"{name}.blend") for name in HUMANS}
    wolf = d / f"{NOT_HUMAN}.blend"
    subprocess.run([sys.executable, "-c", WOLF_SHOT.format(tests=str(ROOT / "tests"), support=str(ROOT / "tests" / "support"), root=str(ROOT), path=str(wolf))],
                   check=True, capture_output=True, cwd=str(ROOT))
    found[NOT_HUMAN] = wolf
    return found


@pytest.fixture(scope="module")
def farm_run(scenes, tmp_path_factory):
    """``./fatigue farm`` over three scenes x two variants, ``openjd check``, then the job run by
    ``openjd run``: two workers side by side, each Bake task its own session, then the Summary."""
    d = tmp_path_factory.mktemp("farm_job")
    bundle = d / "job"
    made = farm_cli(*scenes.values(), "--variants", ",".join(VARIANTS), "--frames", FRAMES, "--out", bundle)
    check = subprocess.run(farm.openjd_command(bundle)[:1] + ["check", str(bundle / "template.yaml")],
                           capture_output=True, text=True)
    run = farm.run_local(bundle, workers=2, overrides={"BlenderExecutable": blender_command(d)})
    return {"bundle": bundle, "made": made, "check": check, "run": run}


@pytest.fixture(scope="module")
def bake_run(scenes, tmp_path_factory):
    """./fatigue bake of the same inputs and options."""
    d = tmp_path_factory.mktemp("farm_bake")
    proc = bake_cli(*scenes.values(), "--variants", ",".join(VARIANTS), "--frames", FRAMES, "--out", d / "out",
                    "--jobs", "2", "--summary", d / "summary.json")
    return {"proc": proc, "out": d / "out", "summary": json.loads((d / "summary.json").read_text())}


def test_farm_writes_a_bundle_that_openjd_check_accepts(farm_run):
    made, bundle = farm_run["made"], farm_run["bundle"]
    assert made.returncode == 0, made.stdout + made.stderr
    assert "a job of 6 take(s) (3 scene(s) x 2 variant(s))" in made.stdout
    for name in ("template.yaml", "parameter_values.yaml", farm.OPENJD_PARAMETERS):
        assert (bundle / name).is_file()
    check = farm_run["check"]
    assert check.returncode == 0 and "passes validation checks" in check.stdout, check.stdout + check.stderr
    import yaml

    template = yaml.safe_load((bundle / "template.yaml").read_text())
    assert [s["name"] for s in template["steps"]] == ["Clean", "Bake", "Summary"]
    assert template["steps"][1]["dependencies"] == [{"dependsOn": "Clean"}]
    assert template["steps"][2]["dependencies"] == [{"dependsOn": "Bake"}]
    names = {p["name"] for p in template["parameterDefinitions"]}
    assert {"Scene1", "Scene2", "Scene3", "Variant1", "Variant2", "Preset", "Fitness", "Mode", "Engine", "OutputDir",
            "BlenderExecutable", "ExtensionZip"} <= names
    blender = next(p for p in template["parameterDefinitions"] if p["name"] == "BlenderExecutable")
    assert blender["default"] == "blender"
    values = yaml.safe_load((bundle / "parameter_values.yaml").read_text())["parameterValues"]
    assert {v["name"]: v["value"] for v in values}["OutputDir"] == str(bundle / "out")


def test_openjd_run_gives_the_takes_of_fatigue_bake_bit_for_bit(farm_run, bake_run):
    """Every humanoid take of the job equals ./fatigue bake's, keyframe for keyframe, bit for bit;
    the non-humanoid's two tasks failed alone, one line each; one summary lists all six."""
    run, out = farm_run["run"], farm_run["bundle"] / "out"
    tasks = {(Path(t["task"]["Scene"]).stem, t["task"]["Variant"]): t for t in run["bake"]}
    assert len(tasks) == 6
    for (scene, variant), t in tasks.items():
        assert "Traceback" not in t["output"], t["output"][-3000:]
        if scene == NOT_HUMAN:
            assert t["returncode"] != 0
            lines = fail_lines(t["output"])
            assert len(lines) == 1 and REFUSED in lines[0], t["output"][-3000:]
            assert not (out / f"{scene}.{variant}.blend").exists()
        else:
            assert t["returncode"] == 0, t["output"][-3000:]
            assert "openjd_progress: 50" in t["output"] and "openjd_status: baking" in t["output"]
    assert run["summary"]["returncode"] == 0, run["summary"]["output"][-3000:]

    assert bake_run["proc"].returncode == 1, bake_run["proc"].stdout + bake_run["proc"].stderr
    for scene in HUMANS:
        baked = keyframes(bake_run["out"] / f"{scene}.blend")
        for variant in VARIANTS:
            action = f"walk.fatigued.{variant}"
            farmed = keyframes(out / f"{scene}.{variant}.blend")
            assert farmed["_assigned"] == {"Mixamo": action}
            assert set(farmed[action]) == set(baked[action]) and len(farmed[action]) > 50
            for key, co in baked[action].items():
                assert np.array_equal(farmed[action][key], co), (scene, variant, key)

    summary = json.loads((out / "summary.json").read_text())
    expected = bake_run["summary"]
    assert (summary["baked"], summary["failed"], summary["not_done"]) == (4, 2, 0)
    assert (expected["baked"], expected["failed"]) == (4, 2)
    assert [(Path(t["file"]).stem, t["variant"]) for t in summary["takes"]] == [
        (Path(t["file"]).stem, t["variant"]) for t in expected["takes"]]
    for farmed, baked in zip(summary["takes"], expected["takes"]):
        assert set(farmed) == set(baked)
        same = {k for k in farmed if k not in TIMING + ("out_file", "log")}
        assert {k: farmed[k] for k in same} == {k: baked[k] for k in same}, (farmed, baked)
        if Path(farmed["file"]).stem == NOT_HUMAN:
            assert farmed["status"] == "failed" and REFUSED in farmed["error"]
    assert summary["jobs"] in (1, 2) and summary["wall_s"] > 0


@pytest.mark.parametrize("args, expected", [
    (["{a}", "--out", "{job}", "--in-place"], "drop --in-place"),
    (["{a}", "--out", "{job}/x.blend"], "give a folder for the job bundle"),
    (["{a}", "--out", "{job}", "--fitness", "3"], "--fitness 3.0: give a number in [0, 1]"),
    (["{missing}", "--out", "{job}"], "no such file"),
    (["{a}", "--out", "{job}", "--extension-zip", "{a}"], "give the zip of ./fatigue build"),
    (["{a}"], "no --out"),
])
def test_bad_farm_arguments_exit_2_with_one_line_and_write_nothing(scenes, tmp_path, args, expected):
    names = {"a": scenes["shot_a"], "job": tmp_path / "job", "missing": tmp_path / "missing.blend"}
    proc = farm_cli(*[a.format(**names) for a in args])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fatigue farm: ") and expected in lines[0], proc.stderr
    assert not (tmp_path / "job").exists()


def test_a_worker_without_the_extension_fails_its_task_in_one_line(scenes, tmp_path):
    """The task scripts alone (no checkout around them), no extension installed, no zip given:
    the task says what to set."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("farm_task.py", "batch.py", "demo_blend.py"):
        shutil.copy(ROOT / "tools" / name, tools / name)
    bundle = tmp_path / "job"
    assert farm_cli(scenes["shot_a"], "--out", bundle).returncode == 0
    env_home = tmp_path / "home"
    import os

    proc = subprocess.run(farm.openjd_command(bundle, {"BlenderExecutable": blender_command(tmp_path),
                                                       "FatigueTools": str(tools)}) + ["--step", "Bake"],
                          capture_output=True, text=True, env=dict(os.environ, BLENDER_USER_RESOURCES=str(env_home)))
    assert proc.returncode != 0
    lines = fail_lines(proc.stdout + proc.stderr)
    assert lines == ["the Fatigued Takes extension is not installed on this worker: set the job parameter "
                     "ExtensionZip to the zip of ./fatigue build, or install the extension in the workers' Blender"]
    assert "Traceback" not in proc.stdout + proc.stderr


def _extension_zip(path: Path) -> Path:
    """The extension as ./fatigue build packs it, without the engine wheels (this Python has them):
    what ExtensionZip installs on a worker."""
    import re
    import zipfile

    manifest = (ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    manifest = re.sub(r"^wheels\s*=\s*\[.*?\]\n", "", manifest, flags=re.S | re.M)
    skip = ("runtime/train/", "runtime/data/motions/")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("blender_manifest.toml", manifest)
        zf.write(ROOT / "__init__.py", "__init__.py")
        for folder in ("fatigue_addon", "operators", "panels", "runtime", "models"):
            for f in sorted((ROOT / folder).rglob("*")):
                rel = f.relative_to(ROOT).as_posix()
                if f.is_file() and "__pycache__" not in rel and not rel.startswith(skip):
                    zf.write(f, rel)
    return path


def test_a_fresh_worker_installs_the_extension_zip_once_and_bakes_the_same_take(scenes, farm_run, tmp_path):
    """Task scripts alone on a worker whose Blender has no Fatigued Takes: the first task installs
    ExtensionZip (Blender's own installer), the next finds it installed; the take is the same bit
    for bit as the checkout's."""
    import os

    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("farm_task.py", "batch.py", "demo_blend.py"):
        shutil.copy(ROOT / "tools" / name, tools / name)
    bundle = tmp_path / "job"
    made = farm_cli(scenes["shot_a"], "--variants", ",".join(VARIANTS), "--frames", FRAMES, "--out", bundle,
                    "--extension-zip", _extension_zip(tmp_path / "fatigued_takes.zip"))
    assert made.returncode == 0, made.stderr
    home = tmp_path / "worker_home"
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(home))
    base = farm.openjd_command(bundle, {"BlenderExecutable": blender_command(tmp_path), "FatigueTools": str(tools)})
    outputs = []
    for variant in VARIANTS:
        task = json.dumps([{"Scene": str(scenes["shot_a"]), "Variant": variant}])
        proc = subprocess.run(base + ["--step", "Bake", "--tasks", task], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        outputs.append(proc.stdout)
    assert "installing the Fatigued Takes extension" in outputs[0]
    assert "installing" not in outputs[1]
    assert (home / "extensions" / "user_default" / "fatigued_takes" / "blender_manifest.toml").is_file()
    for variant in VARIANTS:
        action = f"walk.fatigued.{variant}"
        mine = keyframes(bundle / "out" / f"shot_a.{variant}.blend")[action]
        checkout = keyframes(farm_run["bundle"] / "out" / f"shot_a.{variant}.blend")[action]
        assert set(mine) == set(checkout)
        assert all(np.array_equal(mine[k], checkout[k]) for k in checkout)


# Between them these give every take option of ./fatigue bake (the test below says which one is
# missing when ./fatigue bake gains one: add it here with a value its checks accept).
EVERY_OPTION = (["--armature", "Mixamo", "--action", "walk", "--frames", "1:16", "--preset", "Exhausted",
                 "--fitness", "0.3", "--time-scale", "20", "--mode", "srb", "--foot-placement", "rule",
                 "--effort-economy", "0.5", "--mass", "80", "--no-breathing", "--no-kneeling", "--engine", "auto"],
                ["--F", "0.02", "--R", "0.002", "--r", "15", "--time-scale", "1"],
                ["--preset", "Tired", "--tiredness", "0.2,0.6"])


def _bake_task_argv(bundle: Path, scene: Path) -> list[str]:
    """The Bake task's farm_task.py arguments as OpenJD gives them: the template's, its parameters filled in."""
    import re

    import yaml

    template = yaml.safe_load((bundle / "template.yaml").read_text())
    values = json.loads((bundle / farm.OPENJD_PARAMETERS).read_text()) | {"Task.Param.Scene": str(scene)}
    args = next(s for s in template["steps"] if s["name"] == "Bake")["script"]["actions"]["onRun"]["args"]
    fill = [re.sub(r"\{\{(?:Param\.)?([\w.]+)\}\}", lambda m: values[m[1]], a) for a in args]
    return fill[fill.index("--") + 2:]


@pytest.mark.parametrize("options", EVERY_OPTION)
def test_every_option_of_bake_travels_through_the_farm_job(tmp_path, options):
    """--no-kneeling --no-breathing were accepted by ./fatigue farm and dropped: the farm's take kneeled
    and breathed.  Each Bake task's take (the template's arguments, as a worker parses them) is
    planned exactly as ./fatigue bake plans it with the same options, every option of its parser."""
    given = {a.dest for opts in EVERY_OPTION for a in batch.take_options()
             if getattr(batch.parser().parse_args(["x.blend", *opts]), a.dest) is not None}
    missing = {a.dest for a in batch.take_options()} - given
    assert not missing, f"./fatigue bake's option(s) {missing} are not tried here: add them to EVERY_OPTION"
    scene = tmp_path / "shot.blend"
    scene.write_bytes(b"")            # planning reads no .blend
    bundle = tmp_path / "job"
    assert farm.main([str(scene), "--out", str(bundle), *options]) == 0
    known, extra = farm_task.bake_parser().parse_known_args(_bake_task_argv(bundle, scene))
    out = known.out / "shot.blend"
    farmed = batch.plan(batch.parser().parse_args([known.scene, "--out", str(out)] + farm_task.bake_argv(extra, batch)))
    baked = batch.plan(batch.parser().parse_args([str(scene), "--out", str(out), *options]))
    drop = ("part",)            # a temporary file's unique name
    assert [{k: v for k, v in s.items() if k not in drop} for s in farmed[0]] == \
           [{k: v for k, v in s.items() if k not in drop} for s in baked[0]]


def test_a_rerun_whose_take_is_stopped_does_not_report_the_previous_runs_take(scenes, tmp_path):
    """The same job run again into the same folder, its Bake task killed before it wrote anything
    (a --timeout, a lost worker: here a Blender that dies at once, so the test does not hang on
    how fast this machine bakes): the Summary read the previous run's record and called the take
    baked."""
    bundle = tmp_path / "job"
    made = farm_cli(scenes["shot_a"], "--frames", FRAMES, "--out", bundle)
    assert made.returncode == 0, made.stderr
    out = bundle / "out"
    out.mkdir(parents=True)
    previous = {k: None for k in batch.SUMMARY_FIELDS} | {"file": str(scenes["shot_a"]), "variant": None,
                                                            "out_file": str(out / "shot_a.blend"), "status": "ok"}
    (out / "shot_a.json").write_text(json.dumps({"take": previous, "started": 0.0, "ended": 1.0}))
    (out / "summary.json").write_text(json.dumps({"baked": 1}))
    killed = tmp_path / "killed_blender"          # the Bake task's Blender dies; Clean and Summary run
    killed.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = bake ] && exit 137; done\n'
                      f'exec "{blender_command(tmp_path)}" "$@"\n')
    killed.chmod(0o755)
    run = farm.run_local(bundle, workers=1, overrides={"BlenderExecutable": str(killed)})
    assert run["bake"][0]["returncode"] != 0, run["bake"][0]["output"][-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["baked"], summary["not_done"]) == (0, 1), summary
    assert summary["takes"][0]["status"] == "not run" and "did not run or ended before writing" in \
        summary["takes"][0]["error"]
