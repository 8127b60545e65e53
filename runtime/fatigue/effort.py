"""Effort economy: what a torque costs a tired joint, and how far tired joints yield to their loads.

Why: the fatigue bound alone lets a joint hold any load below RC * tau_max at full accuracy;
people trade accuracy for effort, more the less capacity is left.  One cost (1 / RC^2 - 1) weighs
the legs' QP effort, the knees' sag and the limbs' give.
"""
from __future__ import annotations

import math

import numpy as np

from ..engines.limbs import LIMB_JOINTS, limb_dofs
from ..maths import quat, repeatable
from ..maths.ease import smoothstep
from ..reference.legs import leg_length
from .params import MAX_EFFORT_ECONOMY

ECCENTRIC_STRENGTH = 1.3  # a leg lowering the body holds this much more than it can push (see yielding_strength)
YIELD_SPEED = 0.1         # m/s (1.62 m body) of sinking at which a stance counts as fully yielding
LIMB_LOAD_SMOOTHING = 0.25  # s: the load a tired limb yields to is averaged this long (motor spikes)
MAX_GIVE_RATE = 0.5        # rad/s: how fast a tired joint's yield can change
MAX_GIVE = 0.5             # rad (about 30 deg): the most a tired joint yields to its load (a hanging arm)
MAX_KNEE_GIVE = 0.25       # rad (about 15 deg): ... a knee under the body (deeper costs it more, not less)
MAX_UPRIGHT_GIVE = 0.25    # rad: ... a trunk or neck carrying what is above it (likewise)
UPRIGHT_JOINTS = ("chest", "neck")
MAX_HEAD_DROOP = 0.35      # rad (about 20 deg): how far a tired neck lets the head drop toward the chest
HEAD_DROOPS = -1.0         # the sign of the neck's flexion (chin down) about its lateral (z) axis
TIRED_LEAN = math.radians(8.0)  # how far the trunk leans forward over exhausted legs ...
TIRED_LEAN_FROM = 0.8      # ... starting once their weakest working joint has this much capacity left ...
TIRED_LEAN_FULL = 0.2      # ... all of it at this much
KNEE_BENDS = -1.0          # the sign of a knee's hinge angle as it bends (the proxy's knees, like DeepMimic's)


def fatigue_cost(capacity):
    """How much dearer than fresh a joint's torque is at residual capacity RC: 1 / RC^2 - 1
    (RC floored at 0.05).  Nothing when fresh, a little when tired, a lot when exhausted: the
    effort economy of tired limbs and knees (_limb_give, _update_sag) and the legs' QP effort
    cost (leg_effort) all weigh loads by it."""
    rc = np.maximum(capacity, 0.05)
    return 1.0 / (rc * rc) - 1.0


def leg_effort(capacity: np.ndarray, strength: np.ndarray) -> np.ndarray:
    """Per leg DoF, the scale whose squared product with the torque is the QP's effort cost:
    (tau / strength)^2 * (1 / RC^2 - 1).

    Why: a torque costs more the less capacity is left, so a tired body loads its fresher joints
    and leg (how a tired person shifts weight onto the fresher leg) and pushes a little less
    where the motion allows; like the limbs' economy it costs nothing fresh, so a take that
    starts fresh starts exactly like a fresh one."""
    return np.sqrt(fatigue_cost(capacity)) / strength


def within_caps(give: np.ndarray, joints) -> np.ndarray:
    """``give`` (rad per DoF) with each joint's part scaled down to its cap, in place; ``joints``:
    (first DoF, DoFs, most give) per joint.  A ball joint's cap bounds the size of its rotation."""
    for first, width, most in joints:
        part = give[first:first + width]
        norm = math.sqrt(part @ part)
        if norm > most:
            give[first:first + width] = part * (most / norm)
    return give


