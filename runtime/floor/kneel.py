"""Kneeling to recover: a rest the legs cannot take standing is taken on the knees.

Why: a leg holding more than its endurance limit recovers at R alone (runtime.fatigue.model),
so a body whose legs must hold a deep or loaded stance to stand may not recover on its feet;
rests that stalled ended with the legs as weak as they began, and the motion after them fell.
An exhausted person stops and kneels or sits down.  Kneeling back on the heels, arms hanging,
the floor carries the body at the knees, shins and feet; the legs carry almost nothing and
recover at r*R.  It is the last resort: standing within the endurance limit recovers too.

The kneel: from the pose the body rests in, down onto both knees over DOWN_S, kneeling until the
legs are back to resume_rc (or their recovery stalls, or the rest of the source needs the
time), then up over UP_S into the source's pose where it stopped, where the SRB takes the body
over again (SrbSimulator.resume_at).  As in floor work (runtime.floor.work) the pose is set and
the static torques of holding it are booked by the fatigue model: getting down and up costs the
legs, kneeling costs them little.  Recorded poses carry the kneel explicitly (SimState.pose).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..body import proxy
from ..fatigue.contract import Forwarded, Simulator
from ..maths import lowpass, quat
from ..maths.ease import smoothstep
from ..motion.clip import Clip
from ..motion.take import Event
from ..reference import pose_output
from ..reference.pose_output import SimState
from ..reference.rigid_body import kin_scale
from ..srb.rest_steps import KNEEL_DOWN_S as DOWN_S, KNEEL_UP_S as UP_S
from .work import static_torques

SAMPLE_FPS = 60.0        # the getting down and up are posed this often
CARRIED = [[j.name for j in proxy.DEFAULT_JOINTS].index(name) for name in ("chest", "neck")]   # a tired trunk and head
HIP_FLEX = math.radians(55.0)     # thighs forward and down to the knees on the floor ...
KNEE_FLEX = math.radians(145.0)   # ... shins folded back flat on the floor ...
ANKLE_POINT = math.radians(80.0)  # ... feet laid back along the floor, the seat over the heels
PELVIS_LEAN = math.radians(3.0)   # the trunk nearly upright over the heels (leaning costs the back) ...
CHEST_BEND = math.radians(5.0)
HEAD_HANG = math.radians(10.0)    # ... the head a little down ...
ARM_REACH = math.radians(8.0)     # ... and the arms hang, the hands by the thighs
ELBOW_BEND = math.radians(25.0)
FOLD_FROM = math.radians(110.0)   # legs folded further rest on themselves: see kneel_path
KNEE_PAD = 0.05          # m (1.62 m body): the knee's centre above the floor it kneels on (the shin's radius)
END_MARGIN = 0.2         # s: a kneel is up this long before a still source moves (or ends)
TOUCH = 0.02             # m (1.62 m body): a knee or foot this near the floor bears on it
LOAD_MEMORY = 0.5        # s: the recent load the tempo rule judges (as SrbSimulator's)
_LATERAL = np.array([0.0, 0.0, 1.0])   # the proxy's right-pointing axis (its frames are y up, x forward)
_UPRIGHT = quat.from_rotvec(np.array([math.pi / 2.0, 0.0, 0.0]))   # proxy y up -> world z up
_SHINS = tuple(f"{side}_knee" for side in ("right", "left"))


@dataclass(frozen=True)
class KneelPath:
    """Poses of getting down or up, sampled at SAMPLE_FPS, and the static joint torques of each."""
    root_pos: np.ndarray      # (N, 3)
    root_rot: np.ndarray      # (N, 4)
    joints: np.ndarray        # (N, J, 4)
    com: np.ndarray           # (N, 3)
    loads: np.ndarray         # (N, DoF) N*m
    duration: float

    def at(self, t: float) -> int:
        return min(int(round(max(t, 0.0) * SAMPLE_FPS)), len(self.com) - 1)


def _about_lateral(angle: float) -> np.ndarray:
    return quat.from_rotvec(_LATERAL * angle)


def kneeling_pose(root_rot: np.ndarray, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kneel's pelvis rotation and joint rotations (proxy order), facing where ``root_rot``
    faces: upright but for PELVIS_LEAN, on both knees, back on the heels, arms hanging."""
    forward = quat.rotate(root_rot, np.array([1.0, 0.0, 0.0]))
    yaw = math.atan2(float(forward[1]), float(forward[0]))
    facing = quat.from_rotvec(np.array([0.0, 0.0, yaw]))
    pelvis = quat.multiply(quat.multiply(facing, _UPRIGHT), _about_lateral(-PELVIS_LEAN))
    knee = np.array([0.0, 0.0, math.sin(-0.5 * KNEE_FLEX), math.cos(-0.5 * KNEE_FLEX)])
    set_to = {"chest": _about_lateral(-CHEST_BEND), "neck": _about_lateral(-HEAD_HANG)}
    for side in ("right", "left"):
        set_to |= {f"{side}_hip": _about_lateral(HIP_FLEX), f"{side}_knee": knee,
                   f"{side}_ankle": _about_lateral(-ANKLE_POINT),
                   f"{side}_shoulder": _about_lateral(ARM_REACH), f"{side}_elbow": _about_lateral(ELBOW_BEND)}
    out = np.array(joints, dtype=float)
    for j, joint in enumerate(proxy.DEFAULT_JOINTS):
        if joint.name in set_to:
            out[j] = set_to[joint.name]
    return pelvis, out


