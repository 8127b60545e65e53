"""What holds a clip's body up: its feet on the floor, or something more (hands, knees or back on
the floor, an unseen seat, step or box, a bar it hangs from, a flight in slow motion), per frame;
and the support polygon's geometry (how far a point lies outside or inside it) that the feet and
the balance check read too.

Why a module of its own: the reference's chain (runtime.reference.reference.prepare) decides from it which
stretches the SRB balances and which floor work keeps as keyed (runtime.floor.work); the feet
(runtime.srb.simulator.feet) and the flat-foot check (runtime.reference.reference.balance) measure against the same
polygon.  Nothing here simulates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..motion import contacts
from ..motion.contacts import straight_legs
from ..maths import lowpass
from .playback import keyed_flights, slowed_flights

FEET_ONLY = "its feet: balance simulated"   # what held the body up when its feet carry the whole clip

GRAVITY = 9.81
FLOOR_WORK_FRACTION = 0.05  # contact other than the feet (or a seat) in more than this share of frames
# Held up by something the clip does not show (a seat, a bench, a saddle): a centre of mass at
# rest this far outside everything touching the floor, this long.  No one stands like that.
OUTSIDE_SUPPORT = 0.05      # m (1.62 m body)
STILL_SPEED = 0.15          # m/s (1.62 m body) ...
HELD_SECONDS = 0.5          # s
SEAT_LINKS = ("root", "right_hip", "left_hip")   # where the unseen support carries it: pelvis and thighs
RAISED_SECONDS = 0.3        # s with nothing on the floor and the body not falling: it stands on something
RAISED_FALL = 0.5           # ... "not falling": vertical acceleration above this share of -g
RAISED_LEVEL = 0.05         # m (1.62 m body): a foot this close to the lower one's level stands there too
HANG_ABOVE = 0.15           # m (1.62 m body): a hand this far above the centre of mass holds the body from above
SEATED_PELVIS = 0.8         # a pelvis below this share of its straight-legged standing height can sit
HOLD_STILL = 0.1            # m/s (1.62 m body): a foot on a box or a hand on a bar holds still
SLOW_FALL = 0.25            # a centre of mass outside its support falling slower than this share of a pendulum's is held
NEAR_FLOOR = 0.2            # m (1.62 m body): a hand, knee, back or head this near the floor may be on it (see reaching)
def _hull(points: np.ndarray) -> np.ndarray:
    """Convex hull of 2-D points, counter-clockwise (monotone chain); fewer than 3 points as given."""
    pts = sorted(set(map(tuple, np.round(points, 9).tolist())))
    if len(pts) < 3:
        return np.array(pts, dtype=np.float64).reshape(-1, 2)

    def half(seq):
        out = []
        for p in seq:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (p[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0])) <= 0.0:
                out.pop()
            out.append(p)
        return out
    lower, upper = half(pts), half(reversed(pts))
    return np.array(lower[:-1] + upper[:-1], dtype=np.float64)


def outside_support(point: np.ndarray, support: np.ndarray) -> float:
    """How far (m) the 2-D ``point`` lies outside the convex hull of ``support`` (0 inside;
    infinity with no support)."""
    if len(support) == 0:
        return float("inf")
    hull = _hull(support)
    return 0.0 if _encloses(hull, point) else _nearest_edge(hull, point)


def inside_support(point: np.ndarray, support: np.ndarray) -> float:
    """How far (m) the 2-D ``point`` lies inside the convex hull of ``support``: the distance to
    its nearest edge; negative outside (minus the distance to the hull)."""
    hull = _hull(support)
    nearest = _nearest_edge(hull, point)
    return nearest if _encloses(hull, point) else -nearest


def _encloses(hull: np.ndarray, point: np.ndarray) -> bool:
    """``point`` within the counter-clockwise ``hull`` (of three points or more; its edges too)."""
    if len(hull) < 3:
        return False
    edges = np.roll(hull, -1, axis=0) - hull
    rel = point - hull
    return bool(((edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0]) >= 0.0).all())


def _nearest_edge(hull: np.ndarray, point: np.ndarray) -> float:
    """Distance from ``point`` to the nearest edge (segment) of ``hull`` (a point or a segment
    for fewer than three points)."""
    best = float("inf")
    for a, b in zip(hull, np.roll(hull, -1, axis=0) if len(hull) > 1 else hull):
        ab = b - a
        u = 0.0 if float(ab @ ab) == 0.0 else min(max(float((point - a) @ ab / (ab @ ab)), 0.0), 1.0)
        best = min(best, float(np.linalg.norm(point - (a + u * ab))))
    return best


def held_elsewhere(ck, com_vel: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(T,) frames in which something the clip does not show holds the body up: its centre of mass,
    nearly still, lies more than OUTSIDE_SUPPORT outside everything touching the floor (feet in
    contact by their sole corners, other links where they are), for at least HELD_SECONDS.

    Why: a seated character (a dialogue scene at a desk) has its feet on the floor and nothing
    else; carried by its feet, its legs held the whole body in a squat and gave way within 4 s
    of a tired take.  No one stands with the centre of mass outside the feet without moving, and
    no one sits with straight legs: a walk played in slow motion (a 120 fps capture at 24 fps)
    lingers outside its stance foot too, with its pelvis at standing height (pelvis_lowered)."""
    frames = len(ck.com)
    out = np.zeros(frames, dtype=bool)
    still = (np.linalg.norm(com_vel, axis=1) < STILL_SPEED * scale) & pelvis_lowered(ck)
    for t in np.flatnonzero(still).tolist():
        out[t] = outside_support(ck.com[t, :2], _support_points(ck, t)) > OUTSIDE_SUPPORT * scale
    n = max(1, int(round(HELD_SECONDS * ck.fps)))
    return contacts.sustained(out, n)


