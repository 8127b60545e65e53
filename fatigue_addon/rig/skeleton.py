"""A rig's hierarchy and joint positions as plain numbers (read once from Blender by
rigmap.read_skeleton): what detection, validation and the body's measures walk.  Heights and
the floor come from bone heads (joints) only: importers give leaf bones arbitrary tails (100x
too long in some glTF files)."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Bone:
    name: str
    parent: str | None
    children: list
    head: tuple          # world, rest pose (or the pose read)
    tail: tuple
    head_arm: tuple      # armature space (x = Blender's left side)
    depth: int
    length: float


class Skeleton:
    """Bones by name with their hierarchy; ``animated``: read on a frame of the action in place of a
    rest pose that is no humanoid."""

    def __init__(self, name: str, bones: dict[str, Bone], animated: bool = False):
        self.name = name
        self.animated = animated
        self.bones = bones
        zs = [b.head[2] for b in self.bones.values()]
        self.floor = min(zs) if zs else 0.0
        self.height = (max(zs) - self.floor) if zs else 0.0

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


def depth_of(parents: dict, name: str) -> int:
    """How many ancestors ``name`` has (``parents``: bone -> parent name or None)."""
    depth, p = 0, parents[name]
    while p is not None:
        depth, p = depth + 1, parents[p]
    return depth


def vec(a, b) -> list:
    return [x - y for x, y in zip(b, a)]


def dot(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def norm(a) -> float:
    return dot(a, a) ** 0.5


def angle(a, b) -> float:
    na, nb = norm(a), norm(b)
    if na < 1e-12 or nb < 1e-12:
        return 0.0
    return math.acos(max(-1.0, min(1.0, dot(a, b) / (na * nb))))
