"""What holds the body up, stretch by stretch: the feet where they carry it, floor work elsewhere.

A clip that walks, kneels and stands up again is not one kind of motion.  Decided once per clip,
a kneel in a 49 s performance was either too short to count (the feet "carried" the kneel and
the body fell there) or, counted, took balance away from the whole clip.  Here each frame of
the reference is marked where something other than the feet on the floor holds the body up
(runtime.floor.work: hands, knees or back on the floor for at least FLOOR_STRETCH, or just above it
where nothing else holds the body, an unseen seat, step, bar, a flight in slow motion or one keyed
faster or slower than gravity allows), extended while the body is still low (getting up, going
down), short gaps between such stretches are closed (nobody stands up for a moment between two
kneels), and the simulation switches: the SRB balances the
body on its feet, floor work (runtime.floor.work.FloorSimulator) keeps the keyed pose and books its
load.  Both run on one clock, one fatigue model and one tempo rule, so a tired body slows and
rests the same way whichever holds it.  Entering floor work the pose eases from where the SRB
left it onto the keyed one over BLEND seconds; leaving it, the SRB starts from the keyed state.
"""
from __future__ import annotations

import numpy as np

from ..fatigue.contract import Forwarded, Simulator
from ..motion import contacts
from ..maths import quat
from ..reference import pose_output

FLOOR_STRETCH = 0.3      # s: something other than the feet on the floor this long is floor work
FEET_GAP = 1.0           # s: feet alone for less than this next to floor work (or the clip's ends): still floor
LEAD = 0.2               # s: floor work starts this much before the contact (going down onto it)
BLEND = 0.25             # s: from the SRB's pose onto the keyed one when floor work begins
LOW_COM = 0.55           # floor work goes on while the centre of mass is below this share of the legs' length
HANDOVER = 0.5           # s: floor work goes on at most this long for both feet to be down
MIN_FEET_SHARE = 0.05    # feet alone in fewer frames than this: the whole clip is floor work


def floor_frames(ck, support) -> np.ndarray:
    """(T,) frames floor work holds up (see the module docstring), gaps closed and led in."""
    fps = ck.fps
    touching = contacts.sustained(ck.non_foot_touching(), max(1, int(round(FLOOR_STRETCH * fps))))
    mask = (touching | support.held | support.raised.any(axis=1) | support.hanging.any(axis=1) | support.slow
            | support.reaching.any(axis=1) | support.keyed)
    if not mask.any():
        return mask
    mask = _grow_while(mask, _low(ck))
    mask = _close_gaps(mask, max(1, int(round(FEET_GAP * fps))))
    lead = max(0, int(round(LEAD * fps)))
    starts = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8)])) == 1)
    for s in starts:
        mask[max(0, s - lead):s] = True
    # Floor work hands the body to the feet once both carry it (a take-over on one foot, just
    # landed from a cartwheel, is the hardest moment to start balancing), within HANDOVER.
    both = ck.foot_contact.all(axis=1)
    wait = max(0, int(round(HANDOVER * fps)))
    ends = np.flatnonzero(np.diff(np.concatenate([mask.astype(np.int8), [0]])) == -1) + 1
    for e in ends:
        t = e
        while t < len(mask) and t - e < wait and not both[t]:
            mask[t] = True
            t += 1
    return mask


def _low(ck) -> np.ndarray:
    """(T,) the centre of mass below LOW_COM of the legs' straight length above the floor: a body
    still getting up (or going down), not yet one its feet alone carry."""
    return ck.com[:, 2] - ck.floor_height < LOW_COM * contacts.straight_legs(ck)


def _grow_while(mask: np.ndarray, also: np.ndarray) -> np.ndarray:
    """``mask`` with each of its runs extended into neighbouring frames where ``also`` holds."""
    out = mask.copy()
    T = len(mask)
    for t in range(1, T):                      # forwards
        if out[t - 1] and also[t]:
            out[t] = True
    for t in range(T - 2, -1, -1):             # backwards
        if out[t + 1] and also[t]:
            out[t] = True
    return out


def _close_gaps(mask: np.ndarray, frames: int) -> np.ndarray:
    """``mask`` with runs of False shorter than ``frames`` filled: between two True runs, or
    between one and the clip's start or end (a hang that begins with the feet down a moment)."""
    out = mask.copy()
    edges = np.flatnonzero(np.diff(np.concatenate([[1], mask.astype(np.int8), [1]])))
    for a, b in zip(edges[0::2], edges[1::2]):        # runs of False: [a, b), True on either side or the end
        if b - a < frames:
            out[a:b] = True
    return out