def raised_feet(ck, com_acc: np.ndarray, hanging: np.ndarray, scale: float = 1.0,
                elsewhere: np.ndarray | None = None) -> np.ndarray:
    """(T, 2) feet standing on something above the floor that the clip does not show (a step, a
    box, a stage): for at least RAISED_SECONDS nothing touches the floor, yet the centre of mass
    does not fall (its vertical acceleration stays above -RAISED_FALL * g); the lower foot, and
    the other where it is as low, carries the body then, unless it hangs (``hanging``: the
    hanging_hands of the same clip) or ``elsewhere`` ((T,): a hand or knee reaching the floor, a
    flight in slow motion; see find_support) says what it is.

    Why: the floor is one level per clip, found where the feet return to.  A walk that began on
    a box 0.2 m high started in the air, dropped, and fell within 0.4 s, fresh.  A foot that
    stands on something holds still there; one that moves is in a flight (see slow_flight)."""
    carried = _carried_off_the_floor(ck, com_acc) & ~hanging.any(axis=1)
    if elsewhere is not None:
        carried &= ~elsewhere
    lowest = ck.sole[..., 2].min(axis=2)                                   # (T, 2)
    low = carried[:, None] & (lowest <= lowest.min(axis=1, keepdims=True) + RAISED_LEVEL * scale)
    return low & _mostly_still(carried, low & _held_still(ck.sole.min(axis=2), ck.fps, scale))[:, None]


