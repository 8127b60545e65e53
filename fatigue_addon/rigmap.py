"""Humanoid bone auto-detection: which bone of an armature drives which proxy joint.

Keys (``HUMANOID_KEYS``, all required): ``pelvis`` (root/hips bone, carries the root
translation), ``chest``, ``neck``, and per side ``*_hip`` (thigh), ``*_knee`` (shin),
``*_ankle`` (foot), ``*_shoulder`` (upper arm), ``*_elbow`` (forearm).  ``OPTIONAL_KEYS``
(``head``, hands, toes) only help the retarget find segment directions in the rest pose.

Detection, in order:

1. Names.  Every bone name is normalised: the namespace is dropped (``mixamorig:``, ``rig:``,
   ``Armature|``), known prefixes are stripped (``DEF-``, ``ORG-``, ``Bip01 ``, ``CC_Base_``,
   ``ValveBiped.Bip01_``, ``Character1_``...), the side is split off (``.L``, ``_l``, ``Left``,
   ``L_``, ``Bip01 L Thigh``, Daz ``lThighBend``, Rigify ``thigh.L.001``), and the rest,
   lower-cased without separators, is looked up in alias patterns (``_ALIASES``).  ``MCH-``
   (Rigify mechanism) bones are never used; plain names beat ``DEF-``, which beats ``ORG-``.
   Limbs are resolved as chains: the knee must descend from the hip, the ankle from the knee.
2. Hierarchy.  ``pelvis`` is the root-most pelvis-named ancestor of both thighs, else their
   lowest common ancestor (Rigify's ``spine``).  ``chest`` is the lowest common ancestor of the
   two upper arms (the bone the shoulders hang from: Mixamo ``Spine2``, Rigify ``spine.003``,
   Unreal ``spine_03``); when that is a neck (3ds Max Biped hangs its clavicles from
   ``Bip01 Neck``) it walks up to the first spine bone.  ``neck`` is the neck-named bone
   closest below the chest, else the head, else the chest's child that points up (Rigify
   ``spine.004``).
3. Geometry, for whatever names did not find: the rest pose is read in world space; limbs
   reaching the floor are legs, the two of them meet at the pelvis, the spine rises from it,
   and the bone where two long chains go sideways (along the line through the hips) is the
   chest.  Whatever the numbering of the names, an arm's upper arm and forearm are its first two
   long bones past a clavicle (a long bone starting within the hips' half-width of the middle);
   an arm ending at the wrist or a spine ending at the neck is a shorter chain.  Left is where
   the toes point from, else +X of the armature (Blender's convention for ``.L`` bones).
4. The animated pose, where the rest pose is no humanoid (a BVH whose offsets all lie along the
   parent's X: its rest is a horizontal line of bones, every animated frame an upright person):
   the same detection on frames spread over the assigned action, and what most of them agree on
   is the mapping.  ``body_pose`` then picks the frame the body is measured on (sizes, up,
   facing, segment directions: retarget and rig_space read it instead of the rest pose).

Multi-bone spines: the proxy has one chest joint for the whole trunk.  ``chest`` is the upper-most
spine bone below the neck; the spine bones between pelvis and chest are not mapped, keep their
own animation, and the chest bone's WORLD orientation is what the proxy follows (and what the
bake writes back), so a 3-, 5- or 6-bone spine retargets the same way.

A rig with more than two limbs reaching the floor, or whose neck is not above its pelvis, is not
a humanoid and is rejected with a ``RigMappingError`` (one line, naming the fix).  Mapping presets
are JSON (``save_mapping`` / ``load_mapping``); ``rig_presets/`` ships one per common family.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import rig_space, rigify
from .failure import RigMappingError

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
PRESET_DIR = Path(__file__).resolve().parent / "rig_presets"


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


# ============================================================================= names

_NAMESPACE = re.compile(r"^.*[:|]")
_PREFIX = re.compile(
    r"^(?:valvebiped\.bip0*1[_ ]|bip0*1[_ ]|cc_base_|mixamorig\d*_|character\d*_|rig[_\-. ]|"
    r"(?:def|org)[\-_.]|jnt_|b_)",
    re.I,
)
_MCH = re.compile(r"^(?:mch|vis|wgt)[\-_.]", re.I)
_SEP = re.compile(r"[\s_.\-]+")

# Aliases of the normalised name (lower case, no separators, side removed).  None = no side.
_ALIASES: list[tuple[str, bool, re.Pattern]] = [
    # (class, sided, pattern)
    ("pelvis", False, re.compile(r"^(?:hips?|pelvis|hipsroot|pelvisroot|cog)$")),
    ("spine", False, re.compile(
        r"^(?:spine|chest|abdomen|back|lowerback|upperback|waist|torso|ribcage|ribs|stomach|thorax)"
        r"(?:lower|upper|mid|middle)?\d*$|^(?:upper|lower|mid)(?:chest|spine|back|abdomen)\d*$")),
    ("neck", False, re.compile(r"^neck(?:lower|upper|twist|base)?\d*$")),
    ("head", False, re.compile(r"^head\d*$")),
    ("thigh", True, re.compile(r"^(?:thigh|thighbend|upleg|upperleg|legupper|uprleg|uleg|hip|femur)(?:0?1)?$")),
    ("shin", True, re.compile(r"^(?:shin|shinbend|calf|leg|lowerleg|leglower|lwrleg|lowleg|loleg|lleg|knee|tibia|crus)(?:0?1)?$")),
    ("foot", True, re.compile(r"^(?:foot|ankle|feet)(?:0?1)?$")),
    ("toe", True, re.compile(r"^(?:toes?|toebase|ball|toe0|toes0|toe01)$")),
    ("clavicle", True, re.compile(r"^(?:clavicle|collar|shoulder|clav|collarbone)(?:0?1)?$")),
    ("upperarm", True, re.compile(r"^(?:upperarm|arm|shldrbend|shldr|armupper|uparm|uprarm|humerus|upperarmbend)(?:0?1)?$")),
    ("forearm", True, re.compile(r"^(?:forearm|lowerarm|forearmbend|elbow|armlower|lwrarm|lowarm|loarm|radius)(?:0?1)?$")),
    ("hand", True, re.compile(r"^(?:hand|wrist)(?:0?1)?$")),
]


def split_side(name: str) -> tuple[str | None, str]:
    """('left' | 'right' | None, name without the side marker).  ``name`` has its prefixes stripped."""
    low = name.lower()
    m = re.match(r"^(left|right)[\s_.\-]*", low)
    if m and len(low) > m.end():
        return m.group(1), name[m.end():]
    m = re.match(r"^([lr])[\s_.\-]+", low)
    if m and len(low) > m.end():
        return ("left" if m.group(1) == "l" else "right"), name[m.end():]
    m = re.match(r"^([lLrR])(?=[A-Z][a-z])", name)    # Daz: lThighBend, rShin; CMU: LHipJoint
    if m:
        return ("left" if m.group(1) in "lL" else "right"), name[1:]
    m = re.search(r"[\s_.\-](l|r|left|right)((?:[\s_.\-]\d+)?)$", low)   # thigh.L, thigh_l, thigh.L.001
    if m:
        side = "left" if m.group(1).startswith("l") else "right"
        return side, name[:m.start()] + name[m.start(2):m.end(2)]
    m = re.search(r"(?<=[a-z])(Left|Right|LEFT|RIGHT)$", name)          # ArmLeft
    if m:
        return m.group(1).lower(), name[:m.start()]
    m = re.search(r"[\s_.\-](l|r|left|right)[\s_.\-]", low)           # CC_L_Thigh_01 style middles
    if m:
        side = "left" if m.group(1).startswith("l") else "right"
        return side, name[:m.start()] + name[m.end() - 1:]
    return None, name


def parse_name(name: str) -> tuple[str | None, str | None, str, int]:
    """(class, side, normalised base, priority) of a bone name; class None when unknown.

    Priority: 0 plain, 1 ``DEF-``, 2 ``ORG-``, 3 helpers named with leading underscores;
    ``MCH-`` bones get class None.
    """
    short = _NAMESPACE.sub("", name)
    if _MCH.match(short):
        return None, None, short.lower(), 9
    priority = 0
    if short.startswith("_"):            # helper / offset bones (MakeHuman "__UpLeg_L"): last choice
        short = short.lstrip("_")
        priority = 3
    if re.match(r"^def[\-_.]", short, re.I):
        priority = 1
    elif re.match(r"^org[\-_.]", short, re.I):
        priority = 2
    for _ in range(3):
        stripped = _PREFIX.sub("", short)
        if stripped == short or not stripped:
            break
        short = stripped
    side, rest = split_side(short)
    base = _SEP.sub("", rest.lower())
    for cls, sided, pattern in _ALIASES:
        if sided != (side is not None):
            continue
        if pattern.match(base):
            return cls, side, base, priority
    return None, side, base, priority


# ============================================================================= rig geometry

@dataclass
class _Bone:
    name: str
    parent: str | None
    children: list
    head: tuple          # world, rest pose
    tail: tuple
    head_arm: tuple      # armature space (x = Blender's left side)
    depth: int
    length: float


class _Rig:
    """Hierarchy and world geometry of an armature object (read once): its rest pose, or with
    ``posed`` the pose it holds at the current frame, optionally turned by ``turn`` (3x3 rows).
    Heights and the floor come from bone heads (joints) only: importers give leaf bones arbitrary
    tails (100x too long in some glTF files)."""

    def __init__(self, obj, posed: bool = False, turn=None):
        mw = type(obj.matrix_world)(rig_space.object_matrix(obj.matrix_world).tolist())   # a mirror undone
        self.name = obj.name
        self.animated = False      # read on a frame of the action in place of a rest pose that is no humanoid
        self.bones: dict[str, _Bone] = {}
        for b in obj.data.bones:
            pb = obj.pose.bones[b.name] if posed else None
            head_arm = pb.head if posed else b.head_local
            tail_arm = pb.tail if posed else b.tail_local
            head = tuple(mw @ head_arm)
            tail = tuple(mw @ tail_arm)
            if turn is not None:            # read the rig as if ``turn`` stood it up
                head = tuple(sum(turn[i][k] * head[k] for k in range(3)) for i in range(3))
                tail = tuple(sum(turn[i][k] * tail[k] for k in range(3)) for i in range(3))
            depth = 0
            p = b.parent
            while p is not None:
                depth += 1
                p = p.parent
            length = sum((a - c) ** 2 for a, c in zip(head, tail)) ** 0.5
            self.bones[b.name] = _Bone(b.name, b.parent.name if b.parent else None,
                                       [c.name for c in b.children], head, tail,
                                       tuple(head_arm), depth, length)
        zs = [b.head[2] for b in self.bones.values()]
        self.floor = min(zs) if zs else 0.0
        self.height = (max(zs) - self.floor) if zs else 0.0

    # hierarchy helpers
    def ancestors(self, name: str) -> list[str]:
        out = []
        p = self.bones[name].parent
        while p is not None:
            out.append(p)
            p = self.bones[p].parent
        return out

    def is_ancestor(self, anc: str, name: str) -> bool:
        return anc in self.ancestors(name)

    def descendants(self, name: str) -> list[str]:
        out, stack = [], list(self.bones[name].children)
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(self.bones[n].children)
        return out

    def lca(self, a: str, b: str) -> str | None:
        chain_a = [a] + self.ancestors(a)
        chain_b = set([b] + self.ancestors(b))
        for n in chain_a:
            if n in chain_b:
                return n
        return None

    def path(self, top: str, bottom: str) -> list[str]:
        """Bones from ``top`` (excluded) down to ``bottom`` (included)."""
        chain = [bottom]
        for a in self.ancestors(bottom):
            if a == top:
                return list(reversed(chain))
            chain.append(a)
        return []

    def subtree_points(self, name: str) -> list[tuple]:
        """Joint positions (bone heads) of ``name`` and everything below it; a lone bone adds its tail."""
        names = [name] + self.descendants(name)
        pts = [self.bones[n].head for n in names]
        if len(names) == 1:
            pts.append(self.bones[name].tail)
        return pts


# ============================================================================= detection by names

def _by_names(rig: _Rig) -> tuple[dict[str, str], list[str]]:
    cands: dict[tuple, list[tuple]] = {}
    info = {}
    for name, b in rig.bones.items():
        cls, side, base, prio = parse_name(name)
        info[name] = (cls, side, base, prio)
        if cls is not None:
            cands.setdefault((cls, side), []).append((prio, b.depth, name))
    for v in cands.values():
        v.sort()

    def best(cls, side, under=None, exclude=()):
        for _, _, n in cands.get((cls, side), []):
            if n in exclude:
                continue
            if under is None or rig.is_ancestor(under, n):
                return n
        return None

    def nearest(cls, side, under):
        """The candidate closest below ``under`` (fewest bones between)."""
        found = [(rig.bones[n].depth, prio, n) for prio, _, n in cands.get((cls, side), [])
                 if rig.is_ancestor(under, n)]
        return min(found)[2] if found else None

    bones: dict[str, str] = {}
    notes: list[str] = []
    for side in ("right", "left"):
        thigh = best("thigh", side)
        if thigh:
            bones[f"{side}_hip"] = thigh
            shin = nearest("shin", side, thigh)
            if shin:
                bones[f"{side}_knee"] = shin
                foot = nearest("foot", side, shin)
                if foot is None:
                    # feet parented elsewhere for IK (to the root or a control bone)
                    foot = best("foot", side)
                    if foot:
                        notes.append(f"{side} foot '{foot}' is not parented under the shin '{shin}' (IK): "
                                     f"its rotation is simulated, its position stays as keyed")
                if foot:
                    bones[f"{side}_ankle"] = foot
                    toe = nearest("toe", side, foot)
                    if toe:
                        bones[f"{side}_toe"] = toe
        upper = best("upperarm", side)
        fore = nearest("forearm", side, upper) if upper else best("forearm", side)
        if upper is None and fore is not None:
            # old BVH naming: LeftCollar -> LeftShoulder (the upper arm) -> LeftElbow
            upper = rig.bones[fore].parent
            if upper:
                notes.append(f"{side} upper arm taken as '{upper}', the parent of forearm '{fore}'")
        if upper:
            bones[f"{side}_shoulder"] = upper
        if fore:
            bones[f"{side}_elbow"] = fore
            hand = nearest("hand", side, fore)
            if hand:
                bones[f"{side}_hand"] = hand

    # pelvis: root-most pelvis-named ancestor of both thighs, else their common ancestor
    thighs = [bones.get("right_hip"), bones.get("left_hip")]
    pelvis = None
    named = [n for _, _, n in cands.get(("pelvis", None), [])]
    if all(thighs):
        ok = [n for n in named if all(n == t or rig.is_ancestor(n, t) for t in thighs)]
        if ok:
            pelvis = min(ok, key=lambda n: (rig.bones[n].depth, parse_name(n)[3]))
        else:
            pelvis = rig.lca(thighs[0], thighs[1])
    elif named:
        pelvis = min(named, key=lambda n: (rig.bones[n].depth, parse_name(n)[3]))
    if pelvis:
        bones["pelvis"] = pelvis

    def is_cls(n, *classes):
        return n is not None and info[n][0] in classes and info[n][1] is None

    # chest: where the arms meet; a neck there (Biped) walks up to the first spine bone
    arms = [bones.get("right_shoulder"), bones.get("left_shoulder")]
    chest = None
    if all(arms):
        chest = rig.lca(arms[0], arms[1])
        if chest is not None and is_cls(chest, "neck", "head"):
            chest = next((a for a in rig.ancestors(chest) if not is_cls(a, "neck", "head")), None)
        if chest is not None and pelvis is not None and not rig.is_ancestor(pelvis, chest):
            # the named hips hang beside the spine (MakeHuman: Root -> Hips -> legs, Root -> Spine1):
            # the body's pelvis is where legs and spine meet
            common = rig.lca(pelvis, chest)
            if common is not None and common != chest:
                pelvis = common
                bones["pelvis"] = pelvis
            else:
                chest = None
    if chest is None and pelvis is not None:
        spine = [n for _, _, n in cands.get(("spine", None), []) if rig.is_ancestor(pelvis, n)]
        necks = [n for _, _, n in cands.get(("neck", None), []) if rig.is_ancestor(pelvis, n)]
        if necks:
            spine = [n for n in spine if any(rig.is_ancestor(n, k) for k in necks)]
        if spine:
            chest = max(spine, key=lambda n: (rig.bones[n].depth, -parse_name(n)[3]))
    if chest:
        bones["chest"] = chest
        arm_set = set()
        for a in arms:
            if a:
                arm_set.update([a] + rig.ancestors(a))
        neck = nearest("neck", None, chest)
        if neck is None and is_cls(rig.lca(*arms) if all(arms) else None, "neck"):
            neck = rig.lca(*arms)
        if neck is None:
            neck = nearest("head", None, chest)
        if neck is None:
            neck = _upward_child(rig, chest, arm_set)
            if neck:
                notes.append(f"neck taken as '{neck}', the chest's child that points up")
        if neck:
            bones["neck"] = neck
            head = nearest("head", None, neck) if not is_cls(neck, "head") else None
            head = head or rigify.head_after_neck(neck, rig.bones)
            if head:
                bones["head"] = head
    return bones, notes


def _upward_child(rig: _Rig, chest: str, exclude: set) -> str | None:
    best, best_up = None, 0.5
    for c in rig.bones[chest].children:
        if c in exclude:
            continue
        b = rig.bones[c]
        pts = rig.subtree_points(c)
        top = max(pts, key=lambda p: p[2])
        d = [top[i] - b.head[i] for i in range(3)]
        n = sum(x * x for x in d) ** 0.5
        if n > 1e-9 and d[2] / n > best_up:
            best, best_up = c, d[2] / n
    return best


# ============================================================================= detection by geometry

def _ground_limbs(rig: _Rig) -> list[list[str]]:
    """Groups of leaf bones that reach the floor, one group per limb."""
    H = rig.height
    leaves = [n for n, b in rig.bones.items() if not b.children
              and b.head[2] <= rig.floor + 0.08 * H]
    groups: list[list[str]] = []
    for leaf in leaves:
        for g in groups:
            anc = rig.lca(g[0], leaf)
            if anc is not None and rig.bones[anc].head[2] - rig.floor < 0.3 * H:
                g.append(leaf)
                break
        else:
            groups.append([leaf])
    return groups


def _long_bones(rig: _Rig, chain: list[str], min_len: float) -> list[str]:
    out = []
    for n in chain:
        b = rig.bones[n]
        # segment length: head to the next chain bone's head, else the bone itself
        nxt = chain[chain.index(n) + 1] if chain.index(n) + 1 < len(chain) else None
        end = rig.bones[nxt].head if nxt else b.tail
        if sum((a - c) ** 2 for a, c in zip(b.head, end)) ** 0.5 >= min_len:
            out.append(n)
    return out


def _upper_and_forearm(rig: _Rig, chain: list[str], min_len: float, across, medial: float) -> tuple[str, str] | None:
    """The upper arm and forearm of an arm chain from the chest outwards: the first two long bones,
    past a long clavicle (a first long bone whose head lies within ``medial`` of the body's middle,
    ``across`` giving how far a bone's head lies to the side: _across).  The chain may end at the
    wrist, with no hand bone: a last bone right after the upper arm is the forearm whatever its
    tail (importers give leaf bones any length).  None when no two bones make an arm."""
    long = _long_bones(rig, chain, min_len)
    arm = long[1:] if len(long) >= 2 and abs(across(long[0])) < medial else long
    last = chain[-1]
    if (len(arm) == 1 and not rig.bones[last].children and last != arm[0]
            and chain.index(last) == chain.index(arm[0]) + 1):
        arm = arm + [last]
    return (arm[0], arm[1]) if len(arm) >= 2 else None


def _across(rig: _Rig, thighs: list[str], pelvis: str):
    """A function bone -> how far its head lies to the side of the pelvis, along the line through
    the two hip joints (level with the floor): the body's own side-to-side axis in the pose read,
    whatever the armature's axes.  Hips that coincide fall back to the armature's X."""
    a, b = rig.bones[thighs[0]].head, rig.bones[thighs[1]].head
    axis = [b[0] - a[0], b[1] - a[1], 0.0]
    n = _norm(axis)
    origin = rig.bones[pelvis]
    if n < 1e-9 * max(rig.height, 1e-9):
        return lambda name: rig.bones[name].head_arm[0] - origin.head_arm[0]
    axis = [x / n for x in axis]
    return lambda name: _dot(_vec(origin.head, rig.bones[name].head), axis)


def _chain_tip(rig: _Rig, name: str) -> str:
    """The bone at the end of the longest chain of joints from ``name`` down (``name`` if a leaf)."""
    b = rig.bones[name]
    if not b.children:
        return name
    best = max(b.children, key=lambda c: (_norm(_vec(b.head, rig.bones[c].head)) + _reach(rig, c), c))
    return _chain_tip(rig, best)


def _reach(rig: _Rig, name: str) -> float:
    """The longest chain of joints from ``name``'s head down through its descendants (head to head)."""
    b = rig.bones[name]
    return max((_norm(_vec(b.head, rig.bones[c].head)) + _reach(rig, c) for c in b.children), default=0.0)


def _hanging_arms(rig: _Rig, spine_root: str, min_reach: float) -> tuple[str | None, list]:
    """Where no two chains go sideways (arms hanging by the sides, as in most animated frames): the
    first spine bone, walking up, with two branches besides the spine's own continuation (the child
    rising highest) that reach ``min_reach`` or farther.  (chest, arm roots), or (None, [])."""
    node = spine_root
    while node is not None:
        children = rig.bones[node].children
        if not children:
            break
        up = max(children, key=lambda c: max(p[2] for p in rig.subtree_points(c)))
        branches = [c for c in children if c != up and _reach(rig, c) >= min_reach]
        if len(branches) >= 2:
            return node, sorted(branches, key=lambda c: -_reach(rig, c))[:2]
        node = up
    return None, []


def _left_from_feet(rig: _Rig, feet: list) -> list | None:
    """The body's left (world, horizontal) from where its toes point, or None without toes."""
    fwd = [0.0, 0.0, 0.0]
    for foot, toe in feet:
        if foot and toe:
            d = _vec(rig.bones[foot].head, rig.bones[toe].head)
            fwd = [a + b for a, b in zip(fwd, d)]
    if (fwd[0] ** 2 + fwd[1] ** 2) ** 0.5 < 1e-6:
        return None
    return [-fwd[1], fwd[0], 0.0]          # up x forward


def _by_geometry(rig: _Rig) -> tuple[dict[str, str], str | None]:
    """Mapping from hierarchy and rest-pose geometry; (bones, reason it is not a humanoid)."""
    H = rig.height
    if H <= 1e-6:
        return {}, "its bones have no height"
    limbs = _ground_limbs(rig)
    if len(limbs) > 2:
        return {}, f"{len(limbs)} limbs reach the floor"
    if len(limbs) < 2:
        return {}, f"{len(limbs)} limb(s) reach the floor, a humanoid stands on two legs"
    feet = [max(g, key=lambda n: (rig.bones[n].depth, n)) for g in limbs]  # deepest leaf per limb
    pelvis = rig.lca(feet[0], feet[1])
    if pelvis is None:
        return {}, "its legs do not share a parent bone"
    bones: dict[str, str] = {"pelvis": pelvis}
    legs = {}
    for leaf in feet:
        chain = rig.path(pelvis, leaf)
        long = _long_bones(rig, chain, 0.12 * H)
        if len(long) < 2:
            return {}, "its legs have fewer than two long bones"
        thigh, shin = long[0], long[1]
        after = chain[chain.index(shin) + 1:] if chain.index(shin) + 1 < len(chain) else []
        legs[thigh] = (shin, after[0] if after else None, after[1] if len(after) > 1 else None)
    thighs = list(legs)
    left = _left_from_feet(rig, [(legs[t][1], legs[t][2]) for t in thighs])

    def leftness(name: str, centre: str) -> float:
        """How far to the body's left ``name`` sits from ``centre`` (the toes point forward; without
        toes, Blender's convention that +X of the armature is the rig's left)."""
        if left is None:
            return rig.bones[name].head_arm[0] - rig.bones[centre].head_arm[0]
        return _dot(_vec(rig.bones[centre].head, rig.bones[name].head), left)

    order = ("left", "right") if leftness(thighs[0], pelvis) > leftness(thighs[1], pelvis) else ("right", "left")
    for side, thigh in zip(order, thighs):
        shin, foot, toe = legs[thigh]
        bones[f"{side}_hip"] = thigh
        bones[f"{side}_knee"] = shin
        if foot:
            bones[f"{side}_ankle"] = foot
        if toe:
            bones[f"{side}_toe"] = toe
    # spine: the pelvis child (not a leg) whose subtree rises highest
    leg_roots = set()
    for t in thighs:
        leg_roots.update([t] + rig.ancestors(t))
    pel = rig.bones[pelvis]
    ups = [c for c in pel.children if c not in leg_roots]
    if not ups:
        return {}, "nothing rises above its pelvis"
    spine_root = max(ups, key=lambda c: max(p[2] for p in rig.subtree_points(c)))
    if max(p[2] for p in rig.subtree_points(spine_root)) < pel.head[2] + 0.2 * H:
        return {}, "its spine does not rise above the pelvis"
    lateral = 0.15 * H
    across = _across(rig, thighs, pelvis)
    chest, arms = None, []
    node = spine_root
    while node is not None:
        b = rig.bones[node]
        side_children = []
        for c in b.children:
            far = max(abs(across(n)) for n in [c] + rig.descendants(c))
            if far > lateral:
                side_children.append(c)
        if len(side_children) >= 2:
            chest, arms = node, side_children
            break
        ups = [c for c in b.children]
        node = max(ups, key=lambda c: max(p[2] for p in rig.subtree_points(c))) if ups else None
    if chest is None:
        chest, arms = _hanging_arms(rig, spine_root, 0.25 * H)
    if chest is None:
        return bones, "no two arms go sideways from its spine"
    bones["chest"] = chest
    for root in arms[:2]:
        # the arm's tip: the bone farthest from the chest; on an animated frame read in place of the
        # rest pose, the end of its longest chain of joints (a hanging arm's hand is no farther
        # from the chest than its shoulder is)
        ch = rig.bones[chest].head
        tip = _chain_tip(rig, root) if rig.animated else max(
            [root] + rig.descendants(root), key=lambda n: sum((a - c) ** 2 for a, c in zip(rig.bones[n].head, ch)))
        chain = [root] + rig.path(root, tip) if tip != root else [root]
        pair = _upper_and_forearm(rig, chain, 0.1 * H, across, min(abs(across(t)) for t in thighs))
        if pair is None:
            continue
        side = "left" if leftness(pair[0], chest) > 0 else "right"
        bones[f"{side}_shoulder"] = pair[0]
        bones[f"{side}_elbow"] = pair[1]
        k = chain.index(pair[1])
        if k + 1 < len(chain):
            bones[f"{side}_hand"] = chain[k + 1]
    neck = _upward_child(rig, chest, set(arms))
    if neck:
        bones["neck"] = neck
    for limb in ("left_hand", "right_hand"):
        if limb in bones and limb.replace("hand", "elbow") not in bones:
            del bones[limb]
    if bones.get("left_shoulder") and bones.get("right_shoulder") and (
            rig.bones[bones["left_shoulder"]].head[2] < rig.bones[pelvis].head[2]):
        return bones, "its arms hang from below the pelvis"
    return bones, None


def _by_geometry_any_way_up(obj, geo: dict, reason: str) -> tuple[dict, str | None]:
    """Geometry for a rig that does not stand on world Z: its rest pose lying down or on its head
    (the animation stands it up), or rest and motion both along another axis (a file imported
    with another up axis).  The current pose, then the rest pose, are read with each world axis
    as up; the first reading that finds a whole humanoid wins, else the one that found most.  (A
    reading with the wrong up also tells left from right wrongly, so only whole ones count.)"""
    import numpy as np

    from .rig_space import rotation_onto_z

    axes = [np.array(a, dtype=float) for a in ((0, 0, 1), (0, 1, 0), (0, -1, 0), (1, 0, 0), (-1, 0, 0), (0, 0, -1))]
    for posed in (True, False):
        for axis in axes:
            if not posed and axis[2] == 1.0:
                continue                    # the plain rest pose: already read
            found, why = _by_geometry(_Rig(obj, posed=posed, turn=rotation_onto_z(axis).tolist()))
            if why is None and all(k in found for k in HUMANOID_KEYS):
                return found, None
            if len(found) > len(geo):
                geo, reason = found, why
    return geo, reason


# ============================================================================= public API

_GROUPS = (
    ("pelvis", "chest", "neck"),
    ("right_hip", "right_knee", "right_ankle"),
    ("left_hip", "left_knee", "left_ankle"),
    ("right_shoulder", "right_elbow"),
    ("left_shoulder", "left_elbow"),
)
_GROUP_EXTRAS = {"right_hip": ("right_toe",), "left_hip": ("left_toe",),
                 "right_shoulder": ("right_hand",), "left_shoulder": ("left_hand",), "pelvis": ("head",)}


def detect_mapping(obj, strict: bool = True) -> Mapping:
    """Map ``obj``'s bones to the humanoid keys (names, then hierarchy, then geometry).

    The rest pose is read first.  Where it does not give a humanoid (a BVH whose rest is a line of
    bones, every animated frame an upright person), the same detection runs on frames of the
    assigned action (``body_pose``), and what most of them agree on is the mapping.

    With ``strict`` (default) raise ``RigMappingError`` unless every required key is mapped and
    the rig looks humanoid; otherwise return what was found with ``problems`` filled in.
    """
    if obj is None or getattr(obj, "type", None) != "ARMATURE":
        raise RigMappingError("No armature: select the character's armature")
    if len(obj.data.bones) == 0:
        raise RigMappingError(f"Armature '{obj.name}' has no bones: add a skeleton or pick another armature")
    if rigify.is_generated(obj):
        mapping, error = _generated_rigify(obj)
    else:
        mapping, error = _detect(obj, _Rig(obj))
    if error is not None:
        posed = _detect_posed(obj)
        if posed is not None:
            return posed
        if strict:
            raise RigMappingError(error)
    return mapping


def _generated_rigify(obj) -> tuple[Mapping, str | None]:
    """A rig Rigify generated: its DEF- chain (what the animator sees; the take is keyed on its
    controls: rig_controls), checked like any mapping."""
    bones = rigify.deform_mapping(obj)
    mapping = Mapping(bones=bones, sources={k: "name" for k in bones}, armature=obj.name)
    problems = validate_mapping(obj, mapping)
    mapping.problems.extend(problems)
    if problems:
        return mapping, f"'{obj.name}' (a Rigify rig): {problems[0]}: {FIX_HINT}"
    return mapping, None


def _detect(obj, rig: _Rig, any_way_up: bool = True) -> tuple[Mapping, str | None]:
    """The mapping read on ``rig`` (the rest pose, or a posed reading) and the one line that
    refuses it (None when it is a complete humanoid)."""
    bones, notes = _by_names(rig)
    sources = {k: "name" for k in bones}
    for k, classes in (("pelvis", ("pelvis",)), ("chest", ("spine",)), ("neck", ("neck", "head"))):
        if k in bones and parse_name(bones[k])[0] not in classes:
            sources[k] = "hierarchy"
    problems = list(notes)
    reason = None
    if any(k not in bones for k in HUMANOID_KEYS):
        geo, reason = _by_geometry(rig)
        if reason is not None and any_way_up:
            geo, reason = _by_geometry_any_way_up(obj, geo, reason)
        used = set(bones.values())
        for group in _GROUPS:
            if all(k in bones for k in group):
                continue
            if all(k in geo for k in group) and not (set(geo[k] for k in group) & used):
                for k in group + _GROUP_EXTRAS.get(group[0], ()):
                    if k in geo:
                        bones[k] = geo[k]
                        sources[k] = "geometry"
                        used.add(geo[k])
    mapping = Mapping(bones=bones, problems=problems, sources=sources, armature=obj.name)
    missing = mapping.missing()
    if missing:
        if reason is None:
            _, reason = _by_geometry(rig)
        if reason and (len(missing) >= 4 or "limbs reach the floor" in reason):
            msg = (f"'{obj.name}' does not look like a humanoid ({reason}): pick a two-legged character's "
                   f"armature, or map its bones in the Fatigue panel's Rig Mapping list")
        else:
            labels = ", ".join(KEY_LABELS[k] for k in missing)
            msg = f"'{obj.name}': no bone found for {labels}: {FIX_HINT}"
        mapping.problems.append(msg)
        return mapping, msg
    mapping.problems.extend(validate_mapping(obj, mapping, rig=rig))
    fatal = [p for p in mapping.problems if p.startswith("not humanoid:")]
    if fatal:
        return mapping, (f"'{obj.name}' does not look like a humanoid ({fatal[0][len('not humanoid: '):]}): "
                         f"pick a two-legged character's armature, or map its bones in the Fatigue panel's Rig Mapping list")
    return mapping, None


# ============================================================================= the body in its animated pose

POSE_SAMPLES = 15          # frames of the action read when the rest pose is not a human shape


def action_frames(obj, count: int = POSE_SAMPLES) -> list[int]:
    """Up to ``count`` whole frames spread evenly over the keys of ``obj``'s assigned action."""
    from . import anim

    action = anim.active_action(obj)
    if action is None:
        return []
    lo, hi = action.frame_range
    lo, hi = int(math.ceil(lo - 1e-6)), int(math.floor(hi + 1e-6))
    if hi <= lo:
        return [lo]
    n = min(count, hi - lo + 1)
    return sorted({lo + int(round(i * (hi - lo) / (n - 1))) for i in range(n)})


def _posed_rigs(obj, frames) -> list[tuple[int, _Rig]]:
    """``obj`` read in its pose at each frame (the scene's frame is put back)."""
    import bpy

    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    out = []
    try:
        for f in frames:
            scene.frame_set(int(f))
            rig = _Rig(obj, posed=True)
            rig.animated = True
            out.append((int(f), rig))
    finally:
        scene.frame_set(keep[0], subframe=keep[1])
    return out


def read_pose(obj, frame: int) -> dict[str, tuple]:
    """Bone name -> (head, tail, 4x4 matrix as rows) of every bone of ``obj`` in armature space,
    posed at ``frame`` of its assigned action (the scene's frame is put back)."""
    import bpy

    scene = bpy.context.scene
    keep = (scene.frame_current, scene.frame_subframe)
    try:
        scene.frame_set(int(frame))
        return {pb.name: (tuple(pb.head), tuple(pb.tail), [tuple(r) for r in pb.matrix]) for pb in obj.pose.bones}
    finally:
        scene.frame_set(keep[0], subframe=keep[1])


def _angle(a, b) -> float:
    na, nb = _norm(a), _norm(b)
    if na < 1e-12 or nb < 1e-12:
        return 0.0
    return math.acos(max(-1.0, min(1.0, _dot(a, b) / (na * nb))))


def _pose_score(rig: _Rig, mapping) -> float:
    """How far a pose is from standing straight (radians): knee bends plus the trunk's lean from
    the nearest world axis.  The least is the pose the body is measured in."""
    j = {k: rig.bones[mapping[k]].head for k in HUMANOID_KEYS}
    bend = sum(_angle(_vec(j[f"{s}_hip"], j[f"{s}_knee"]), _vec(j[f"{s}_knee"], j[f"{s}_ankle"]))
               for s in ("right", "left"))
    trunk = _vec(j["pelvis"], j["neck"])
    lean = min(_angle(trunk, axis) for axis in ((0, 0, 1), (0, 0, -1), (0, 1, 0), (0, -1, 0), (1, 0, 0), (-1, 0, 0)))
    return bend + lean


def _detect_posed(obj) -> Mapping | None:
    """The mapping most frames of the assigned action agree on, when at least half of them read as a
    complete humanoid; None otherwise (a creature stays refused in every pose)."""
    frames = action_frames(obj)
    if not frames:
        return None
    votes: dict[tuple, list] = {}
    for f, rig in _posed_rigs(obj, frames):
        m, error = _detect(obj, rig, any_way_up=False)
        if error is None:
            votes.setdefault(tuple(m.bones.get(k) for k in HUMANOID_KEYS), []).append((f, rig, m))
    if not votes:
        return None
    best = max(votes.values(), key=len)
    if 2 * len(best) < len(frames):
        return None
    f, _, mapping = min(best, key=lambda x: (_pose_score(x[1], x[2]), x[0]))
    mapping.problems.insert(0, f"the rest pose is not a human shape: bones found in the animated pose (frame {f})")
    return mapping


def body_pose(obj, mapping) -> tuple[int | None, str | None]:
    """Where the body is measured (up, facing, sizes, segment directions): ``(None, None)`` when the
    rest pose passes the humanoid checks with this (complete) mapping, else ``(frame, why)``: the
    frame of the assigned action standing straightest among those that pass, and why the rest pose
    did not; ``(None, why)`` when fewer than half of the action's frames pass either."""
    rest = _shape_problems(_Rig(obj), mapping)
    if not rest:
        return None, None
    why = rest[0][len("not humanoid: "):].replace(" in the rest pose", "")
    frames = action_frames(obj)
    passing = [(f, rig) for f, rig in _posed_rigs(obj, frames) if not _shape_problems(rig, mapping)]
    if not frames or 2 * len(passing) < len(frames):
        return None, why
    return min(passing, key=lambda x: (_pose_score(x[1], mapping), x[0]))[0], why


def pose_note(name: str, frame: int, why: str) -> str:
    """The one warning a bake measured on an animated frame gives."""
    return (f"the rest pose of '{name}' was not used (it is not a human shape: {why}): the body was "
            f"measured on frame {frame} of the animation")


def validate_mapping(obj, mapping: Mapping, rig: _Rig | None = None, posed: bool = False) -> list[str]:
    """Problems with a mapping on this armature (empty list = usable).

    Missing bones and broken chains are problems; ``not humanoid: ...`` entries mean the skeleton
    is not a person's (legs that do not hang from the trunk, arms below the feet, a tail), judged
    in its own body axes so that any rest orientation is judged alike.  With ``posed``, a rest pose
    that is not a human shape is no problem where most animated frames are (``body_pose``).
    """
    rig = rig or _Rig(obj)
    problems = []
    for key, bone in mapping.items():
        if bone not in rig.bones:
            problems.append(f"{KEY_LABELS.get(key, key)}: bone '{bone}' is not in '{obj.name}'")
    for key in mapping.missing():
        problems.append(f"{KEY_LABELS[key]}: no bone mapped")
    seen = {}
    for key in HUMANOID_KEYS:
        bone = mapping.get(key)
        if bone in seen:
            problems.append(f"bone '{bone}' is mapped twice ({seen[bone]} and {key})")
        elif bone:
            seen[bone] = key
    if problems:
        return problems
    for child, parent in KEY_PARENT.items():
        if child.endswith("_ankle"):
            continue            # feet parented to the root or a control bone for IK are fine
        if not rigify.hangs_from(rig.ancestors(mapping[child]), mapping[parent]):
            problems.append(f"{KEY_LABELS[child]} '{mapping[child]}' is not below {KEY_LABELS[parent]} "
                            f"'{mapping[parent]}' in the hierarchy")
    problems.extend(_shape_problems(rig, mapping))
    if posed and problems and all(p.startswith("not humanoid:") for p in problems) and body_pose(obj, mapping)[0] is not None:
        return []
    return problems


def _vec(a, b) -> list:
    return [x - y for x, y in zip(b, a)]


def _dot(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def _norm(a) -> float:
    return _dot(a, a) ** 0.5


def _shape_problems(rig: _Rig, mapping) -> list[str]:
    """``not humanoid: ...`` problems, judged in the rig's own body axes (up = pelvis to neck), so a
    rest pose lying down, standing on its head or under a rotated parent is judged like a standing
    one: legs hang away from the trunk, arms start above the pelvis and stay off the floor, nothing
    like a tail hangs from the pelvis."""
    j = {k: rig.bones[mapping[k]].head for k in HUMANOID_KEYS}
    trunk = _vec(j["pelvis"], j["neck"])
    legs = [_norm(_vec(j[f"{s}_hip"], j[f"{s}_knee"])) + _norm(_vec(j[f"{s}_knee"], j[f"{s}_ankle"]))
            for s in ("right", "left")]
    size = _norm(trunk) + max(legs)
    if _norm(trunk) < 0.15 * size:
        return ["not humanoid: its neck is not above its pelvis (its trunk has no length)"]
    up = [x / _norm(trunk) for x in trunk]
    problems = []
    for side in ("right", "left"):
        leg = _vec(j[f"{side}_hip"], j[f"{side}_ankle"])
        if _norm(leg) < 1e-9 or _dot(leg, up) > -0.5 * _norm(leg):
            problems.append(f"not humanoid: its {side} leg does not hang away from its trunk in the rest pose")
        if _dot(_vec(j["pelvis"], j[f"{side}_shoulder"]), up) < 0:
            problems.append(f"not humanoid: its {side} arm starts below the pelvis")
    sole = min(_dot(_vec(j["pelvis"], j[f"{s}_ankle"]), up) for s in ("right", "left"))
    for side in ("right", "left"):
        arm = mapping[f"{side}_elbow"]
        low = min(_dot(_vec(j["pelvis"], p), up) for p in rig.subtree_points(arm))
        if low < sole:
            problems.append(f"not humanoid: its {side} arm reaches below its feet in the rest pose")
    tail = _tail(rig, mapping, size)
    if tail:
        problems.append(f"not humanoid: a tail ('{tail}') hangs from its pelvis, and the simulated body has none")
    return problems


def _tail(rig: _Rig, mapping, size: float) -> str | None:
    """The first bone of a chain that hangs from the pelvis (not a leg, not the spine) and reaches
    farther than half the body's size: a tail.  Skirts and coat bones are shorter."""
    pelvis = mapping["pelvis"]
    body = set()
    for k in ("chest", "right_hip", "left_hip"):
        body.update([mapping[k]] + rig.ancestors(mapping[k]))
    origin = rig.bones[pelvis].head
    for child in rig.bones[pelvis].children:
        if child in body:
            continue
        reach = max(_norm(_vec(origin, p)) for p in rig.subtree_points(child))
        if reach > 0.5 * size and len(rig.descendants(child)) >= 2:
            return child
    return None


def apply_preset(obj, preset: Mapping, strict: bool = True) -> Mapping:
    """A preset resolved on ``obj``: exact bone names first, else the same normalised name."""
    rig = _Rig(obj)
    by_norm = {}
    for n in rig.bones:
        cls, side, base, prio = parse_name(n)
        by_norm.setdefault((side, base), []).append((prio, n))
    bones, problems = {}, []
    for key, bone in preset.items():
        if bone in rig.bones:
            bones[key] = bone
            continue
        cls, side, base, _ = parse_name(bone)
        hits = sorted(by_norm.get((side, base), []))
        if hits:
            bones[key] = hits[0][1]
        elif key in HUMANOID_KEYS:
            problems.append(f"{KEY_LABELS[key]}: bone '{bone}' is not in '{obj.name}'")
    mapping = Mapping(bones=bones, problems=problems, sources={k: "preset" for k in bones}, armature=obj.name)
    mapping.problems.extend(p for p in validate_mapping(obj, mapping, rig=rig) if p not in mapping.problems)
    if strict and mapping.missing():
        labels = ", ".join(KEY_LABELS[k] for k in mapping.missing())
        raise RigMappingError(f"'{obj.name}': the preset's bones for {labels} are not in this armature: {FIX_HINT}")
    return mapping


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