def kind(mask: np.ndarray) -> str:
    """"feet" (no floor work), "floor" (floor work nearly throughout) or "mixed"."""
    if not mask.any():
        return "feet"
    if (~mask).mean() < MIN_FEET_SHARE:
        return "floor"
    return "mixed"


class MixedSimulator(Simulator):
    """Steps an SrbSimulator where the feet carry the body and a floor.FloorSimulator where
    ``mask`` (per reference frame) says floor work does; one clock, fatigue model, tempo rule and
    event list.  Its Simulator members are those of whichever of the two is stepping now."""

    def __init__(self, srb_sim, floor_sim, mask: np.ndarray):
        self.srb, self.floor, self.mask = srb_sim, floor_sim, mask
        floor_sim.rule = srb_sim.rule           # one tempo and rest rule, one event list
        floor_sim.events = srb_sim.events
        self.active = floor_sim if mask[0] else srb_sim
        self.switches: list[tuple[float, str]] = []     # (time, "floor" | "feet")

    @property
    def on_floor(self) -> bool:
        return self.active is self.floor

    ref = Forwarded("active")
    body = Forwarded("active")
    fatigue = Forwarded("active")
    limbs = Forwarded("active")
    events = Forwarded("active")
    dt = Forwarded("active")
    time = Forwarded("active")
    phase = Forwarded("active")
    fallen = Forwarded("active")
    torque = Forwarded("active")
    residual_moment = Forwarded("active")
    strength_factor = Forwarded("active")
    load_avg = Forwarded("active")
    lag = Forwarded("active")

    def state(self) -> pose_output.SimState:
        return self.active.state()

    @property
    def need_torques(self) -> bool:
        return self.active.need_torques

    @need_torques.setter
    def need_torques(self, value: bool) -> None:
        self.srb.need_torques = value
        self.floor.need_torques = value

    def step(self) -> None:
        want_floor = bool(self.mask[self.active.ref.frame(self.active.phase)])
        if want_floor and not self.on_floor:
            self._hand_over(self.srb, self.floor)
            self.switches.append((self.floor.time, "floor"))
        elif not want_floor and self.on_floor:
            self._hand_over(self.floor, self.srb)
            self.srb.resume_at(self.srb.phase)
            self.switches.append((self.srb.time, "feet"))
        self.active.step()

    def _hand_over(self, old, new) -> None:
        new.time, new.phase = old.time, old.phase
        new.load_avg[:] = old.load_avg
        new.need_torques = old.need_torques
        self.active = new


def mixed_poses(ref, srb_sim, frames, held_up: np.ndarray, fps: float):
    """Full-body poses (root positions, rotations, joint rotations, foot contacts) of a take that
    switches: the SRB's (pose_output.poses) where the feet held the body up, the reference's where
    floor work did, eased over BLEND from the SRB's last pose onto the reference's wherever floor
    work begins (leaving it, the SRB starts from the reference: nothing to ease)."""
    phase = np.array([f.phase for f in frames])
    root_pos, root_rot, joints = ref.clip.sample_many(phase)
    contacts = np.array([ref.sample(ph).contact for ph in phase], dtype=bool)
    feet = np.flatnonzero(~held_up)
    if feet.size:
        slots = srb_sim.limbs.joint_slots if srb_sim.limbs is not None else None
        pos, rot, jnt, con = pose_output.poses(ref, srb_sim.body, [frames[i].state for i in feet], slots)
        root_pos[feet], root_rot[feet], joints[feet], contacts[feet] = pos, rot, jnt, con
    ease = max(1, int(round(BLEND * fps)))
    starts = np.flatnonzero(held_up[1:] & ~held_up[:-1]) + 1
    for k in starts:
        last = k - 1
        ref_pos, ref_rot, ref_joints = ref.clip.sample_many(phase[last:last + 1])
        d_pos = root_pos[last] - ref_pos[0]
        d_rot = quat.multiply(root_rot[last], quat.conjugate(ref_rot[0]))
        d_joints = quat.multiply(joints[last], quat.conjugate(ref_joints[0]))
        end = k
        while end < len(held_up) and held_up[end] and end - k < ease:
            end += 1
        for i in range(k, end):
            w = 1.0 - (i - k + 1) / (ease + 1)
            root_pos[i] = root_pos[i] + w * d_pos
            root_rot[i] = quat.multiply(quat.slerp(quat.IDENTITY, d_rot, w), root_rot[i])
            joints[i] = quat.multiply(quat.slerp(np.broadcast_to(quat.IDENTITY, d_joints.shape), d_joints, w),
                                      joints[i])
    return root_pos, root_rot, joints, contacts