def hanging_hands(ck, com_acc: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(T, 2) hands holding the body up from above (a bar, a ledge, rings: pull-ups, climbing):
    carried off the floor as in raised_feet, with the hand HANG_ABOVE or more above the centre of
    mass.  Standing on the feet instead, a hanging body's legs took its weight and its arms
    only their own."""
    carried = _carried_off_the_floor(ck, com_acc)
    hands = [ck.link_names.index(n) for n in proxy.HAND_LINKS]
    above = ck.link_pos[:, hands, 2] - ck.com[:, 2, None] > HANG_ABOVE * scale      # (T, 2)
    return carried[:, None] & above


def near_the_floor(ck, scale: float = 1.0) -> np.ndarray:
    """(T, L) the links besides the feet whose joint (a wrist, an elbow, a knee, the pelvis, the
    waist, the neck) is within NEAR_FLOOR of the floor.  (Their joints, not their centres: a
    standing shin's centre is 0.26 m up, its knee 0.45 m.)"""
    low = ck.joint_pos[..., 2] - ck.floor_height < NEAR_FLOOR * scale
    low[:, [ck.link_names.index(n) for n in proxy.FOOT_LINKS]] = False
    return low


def reaching(ck, com_acc: np.ndarray, hanging: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(T, L) links that hold the body up on the floor though the contact test misses them: for at
    least RAISED_SECONDS no foot is down, the centre of mass does not fall (as in raised_feet) and
    a hand, knee, back or head is on the floor or near_the_floor, not hanging (``hanging``:
    hanging_hands), and nothing of it stays on the floor that long (the floor work the contact
    test finds); the links near the floor where nothing touches it.

    Why: a cartwheel or a handstand whose hands a retarget leaves a few centimetres above the
    floor (an actor's arms longer than the proxy's) has, for the contact test, nothing on the
    floor and a body that does not fall: it was called slow motion (a fifth of a cartwheel's
    frames) and the animator told to re-import at another frame rate; its hands grazing the floor
    for a tenth of a second, it was balanced on feet that were in the air.  A flight has nothing of
    the body near the floor; this body is on its hands."""
    near = near_the_floor(ck, scale)
    touching = ck.non_foot_touching()
    n = max(1, int(round(RAISED_SECONDS * ck.fps)))
    held = contacts.sustained(~ck.foot_contact.any(axis=1) & (com_acc[:, 2] > -RAISED_FALL * GRAVITY)
                                & (touching | near.any(axis=1)) & ~hanging.any(axis=1), n)
    found = contacts.sustained(touching, n)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], held.astype(np.int8), [0]])))
    for a, b in zip(edges[0::2], edges[1::2]):
        held[a:b] = not found[a:b].any()
    return (held & ~touching)[:, None] & near


def slow_flight(ck, com_acc: np.ndarray, raised: np.ndarray, hanging: np.ndarray) -> np.ndarray:
    """(T,) frames of a flight slower than gravity allows: carried off the floor as in raised_feet,
    between two touches of the floor, standing on nothing that holds still and hanging from
    nothing.  The motion plays slower than it was performed (a capture played at a lower frame
    rate than it was recorded at), and no simulated body can fly that way, so the pose is kept as
    keyed there."""
    return _carried_off_the_floor(ck, com_acc) & ~raised.any(axis=1) & ~hanging.any(axis=1)


def slow_stance(ck, com_acc: np.ndarray, scale: float = 1.0, near: np.ndarray | None = None) -> np.ndarray:
    """(T,) frames of standing that gravity would not allow: for at least HELD_SECONDS the centre
    of mass lies more than OUTSIDE_SUPPORT outside everything touching the floor (and the links
    ``near`` it, (T, L): a hand a retarget left above the floor still leans on it), at standing
    height (not seated: held_elsewhere), yet it accelerates away from its support at less than
    SLOW_FALL of what an inverted pendulum would (g d / h).  A walk played slower than it was
    performed lingers outside its stance foot like this; a real one falls onto the next foot
    within a few tenths of a second.  (Leaning on something unseen looks the same.)"""
    frames = len(ck.com)
    out = np.zeros(frames, dtype=bool)
    standing = ~pelvis_lowered(ck)
    for t in np.flatnonzero(standing).tolist():
        support = _support_points(ck, t, None if near is None else near[t])
        if not len(support):
            continue
        d = outside_support(ck.com[t, :2], support)
        if d <= OUTSIDE_SUPPORT * scale:
            continue
        centre = support.mean(axis=0)
        away = (ck.com[t, :2] - centre) / max(float(np.linalg.norm(ck.com[t, :2] - centre)), 1e-9)
        h = max(float(ck.com[t, 2] - ck.floor_height), 1e-3)
        out[t] = float(com_acc[t, :2] @ away) < SLOW_FALL * GRAVITY * d / h
    return contacts.sustained(out, max(1, int(round(HELD_SECONDS * ck.fps))))


def _support_points(ck, t: int, near: np.ndarray | None = None) -> np.ndarray:
    """(N, 2) what touches the floor at frame t: the sole corners of feet in contact, other links
    (and those ``near``, (L,), it)."""
    feet = {ck.link_names.index(n) for n in proxy.FOOT_LINKS}
    parts = [ck.sole[t, k, :, :2] for k in range(2) if ck.foot_contact[t, k]]
    on = ck.touching[t] if near is None else ck.touching[t] | near
    others = [i for i in np.flatnonzero(on).tolist() if i not in feet]
    if others:
        parts.append(ck.link_pos[t, others, :2])
    return np.concatenate(parts) if parts else np.zeros((0, 2))


def pelvis_lowered(ck) -> np.ndarray:
    """(T,) the pelvis below SEATED_PELVIS of its height standing with straight legs (hip to knee
    to ankle, plus the ankle's height above the sole): low enough to sit."""
    names = ck.link_names
    ankle_up = float(ck.joint_pos[0, names.index("right_ankle"), 2] - ck.sole[0, 0, :, 2].min())
    standing = straight_legs(ck) + max(ankle_up, 0.0)
    return ck.joint_pos[:, names.index("root"), 2] - ck.floor_height < SEATED_PELVIS * standing


def _mostly_still(carried: np.ndarray, holding: np.ndarray) -> np.ndarray:
    """(T,) the frames of each stretch of ``carried`` that something holds up: a stretch the clip
    begins or ends in (it starts on the box, it hangs throughout), or one in which something
    (``holding``, (T, K)) held still for at least half of it: a foot on a box or a hand on a bar.
    A stretch between two touches of the floor with nothing holding still is a flight."""
    T = len(carried)
    out = np.zeros(T, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], carried.astype(np.int8), [0]])))
    for a, b in zip(edges[0::2], edges[1::2]):
        out[a:b] = a == 0 or b == T or holding[a:b].any(axis=1).mean() >= 0.5
    return out


