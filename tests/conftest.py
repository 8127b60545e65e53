"""Shared test set-up, and the tiers: one folder each.

    tests/runtime/<package>/   runtime (numpy and a physics engine, no bpy), package by package
    tests/addon/               addon: the Blender side under the bpy module
    tests/install/             install: the built extension zip in Blender 4.2, 5.0 and 5.3
    tests/corpus/              corpus: real files, realism, the render-farm job
    tests/support/             helpers (rigs, shot files, clips), no tests

Each test is marked with its folder's tier (``./fatigue test -m addon``); whole simulations are
also marked ``slow`` (``-m "not slow"``: the fast pass).  Runtime tests import ``runtime`` as a
top-level package.  Blender-side tests load the repository root as the extension package
``fatigued_takes`` (the way Blender loads it as ``bl_ext.<repo>.fatigued_takes``), via the
``addon_package`` fixture.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
for _path in (ROOT, HERE / "support"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from addon_package import PACKAGE_NAME, load_addon_package  # noqa: E402,F401  (tests/support; scripts use it too)

TIERS = ("runtime", "addon", "install", "corpus")


def pytest_collection_modifyitems(config, items):
    """Mark every test with the tier of its folder (tests/<tier>/...)."""
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(HERE).parts
        if len(parts) > 1 and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))

@pytest.fixture(scope="session")
def addon_package():
    pytest.importorskip("bpy")
    return load_addon_package()


@pytest.fixture(scope="module")
def kin():
    """The proxy's kinematics (PyBullet) for the runtime tests."""
    from runtime.engines.pybullet import kinematics

    with kinematics.Kinematics() as k:
        yield k


@pytest.fixture(scope="module")
def body(kin):
    """The proxy's SRB body."""
    from runtime.reference import rigid_body

    return rigid_body.body_from_proxy(kin)


@pytest.fixture
def registered_addon(addon_package):
    """The add-on registered on a fresh factory-settings scene; unregistered afterwards."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon_package.register()
    try:
        yield addon_package
    finally:
        addon_package.unregister()


def pytest_sessionfinish(session, exitstatus):
    session.config.fatigue_exit_status = int(exitstatus)


def pytest_unconfigure(config):
    """The bpy modules of Blender 4.2 and 4.5 crash or hang in the interpreter's teardown after a
    session like this one (the results are printed by now): leave before it under those."""
    bpy = sys.modules.get("bpy")
    if bpy is not None and bpy.app.version < (5, 0, 0):
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(getattr(config, "fatigue_exit_status", 0))
