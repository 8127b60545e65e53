"""Build the extension zips with tools/build_extension.py and install the Linux one the way a
user does (Preferences > Get Extensions > Install from Disk), in a fresh Blender user directory.

The install runs in a subprocess because BLENDER_USER_RESOURCES must be set before bpy is
imported.  Inside it, the environment's own pybullet (the test venv has one) is hidden, so
``import pybullet`` can only succeed through the wheel the extension bundles.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ("linux_x64", "windows_x64", "macos_arm64", "macos_x64")
NEVER_SHIPPED = ("tests/", "tools/", ".ci/", ".git/", ".venv/", "out/", "dist/", "runtime/train/",
                 "requirements/", "__pycache__/")

pytest.importorskip("bpy")  # the build uses blender_ext.py from the bpy wheel

MANIFEST = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
PKG_ID = MANIFEST["id"]
WHEELS = MANIFEST.get("wheels", [])


def _load_build_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fatigue_build_extension", ROOT / "tools" / "build_extension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built_zips(tmp_path_factory):
    tool = _load_build_tool()
    out = tmp_path_factory.mktemp("dist")
    # Downloads the manifest's wheels into wheels/ the first time (~100 MB, cached, gitignored);
    # a failed download fails the test: the Linux zip is not shippable without it.
    zips = tool.build(out)
    by_platform = {}
    for z in zips:
        stem = z.name[: -len(".zip")]
        by_platform[stem.rsplit("-", 1)[-1]] = z
    yield by_platform
    shutil.rmtree(out, ignore_errors=True)  # ~100 MB; pytest keeps old tmp dirs around


def _names(zip_path: Path) -> list[str]:
    with zipfile.ZipFile(zip_path) as zf:
        return zf.namelist()


def _zip_manifest(zip_path: Path) -> dict:
    with zipfile.ZipFile(zip_path) as zf:
        return tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))


# --------------------------------------------------------------------------- the zips


def test_one_zip_per_platform(built_zips):
    assert sorted(built_zips) == sorted(PLATFORMS)
    for platform, path in built_zips.items():
        assert path.name == f"{PKG_ID}-{MANIFEST['version']}-{platform}.zip"
        assert zipfile.is_zipfile(path)
        manifest = _zip_manifest(path)
        assert manifest["id"] == PKG_ID
        # --split-platforms narrows each zip to its own platform in a generated section
        generated = manifest["build"]["generated"]
        assert generated["platforms"] == [platform.replace("_", "-")]


def test_zip_contents(built_zips):
    assert WHEELS, "the manifest names no wheel (pybullet for Linux is expected)"
    for platform, path in built_zips.items():
        names = _names(path)
        for required in ("blender_manifest.toml", "__init__.py", "fatigue_addon/__init__.py",
                         "operators/__init__.py", "panels/__init__.py", "runtime/__init__.py",
                         "runtime/fatigue_params.py"):
            assert required in names, f"{required} missing from {path.name}"
        leaked = [n for n in names if any(n.startswith(p) or f"/{p}" in n for p in NEVER_SHIPPED)]
        leaked += [n for n in names if n.endswith(".pyc") or n in ("fatigue", "pytest.ini", ".gitignore")]
        assert not leaked, f"{path.name} ships {leaked[:10]}"
        wheels = [n for n in names if n.endswith(".whl")]
        tags = {"linux_x64": "manylinux", "windows_x64": "win_amd64",
                "macos_arm64": "macosx_11_0_arm64", "macos_x64": "macosx_10_9_x86_64"}
        # Every zip carries exactly its own platform's wheels; pybullet exists for Linux only.
        expected = [w.lstrip("./") for w in WHEELS if tags[platform] in w]
        assert wheels == expected, f"{path.name} ships {wheels}"
        assert any(w.startswith("wheels/quadprog-") for w in wheels)
        assert any(w.startswith("wheels/pybullet-") for w in wheels) == (platform == "linux_x64")
        with zipfile.ZipFile(path) as zf:
            for w in wheels:
                assert zf.getinfo(w).file_size == (ROOT / w).stat().st_size
        assert _zip_manifest(path)["build"]["generated"]["wheels"] == ["./" + w for w in expected]


# --------------------------------------------------------------------------- install in Blender

INSTALL_SCRIPT = r'''
import importlib, importlib.abc, importlib.machinery, importlib.util, json, os, site, sys

zip_path, pkg_id = sys.argv[1], sys.argv[2]
HIDDEN = {"pybullet", "pybullet_data", "pybullet_envs", "pybullet_utils"}
ENV_SITE = {os.path.realpath(p) for p in site.getsitepackages()}


class HideEnvironmentPybullet(importlib.abc.MetaPathFinder):
    """A user's Blender has no pybullet: only sys.path entries outside the venv may provide it."""

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in HIDDEN:
            return None
        search = [p for p in sys.path if os.path.realpath(p or ".") not in ENV_SITE]
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec


