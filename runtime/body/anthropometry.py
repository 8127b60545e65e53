"""A proxy shaped like the character: segment lengths from its skeleton, masses from de Leva (1996).

The default proxy is the DeepMimic humanoid scaled uniformly to the character's height.  A real rig
has its own proportions (long legs, a short trunk, a big head), and where the feet are and how far
the COM sits above them decide balance and how hard the legs work.  ``BodyPlan`` holds one length
ratio per segment (the rig's segment over the uniformly scaled default's) and the sex of de Leva's
table; ``urdf_path(plan)`` writes the DeepMimic URDF with those segment lengths, the de Leva mass
fractions and centres of mass.  The written URDF keeps the default file's total mass (45 kg at 4x
scale), so every consumer keeps scaling masses and strengths to the character's mass as before.

Ratios are clamped to ``RATIO_RANGE``: a rig with a broken or exotic bone must not produce a
proxy that cannot stand; a clamp is reported in ``BodyPlan.notes``.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import proxy

DATA = Path(__file__).resolve().parent.parent / "data" / "anthropometry.json"
RATIO_RANGE = (0.6, 1.6)

# Proxy segment -> (URDF link, the joint at its distal end or None, de Leva segments it lumps together)
SEGMENTS = {
    "pelvis": ("root", "chest", ("lower_trunk",)),
    "chest": ("chest", "neck", ("upper_trunk", "middle_trunk")),
    "head": ("neck", None, ("head_neck",)),
    "thigh": ("hip", "knee", ("thigh",)),
    "shank": ("knee", "ankle", ("shank",)),
    "foot": ("ankle", None, ("foot",)),
    "upper_arm": ("shoulder", "elbow", ("upper_arm",)),
    "forearm": ("elbow", "wrist", ("forearm",)),
    "hand": ("wrist", None, ("hand",)),
}
# Ratios a plan can set: the length segments plus two widths (hip and shoulder joint spacing).
RATIOS = ("pelvis", "chest", "head", "thigh", "shank", "upper_arm", "forearm", "hip_width", "shoulder_width")
LIMBS = ("thigh", "shank", "upper_arm", "forearm")     # capsules hanging along -y, COM from de Leva


@lru_cache(maxsize=1)
def de_leva() -> dict:
    """{"male"|"female": {segment: {"mass": fraction of body mass, "com": fraction from proximal}}}."""
    return json.loads(DATA.read_text(encoding="utf-8"))["de_leva_1996_segments"]


@dataclass(frozen=True)
class BodyPlan:
    """Proportions of the proxy: per-segment length ratios against the default proxy scaled to the
    same height (1 = DeepMimic's proportion), and which de Leva table sets the masses."""
    ratios: dict = field(default_factory=dict)      # name in RATIOS -> ratio (missing: 1)
    sex: str = "male"
    notes: tuple = ()

    def ratio(self, name: str) -> float:
        return float(self.ratios.get(name, 1.0))

    def key(self) -> str:
        text = json.dumps({"r": {k: round(self.ratio(k), 6) for k in RATIOS}, "s": self.sex}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_lengths(height: float = proxy.DEFAULT_HEIGHT) -> dict[str, float]:
    """Segment lengths (m) of the default proxy scaled to ``height``: joint to joint, the head from
    the neck joint to the crown, the widths between the left and right hip / shoulder joints."""
    s = proxy.URDF_SCALE * height / proxy.DEFAULT_HEIGHT
    root = ET.fromstring(_default_urdf_text())
    j = {joint.get("name"): _xyz(joint.find("origin")) for joint in root.iter("joint")}
    neck = _find(root, "link", "neck")
    sphere = neck.find("collision/geometry/sphere")
    crown = _xyz(neck.find("collision/origin"))[1] + float(sphere.get("radius"))
    return {
        "pelvis": s * abs(j["chest"][1]), "chest": s * abs(j["neck"][1]), "head": s * crown,
        "thigh": s * abs(j["right_knee"][1]), "shank": s * abs(j["right_ankle"][1]),
        "upper_arm": s * abs(j["right_elbow"][1]), "forearm": s * abs(j["right_wrist"][1]),
        "hip_width": s * abs(j["right_hip"][2] - j["left_hip"][2]),
        "shoulder_width": s * abs(j["right_shoulder"][2] - j["left_shoulder"][2]),
    }


def standing_pelvis_height(plan: "BodyPlan | None", height: float = proxy.DEFAULT_HEIGHT) -> float:
    """Height (m) of the proxy's pelvis joint above its soles, standing straight: thigh and shank as
    the plan shapes them (None: the default proportions), the ankle's height above the sole as the
    default foot has it; for a body ``height`` metres tall."""
    r_thigh = 1.0 if plan is None else plan.ratio("thigh")
    r_shank = 1.0 if plan is None else plan.ratio("shank")
    s = height / proxy.DEFAULT_HEIGHT
    legs = (proxy.THIGH_URDF * r_thigh + proxy.SHANK_URDF * r_shank + proxy.FOOT_BELOW_ANKLE_URDF) * proxy.URDF_SCALE
    return s * (legs + proxy.FOOT_HALF_EXTENTS[1])


def plan_from_lengths(lengths: dict[str, float], height: float, sex: str = "male") -> BodyPlan:
    """A plan from measured segment lengths (m; any subset of RATIOS) of a character ``height`` tall."""
    if sex not in de_leva():
        raise ValueError(f"sex {sex!r}: use one of {', '.join(de_leva())}")
    ref = default_lengths(height)
    ratios, notes = {}, []
    lo, hi = RATIO_RANGE
    for name, value in lengths.items():
        if name not in ref:
            raise ValueError(f"unknown segment {name!r}; use any of {', '.join(RATIOS)}")
        if not (value is not None and math.isfinite(value) and value > 0):
            notes.append(f"{name}: no usable length ({value!r}), default proportion used")
            continue
        r = value / ref[name]
        if not lo <= r <= hi:
            # the lengths are in the rig's own units (metres or not): say the share of the height
            notes.append(f"{name}: {100 * value / height:.1f} % of the body's height is {r:.2f}x the default "
                         f"proportion, clamped to {min(max(r, lo), hi):.2f}x")
            r = min(max(r, lo), hi)
        ratios[name] = r
    return BodyPlan(ratios=ratios, sex=sex, notes=tuple(notes))


def urdf_path(plan: BodyPlan) -> Path:
    """The proxy URDF for ``plan`` (written once per plan into the temp directory)."""
    out = Path(tempfile.gettempdir()) / "fatigued_takes_proxies" / f"humanoid_{plan.key()}.urdf"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
        part.write_text(urdf_text(plan), encoding="utf-8")
        part.replace(out)           # atomic: parallel bakes may write the same plan
    return out


def urdf_text(plan: BodyPlan) -> str:
    """The DeepMimic humanoid URDF with ``plan``'s segment lengths and de Leva masses (45 kg total)."""
    root = ET.fromstring(_default_urdf_text())
    table = de_leva()[plan.sex]
    total = sum(float(m.get("value")) for m in root.iter("mass"))     # 45 kg (+ the 0.1 g base)
    for seg, (link_suffix, distal, parts) in SEGMENTS.items():
        r = plan.ratio(seg) if seg in RATIOS else 1.0
        fraction = sum(table[p]["mass"] for p in parts)
        for link in _links(root, link_suffix):
            link.find("inertial/mass").set("value", f"{fraction * total:.6f}")
            if seg in LIMBS:
                length = _segment_length(root, link.get("name"), distal)
                com = table[parts[0]]["com"] * length * r
                _set_y(link.find("inertial/origin"), -com)
                _stretch_capsule(link.find("collision"), r)
            elif seg in ("pelvis", "chest", "head"):
                for origin in (link.find("inertial/origin"), link.find("collision/origin")):
                    _scale_y(origin, r)
                if seg == "head":
                    sphere = link.find("collision/geometry/sphere")
                    sphere.set("radius", f"{float(sphere.get('radius')) * r:.6f}")
    for joint in root.iter("joint"):
        parent, origin = joint.find("parent").get("link"), joint.find("origin")
        if origin is None:
            continue
        x, y, z = _xyz(origin)
        name = joint.get("name")
        if parent == "root" and name.endswith("hip"):
            z *= plan.ratio("hip_width")
        elif parent == "root":
            y *= plan.ratio("pelvis")
        elif parent == "chest":
            y *= plan.ratio("chest")
            if name.endswith("shoulder"):
                z *= plan.ratio("shoulder_width")
        else:
            seg = next((s for s, (suffix, _, _) in SEGMENTS.items() if parent.endswith(suffix)), None)
            if seg in LIMBS:
                y *= plan.ratio(seg)
        origin.set("xyz", f"{x:.6f} {y:.6f} {z:.6f}")
    return ET.tostring(root, encoding="unicode")


# ----------------------------------------------------------------------------- URDF helpers

@lru_cache(maxsize=1)
def _default_urdf_text() -> str:
    return proxy.default_urdf_text()


def _find(root, tag: str, name: str):
    return next(e for e in root.iter(tag) if e.get("name") == name)


def _links(root, suffix: str):
    names = (suffix,) if suffix in ("root", "chest", "neck") else (f"right_{suffix}", f"left_{suffix}")
    return [_find(root, "link", n) for n in names]


def _segment_length(root, link_name: str, distal: str) -> float:
    side = link_name.split("_")[0]
    return abs(_xyz(_find(root, "joint", f"{side}_{distal}").find("origin"))[1])


def _xyz(origin) -> tuple[float, float, float]:
    x, y, z = (float(v) for v in origin.get("xyz").split())
    return x, y, z


def _set_y(origin, y: float) -> None:
    x, _, z = _xyz(origin)
    origin.set("xyz", f"{x:.6f} {y:.6f} {z:.6f}")


def _scale_y(origin, r: float) -> None:
    x, y, z = _xyz(origin)
    origin.set("xyz", f"{x:.6f} {y * r:.6f} {z:.6f}")


def _stretch_capsule(collision, r: float) -> None:
    """Scale a capsule hanging along -y so that its whole span (cylinder plus caps) scales by r."""
    capsule = collision.find("geometry/capsule")
    length, radius = float(capsule.get("length")), float(capsule.get("radius"))
    capsule.set("length", f"{max(r * (length + 2 * radius) - 2 * radius, 0.0):.6f}")
    _scale_y(collision.find("origin"), r)
