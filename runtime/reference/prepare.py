"""The setup chain every simulation starts with: the clip's kinematics, the body, the reference and
what holds the body up (kinematics -> body -> reference -> support).

Why one function: simulate(), the training environment and the bench each need the same four
things in the same order; one place builds them, so a change to any step reaches all three.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..body import proxy
from ..motion.contacts import ClipKinematics, ProxyKinematics
from ..motion.clip import Clip
from .reference import Reference, build_reference
from .rigid_body import Body, body_from_proxy, kin_scale
from .support import Support, find_support


@dataclass(frozen=True)
class Prepared:
    ck: ClipKinematics            # the source's link frames, contacts and centre of mass
    body: Body                    # the SRB (default strength: calibration.py sets the take's)
    ref: Reference                # what the simulation tracks
    support: Support               # what holds the body up: its feet, or floor work


def prepare(source: Clip, kin: ProxyKinematics, mass: float = proxy.DEFAULT_MASS,
            ck: ClipKinematics | None = None) -> Prepared:
    """Kinematics, body, reference and support of ``source`` on the proxy ``kin`` (its height and
    proportions) at ``mass``; ``ck``: ``kin.analyse(source)`` where the caller has it already."""
    ck = ck if ck is not None else kin.analyse(source)
    body = body_from_proxy(kin, mass)
    ref = build_reference(source, ck, body)
    support = find_support(ck, ref.com_vel, ref.com_acc, kin_scale(body))
    return Prepared(ck, body, ref, support)
