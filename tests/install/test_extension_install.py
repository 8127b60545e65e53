"""Build the extension zips with tools/build_extension.py and install the Linux one the way a
user does (Preferences > Get Extensions > Install from Disk), in a fresh Blender user directory,
on three Blenders: this environment's bpy (5.0), the oldest supported (4.2 LTS, Python 3.11) and
the newest on the index (5.3, Python 3.13; tools/bpy_envs.py makes their environments once).
Each enables it, bakes the demo character headless, disables and uninstalls it.

The install runs in a subprocess because BLENDER_USER_RESOURCES must be set before bpy is
imported.  Inside it, the environment's own compiled wheels (pybullet, mujoco, quadprog: the test
venv has them) are hidden, so they can only import through the wheels the extension bundles.
The add-on registered from this repository with those wheels missing altogether shows that
registering, the panels, Detect Rig and Check Rig import none of them, and that a bake without
an engine is one line naming the fix.
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

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ("linux_x64", "windows_x64", "windows_arm64", "macos_arm64")
ENGINE_PLATFORMS = ("linux_x64", "windows_x64", "macos_arm64")     # PyPI has no engine wheel for Windows on ARM
PYTHONS = ("cp311", "cp313")           # Blender 4.2-5.0, 5.1 on
NEVER_SHIPPED = ("tests/", "tools/", ".ci/", ".git/", ".venv", "out/", "dist/", "runtime/train/",
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
    assert WHEELS, "the manifest names no wheel (the physics engines are expected)"
    tags = {"linux_x64": "manylinux", "windows_x64": "win_amd64", "windows_arm64": "win_arm64",
            "macos_arm64": "macosx_11_0_arm64"}
    for platform, path in built_zips.items():
        names = _names(path)
        for required in ("blender_manifest.toml", "__init__.py", "fatigue_addon/__init__.py",
                         "operators/__init__.py", "panels/__init__.py", "runtime/__init__.py",
                         "runtime/fatigue/params.py", "runtime/data/humanoid.urdf"):
            assert required in names, f"{required} missing from {path.name}"
        leaked = [n for n in names if any(n.startswith(p) or f"/{p}" in n for p in NEVER_SHIPPED)]
        leaked += [n for n in names if n.endswith(".pyc") or n in ("fatigue", "pytest.ini", ".gitignore")]
        assert not leaked, f"{path.name} ships {leaked[:10]}"
        wheels = [n for n in names if n.endswith(".whl")]
        # Every zip carries exactly its own platform's wheels (and the pure-Python mujoco wrapper)
        expected = [w.lstrip("./") for w in WHEELS if tags[platform] in w or w.endswith("-none-any.whl")]
        assert wheels == expected, f"{path.name} ships {wheels}"
        # ... for both Pythons it claims: quadprog and (where PyPI has it) MuJoCo's core; pybullet
        # exists for Linux / CPython 3.11 only
        for python in PYTHONS:
            assert any(w.startswith("wheels/quadprog-") and f"-{python}-" in w for w in wheels), (path.name, python)
            assert any(w.startswith("wheels/mujoco_core-") and f"-{python}-" in w for w in wheels) == (
                platform in ENGINE_PLATFORMS), (path.name, python)
        assert [w for w in wheels if w.startswith("wheels/pybullet-")] == (
            ["wheels/pybullet-3.2.7-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"]
            if platform == "linux_x64" else [])
        with zipfile.ZipFile(path) as zf:
            for w in wheels:
                assert zf.getinfo(w).file_size == (ROOT / w).stat().st_size
        assert _zip_manifest(path)["build"]["generated"]["wheels"] == ["./" + w for w in expected]
        print(f"\n{path.name}: {path.stat().st_size / 1e6:.1f} MB")
        if platform != "linux_x64":        # no PyBullet: MuJoCo's core (~10 MB a Python) is the bulk
            assert path.stat().st_size <= 40e6, f"{path.name} is {path.stat().st_size / 1e6:.1f} MB"


@pytest.mark.parametrize("blender", ["this", "4.2", "5.3"])
def test_every_zip_passes_blender_s_validator(built_zips, bpy_envs, pytestconfig, blender):
    """The validator (blender_ext.py) of this, the oldest and the newest Blender accepts every zip:
    its platform names, its wheels for both Pythons, its generated manifest."""
    python = Path(sys.executable) if blender == "this" else _blender_python(bpy_envs, pytestconfig, blender)
    found = subprocess.run([str(python), str(ROOT / "tools" / "build_extension.py"), "--cli"],
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr[-2000:]
    cli = found.stdout.strip().splitlines()[-1]
    for platform, path in built_zips.items():
        res = subprocess.run([str(python), cli, "validate", str(path)], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and res.stdout.startswith("Success"), f"{path.name}:\n{res.stdout}{res.stderr}"


# --------------------------------------------------------------------------- the Blenders

@pytest.fixture(scope="module")
def bpy_envs():
    sys.path.insert(0, str(ROOT / "tools"))
    import bpy_envs

    return bpy_envs


def _blender_python(bpy_envs, pytestconfig, blender: str) -> Path:
    """The Python of the environment with bpy ``blender`` (made the first time, its install shown
    on the terminal); skipped, with the reason, where no Python of its version exists."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled():
            return bpy_envs.ensure(blender)
    except bpy_envs.Unavailable as exc:
        pytest.skip(str(exc))


