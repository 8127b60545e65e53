"""The layer map of docs/architecture.md, read from the imports themselves (ast, nothing imported).

Rules (each test names one):
- no import cycle anywhere in the repository (runtime/, the add-on, operators, panels, tools/),
  counting imports inside functions too;
- runtime/: a module imports only from its own package or from a lower layer (LAYERS), never
  from a sibling on its own layer;
- runtime/engines/: the engines' packages (ENGINE_PACKAGES) are siblings: neither imports the
  other, and what they share (the rest of engines/ but the chooser above them) imports neither;
- runtime/: imports at the top of the file, except in the engine chooser and the worker (and an
  optional compiled wheel, OPTIONAL, imported where it is used so a missing one is found when a
  take asks for it);
- no private name (``_name``) crosses a module, imported or read as ``module._name``;
- a name is imported from the module that defines it (no re-exports);
- the exceptions the runtime raises live in runtime/errors.py, the add-on's in
  fatigue_addon/failure.py.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("runtime", "fatigue_addon", "operators", "panels", "tools")

# Bottom to top; units on one line are siblings and never import each other.
LAYERS = (
    ("maths", "errors"),
    ("body",),
    ("motion",),
    ("engines",),
    ("reference",),
    ("fatigue",),
    ("srb",),
    ("floor",),
    ("calibration", "request"),
    ("torque",),
    ("simulate",),
    ("worker", "train"),
)
LAZY_IMPORTS = {"runtime.engines.chooser", "runtime.worker"}
ENGINE_PACKAGES = ("runtime.engines.pybullet", "runtime.engines.mujoco")
ENGINE_CHOOSER = "runtime.engines.chooser"
OPTIONAL = {"pybullet", "mujoco", "quadprog", "matplotlib", "torch"}
EXCEPTION_HOMES = {"runtime": "runtime.errors", "fatigue_addon": "fatigue_addon.failure"}


def _modules() -> dict[str, Path]:
    out = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _top_level_nodes(tree: ast.Module) -> set[int]:
    """ids of the import statements run at import time (module body, if / try blocks)."""
    out: set[int] = set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.add(id(node))
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)
    visit(tree.body)
    return out


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[tuple[str, str | None]]:
    """(target module, imported name or None) per alias, project modules only.  Relative imports
    from the add-on reach runtime/ through the extension's package (``..runtime``); tools/ import
    each other by bare name (tools/ is on sys.path) and the runtime as ``runtime``."""
    out = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            if name not in MODULES and name.split(".")[0] != "runtime" and module.startswith("tools."):
                name = "tools." + name
            if name in MODULES:
                out.append((name, None))
        return out
    if node.level:
        package = module.split(".") if _is_package(module) else module.split(".")[:-1]
        base = package[:len(package) - node.level + 1]
        target = ".".join(base + (node.module.split(".") if node.module else []))
    else:
        target = node.module or ""
        if module.startswith("tools.") and target.split(".")[0] != "runtime" and "tools." + target in MODULES:
            target = "tools." + target
    if target not in MODULES:
        return out
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append((sub, None) if sub in MODULES else (target, alias.name))
    return out


def _imports():
    """(module, target module, imported name or None, at top level, line) for every import."""
    for module, tree in TREES.items():
        top = _top_level_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target, name in _resolve(module, node):
                    yield module, target, name, id(node) in top, node.lineno


IMPORTS = list(_imports())


def _unit(module: str) -> str:
    return module.split(".")[1]


def _layer(unit: str) -> int:
    for k, units in enumerate(LAYERS):
        if unit in units:
            return k
    raise AssertionError(f"runtime/{unit} is on no layer: add it to LAYERS and docs/architecture.md")


def test_no_import_cycle():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, target, _, _, _ in IMPORTS:
        if target != module and not _is_package(target):
            graph[module].add(target)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strongconnect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            strongconnect(v)
    assert not cycles, f"import cycles: {cycles}"


def test_runtime_imports_only_its_own_package_or_lower_layers():
    wrong = []
    for module, target, _, _, line in IMPORTS:
        if not (module.startswith("runtime.") and target.startswith("runtime.")):
            continue
        mine, theirs = _unit(module), _unit(target)
        if mine == theirs:
            continue
        if _layer(theirs) >= _layer(mine):
            kind = "a sibling" if _layer(theirs) == _layer(mine) else "a higher layer"
            wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target} ({kind})")
    assert not wrong, "\n".join(wrong)


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_engines_are_siblings():
    assert all(package in MODULES and _is_package(package) for package in ENGINE_PACKAGES)
    wrong = []
    for module, target, _, _, line in IMPORTS:
        if not _in(module, "runtime.engines") or module == ENGINE_CHOOSER:
            continue
        mine = next((p for p in ENGINE_PACKAGES if _in(module, p)), None)
        theirs = next((p for p in ENGINE_PACKAGES if _in(target, p)), None)
        if theirs is not None and mine != theirs:
            whose = f"{mine}'s sibling" if mine else "an engine, from the engine-free part"
            wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target} ({whose})")
    assert not wrong, "\n".join(wrong)


def test_runtime_imports_at_the_top_except_in_the_chooser_and_the_worker():
    wrong = []
    for module, tree in TREES.items():
        if not module.startswith("runtime.") or module in LAZY_IMPORTS:
            continue
        top = _top_level_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if not node.level else ["." * node.level + (node.module or "")])
                if all(n.split(".")[0] in OPTIONAL for n in names):
                    continue
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{node.lineno} imports {', '.join(names)} in a function")
    assert not wrong, "\n".join(wrong)


def _defined(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names a module defines at top level, and names it only imports."""
    defined, imported = set(), set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            defined.add(n.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    imported.add((a.asname or a.name).split(".")[0])
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                visit(getattr(node, "finalbody", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
    visit(tree.body)
    return defined, imported - defined


DEFINED = {name: _defined(tree) for name, tree in TREES.items()}


def test_names_are_imported_from_where_they_are_defined():
    wrong = []
    for module, target, name, _, line in IMPORTS:
        if name is None or name == "*":
            continue
        defined, imported = DEFINED[target]
        if name in imported:
            wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {name} from {target}, which imports it")
        elif name not in defined:
            wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {name} from {target}, which has none")
    assert not wrong, "\n".join(wrong)


def test_no_private_name_crosses_a_module():
    wrong = []
    for module, target, name, _, line in IMPORTS:
        if name is not None and name.startswith("_") and not name.startswith("__"):
            wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}.{name}")
    for module, tree in TREES.items():
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for (target, name), alias in zip(_resolve(module, node), node.names):
                    if name is None:
                        aliases[alias.asname or alias.name.split(".")[-1]] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{node.lineno} reads "
                             f"{aliases[node.value.id]}.{node.attr}")
    assert not wrong, "\n".join(wrong)


def test_exceptions_live_in_errors_and_failure():
    wrong = []
    for module, tree in TREES.items():
        home = EXCEPTION_HOMES.get(module.split(".")[0])
        if home is None or module == home:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception")) or b.id == "Exception")
                    for b in node.bases):
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{node.lineno} defines {node.name}: its home is {home}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("unit", sorted({_unit(m) for m in MODULES if m.startswith("runtime.")}))
def test_runtime_packages_and_modules_stay_small(unit):
    package = ROOT / "runtime" / unit
    if package.is_dir():
        for folder in [package, *(p.parent for p in package.rglob("*/__init__.py"))]:
            count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
            assert count <= 10, f"{folder.relative_to(ROOT)} has {count} modules"
        modules = [p for p in package.rglob("*.py") if p.name != "__init__.py"]
    else:
        modules = [ROOT / "runtime" / f"{unit}.py"]
    for path in modules:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 600, f"{path.relative_to(ROOT)} has {lines} lines"


def test_the_architecture_map_places_every_module():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for path in MODULES.values():
        rel = path.relative_to(ROOT).as_posix()
        if path.name == "__init__.py" and rel not in ("operators/__init__.py", "panels/__init__.py"):
            continue
        if f"`{rel}`" not in text and f"`{path.name}`" not in text and f"{rel}`" not in text:
            missing.append(rel)
    assert not missing, f"docs/architecture.md does not place: {missing}"


def test_the_tests_import_runtime_names_that_exist():
    wrong = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("runtime"):
                continue
            if node.module not in MODULES:
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: no module {node.module}")
                continue
            for alias in node.names:
                if f"{node.module}.{alias.name}" not in MODULES and alias.name not in DEFINED[node.module][0]:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module} has no {alias.name}")
    assert not wrong, "\n".join(wrong)
