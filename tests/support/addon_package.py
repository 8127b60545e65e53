"""The repository loaded as the extension package ``fatigued_takes``, the way Blender loads it as
``bl_ext.<repo>.fatigued_takes``; needs no pytest, so scripts run by other Blender versions'
Pythons (which have none) load it too."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_NAME = "fatigued_takes"


def load_addon_package():
    """Import the repository root as the package ``fatigued_takes`` (idempotent)."""
    if PACKAGE_NAME in sys.modules:
        return sys.modules[PACKAGE_NAME]
    spec = importlib.util.spec_from_file_location(
        PACKAGE_NAME, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE_NAME] = module
    spec.loader.exec_module(module)
    return module