# The Blenders the linux-x64 zip is installed into: this environment's, the oldest, the newest.
BLENDERS = ("this", "4.2", "5.3")

HIDE_WHEELS = r'''
import importlib.abc, importlib.machinery, os, site, sys

HIDDEN = {"pybullet", "pybullet_data", "pybullet_envs", "pybullet_utils", "mujoco", "quadprog"}
ENV_SITE = {os.path.realpath(p) for p in site.getsitepackages()}


class HideWheels(importlib.abc.MetaPathFinder):
    """A user's Blender has none of the compiled wheels: ``hidden`` import only from sys.path
    entries outside this environment (where Blender put the extension's wheels), or only from
    the folders ``search`` names (none: not at all)."""

    def __init__(self, hidden, search=None):
        self.hidden, self.search = set(hidden), search

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in self.hidden:
            return None
        search = self.search
        if search is None:
            search = [p for p in sys.path if os.path.realpath(p or ".") not in ENV_SITE]
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec


def operator(fn, **kw):
    """An operator's result, or its one-line report when it fails."""
    try:
        return sorted(fn(**kw))
    except RuntimeError as exc:
        return str(exc).strip()
'''

INSTALL_SCRIPT = HIDE_WHEELS + r'''
import importlib, importlib.util, json

zip_path, pkg_id, shot, tests = sys.argv[1:5]
sys.meta_path.insert(0, HideWheels(HIDDEN))
sys.path.append(tests)
from panel_text import draw_panels  # noqa: E402
found = {"python": "%d.%d" % sys.version_info[:2]}


def importable(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


found["before_wheels"] = {m: importable(m) for m in ("pybullet", "mujoco", "quadprog")}

import bpy  # noqa: E402  (first: it puts Blender's modules on sys.path)
import addon_utils  # noqa: E402

found["blender"] = list(bpy.app.version)
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
        "wheels_loaded": sorted(m for m in HIDDEN if m in sys.modules),
    }
    lib = os.path.join(site_dir, "lib")        # the extensions' wheels: lib/pythonX.Y/site-packages/<module>
    s["local_files"] = sorted(n.split(".")[0].split("-")[0] for py in (os.listdir(lib) if os.path.isdir(lib) else ())
                              for n in os.listdir(os.path.join(lib, py, "site-packages")))
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
    found["check_rig"] = operator(bpy.ops.fatigue.check_rig)
addon = prefs.addons.get(module)
if addon is not None and addon.preferences is not None:
    found["prefs"] = {"type": type(addon.preferences).__name__, "engine": addon.preferences.engine,
                      "backend": addon.preferences.backend}
found["wheel_files"] = {}
for name in ("pybullet", "mujoco", "quadprog"):
    try:
        found["wheel_files"][name] = importlib.import_module(name).__file__
    except Exception as exc:
        found["wheel_files"][name] = f"{type(exc).__name__}: {exc}"

if found["installed"]["operator"]:
    # the README's headless bake, as `blender -b shot.blend --python-expr ...` runs it: Automatic,
    # then each engine by name (one line where it does not import)
    bpy.ops.wm.open_mainfile(filepath=shot, load_ui=False)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = arm
    found["detect_rig"] = operator(bpy.ops.fatigue.detect_rig)
    found["bakes"] = {}
    for engine in ("", "pybullet", "mujoco"):
        kw = {"engine": engine, "take_name": f"walk.{engine}"} if engine else {}
        result = operator(bpy.ops.fatigue.bake_take, **kw)
        report = json.loads(arm.fatigue_settings.last_report) if result == ["FINISHED"] else {}
        if report:
            bpy.data.actions[report["action"]].use_fake_user = True     # every take is saved, assigned or not
        found["bakes"][engine or "auto"] = {
            "result": result, "engine": report.get("engine"), "backend": report.get("backend"),
            "frames": report.get("source_frames"), "take_frames": report.get("take_frames"),
            "peak_legs": report.get("peak_fatigue", {}).get("legs"),
            "panel": [x for x in draw_panels(bpy, arm) if x.startswith("Simulated on")] if report else []}
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=shot, load_ui=False)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    found["saved_actions"] = sorted(a.name for a in bpy.data.actions)

found["disable"] = sorted(bpy.ops.preferences.addon_disable(module=module))
found["disabled"] = state()
found["uninstall"] = sorted(bpy.ops.extensions.package_uninstall(repo_directory=repo_dir, pkg_id=pkg_id))
found["uninstalled"] = state()
found["uninstalled"]["pkg_files"] = sorted(os.listdir(repo_dir)) if os.path.isdir(repo_dir) else []
print("FINDINGS " + json.dumps(found), flush=True)
sys.stderr.flush()
os._exit(0)   # the bpy 4.2 module crashes at exit once a property with an update callback was registered
'''


