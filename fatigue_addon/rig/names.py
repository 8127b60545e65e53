"""Bone names normalised (namespace, prefixes and side dropped) and classified: what a name says a
bone is (thigh, shin, foot, spine, ...), on which side, and how much to trust it."""
from __future__ import annotations

import re

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