def _held_still(points: np.ndarray, fps: float, scale: float) -> np.ndarray:
    """(T, K) points (T, K, 3) moving slower than HOLD_STILL."""
    speed = np.linalg.norm(lowpass.derivative(points, fps), axis=-1)
    return speed < HOLD_STILL * scale


def _carried_off_the_floor(ck, com_acc: np.ndarray) -> np.ndarray:
    """(T,) at least RAISED_SECONDS with nothing on the floor, yet a centre of mass not falling."""
    carried = ~ck.foot_contact.any(axis=1) & ~ck.non_foot_touching() & (com_acc[:, 2] > -RAISED_FALL * GRAVITY)
    return contacts.sustained(carried, max(1, int(round(RAISED_SECONDS * ck.fps))))


@dataclass(frozen=True)
class Support:
    """What holds a clip's body up besides its feet on the simulated floor, per frame."""
    others_share: float           # sustained contact of links other than the feet (non_foot_contact_fraction)
    held: np.ndarray              # (T,) an unseen seat (held_elsewhere)
    raised: np.ndarray            # (T, 2) feet on an unseen step or box (raised_feet)
    hanging: np.ndarray           # (T, 2) hands on an unseen bar or ledge (hanging_hands)
    slow: np.ndarray              # (T,) slow motion: a flight (slow_flight) or a stance (slow_stance) gravity would not allow
    reaching: np.ndarray          # (T, L) hands, knees, back on the floor that the contact test misses (reaching)
    keyed: np.ndarray             # (T,) flights gravity does not time (playback.keyed_flights): cartoon timing

    def shares(self) -> dict[str, float]:
        """Share of frames held by each unseen support (the Take's stats; keyed flights only
        where the clip has them)."""
        out = {"held_elsewhere": float(self.held.mean()), "raised_feet": float(self.raised.any(axis=1).mean()),
               "hanging": float(self.hanging.any(axis=1).mean()), "slow_motion": float(self.slow.mean())}
        if self.keyed.any():
            out["keyed_flight"] = float(self.keyed.mean())
        return out

    @property
    def floor_work(self) -> bool:
        """Whether foot contacts on the one simulated floor cannot carry the clip."""
        return (self.others_share > FLOOR_WORK_FRACTION or self.unseen
                or float(self.reaching.any(axis=1).mean()) > FLOOR_WORK_FRACTION)

    @property
    def unseen(self) -> bool:
        """Whether something the clip does not show holds it up (a seat, a step or box, a bar) or
        it plays in slow motion: what no simulated floor carries.  Hands, knees or back on the
        floor are not unseen: the floor is there."""
        share = self.shares()
        return (share["held_elsewhere"] > FLOOR_WORK_FRACTION or share["raised_feet"] > 0.0
                or share["hanging"] > 0.0 or share["slow_motion"] > 0.0 or share.get("keyed_flight", 0.0) > 0.0)

    def unseen_holder(self) -> str | None:
        """Which unseen support ``described`` names (a key of ``shares``), or None."""
        share = self.shares()
        if share["held_elsewhere"] > FLOOR_WORK_FRACTION:
            return "held_elsewhere"
        return next((key for key in ("hanging", "slow_motion", "raised_feet", "keyed_flight") if share.get(key, 0.0) > 0.0),
                    None)

    def described(self, floor_work: bool | None = None) -> tuple[str, str]:
        """(what held the body up, in an animator's words; how the pelvis and legs were done).
        ``floor_work``: describe the floor work even where the clip as a whole is not (its floor
        stretches, runtime.floor.stretches)."""
        share = self.shares()
        if not (self.floor_work if floor_work is None else floor_work):
            return FEET_ONLY, ""
        holder = self.unseen_holder()
        if holder == "held_elsewhere":
            return ("an unseen seat: pose as keyed, its load booked",
                    f"reference followed: in {100 * share['held_elsewhere']:.0f} % of the frames the body rests "
                    "still with its centre of mass outside its feet, held up by something the clip does not show "
                    "(a seat, a bench), which carries it at the pelvis and thighs")
        if holder == "hanging":
            return ("an unseen bar or ledge it hangs from: pose as keyed, its load booked",
                    f"reference followed: in {100 * share['hanging']:.0f} % of the frames the body hangs from its "
                    "hands on something the clip does not show (a bar, a ledge)")
        if holder == "slow_motion":
            return ("slow motion: pose as keyed, its load booked",
                    f"reference followed: in {100 * share['slow_motion']:.0f} % of the frames the body flies or "
                    "leans outside its feet yet falls slower than gravity allows: the motion plays slower than it "
                    "was performed "
                    "(a capture imported at a lower frame rate: tick Update Scene FPS/Duration on import, or set the "
                    "scene's frame rate)")
        if holder == "raised_feet":
            return ("an unseen step or box: pose as keyed, its load booked",
                    f"reference followed: in {100 * share['raised_feet']:.0f} % of the frames the feet stand on "
                    "something above the floor the clip does not show (a step, a box, a stage); the simulated "
                    "floor is one level, so the pose is kept as keyed")
        if holder == "keyed_flight":
            return ("flights keyed faster or slower than gravity allows: pose as keyed, its load booked",
                    f"reference followed: in {100 * share['keyed_flight']:.0f} % of the frames the body flies "
                    "up and down at a pace gravity does not set (cartoon timing), which no simulated flight can "
                    "follow: the flights are kept as keyed")
        return ("hands, knees or back on the floor: pose as keyed, its load booked",
                "reference followed: the clip touches the floor with more than the feet, which foot contacts "
                "alone cannot carry (no centroidal dynamics)")