def kneel_path(kin, start: tuple, end: tuple, duration: float, scale: float, floor: float) -> KneelPath:
    """From pose ``start`` to pose ``end`` (root position, root rotation, joint rotations each)
    over ``duration``, eased, with the body lowered or raised so its lowest knee or sole stays
    on the floor the two poses stand on; and what holding each pose costs each joint.

    The static torques of floor work (runtime.floor.work.static_torques), but for the legs: folded
    past FOLD_FROM they rest on themselves, the thighs on the calves, the seat on the heels, the
    feet on their backs on the floor, and their muscles let go (by the fold, eased).  Held by
    muscle above the endurance limit, the 3CC would recover them at R only, not r*R (see the
    module docstring), and the kneel would not rest them."""
    n = max(2, int(round(duration * SAMPLE_FPS)) + 1)
    u = np.array([smoothstep(i / (n - 1)) for i in range(n)])
    root_pos = start[0][None] + u[:, None] * (end[0] - start[0])[None]
    root_rot = quat.slerp(np.broadcast_to(start[1], (n, 4)), np.broadcast_to(end[1], (n, 4)), u)
    joints = quat.slerp(np.broadcast_to(start[2], (n,) + start[2].shape),
                        np.broadcast_to(end[2], (n,) + end[2].shape), u[:, None])
    joints = quat.make_continuous(joints)
    ck = kin.analyse(Clip(name="kneel", fps=SAMPLE_FPS, root_pos=root_pos, root_rot=root_rot,
                          joint_rots=joints, loop=False))
    shins = [ck.link_names.index(name) for name in _SHINS]
    feet = [ck.link_names.index(name) for name in proxy.FOOT_LINKS]
    soles = ck.sole[..., 2].min(axis=2)                                  # (N, 2)
    knees = ck.joint_pos[:, shins, 2] - KNEE_PAD * scale                 # (N, 2)
    lowest = np.minimum(soles.min(axis=1), knees.min(axis=1))
    dz = floor - lowest
    lift = np.array([0.0, 0.0, 1.0]) * dz[:, None]
    touching = np.zeros_like(ck.touching)
    near = TOUCH * scale
    touching[:, shins] = knees + dz[:, None] - floor < near
    touching[:, feet] = soles + dz[:, None] - floor < near
    com = ck.com + lift
    ck = replace(ck, link_pos=ck.link_pos + lift[:, None], joint_pos=ck.joint_pos + lift[:, None],
                 sole=ck.sole + lift[:, None, None], com=com, floor_height=floor, touching=touching,
                 foot_contact=touching[:, feet])
    acc = lowpass.derivative(lowpass.derivative(com, SAMPLE_FPS), SAMPLE_FPS)
    loads = static_torques(ck, acc)
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    fold = np.zeros(n)
    for side in ("right", "left"):
        j = names.index(f"{side}_knee")
        flex = -quat.hinge_angle(joints[:, j])
        fold = np.maximum(fold, [smoothstep(f) for f in (flex - FOLD_FROM) / (KNEE_FLEX - FOLD_FROM)])
    legs = np.array(proxy.dof_body_parts()) == "legs"
    loads[:, legs] *= (1.0 - fold)[:, None]
    return KneelPath(root_pos + lift, root_rot, joints, com, loads, duration)


