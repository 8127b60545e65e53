"""Rig mapping presets: JSON files saved from the Rig Mapping list, and those shipped in
``rig_presets/``."""
from __future__ import annotations

import json
from pathlib import Path

from ..failure import RigMappingError
from .keys import PRESET_FORMAT, Mapping

PRESET_DIR = Path(__file__).resolve().parent.parent / "rig_presets"


def save_mapping(mapping: Mapping, path) -> Path:
    """Write a mapping preset (JSON).  Returns the path written."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        path = path.with_suffix(".json")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(mapping.to_dict(), indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise RigMappingError(f"cannot write rig mapping preset '{path}': {exc.strerror or exc}: choose a writable folder") from None
    return path


def load_mapping(path) -> Mapping:
    """Read a mapping preset written by ``save_mapping`` (or shipped in ``rig_presets/``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RigMappingError(f"cannot read rig mapping preset '{path}': {exc.strerror or exc}: pick an existing .json file") from None
    except ValueError as exc:
        raise RigMappingError(f"rig mapping preset '{path.name}' is not valid JSON ({exc.msg}, line {exc.lineno}): "
                              f"re-save it from the Rig Mapping list") from None
    if isinstance(data, dict) and data.get("format") not in (None, PRESET_FORMAT):
        raise RigMappingError(f"'{path.name}' is a {data.get('format')!r} file, not a rig mapping preset: "
                              f"pick a file saved from the Rig Mapping list")
    return Mapping.from_dict(data, source="preset")


def shipped_presets() -> dict[str, Path]:
    """Name -> path of the mapping presets shipped with the add-on."""
    if not PRESET_DIR.is_dir():
        return {}
    return {p.stem: p for p in sorted(PRESET_DIR.glob("*.json"))}
