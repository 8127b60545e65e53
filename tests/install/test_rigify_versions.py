"""The Rigify bake in the oldest and the newest supported Blender (4.2 LTS and 5.3; this
environment's 5.0 is measured in process by tests/addon/test_rigify.py): Rigify's generated layout
and its snap operators are that Blender's own.  A basic human generated there walks on its
controls (IK legs on ``foot_ik``, one IK and one FK arm), bakes Fresh and Exhausted with Detect
Rig, plays what was simulated, reopens, and keeps its hands where they were when its arms are
snapped back to IK with Rigify's IK->FK snap (tests/support/rigify_versions.py, run by that
Blender's Python with the extension's engine wheels for it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

pytest.importorskip("bpy")


def _tools(name):
    sys.path.insert(0, str(ROOT / "tools"))
    return __import__(name)


def _engine_wheels(python: Path, folder: Path) -> Path:
    """The manifest's Linux wheels for ``python``'s version, installed into ``folder`` (once)."""
    build = _tools("build_extension")
    tag = subprocess.run([str(python), "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    build.fetch_wheels()
    files = [ROOT / rel for rel in build.manifest_wheels()
             if ("manylinux" in rel and f"-{tag}-" in rel) or rel.endswith("-none-any.whl")]
    stamp = folder / ".installed"
    if not stamp.exists():
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
                        "--no-deps", "--target", str(folder), *map(str, files)], check=True)
        stamp.touch()
    return folder


@pytest.fixture(scope="module", params=("4.2", "5.3"))
def findings(request, pytestconfig, tmp_path_factory):
    envs = _tools("bpy_envs")
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled():
            python = envs.ensure(request.param)
    except envs.Unavailable as exc:
        pytest.skip(str(exc))
    tmp = tmp_path_factory.mktemp(f"rigify{request.param}")
    wheels = _engine_wheels(python, tmp / "wheels")
    out = tmp / "found.json"
    env = dict(os.environ, PYTHONPATH=str(wheels), PYTHONNOUSERSITE="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([str(python), str(ROOT / "tests" / "support" / "rigify_versions.py"), str(out)],
                          capture_output=True, text=True, env=env, cwd=str(tmp), timeout=900)
    assert proc.returncode == 0 and out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads(out.read_text(encoding="utf-8"))
    found["_asked"] = request.param
    return found


def test_rigify_bakes_and_plays_in_this_blender(findings):
    f = findings
    print(f"\nbpy {f['blender']}: " + json.dumps({k: f[k] for k in ("fresh", "exhausted", "snap_to_ik_hands_m")}))
    assert f["blender"].startswith(f["_asked"])
    fresh, tired = f["fresh"], f["exhausted"]
    assert fresh["played_vs_simulated_max_m"] < 0.01 and tired["played_vs_simulated_max_m"] < 0.01
    assert fresh["vs_source_p95_m"] < 0.05 and fresh["hands_feet_p95_m"] < 0.10
    assert not fresh["fell"] and not tired["fell"]


def test_the_reopened_take_plays_and_snaps_back_to_ik(findings):
    f = findings
    assert f["reopened_take"] and f["reopened_vs_baked_m"] < 1e-5
    assert f["snap_to_ik_hands_m"] < 0.01