def tired_lean(legs_rc: float) -> float:
    """How far (rad) the trunk leans forward, beyond the source, over legs whose weakest working
    joint has ``legs_rc`` of its capacity left.

    Why: tired runners and walkers flex the trunk more (Hart et al. 2009, Koblbauer et al. 2014,
    Apte et al. 2021), whichever leg muscles tired; leaning also brings the centre of mass over
    the feet earlier in each stance and hands load from the knee extensors to the hips'.  Read
    on the weakest working leg joint as the tempo reads the legs: read on the knees alone, a
    tired walk (its ankles at 0.55, knees at 0.7) stood upright.  Nothing while the legs have
    TIRED_LEAN_FROM or more left."""
    return TIRED_LEAN * smoothstep((TIRED_LEAN_FROM - legs_rc) / (TIRED_LEAN_FROM - TIRED_LEAN_FULL))


def lean_trunk(joints: np.ndarray, slots: list[int], lean: float) -> np.ndarray:
    """``joints`` (12 x 4, proxy order; ``slots`` the LIMB_JOINTS ones) with the chest bent
    ``lean`` rad further forward about its lateral axis (the proxy's frames: y up, x forward) and
    the neck as far back: the head keeps its bearing (its own droop is the neck's, LimbGive)."""
    out = np.array(joints, dtype=float)
    chest, neck = slots[LIMB_JOINTS.index("chest")], slots[LIMB_JOINTS.index("neck")]
    out[chest] = quat.multiply(out[chest], quat.from_rotvec(np.array([0.0, 0.0, -lean])))
    out[neck] = quat.multiply(quat.from_rotvec(np.array([0.0, 0.0, lean])), out[neck])
    return out


def yielding_strength(vz: float, scale: float) -> float:
    """Leg strength over tau_max this step: ECCENTRIC_STRENGTH while the body sinks onto its
    legs (a landing, the lowering half of a stance; ``vz`` the centre of mass's vertical speed),
    1 while it rises or stands still, blended over YIELD_SPEED (times the body's ``scale``) of
    downward speed.

    Why: muscles hold more while they are stretched than they can push while shortening
    (isokinetic eccentric torques exceed concentric ones by 22-60 %; Kreuzer et al. 2022,
    BMC Sports Sci Med Rehabil 14:13, and the studies they cite).  With one strength for
    both, tau_max calibrated on the clip's largest torque is set by the landings, so the
    push-offs used half of it and a tired jump was no lower until its legs had lost half
    their capacity.  The take-offs are now measured against what legs can push, the landings
    against what they can hold, and fatigue shows in the push."""
    sinking = -vz / (YIELD_SPEED * scale)
    return 1.0 + (ECCENTRIC_STRENGTH - 1.0) * smoothstep(sinking)


class KneeSag:
    """Effort economy in the legs: each tired knee yields to the load it carries like a limb
    joint does (economy * load * (1/RC^2 - 1), at most MAX_KNEE_GIVE, changing at most
    MAX_GIVE_RATE), and the body sinks by what the two yields take off the legs' length at
    the source's knee angle (averaged over both legs).

    Why: the QP's fatigue bounds only bite at the motion's peak loads, so a tired walk stood
    as tall as a fresh one.  Fatigued muscle is less stiff (leg stiffness drops with fatigue
    in hopping and running): under the same load a tired knee bends further.  The deeper
    stance costs the knees more torque, which the fatigue model books; the cap keeps that
    loop bounded (at MAX_GIVE, 30 degrees, a tired dancer's knee on one leg sank until the
    leg gave way: unlike an arm, a knee under the body holds more the further it yields).
    Rests stand tall regardless (the simulator's rest target)."""

    def __init__(self, knee_slots: list[int]):
        self.knee_slots = knee_slots    # the knees' places in the clip's joint order (right, left)
        self.give = np.zeros(2)         # rad per leg: how far each tired knee yields

    def sag(self, body, economy: float, load_avg: np.ndarray, rc: np.ndarray, joints: np.ndarray,
            dt: float) -> float:
        """How far (m) the centre of mass sinks below the source's this step; ``load_avg`` and
        ``rc`` per DoF, ``joints`` the source's joint rotations now."""
        step = MAX_GIVE_RATE * dt
        drop = 0.0
        for k in range(2):
            dof = body.leg_dofs[k][3]
            give = min(economy * float(load_avg[dof]) * float(fatigue_cost(float(rc[dof]))), MAX_KNEE_GIVE)
            self.give[k] += min(max(give - self.give[k], -step), step)
            q = joints[self.knee_slots[k]]
            bend = 2.0 * repeatable.arctan2(abs(q[2]), abs(q[3]))   # either quaternion sign
            drop += leg_length(body, bend) - leg_length(body, bend + self.give[k])
        return 0.5 * drop