def _run_findings(python, args, cwd, env, timeout):
    proc = subprocess.run([str(python), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=str(cwd))
    lines = [l for l in proc.stdout.splitlines() if l.startswith("FINDINGS ")]
    assert proc.returncode == 0 and lines, (
        f"script failed (rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    found = json.loads(lines[-1][len("FINDINGS "):])
    found["_stdout"] = proc.stdout
    return found


@pytest.fixture(scope="module", params=BLENDERS)
def install_findings(request, built_zips, bpy_envs, pytestconfig, tmp_path_factory):
    python = Path(sys.executable) if request.param == "this" else _blender_python(bpy_envs, pytestconfig, request.param)
    user = tmp_path_factory.mktemp("blender_user")
    script = tmp_path_factory.mktemp("script") / "install_in_blender.py"
    script.write_text(INSTALL_SCRIPT, encoding="utf-8")
    shot = tmp_path_factory.mktemp("shot") / "shot.blend"
    # the shot is made by the same Blender (an older one cannot read a newer one's files)
    made = subprocess.run([str(python), str(ROOT / "tests" / "support" / "shots.py"), str(shot), "--demo", "--seconds", "2"],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert made.returncode == 0 and shot.exists(), made.stdout[-2000:] + made.stderr[-2000:]
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user), PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    found = _run_findings(python, [script, built_zips["linux_x64"], PKG_ID, shot, ROOT / "tests" / "support"], user, env, 600)
    found["_user"] = str(user)
    found["_blender"] = request.param
    yield found
    shutil.rmtree(user, ignore_errors=True)  # the extracted wheels are ~350 MB


def test_install_uses_fresh_user_directory(install_findings):
    f = install_findings
    user = os.path.realpath(f["_user"])
    assert os.path.realpath(f["user_resources"]) == user
    assert os.path.realpath(f["repo_dir"]).startswith(user)
    assert "user_default" in f["repos"]
    before = f["before"]
    assert not before["in_prefs"] and not before["panel"] and not before["operator"]
    assert not before["ext_dir"] and before["local_files"] == []
    # the environment's compiled wheels are hidden: the bundled ones are the only way to get them
    assert f["before_wheels"] == {"pybullet": False, "mujoco": False, "quadprog": False}
    expected = {"this": None, "4.2": [4, 2], "5.3": [5, 3]}[f["_blender"]]
    assert expected is None or f["blender"][:2] == expected, f["blender"]


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
    assert s["wheels_loaded"] == [], "enabling the add-on imported a compiled wheel"
    # the operator runs and reports the one-line fix (no active object)
    assert f["check_rig"].startswith("Error: ") and "select" in f["check_rig"], f["check_rig"]


def test_preferences_registered_under_extension_id(install_findings):
    f = install_findings
    assert f.get("prefs") == {"type": "FatigueAddonPreferences", "engine": "AUTO", "backend": "AUTO"}


def test_bundled_wheels_of_this_python_installed(install_findings):
    """Blender installs the wheels of its own Python from a zip that carries both: the engine and
    quadprog import from the extension's folder; pybullet only under Python 3.11."""
    f = install_findings
    local = os.path.realpath(f["local_dir"])
    py = "python" + f["python"]
    for name in ("mujoco", "quadprog") + (("pybullet",) if f["python"] == "3.11" else ()):
        assert os.path.realpath(f["wheel_files"][name]).startswith(os.path.join(local, "lib", py) + os.sep), (
            name, f["wheel_files"][name])
    if f["python"] != "3.11":
        assert f["wheel_files"]["pybullet"].startswith("ModuleNotFoundError"), f["wheel_files"]["pybullet"]
    assert set(f["installed"]["local_files"]) >= {"mujoco", "quadprog"}


def test_installed_extension_bakes_the_demo_shot_headless(install_findings):
    """`blender -b shot.blend --python-expr "bpy.ops.fatigue.bake_take(...)"` on the demo character:
    Automatic takes PyBullet where its wheel exists (Python 3.11), else MuJoCo; MuJoCo runs on
    every Blender; the Last Bake panel says which engine ran."""
    f = install_findings
    assert f["detect_rig"] == ["FINISHED"], f["detect_rig"]
    bakes = f["bakes"]
    print(f"\nbpy {'.'.join(map(str, f['blender']))} (Python {f['python']}): "
          + "; ".join(f"{k}: {b['engine'] or b['result']} {b['panel']}" for k, b in bakes.items()))
    auto = "PyBullet" if f["python"] == "3.11" else "MuJoCo"
    for name, label in (("auto", auto), ("mujoco", "MuJoCo")) + ((("pybullet", "PyBullet"),) if auto == "PyBullet" else ()):
        b = bakes[name]
        assert b["result"] == ["FINISHED"], (name, b["result"])
        assert b["engine"] == label and b["backend"] == "IN_PROCESS", (name, b)
        assert b["frames"] == [1, 61] and b["take_frames"][1] >= 61, (name, b)
        assert b["peak_legs"] > 0.05, (name, b)             # keyed down to 0.2 at 60x: the legs tire
        assert len(b["panel"]) == 1 and b["panel"][0].startswith(f"Simulated on {label} (in process): "), b["panel"]
    if auto == "MuJoCo":
        assert bakes["pybullet"]["result"] == ("Error: PyBullet does not import in this Python: set Physics engine "
                                               "to Automatic or MuJoCo in the add-on preferences"), bakes["pybullet"]
    names = {"auto": "walk.fatigued", "pybullet": "walk.pybullet", "mujoco": "walk.mujoco"}
    assert f["saved_actions"] == sorted(["walk"] + [names[k] for k, b in bakes.items() if b["result"] == ["FINISHED"]])


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
    if f["blender"] >= [5, 0, 0]:   # Blender 4.2 leaves uninstalled extensions' wheels in place
        assert u["local_files"] == [], f"the bundled wheels were left installed: {u['local_files']}"


# --------------------------------------------------------------------------- no wheels at all

REGISTER_SCRIPT = HIDE_WHEELS + r'''
import json

mode, root, shot = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "wrapper":        # the windows-arm64 zip: the mujoco wrapper without its compiled core
    sys.meta_path.insert(0, HideWheels({"mujoco"}, search=[sys.argv[4]]))
if mode != "observe":
    sys.meta_path.insert(0, HideWheels({"pybullet"} if mode == "pybullet" else HIDDEN - {"mujoco"} if mode == "wrapper"
                                       else HIDDEN, search=[]))
sys.path[:0] = [os.path.join(root, "tools"), os.path.join(root, "tests", "support")]
import bpy  # noqa: E402
import demo_blend  # noqa: E402
from panel_text import draw_panels  # noqa: E402

found = {}
bpy.ops.wm.open_mainfile(filepath=shot, load_ui=False)
demo_blend.load_addon()                          # the repository registered as the extension package
arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
bpy.context.view_layer.objects.active = arm
found["detect_rig"] = operator(bpy.ops.fatigue.detect_rig)
found["check_rig"] = operator(bpy.ops.fatigue.check_rig)
found["panels"] = draw_panels(bpy, arm)
found["wheels_loaded"] = sorted(m for m in HIDDEN if m in sys.modules)
if mode in ("all", "pybullet"):
    found["bake"] = operator(bpy.ops.fatigue.bake_take)
    if found["bake"] == ["FINISHED"]:
        found["report_engine"] = json.loads(arm.fatigue_settings.last_report)["engine"]
        found["panels_after"] = [x for x in draw_panels(bpy, arm) if x.startswith("Simulated on")]
    found["bake_pybullet"] = operator(bpy.ops.fatigue.bake_take, engine="pybullet", take_name="walk.pybullet")
print("FINDINGS " + json.dumps(found), flush=True)
os._exit(0)
'''


@pytest.fixture(scope="module")
def demo_shot(tmp_path_factory):
    shot = tmp_path_factory.mktemp("shot") / "demo.blend"
    subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "shots.py"), str(shot), "--demo", "--seconds", "1"],
                   check=True, capture_output=True, cwd=str(ROOT), timeout=300)
    return shot


