"""The source action's walk through the add-on: which modules of ``fatigue_addon/`` it is handed
to (or read from the armature in), in order, from ``bake.bake`` to the written take
(sys.setprofile on every Python call).  A visit is a module other than the previous one's; a
return is a visit to a module visited before.  tests/addon/test_source_walk.py holds the bake to a few visits per
module; run as a script (``python tests/support/source_walk.py [REPOSITORY]``, in a Python with
bpy) it prints the walk of any checkout's add-on, to compare before and after a change."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "fatigued_takes"



def walk(run, source, package: str = PACKAGE, reads: list | None = None, described: bool = False) -> list[str]:
    """The modules of ``<package>.fatigue_addon`` the source action visits while ``run()`` runs, one
    entry per visit: a call that is handed ``source`` as an argument, or a function that reads it
    off the armature (``anim.active_action`` returning it: the action parked on the armature and
    found there), counted in the module that called or read (consecutive ones in the same module
    are one visit).  ``reads``, when given, receives the module of every read off the armature.
    ``described``: the action read once (anim.SourceAction) counts as the action too."""
    import bpy

    prefix = f"{package}.fatigue_addon"
    reader = f"{prefix}.anim"
    visits: list[str] = []
    generators = set()          # a generator's frame is called again on every resume: one call

    def module_of(frame) -> str | None:
        name = frame.f_globals.get("__name__", "") if frame is not None else ""
        return name[len(package) + 1:] if name == prefix or name.startswith(prefix + ".") else None

    def is_source(value) -> bool:
        if described and type(value).__name__ == "SourceAction":
            return getattr(value, "name", None) == source.name
        return isinstance(value, bpy.types.Action) and value == source

    def visit(module):
        if module is not None and (not visits or visits[-1] != module):
            visits.append(module)

    def profile(frame, event, arg):
        if event == "call":
            if frame.f_code.co_flags & inspect.CO_GENERATOR:
                if frame in generators:
                    return
                generators.add(frame)
            module = module_of(frame)
            if module is not None and any(is_source(v) for v in frame.f_locals.values()):
                visit(module)
        elif event == "return" and frame.f_code.co_name == "active_action" and is_source(arg):
            if frame.f_globals.get("__name__") == reader:
                visit(module_of(frame.f_back))
                if reads is not None:
                    reads.append(module_of(frame.f_back))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return visits


def summary(visits: list[str], leave_out=()) -> dict:
    """Modules, visits, returns (visits to a module entered before) and visits per module, the
    walk read without the modules ``leave_out`` (their neighbours' visits then join)."""
    kept = [m for m in visits if m not in leave_out]
    visits = [m for i, m in enumerate(kept) if i == 0 or kept[i - 1] != m]
    per = Counter(visits)
    return {"modules": len(per), "visits": len(visits), "returns": len(visits) - len(per),
            "per_module": dict(per.most_common())}


def walk_rig(frames: int = 30):
    """A Mixamo-like rig (tests/support/rigs.py) walking ``frames`` frames, with its action assigned."""
    import rigs

    rig = rigs.mixamo_rig(frames=frames)
    return rig.obj


def baked_walk(package: str = PACKAGE, frames: int = 30, reads: list | None = None,
               described: bool = False) -> list[str]:
    """The walk of one Fresh bake of walk_rig through ``bake.bake`` (the add-on registered)."""
    import bpy

    pkg = sys.modules[package]
    bake = importlib.import_module(f"{package}.fatigue_addon.bake")
    options = importlib.import_module(f"{package}.fatigue_addon.bake_options")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    pkg.register()
    try:
        obj = walk_rig(frames)
        bpy.context.view_layer.objects.active = obj
        opts = options.BakeOptions(preset="Fresh", frame_start=1, frame_end=frames)
        source = obj.animation_data.action
        return walk(lambda: bake.bake(bpy.context, obj, options=opts), source, package, reads, described)
    finally:
        pkg.unregister()


def _load(root: Path):
    spec = importlib.util.spec_from_file_location(PACKAGE, root / "__init__.py", submodule_search_locations=[str(root)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE.parents[1]
    sys.path.insert(0, str(root / "tests" / "support"))
    _load(root)
    for described in (False, True):
        reads: list = []
        visits = baked_walk(reads=reads, described=described)
        print("the action" + (" and what was read of it (anim.SourceAction)" if described else "") + ":")
        print(" -> ".join(visits))
        print("read off the armature in:", dict(Counter(reads)))
        s = summary(visits)
        print(f"{s['modules']} modules, {s['visits']} visits, {s['returns']} returns; {s['per_module']}")
