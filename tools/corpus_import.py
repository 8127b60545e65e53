"""Import a real character file exactly as a user would: Blender's own importer, default settings.

Used by ``./fatigue corpus`` and the corpus tests.  BVH may also be imported with "Update Scene
FPS/Duration" ticked (the one option users tick when mocap plays in slow motion); everything else
is the importer's default.  Gzipped files (the corpus stores large BVH as ``.bvh.gz``) are
unpacked into a temporary folder first, as a user would before importing.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


WORKPLACE_CORPUS = Path("/work/shared/corpus")     # where this project's shared folder lives for a clone elsewhere


def _find_corpus() -> Path:
    """$FATIGUE_CORPUS, else the nearest ``shared/corpus`` beside this checkout or above it, else
    the project's shared folder (a clean clone in a temporary folder still runs the corpus)."""
    if os.environ.get("FATIGUE_CORPUS"):
        return Path(os.environ["FATIGUE_CORPUS"])
    for parent in ROOT.parents:
        if (parent / "shared" / "corpus" / "MANIFEST.json").is_file():
            return parent / "shared" / "corpus"
    if (WORKPLACE_CORPUS / "MANIFEST.json").is_file():
        return WORKPLACE_CORPUS
    return ROOT.parent / "shared" / "corpus"


CORPUS = _find_corpus()
NON_HUMANOID_PREFIX = "NONHUMANOID_"


@dataclass
class CorpusFile:
    path: Path            # absolute path of the file in the corpus
    rel: str              # path relative to the corpus folder (the manifest's key)
    fmt: str              # "bvh" | "fbx" | "gltf"
    humanoid: bool        # False for files the manifest marks as non-humanoid
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.rel


NEXT_MANIFEST = "MANIFEST.next.json"     # files added to the corpus later, same fields


def corpus_files(corpus: Path = CORPUS, manifests: tuple[str, ...] = ("MANIFEST.json",)) -> list[CorpusFile]:
    """Every file the corpus manifests list (empty when the corpus is not beside this checkout);
    ``manifests``: which of them (add NEXT_MANIFEST for the later files; a missing one lists none)."""
    if not (corpus / "MANIFEST.json").is_file():
        return []
    files = []
    for name in manifests:
        manifest = corpus / name
        if not manifest.is_file():
            continue
        for entry in json.loads(manifest.read_text(encoding="utf-8"))["files"]:
            rel = entry["path"]
            ext = rel.lower().removesuffix(".gz").rsplit(".", 1)[-1]
            fmt = {"bvh": "bvh", "fbx": "fbx", "glb": "gltf", "gltf": "gltf"}[ext]
            files.append(CorpusFile(path=corpus / rel, rel=rel, fmt=fmt,
                                    humanoid=not Path(rel).name.startswith(NON_HUMANOID_PREFIX), meta=entry))
    return files


def matching(files: list[CorpusFile], parts: str | None) -> list[CorpusFile]:
    """The files whose corpus path contains one of the comma-separated ``parts`` (None: all)."""
    wanted = [p for p in (parts or "").split(",") if p]
    return [f for f in files if any(p in f.rel for p in wanted)] if wanted else files


def _unpacked(path: Path, tmp: Path) -> Path:
    if path.suffix.lower() != ".gz":
        return path
    out = tmp / path.with_suffix("").name
    with gzip.open(path, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def import_file(path: Path, update_scene_fps: bool = False):
    """Factory-empty scene, then the file through Blender's importer at its defaults.

    Returns the armature objects the import created (sorted by name)."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    path = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        src = _unpacked(path, Path(tmp))
        ext = src.suffix.lower()
        if ext == ".bvh":
            kw = {"update_scene_fps": True, "update_scene_duration": True} if update_scene_fps else {}
            bpy.ops.import_anim.bvh(filepath=str(src), **kw)
        elif ext == ".fbx":
            bpy.ops.import_scene.fbx(filepath=str(src))
        elif ext in (".glb", ".gltf"):
            bpy.ops.import_scene.gltf(filepath=str(src))
        else:
            raise ValueError(f"not a BVH, FBX or glTF file: {path.name}")
    return sorted((o for o in bpy.data.objects if o.type == "ARMATURE"), key=lambda o: o.name)


def armature_actions(obj) -> list:
    """The actions a user could assign to ``obj``: those animating its bones (glTF imports one
    action per clip, all for the same armature), the assigned one first."""
    import bpy

    bones = {b.name for b in obj.data.bones}
    assigned = obj.animation_data.action if obj.animation_data else None
    out = [assigned] if assigned is not None else []
    for action in sorted(bpy.data.actions, key=lambda a: a.name):
        if action in out:
            continue
        if any(_bone_of(p) in bones for p in _paths(action)):
            out.append(action)
    return out


def _paths(action):
    if hasattr(action, "layers"):
        for layer in action.layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    for fc in bag.fcurves:
                        yield fc.data_path
    if hasattr(action, "fcurves"):
        try:
            for fc in action.fcurves:
                yield fc.data_path
        except AttributeError:
            return


def _bone_of(path: str) -> str | None:
    if path.startswith('pose.bones["'):
        return path[len('pose.bones["'):].split('"]', 1)[0]
    return None