def find_support(ck, com_vel: np.ndarray, com_acc: np.ndarray, scale: float = 1.0) -> Support:
    """The Support of a clip (ClipKinematics ``ck``; its reference's centre-of-mass velocity and
    acceleration; ``scale``: body height over 1.62 m).  A body off the floor that does not fall
    hangs from its hands; else it is on a hand, knee or back that reaches the floor; else it flies
    in slow motion where it keeps to a slowed flight's parabola (runtime.reference.playback); else it stands
    on an unseen step or box where its feet hold still, or the clip begins or ends there; else
    (a flight that is not a clean parabola) it flies in slow motion too.  Slow motion is judged
    only there and on leans outside everything on or near the floor (slow_stance).  A flight none
    of these explain that comes down at a pace gravity does not set is kept as keyed."""
    hanging = hanging_hands(ck, com_acc, scale)
    on_it = reaching(ck, com_acc, hanging, scale)
    held_by_it = on_it.any(axis=1)
    flying = slowed_flights(ck, _carried_off_the_floor(ck, com_acc) & ~hanging.any(axis=1) & ~held_by_it)
    raised = raised_feet(ck, com_acc, hanging, scale, held_by_it | flying)
    slow = (slow_flight(ck, com_acc, raised, hanging) & ~held_by_it) | slow_stance(ck, com_acc, scale,
                                                                                    near_the_floor(ck, scale))
    keyed = keyed_flights(ck) & ~(hanging.any(axis=1) | held_by_it | raised.any(axis=1) | slow | flying)
    return Support(ck.non_foot_contact_fraction(), held_elsewhere(ck, com_vel, scale), raised, hanging, slow, on_it,
                   keyed)