def sole_level(kin, pose: tuple) -> float:
    """Height of the lowest sole corner of ``pose`` (root position, rotation, joint rotations):
    the floor a body standing in it stands on."""
    two = lambda a: np.repeat(np.asarray(a, dtype=float)[None], 2, axis=0)     # (a clip needs two frames)
    ck = kin.analyse(Clip(name="pose", fps=SAMPLE_FPS, root_pos=two(pose[0]), root_rot=two(pose[1]),
                          joint_rots=two(pose[2]), loop=False))
    return float(ck.sole[0, ..., 2].min())


class KneelingRests(Simulator):
    """Wraps the simulator of a take on its feet (an SrbSimulator or stretches.MixedSimulator):
    steps it, and takes the body down on its knees when it asks to (``kneel_wanted``, set by
    runtime.srb.rest_steps.decide_rest), stepping the kneel itself until the body is back up.
    Its Simulator members are the wrapped simulator's, the kneel's clock, torques and state while
    it kneels."""

    def __init__(self, inner: Simulator, kin):
        self.inner, self.kin, self.kneel, self.kneels = inner, kin, None, 0
        self.srb.can_kneel = True

    @property
    def srb(self):
        """The SrbSimulator on the feet (the wrapped one, or a MixedSimulator's)."""
        return getattr(self.inner, "srb", self.inner)

    ref = Forwarded("inner")
    body = Forwarded("inner")
    fatigue = Forwarded("inner")
    limbs = Forwarded("inner")
    events = Forwarded("inner")
    dt = Forwarded("inner")
    fallen = Forwarded("inner")
    load_avg = Forwarded("inner")
    lag = Forwarded("inner")
    on_floor = Forwarded("inner")
    need_torques = Forwarded("inner", settable=True)

    @property
    def kneeling(self) -> bool:
        return self.kneel is not None

    @property
    def time(self) -> float:
        return self.kneel.time if self.kneel is not None else self.inner.time

    @property
    def phase(self) -> float:
        return self.kneel.phase if self.kneel is not None else self.inner.phase

    def step(self) -> None:
        if self.kneel is None:
            self.inner.step()
            srb = self.srb
            if getattr(srb, "kneel_wanted", False) and not self.inner.fallen:
                srb.kneel_wanted = False
                self.kneel = Kneel(srb, self.kin)
                self.kneels += 1
            return
        if self.kneel.step():
            self.kneel.hand_back()
            self.kneel = None

    def state(self) -> SimState:
        return self.kneel.state() if self.kneel is not None else self.inner.state()

    @property
    def torque(self) -> np.ndarray:
        return self.kneel.torque if self.kneel is not None else self.inner.torque

    @property
    def residual_moment(self) -> np.ndarray:
        return np.zeros(3) if self.kneel is not None else self.inner.residual_moment

    @property
    def strength_factor(self) -> np.ndarray:
        return np.ones(len(self.srb.body.tau_max)) if self.kneel is not None else self.inner.strength_factor


