"""Detection by geometry, for whatever names did not find: limbs reaching the floor are legs,
the two of them meet at the pelvis, the spine rises from it, and the bone where two long chains go
sideways (along the line through the hips) is the chest.  An arm's upper arm and forearm are its
first two long bones past a clavicle; left is where the toes point from, else +X of the armature."""
from __future__ import annotations

from .by_names import upward_child
from .skeleton import Skeleton, dot, norm, vec

def _ground_limbs(rig: Skeleton) -> list[list[str]]:
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


def _long_bones(rig: Skeleton, chain: list[str], min_len: float) -> list[str]:
    out = []
    for n in chain:
        b = rig.bones[n]
        # segment length: head to the next chain bone's head, else the bone itself
        nxt = chain[chain.index(n) + 1] if chain.index(n) + 1 < len(chain) else None
        end = rig.bones[nxt].head if nxt else b.tail
        if sum((a - c) ** 2 for a, c in zip(b.head, end)) ** 0.5 >= min_len:
            out.append(n)
    return out


def _upper_and_forearm(rig: Skeleton, chain: list[str], min_len: float, across, medial: float) -> tuple[str, str] | None:
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


def _across(rig: Skeleton, thighs: list[str], pelvis: str):
    """A function bone -> how far its head lies to the side of the pelvis, along the line through
    the two hip joints (level with the floor): the body's own side-to-side axis in the pose read,
    whatever the armature's axes.  Hips that coincide fall back to the armature's X."""
    a, b = rig.bones[thighs[0]].head, rig.bones[thighs[1]].head
    axis = [b[0] - a[0], b[1] - a[1], 0.0]
    n = norm(axis)
    origin = rig.bones[pelvis]
    if n < 1e-9 * max(rig.height, 1e-9):
        return lambda name: rig.bones[name].head_arm[0] - origin.head_arm[0]
    axis = [x / n for x in axis]
    return lambda name: dot(vec(origin.head, rig.bones[name].head), axis)


def _chain_tip(rig: Skeleton, name: str) -> str:
    """The bone at the end of the longest chain of joints from ``name`` down (``name`` if a leaf)."""
    b = rig.bones[name]
    if not b.children:
        return name
    best = max(b.children, key=lambda c: (norm(vec(b.head, rig.bones[c].head)) + _reach(rig, c), c))
    return _chain_tip(rig, best)


def _reach(rig: Skeleton, name: str) -> float:
    """The longest chain of joints from ``name``'s head down through its descendants (head to head)."""
    b = rig.bones[name]
    return max((norm(vec(b.head, rig.bones[c].head)) + _reach(rig, c) for c in b.children), default=0.0)


def _hanging_arms(rig: Skeleton, spine_root: str, min_reach: float) -> tuple[str | None, list]:
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


def _left_from_feet(rig: Skeleton, feet: list) -> list | None:
    """The body's left (world, horizontal) from where its toes point, or None without toes."""
    fwd = [0.0, 0.0, 0.0]
    for foot, toe in feet:
        if foot and toe:
            d = vec(rig.bones[foot].head, rig.bones[toe].head)
            fwd = [a + b for a, b in zip(fwd, d)]
    if (fwd[0] ** 2 + fwd[1] ** 2) ** 0.5 < 1e-6:
        return None
    return [-fwd[1], fwd[0], 0.0]          # up x forward


def by_geometry(rig: Skeleton) -> tuple[dict[str, str], str | None]:
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
        return dot(vec(rig.bones[centre].head, rig.bones[name].head), left)

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
    neck = upward_child(rig, chest, set(arms))
    if neck:
        bones["neck"] = neck
    for limb in ("left_hand", "right_hand"):
        if limb in bones and limb.replace("hand", "elbow") not in bones:
            del bones[limb]
    if bones.get("left_shoulder") and bones.get("right_shoulder") and (
            rig.bones[bones["left_shoulder"]].head[2] < rig.bones[pelvis].head[2]):
        return bones, "its arms hang from below the pelvis"
    return bones, None
