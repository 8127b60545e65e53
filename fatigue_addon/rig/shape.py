"""Whether a mapped skeleton is a person's, judged in its own body axes (up = pelvis to neck), and
how far a pose is from standing straight."""
from __future__ import annotations

from .keys import HUMANOID_KEYS
from .skeleton import Skeleton, angle, dot, norm, vec


def pose_score(rig: Skeleton, mapping) -> float:
    """How far a pose is from standing straight (radians): knee bends plus the trunk's lean from
    the nearest world axis.  The least is the pose the body is measured in."""
    j = {k: rig.bones[mapping[k]].head for k in HUMANOID_KEYS}
    bend = sum(angle(vec(j[f"{s}_hip"], j[f"{s}_knee"]), vec(j[f"{s}_knee"], j[f"{s}_ankle"]))
               for s in ("right", "left"))
    trunk = vec(j["pelvis"], j["neck"])
    lean = min(angle(trunk, axis) for axis in ((0, 0, 1), (0, 0, -1), (0, 1, 0), (0, -1, 0), (1, 0, 0), (-1, 0, 0)))
    return bend + lean


def shape_problems(rig: Skeleton, mapping) -> list[str]:
    """``not humanoid: ...`` problems, judged in the rig's own body axes (up = pelvis to neck), so a
    rest pose lying down, standing on its head or under a rotated parent is judged like a standing
    one: legs hang away from the trunk, arms start above the pelvis and stay off the floor, nothing
    like a tail hangs from the pelvis."""
    j = {k: rig.bones[mapping[k]].head for k in HUMANOID_KEYS}
    trunk = vec(j["pelvis"], j["neck"])
    legs = [norm(vec(j[f"{s}_hip"], j[f"{s}_knee"])) + norm(vec(j[f"{s}_knee"], j[f"{s}_ankle"]))
            for s in ("right", "left")]
    size = norm(trunk) + max(legs)
    if norm(trunk) < 0.15 * size:
        return ["not humanoid: its neck is not above its pelvis (its trunk has no length)"]
    up = [x / norm(trunk) for x in trunk]
    problems = []
    for side in ("right", "left"):
        leg = vec(j[f"{side}_hip"], j[f"{side}_ankle"])
        if norm(leg) < 1e-9 or dot(leg, up) > -0.5 * norm(leg):
            problems.append(f"not humanoid: its {side} leg does not hang away from its trunk in the rest pose")
        if dot(vec(j["pelvis"], j[f"{side}_shoulder"]), up) < 0:
            problems.append(f"not humanoid: its {side} arm starts below the pelvis")
    sole = min(dot(vec(j["pelvis"], j[f"{s}_ankle"]), up) for s in ("right", "left"))
    for side in ("right", "left"):
        arm = mapping[f"{side}_elbow"]
        low = min(dot(vec(j["pelvis"], p), up) for p in rig.subtree_points(arm))
        if low < sole:
            problems.append(f"not humanoid: its {side} arm reaches below its feet in the rest pose")
    tail = _tail(rig, mapping, size)
    if tail:
        problems.append(f"not humanoid: a tail ('{tail}') hangs from its pelvis, and the simulated body has none")
    return problems


def _tail(rig: Skeleton, mapping, size: float) -> str | None:
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
        reach = max(norm(vec(origin, p)) for p in rig.subtree_points(child))
        if reach > 0.5 * size and len(rig.descendants(child)) >= 2:
            return child
    return None