def _register(mode, shot, tmp_path, *more):
    script = tmp_path / "register.py"
    script.write_text(REGISTER_SCRIPT, encoding="utf-8")
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    return _run_findings(sys.executable, [script, mode, ROOT, shot, *more], tmp_path, env, 300)


def test_registering_and_the_rig_tools_import_no_compiled_wheel(demo_shot, tmp_path):
    """With every wheel installed (this environment), registering, Detect Rig, Check Rig and
    drawing the panels leave pybullet, mujoco and quadprog unimported."""
    f = _register("observe", demo_shot, tmp_path)
    assert f["detect_rig"] == ["FINISHED"] and f["check_rig"] == ["FINISHED"], f
    assert "Tempo" not in " ".join(f["panels"]) and f["panels"], f["panels"]      # drawn, nothing baked yet
    assert f["wheels_loaded"] == [], f["wheels_loaded"]
    assert not any(x.startswith("No physics engine") for x in f["panels"]), f["panels"]


def test_without_any_wheel_the_addon_works_and_a_bake_is_one_line(demo_shot, tmp_path):
    """pybullet, mujoco and quadprog missing (a platform without them): the add-on registers, the
    rig tools and panels work, the panel says the bake cannot run, and Bake says why in one line."""
    f = _register("all", demo_shot, tmp_path)
    assert f["detect_rig"] == ["FINISHED"] and f["check_rig"] == ["FINISHED"], f
    assert "No physics engine here: install the extension zip built for this platform" in f["panels"], f["panels"]
    assert f["bake"] == ("Error: no physics engine imports in this Python: install the extension zip built for "
                         "this platform (it carries MuJoCo), or pip install mujoco-core mujoco"), f["bake"]
    assert f["bake_pybullet"] == ("Error: PyBullet does not import in this Python: install the extension zip built "
                                  "for this platform"), f["bake_pybullet"]