sys.meta_path.insert(0, HideEnvironmentPybullet())
found = {}


def importable(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


found["pybullet_before"] = importable("pybullet")

import bpy  # noqa: E402  (first: it puts Blender's modules on sys.path)
import addon_utils  # noqa: E402

module = f"bl_ext.user_default.{pkg_id}"
prefs = bpy.context.preferences
found["user_resources"] = bpy.utils.resource_path("USER")
repos = {r.module: r for r in prefs.extensions.repos}
found["repos"] = sorted(repos)
repo_dir = repos["user_default"].directory
found["repo_dir"] = repo_dir
site_dir = bpy.utils.user_resource("EXTENSIONS", path=".local")
found["local_dir"] = site_dir


def state():
    s = {
        "addon_check": list(addon_utils.check(module)),
        "in_prefs": module in prefs.addons,
        "module_loaded": module in sys.modules,
        "panel": hasattr(bpy.types, "VIEW3D_PT_fatigue"),
        "operator": hasattr(bpy.types, "FATIGUE_OT_check_rig"),
        "settings": bpy.types.Object.bl_rna.properties.get("fatigue_settings") is not None,
        "ext_dir": os.path.isdir(os.path.join(repo_dir, pkg_id)),
    }
    if os.path.isdir(site_dir):
        s["local_files"] = sorted(
            os.path.relpath(os.path.join(d, n), site_dir)
            for d, _dirs, files in os.walk(site_dir) for n in files if "pybullet" in os.path.join(d, n)
        )[:5]
    else:
        s["local_files"] = []
    return s


found["before"] = state()
found["install"] = sorted(bpy.ops.extensions.package_install_files(
    filepath=zip_path, repo="user_default", enable_on_install=True))
found["installed"] = state()
found["module_file"] = getattr(sys.modules.get(module), "__file__", None)
if hasattr(bpy.types, "VIEW3D_PT_fatigue"):
    found["panel_category"] = bpy.types.VIEW3D_PT_fatigue.bl_category
if found["installed"]["operator"]:
    found["operator_poll"] = bpy.ops.fatigue.check_rig.poll()
    bpy.context.view_layer.objects.active = None
    try:
        found["check_rig"] = sorted(bpy.ops.fatigue.check_rig())
    except RuntimeError as exc:
        found["check_rig"] = str(exc).strip()
addon = prefs.addons.get(module)
if addon is not None and addon.preferences is not None:
    found["backend"] = addon.preferences.backend
    found["prefs_type"] = type(addon.preferences).__name__

importlib.invalidate_caches()
try:
    import pybullet
    found["pybullet_file"] = pybullet.__file__
    cid = pybullet.connect(pybullet.DIRECT)
    found["pybullet_connect"] = cid >= 0
    pybullet.disconnect(cid)
except Exception as exc:
    found["pybullet_error"] = f"{type(exc).__name__}: {exc}"

if len(sys.argv) > 3 and found["installed"]["operator"]:
    # the README's headless bake, as `blender -b shot.blend --python-expr ...` runs it
    shot = sys.argv[3]
    bpy.ops.wm.open_mainfile(filepath=shot, load_ui=False)
    try:
        found["headless_bake"] = sorted(bpy.ops.fatigue.bake_take(preset="Exhausted", frame_start=1, frame_end=20))
        bpy.ops.wm.save_mainfile()
        bpy.ops.wm.open_mainfile(filepath=shot, load_ui=False)
        arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
        found["headless_actions"] = sorted(a.name for a in bpy.data.actions)
        found["headless_assigned"] = arm.animation_data.action.name
        found["headless_frames"] = json.loads(arm.fatigue_settings.last_report)["source_frames"]
    except Exception as exc:
        found["headless_error"] = f"{type(exc).__name__}: {exc}"

found["disable"] = sorted(bpy.ops.preferences.addon_disable(module=module))
found["disabled"] = state()
found["uninstall"] = sorted(bpy.ops.extensions.package_uninstall(repo_directory=repo_dir, pkg_id=pkg_id))
found["uninstalled"] = state()
found["uninstalled"]["pkg_files"] = sorted(os.listdir(repo_dir)) if os.path.isdir(repo_dir) else []
print("FINDINGS " + json.dumps(found), flush=True)
sys.stderr.flush()
os._exit(0)   # the bpy 4.2 module crashes at exit once a property with an update callback was registered
'''


@pytest.fixture(scope="module")
def install_findings(built_zips, tmp_path_factory):
    user = tmp_path_factory.mktemp("blender_user")
    script = tmp_path_factory.mktemp("script") / "install_in_blender.py"
    script.write_text(INSTALL_SCRIPT, encoding="utf-8")
    shot = tmp_path_factory.mktemp("shot") / "shot.blend"
    subprocess.run([sys.executable, str(ROOT / "tests" / "shots.py"), str(shot)], check=True, capture_output=True,
                   cwd=str(ROOT))
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user), PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [sys.executable, str(script), str(built_zips["linux_x64"]), PKG_ID, str(shot)],
        capture_output=True, text=True, env=env, timeout=180, cwd=str(user),
    )
    lines = [l for l in proc.stdout.splitlines() if l.startswith("FINDINGS ")]
    assert proc.returncode == 0 and lines, (
        f"install script failed (rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    found = json.loads(lines[-1][len("FINDINGS "):])
    found["_stdout"] = proc.stdout
    found["_user"] = str(user)
    yield found
    shutil.rmtree(user, ignore_errors=True)  # the extracted pybullet wheel is ~300 MB


def test_install_uses_fresh_user_directory(install_findings):
    f = install_findings
    user = os.path.realpath(f["_user"])
    assert os.path.realpath(f["user_resources"]) == user
    assert os.path.realpath(f["repo_dir"]).startswith(user)
    assert "user_default" in f["repos"]
    before = f["before"]
    assert not before["in_prefs"] and not before["panel"] and not before["operator"]
    assert not before["ext_dir"] and before["local_files"] == []
    # the environment's pybullet is hidden, so the bundled wheel is the only way to get one
    assert f["pybullet_before"] is False


def test_install_enables_addon(install_findings):
    f = install_findings
    assert f["install"] == ["FINISHED"], f["_stdout"][-3000:]
    s = f["installed"]
    assert s["addon_check"] == [True, True]  # enabled in preferences, loaded
    assert s["in_prefs"] and s["module_loaded"] and s["ext_dir"]
    assert os.path.realpath(f["module_file"]) == os.path.realpath(
        os.path.join(f["repo_dir"], PKG_ID, "__init__.py"))
    assert s["panel"] and f["panel_category"] == "Fatigue"
    assert s["operator"] and f["operator_poll"] is True
    assert s["settings"]
    # the operator runs and reports the one-line fix (no active object)
    assert f["check_rig"].startswith("Error: ") and "select" in f["check_rig"], f["check_rig"]


def test_preferences_registered_under_extension_id(install_findings):
    f = install_findings
    assert f.get("prefs_type") == "FatigueAddonPreferences", "no add-on preferences under the extension id"
    assert f["backend"] == "AUTO"


def test_bundled_pybullet_wheel_installed(install_findings):
    f = install_findings
    assert "pybullet_error" not in f, f["pybullet_error"]
    local = os.path.realpath(f["local_dir"])
    assert os.path.realpath(f["pybullet_file"]).startswith(local + os.sep), (f["pybullet_file"], local)
    assert f["pybullet_connect"] is True
    assert any(p.startswith(os.path.join("lib", "python3.11", "site-packages", "pybullet"))
               for p in f["installed"]["local_files"]), f["installed"]["local_files"]


def test_installed_extension_bakes_headless_and_saves(install_findings):
    """`blender -b shot.blend --python-expr "bpy.ops.fatigue.bake_take(...); bpy.ops.wm.save_mainfile()"`."""
    f = install_findings
    assert "headless_error" not in f, f["headless_error"]
    assert f["headless_bake"] == ["FINISHED"]
    assert f["headless_actions"] == ["walk", "walk.fatigued"]
    assert f["headless_assigned"] == "walk.fatigued" and f["headless_frames"] == [1, 20]


def test_disable_then_uninstall(install_findings):
    f = install_findings
    assert f["disable"] == ["FINISHED"]
    d = f["disabled"]
    assert d["addon_check"][1] is False and not d["in_prefs"]
    assert not d["panel"] and not d["operator"] and not d["settings"]
    assert d["ext_dir"], "disabling must not remove the files"
    assert f["uninstall"] == ["FINISHED"], f["_stdout"][-3000:]
    u = f["uninstalled"]
    assert not u["ext_dir"] and PKG_ID not in u["pkg_files"]
    assert not u["in_prefs"] and not u["panel"] and not u["operator"]
    import bpy

    if bpy.app.version >= (5, 0, 0):   # Blender 4.2 leaves uninstalled extensions' wheels in place
        assert u["local_files"] == [], "the bundled pybullet wheel was left installed"
