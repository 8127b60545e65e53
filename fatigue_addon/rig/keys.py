"""The humanoid keys a rig is mapped onto (the proxy's joints, plus bones that only help measure),
their labels and hierarchy, and the Mapping a detection or a preset gives."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..failure import RigMappingError

HUMANOID_KEYS: tuple[str, ...] = (
    "pelvis", "chest", "neck",
    "right_hip", "right_knee", "right_ankle", "right_shoulder", "right_elbow",
    "left_hip", "left_knee", "left_ankle", "left_shoulder", "left_elbow",
)
OPTIONAL_KEYS: tuple[str, ...] = ("head", "right_hand", "left_hand", "right_toe", "left_toe")
ALL_KEYS = HUMANOID_KEYS + OPTIONAL_KEYS

KEY_LABELS = {
    "pelvis": "Pelvis / hips", "chest": "Chest (upper spine)", "neck": "Neck",
    "right_hip": "Right thigh", "right_knee": "Right shin", "right_ankle": "Right foot",
    "right_shoulder": "Right upper arm", "right_elbow": "Right forearm",
    "left_hip": "Left thigh", "left_knee": "Left shin", "left_ankle": "Left foot",
    "left_shoulder": "Left upper arm", "left_elbow": "Left forearm",
    "head": "Head", "right_hand": "Right hand", "left_hand": "Left hand",
    "right_toe": "Right toes", "left_toe": "Left toes",
}

# Proxy parent of every key (the proxy's kinematic tree, pelvis = the proxy's root link).
KEY_PARENT = {
    "chest": "pelvis", "neck": "chest",
    "right_hip": "pelvis", "right_knee": "right_hip", "right_ankle": "right_knee",
    "left_hip": "pelvis", "left_knee": "left_hip", "left_ankle": "left_knee",
    "right_shoulder": "chest", "right_elbow": "right_shoulder",
    "left_shoulder": "chest", "left_elbow": "left_shoulder",
}

FIX_HINT = "map them in the Fatigue panel's Rig Mapping list (or load a mapping preset)"
PRESET_FORMAT = "fatigued_takes.rig_mapping"


@dataclass
class Mapping:
    """Humanoid key -> bone name, with how each was found and what looks wrong."""
    bones: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)   # key -> "name" | "hierarchy" | "geometry" | "preset" | "user"
    armature: str = ""

    # dict-like access: mapping["pelvis"], "chest" in mapping, mapping.items()
    def __getitem__(self, key: str) -> str:
        return self.bones[key]

    def __contains__(self, key: str) -> bool:
        return key in self.bones

    def __len__(self) -> int:
        return len(self.bones)

    def get(self, key: str, default=None):
        return self.bones.get(key, default)

    def items(self):
        return self.bones.items()

    def keys(self):
        return self.bones.keys()

    def missing(self) -> list[str]:
        """Required keys without a bone."""
        return [k for k in HUMANOID_KEYS if not self.bones.get(k)]

    @property
    def complete(self) -> bool:
        return not self.missing()

    def required(self) -> dict[str, str]:
        """Only the required keys (what the proxy's joints follow)."""
        return {k: self.bones[k] for k in HUMANOID_KEYS if self.bones.get(k)}

    def to_dict(self) -> dict:
        return {"format": PRESET_FORMAT, "version": 1, "armature": self.armature,
                "bones": {k: self.bones[k] for k in ALL_KEYS if self.bones.get(k)}}

    @classmethod
    def from_dict(cls, data: dict, source: str = "preset") -> "Mapping":
        if not isinstance(data, dict) or not isinstance(data.get("bones"), dict):
            raise RigMappingError("not a rig mapping preset (no 'bones' table): pick a file saved from the Rig Mapping list")
        bones = {}
        for key, bone in data["bones"].items():
            if key not in ALL_KEYS:
                raise RigMappingError(f"rig mapping preset has an unknown key {key!r}: use one of {', '.join(HUMANOID_KEYS)}")
            if not isinstance(bone, str) or not bone:
                raise RigMappingError(f"rig mapping preset: the bone for {key!r} must be a bone name")
            bones[key] = bone
        return cls(bones=bones, sources={k: source for k in bones}, armature=str(data.get("armature", "")))