def test_the_windows_arm64_zip_says_it_cannot_bake(demo_shot, built_zips, tmp_path):
    """That zip carries the mujoco wrapper but no core (PyPI has none for Windows on ARM): the
    panel says so without importing it.  (Bake's one line is test_without_any_wheel_...: here the
    wrapper's namespace path would reach this environment's core.)"""
    site = tmp_path / "site"
    with zipfile.ZipFile(built_zips["windows_arm64"]) as zf:
        wrapper = next(n for n in zf.namelist() if n.startswith("wheels/mujoco-") and n.endswith("-none-any.whl"))
        zf.extract(wrapper, tmp_path)
    with zipfile.ZipFile(tmp_path / wrapper) as wf:
        wf.extractall(site)
    f = _register("wrapper", demo_shot, tmp_path, site)
    assert f["detect_rig"] == ["FINISHED"] and f["check_rig"] == ["FINISHED"], f
    assert "No physics engine here: install the extension zip built for this platform" in f["panels"], f["panels"]
    assert f["wheels_loaded"] == [], f["wheels_loaded"]


def test_without_pybullet_the_bake_runs_on_mujoco(demo_shot, tmp_path):
    """What a Windows or macOS user, or anyone on Blender 5.1+, gets: the bake in Blender's own
    process on MuJoCo, and the Last Bake panel says so."""
    f = _register("pybullet", demo_shot, tmp_path)
    assert f["bake"] == ["FINISHED"], f["bake"]
    assert f["report_engine"] == "MuJoCo"
    assert len(f["panels_after"]) == 1 and f["panels_after"][0].startswith("Simulated on MuJoCo (in process): ")
    assert f["bake_pybullet"] == ("Error: PyBullet does not import in this Python: set Physics engine to Automatic "
                                  "or MuJoCo in the add-on preferences"), f["bake_pybullet"]