class Kneel:
    """One kneel of an SrbSimulator ``srb`` that is resting: down, kneeling, up (see the module
    docstring), on the simulator's clock, fatigue model and tempo rule."""

    def __init__(self, srb, kin):
        self.srb, self.kin = srb, kin
        body, ref = srb.body, srb.ref
        self.time, self.phase, self.dt = srb.time, srb.phase, srb.dt
        self.scale = kin_scale(body)
        slots = srb.limbs.joint_slots if srb.limbs is not None else None
        start = pose_output.pose(ref, body, srb.state(), slots)
        self.start = tuple(np.asarray(a, dtype=float) for a in start)
        self.floor = sole_level(kin, self.start)
        rot, joints = kneeling_pose(self.start[1], self.start[2])
        self.path = kneel_path(kin, self.start, (self.start[0].copy(), rot, joints), DOWN_S, self.scale, self.floor)
        self.kneeling = (self.path.root_pos[-1], self.path.root_rot[-1], self.path.joints[-1])
        self.kneeling_com = self.path.com[-1]
        self.load_blend = min(1.0, self.dt / LOAD_MEMORY)
        self.stage, self.began = "down", self.time
        self.torque = np.zeros(len(body.tau_max))
        self.load_avg = srb.load_avg.copy()
        self.best, self.best_time = 1.0, self.time
        self.reason = None
        self.moving_frames = np.flatnonzero(~np.asarray(ref.still, dtype=bool))   # source frames that do not stand still
        # How the tired trunk and head hung off the source's pose when the body went down: they
        # come up hanging so (the SRB's limbs take them over there, without a jolt).
        keyed = np.asarray(ref.clip.sample(self.phase)[2], dtype=float)
        self.hanging = quat.multiply(quat.conjugate(keyed[CARRIED]), self.start[2][CARRIED])
        srb.events.append(Event(self.time, "kneel"))

    def legs_rc(self) -> float:
        return float(self.srb.fatigue.model.residual_capacity[self.srb.leg_dofs].min())

    def step(self) -> bool:
        """One simulation step; True once the body is back up."""
        srb, t = self.srb, self.time - self.began
        if self.stage == "hold":
            loads = self.path.loads[-1]
        else:
            loads = self.path.loads[self.path.at(t)]
        tau_max = srb.body.tau_max
        torque = srb.fatigue.step_torque(loads, tau_max, self.time, self.dt)
        self.load_avg += (np.minimum(torque / tau_max, 1.0) - self.load_avg) * self.load_blend
        self.torque = torque
        self.time += self.dt
        t += self.dt
        self._play_still()
        if self.stage == "down" and t >= self.path.duration:
            self.stage, self.began = "hold", self.time
            self.best, self.best_time = self.legs_rc(), self.time
        elif self.stage == "hold":
            self.reason = self._hold_over()
            if self.reason is not None:
                end = tuple(np.asarray(a, dtype=float) for a in srb.ref.clip.sample(self.phase))
                end[2][CARRIED] = quat.multiply(end[2][CARRIED], self.hanging)
                self.path = kneel_path(self.kin, self.kneeling, end, UP_S, self.scale, self.floor)
                self.stage, self.began = "up", self.time
        elif self.stage == "up" and t >= self.path.duration:
            return True
        return False

    def _hold_over(self) -> str | None:
        """Why the kneel ends now: the legs "recovered" (back to resume_rc), "recovery stalled",
        or "the performance goes on" (the rest of the source needs the time); None: kneel on."""
        srb, rule, s = self.srb, self.srb.rule, self.srb.s
        rc = self.legs_rc()
        if rc >= s.resume_rc:
            return "recovered"
        if rc > self.best + 0.01:
            self.best, self.best_time = rc, self.time
        if self.time - self.best_time > s.rest_stall:
            return "recovery stalled"
        if rule.performance_goes_on(self.phase, self.time + UP_S):
            return "the performance goes on"
        if srb.ref.still[srb.ref.frame(self.phase)] and self._still_left() <= UP_S + END_MARGIN:
            return "the motion goes on"
        return None

    def _still_left(self) -> float:
        """Seconds of source from the phase on in which the body stands still (reference.still)."""
        ref = self.srb.ref
        k = int(np.searchsorted(self.moving_frames, ref.frame(self.phase)))
        j = int(self.moving_frames[k]) if k < len(self.moving_frames) else len(ref.still)
        return max(min(j / ref.clip.fps, ref.duration) - self.phase, 0.0)

    def _play_still(self) -> None:
        """A source that stands still plays on while the body kneels (nothing is missed: as a
        standing body stands easy), up to END_MARGIN before its motion resumes."""
        ref = self.srb.ref
        if ref.still[ref.frame(self.phase)] and self._still_left() > END_MARGIN:
            self.phase = min(self.phase + self.dt, ref.duration)

    def state(self) -> SimState:
        if self.stage == "hold":
            pose, com = self.kneeling, self.kneeling_com
        else:
            i = self.path.at(self.time - self.began)
            pose = (self.path.root_pos[i], self.path.root_rot[i], self.path.joints[i])
            com = self.path.com[i]
        return SimState(self.phase, com.copy(), pose[1].copy(), np.zeros((2, 3)), np.array([True, True]), True,
                        None, 0.0, 0.0, pose=tuple(a.copy() for a in pose))

    def hand_back(self) -> None:
        """The body is up in the source's pose at the phase it stopped: the SRB takes it from
        there (its clock, fatigue and tempo rule go on), and the rest ends."""
        srb = self.srb
        srb.time = self.time
        srb.resume_at(self.phase, self.path.joints[-1])
        srb.load_avg[:] = self.load_avg
        if srb.posture is not None:
            srb.posture.bend = 0.0
        srb.rule.end_rest(self.reason, self.time, self.phase)

