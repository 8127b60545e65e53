"""Detection by names, then hierarchy: every bone's name classified (names.parse_name), limbs
resolved as chains (the knee below the hip, the ankle below the knee), the pelvis where both thighs
hang, the chest where both upper arms meet, the neck the closest neck-named bone above it."""
from __future__ import annotations

from . import rigify
from .names import parse_name
from .skeleton import Skeleton

def by_names(rig: Skeleton) -> tuple[dict[str, str], list[str]]:
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
            neck = upward_child(rig, chest, arm_set)
            if neck:
                notes.append(f"neck taken as '{neck}', the chest's child that points up")
        if neck:
            bones["neck"] = neck
            head = nearest("head", None, neck) if not is_cls(neck, "head") else None
            head = head or rigify.head_after_neck(neck, rig.bones)
            if head:
                bones["head"] = head
    return bones, notes


def upward_child(rig: Skeleton, chest: str, exclude: set) -> str | None:
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