class LimbGive:
    """Effort economy in the upper body: how far each tired limb joint yields to the load it holds
    (radians per limb DoF, against its smoothed applied torque): economy * load * (1/RC^2 - 1), at
    most MAX_GIVE per joint; MAX_UPRIGHT_GIVE for the trunk, which like a knee under the body
    holds more the further it gives (a tired dancer's trunk slumped 30 degrees, then could not
    carry the slump and folded onto its end of range); the neck lets the head droop forward
    (_head_droop), as far as it can hold it (runtime.body.head).

    Why: the fatigue bound alone lets a joint hold any load below RC * tau_max at full
    accuracy, so a tired arm held out at 10 % effort would never move.  People trade
    accuracy for effort, and a torque costs more the less capacity is left (the same
    (tau / (RC tau_max))^2 the legs' QP minimises): nothing when fresh, a little when tired, a
    lot when exhausted.  The arm drops, the head nods, the chest slumps, and the smaller
    holding torque lets the joint recover.  The seed's policy learns this trade-off through
    its stiffness multiplier; here it is a rule."""

    def __init__(self, spherical, dt: float):
        self.spherical = spherical      # per limb joint: three DoFs (True) or one
        self.caps = [MAX_HEAD_DROOP if name == "neck" else MAX_UPRIGHT_GIVE if name in UPRIGHT_JOINTS else MAX_GIVE
                     for name in LIMB_JOINTS]
        widths = [3 if sph else 1 for sph in spherical]
        firsts = np.cumsum([0] + widths[:-1])
        self.joints = [(int(first), width, most) for first, width, most in zip(firsts, widths, self.caps)]
        n = sum(widths)
        self.neck = limb_dofs("neck", spherical)
        self.load = np.zeros(n)         # N*m: the applied torque, smoothed over LIMB_LOAD_SMOOTHING
        self.give = np.zeros(n)
        self.blend = min(1.0, dt / LIMB_LOAD_SMOOTHING)

    def yields(self, economy: float, capacity: np.ndarray, tau_max_inv: np.ndarray, dt: float) -> np.ndarray | None:
        """The yield per limb DoF this step (None when the economy is off); ``capacity`` RC and
        ``tau_max_inv`` 1 / tau_max of the limb DoFs."""
        if economy <= 0.0:
            return None
        load = self.load * tau_max_inv
        cost = fatigue_cost(capacity)
        give = within_caps(-economy * load * cost, self.joints)
        give[self.neck] = self._head_droop(economy, load[self.neck], cost[self.neck])
        # A posture sags at the pace of fatigue, not of the motion: the yield moves at most
        # MAX_GIVE_RATE.  Unlimited, it followed the load of a fast dance and whipped a tired
        # head and arm 40-60 deg per frame, the whipping itself burning their capacity.
        step = MAX_GIVE_RATE * dt
        self.give = self.give + np.clip(give - self.give, -step, step)
        return self.give.copy()

    def _head_droop(self, economy: float, load: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """A tired neck's yield: the head drops forward, toward the chest, by the size of what
        the neck holds (whichever way the load pulls), at most MAX_HEAD_DROOP.

        Why: yielding along the load let a tired head tip whichever way its motion threw it,
        backwards too; a person's tired head hangs forward, chin toward the chest."""
        size = economy * math.sqrt(load @ load) * float(cost.max())
        droop = np.zeros(3)
        droop[2] = HEAD_DROOPS * min(size, MAX_HEAD_DROOP)
        return droop

    def book(self, applied: np.ndarray) -> None:
        """Smooth the torque the limbs applied this step into the load they yield to."""
        self.load += (applied - self.load) * self.blend


class PathGive:
    """Effort economy in torque mode: the same yield as LimbGive and KneeSag, per sampled path.
    Each tired trunk, neck, shoulder and elbow servo aims ``economy * load * (1/RC^2 - 1)``
    radians off the clip against the torque it holds, and each tired knee as far into its bend,
    for the torque it carries either way (``load``: over tau_max, smoothed over
    LIMB_LOAD_SMOOTHING); at most MAX_UPRIGHT_GIVE, MAX_GIVE or MAX_KNEE_GIVE per joint, changing
    at most MAX_GIVE_RATE; knees stand tall in a rest; the head droops forward (MAX_HEAD_DROOP),
    as in SRB mode.  Hips and ankles keep the balance and do
    not yield, as in SRB mode, where the QP carries them.

    Why: the sampler's effort cost alone lets a weak joint spare itself any way the search finds
    (the torque-mode bench's tired takes kept their heads up and their knees no deeper than
    fresh).  Aiming the servo and the search's pose target at the yielded pose is SRB mode's
    rule: weaker joints sag under what they carry.  A knee's torque swings both ways within a
    window (the servos drive a crouch down and the push-off up), so, as KneeSag does, it yields
    by its size, into its bend."""

    def __init__(self, joints, window: float):
        self.window = window
        self.groups = []    # (first DoF, DoFs, most give) per yielding joint
        self.knees = []     # knee DoFs: a bend, by the size of their load
        self.neck = None    # the neck's DoFs: a droop forward, by the size of its load (LimbGive._head_droop)
        first = 0
        for joint in joints:
            if joint.name == "neck":
                self.groups.append((first, joint.dofs, MAX_HEAD_DROOP))
                self.neck = slice(first, first + joint.dofs)
            elif joint.name in LIMB_JOINTS:
                self.groups.append((first, joint.dofs, MAX_UPRIGHT_GIVE if joint.name in UPRIGHT_JOINTS else MAX_GIVE))
            elif joint.name.endswith("knee"):
                self.groups.append((first, joint.dofs, MAX_KNEE_GIVE))
                self.knees.extend(range(first, first + joint.dofs))
            first += joint.dofs
        self.dofs = first
        self.holding = np.ones(first, dtype=bool)     # DoFs that do not yield: hips and ankles
        for start, width, _ in self.groups:
            self.holding[start:start + width] = False
        self.blend = min(1.0, window / LIMB_LOAD_SMOOTHING)

    def fresh(self) -> tuple[np.ndarray, np.ndarray]:
        """(load, give) of a path that has held nothing yet."""
        return np.zeros(self.dofs), np.zeros(self.dofs)

    def give(self, path: tuple[np.ndarray, np.ndarray], capacity: np.ndarray, economy: float,
             resting: bool) -> np.ndarray:
        """The path's yield (rad per DoF) over the coming window: ``path`` its (load, give),
        ``capacity`` its RC per DoF."""
        load, last = path
        aim = -economy * load * fatigue_cost(capacity)
        aim[self.knees] = KNEE_BENDS * np.abs(aim[self.knees])
        if self.neck is not None:
            size = math.sqrt(aim[self.neck] @ aim[self.neck])
            aim[self.neck] = 0.0
            aim[self.neck.start + 2] = HEAD_DROOPS * size
        aim[self.holding] = 0.0
        within_caps(aim, self.groups)
        if resting:
            aim[self.knees] = 0.0
        step = MAX_GIVE_RATE * self.window
        return last + np.clip(aim - last, -step, step)

    def booked(self, path: tuple[np.ndarray, np.ndarray], give: np.ndarray, torques: np.ndarray,
               tau_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The path's (load, give) after a window that applied ``torques`` (steps, DoF) yielding
        ``give``: signed loads, and the knees' by size."""
        held = torques / tau_max
        held[:, self.knees] = np.abs(held[:, self.knees])
        load = path[0]
        return load + (held.mean(axis=0) - load) * self.blend, give
