"""The Blender side's map (docs/architecture.md), read from the imports themselves (ast, nothing
imported), as tests/runtime/test_layers.py reads the runtime's:

- fatigue_addon/rig/ is bpy-free: it imports no bpy or mathutils, nothing of operators/ or
  panels/, and of the add-on only its exceptions (failure.py); the runtime it may read;
- the add-on's modules keep a declared order (ADDON_LAYERS, bottom to top): a module imports
  only from lower layers (imports inside functions count), never a sibling on its own layer;
- the add-on imports neither operators/ nor panels/, and nothing outside tools/ imports tools/;
- no module of fatigue_addon/, operators/, panels/ or tools/ is over 600 lines.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_layers  # noqa: E402  (its map of modules: every file under the sources, by dotted name)

ROOT = test_layers.ROOT
SOURCES = ("fatigue_addon", "operators", "panels", "tools")
MAX_LINES = 600
BPY_FREE = "fatigue_addon.rig"
BPY_FREE_MAY_IMPORT = {"fatigue_addon.failure"}
# Bottom to top; units on one line are siblings and never import each other.  ``rig`` is the
# bpy-free package as one unit; the package's __init__ (register) stands above them all.
ADDON_LAYERS = (
    ("failure",),
    ("rig", "bake_options"),
    ("anim", "heat", "properties", "backend", "report"),
    ("preferences", "fitness", "source_pose", "action_write", "source_read"),
    ("rigmap",),
    ("checks", "rest_geometry"),
    ("retarget",),
    ("rig_controls",),
    ("bake",),
)


MODULES = {name: path for name, path in test_layers.MODULES.items() if name.split(".")[0] in SOURCES}


def _imports(module: str, path: Path):
    """(target, line) for every import in the file, inside functions too: project modules by
    dotted name (``..runtime`` as ``runtime...``), other modules by their top-level name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if not node.level:
                yield node.module or "", node.lineno
                continue
            base = package[:len(package) - node.level + 1]
            target = ".".join(base + (node.module.split(".") if node.module else []))
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in MODULES or sub.startswith("runtime.") else target), node.lineno


IMPORTS = [(m, t, line) for m, p in MODULES.items() for t, line in _imports(m, p)]


def _where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(ROOT)}:{line}"


def _unit(module: str) -> str | None:
    """The add-on unit a module belongs to (``rig`` for the whole bpy-free package)."""
    parts = module.split(".")
    if parts[0] != "fatigue_addon" or len(parts) == 1:
        return None
    return parts[1]


LAYER_OF = {unit: k for k, units in enumerate(ADDON_LAYERS) for unit in units}


def _layer(unit: str) -> int:
    assert unit in LAYER_OF, f"fatigue_addon/{unit} is on no layer: add it to ADDON_LAYERS and docs/architecture.md"
    return LAYER_OF[unit]


def test_the_rig_package_is_bpy_free():
    wrong = []
    for module, target, line in IMPORTS:
        if not (module == BPY_FREE or module.startswith(BPY_FREE + ".")):
            continue
        top = target.split(".")[0]
        if top in ("bpy", "mathutils", "bmesh", "operators", "panels", "tools"):
            wrong.append(f"{_where(module, line)} imports {target}")
        elif top == "fatigue_addon" and not target.startswith(BPY_FREE) and target not in BPY_FREE_MAY_IMPORT:
            wrong.append(f"{_where(module, line)} imports {target} (the add-on above the bpy-free package)")
    assert not wrong, "\n".join(wrong)


def test_the_rig_package_holds_the_pure_geometry():
    """The bpy-free package exists and carries detection, validation and the rig's measures."""
    names = {m.split(".")[-1] for m in MODULES if m.startswith(BPY_FREE + ".")}
    assert {"names", "skeleton", "by_names", "by_geometry", "shape", "space", "root_motion", "rotations"} <= names


def test_addon_modules_import_only_lower_layers():
    wrong = [f"{_where(module, line)} imports {target} ({kind})"
             for module, target, line in IMPORTS if (kind := _breach(module, target))]
    assert not wrong, "\n".join(wrong)


def _breach(module: str, target: str) -> str | None:
    """How an add-on import breaks the order ("a sibling", "a higher layer"), None when it keeps it."""
    mine, theirs = _unit(module), _unit(target)
    if mine is None or theirs is None or mine == theirs or _layer(theirs) < _layer(mine):
        return None
    return "a sibling" if _layer(theirs) == _layer(mine) else "a higher layer"


def test_every_addon_module_is_on_a_layer():
    for module in MODULES:
        if _unit(module) is not None:
            _layer(_unit(module))


def test_the_addon_imports_no_operator_panel_or_tool():
    wrong = []
    for module, target, line in IMPORTS:
        top = target.split(".")[0]
        if module.startswith("fatigue_addon") and top in ("operators", "panels", "tools"):
            wrong.append(f"{_where(module, line)} imports {target}")
        if not module.startswith("tools") and top == "tools":
            wrong.append(f"{_where(module, line)} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_no_module_over_600_lines():
    over = []
    for path in MODULES.values():
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            over.append(f"{rel}: {lines} lines")
    assert not over, "split by concern: " + "; ".join(over)

