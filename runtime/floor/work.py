"""Floor work: a body held up by more than its feet on the floor: hands, knees or back (rolls,
crawls, get-ups), or something the clip does not show (a seat, a step or box, a bar it hangs
from; see held_elsewhere, raised_feet, hanging_hands).

Foot contacts on the one simulated floor cannot carry such a clip, so its pelvis and pose follow
the reference (runtime.simulate).  What still acts is the load: the body's weight rests on whatever touches
the floor, and every joint carries the weight of the links beyond it less what the floor takes
of them.  A crawler's arms, trunk and knees hold it up; a get-up pushes through a hand; a raised
arm holds itself.  These static joint torques are booked by the same fatigue model as every other
torque, so the working limbs tire, the motion slows and the character pauses, on all fours or on
its back, until they have recovered.  (Before, the upper body was simulated hanging from the
pelvis with no floor under it: a crawler's trunk held its arms and head out like a cantilever
while its knees and hands carried nothing.)

Per frame: vertical support forces f_i >= 0 at the floor points of the touching links that carry
the body's weight m (g + a_z) and balance it about its centre of mass, in the least-squares sense
(a centre of mass beyond the support gets the nearest balance).  Joint o then carries
sum over the links l beyond it of (x_l - o) x (-m_l (g + a_z) z) plus, over the supports beyond
it, (x_i - o) x f_i z, on each of its axes (its child link's frame; a knee or elbow its hinge).
"""
from __future__ import annotations

import numpy as np

from ..body import proxy
from ..fatigue.contract import Simulator
from ..fatigue.tempo import relative_effort, TempoRule, weakest_loaded
from ..maths import lowpass, quat
from ..motion.clip import REVOLUTE_AXIS
from ..reference.pose_output import SimState
from ..reference.support import GRAVITY, SEAT_LINKS, Support
from ..srb.simulator import SrbSettings

SHARE_REGULARISER = 1e-5    # among balances that carry the weight, the most even (unique, never one link per side)
SUSTAINED = 0.1             # s: Gaussian width over which loads count (an impact is passive)
RESTFUL_LOAD = 0.1          # a pose where no joint holds more than this share of its strength can be rested in
PARENT = {"chest": "root", "neck": "chest", "right_shoulder": "chest", "left_shoulder": "chest",
          **{f"{side}_{child}": f"{side}_{parent}" for side in ("right", "left")
             for child, parent in (("knee", "hip"), ("ankle", "knee"), ("elbow", "shoulder"), ("wrist", "elbow"))},
          "right_hip": "root", "left_hip": "root"}


def _beyond(names: tuple[str, ...]) -> dict[str, list[int]]:
    """Per actuated joint (named like its child link), the links on its far side from the pelvis."""
    def chain(link):
        while link in PARENT:
            yield link
            link = PARENT[link]
    out = {j.name: [] for j in proxy.DEFAULT_JOINTS}
    for i, name in enumerate(names):
        for link in chain(name):
            if link in out:
                out[link].append(i)
    return out


def support_shares(points: np.ndarray, com: np.ndarray, weight: float) -> np.ndarray:
    """Vertical forces (N, >= 0) at ``points`` (n, 2: floor xy) that sum to ``weight`` and balance
    about ``com`` (xy), least squares."""
    n = len(points)
    if n == 0 or weight <= 0.0:
        return np.zeros(n)
    scale = 1.0 / weight
    A = np.vstack([np.ones(n), (points - com).T])        # total; moment about the COM (x, y)
    b = np.array([1.0, 0.0, 0.0])
    G = A.T @ A + SHARE_REGULARISER * np.eye(n)
    import quadprog    # compiled wheel: imported when a take runs, never at register

    f = quadprog.solve_qp(G, A.T @ b, np.eye(n), np.zeros(n), 0)[0]
    return np.maximum(f, 0.0) / scale


def static_torques(ck, com_acc: np.ndarray, support: Support | None = None) -> np.ndarray:
    """(T, DoF) torque magnitudes (N*m, actuator order) that holding each pose of the clip
    (ClipKinematics ``ck``) costs: the weight of the links beyond each joint less the floor's
    share of it (see the module docstring), sustained (low-passed over SUSTAINED: a roll landing
    on a shoulder spikes the load for a few hundredths of a second, which bone and soft tissue
    take, not muscle).  ``support``: unseen supports, which carry the body where they hold it
    (a seat at the pelvis and thighs, a step under the feet, a bar in the hands)."""
    beyond = _beyond(ck.link_names)
    seat = [ck.link_names.index(n) for n in SEAT_LINKS if n in ck.link_names]
    feet = [ck.link_names.index(n) for n in proxy.FOOT_LINKS if n in ck.link_names]
    hands = [ck.link_names.index(n) for n in proxy.HAND_LINKS if n in ck.link_names]
    slot = {name: i for i, name in enumerate(ck.link_names)}
    joints = [j for j in proxy.DEFAULT_JOINTS if j.name in slot]   # a skeleton without one holds nothing there
    columns, d = [], 0
    for j in proxy.DEFAULT_JOINTS:
        if j.name in slot:
            columns.append((d, j.dofs))
        d += j.dofs
    frames, links = ck.link_pos.shape[:2]
    member = np.zeros((len(joints), links))                     # joint x link: the link lies beyond it
    for a, j in enumerate(joints):
        member[a, beyond[j.name]] = 1.0
    where = [slot[j.name] for j in joints]
    axes = quat.to_matrix(ck.link_rot[:, where])                 # (T, J, 3, 3): each joint's axes (columns)
    origins = ck.joint_pos[:, where]                             # (T, J, 3)
    scale = np.maximum(GRAVITY + com_acc[:, 2], 0.0)            # (T,) effective gravity
    out = np.zeros((frames, d))
    for t in range(frames):
        load = -ck.link_mass * scale[t]                          # (L,) vertical force on each link
        points = ck.link_pos[t, :, :2]
        mask = member
        touching = np.flatnonzero(ck.touching[t])
        if support is not None:
            unseen = ((seat if support.held[t] else [])
                      + [foot for foot, up in zip(feet, support.raised[t]) if up]
                      + [hand for hand, up in zip(hands, support.hanging[t]) if up]
                      + np.flatnonzero(support.reaching[t]).tolist())
            if unseen:
                touching = np.union1d(touching, unseen)
        if touching.size:
            shares = support_shares(points[touching], ck.com[t, :2], float(ck.link_mass.sum() * scale[t]))
            points = np.vstack([points, points[touching]])      # each support under its link
            load = np.concatenate([load, shares])
            mask = np.hstack([member, member[:, touching]])
        # (x - o) x (0, 0, f) = (ly f, -lx f, 0), summed over what lies beyond each joint.
        weighted = mask * load
        lever_x = points[None, :, 0] - origins[t, :, 0, None]
        lever_y = points[None, :, 1] - origins[t, :, 1, None]
        mx = (weighted * lever_y).sum(axis=1)
        my = -(weighted * lever_x).sum(axis=1)
        about = mx[:, None] * axes[t, :, 0, :] + my[:, None] * axes[t, :, 1, :]   # moment @ R, per joint
        for a, (start, dofs) in enumerate(columns):
            if dofs == 3:
                out[t, start:start + 3] = about[a]
            else:
                out[t, start] = about[a] @ REVOLUTE_AXIS
    return lowpass.smooth(np.abs(out), ck.fps, width=SUSTAINED)


class FloorSimulator(Simulator):
    """Floor work's simulator: pelvis and pose on the reference, the static joint torques of each
    pose booked, and the tempo rule (tempo.TempoRule) driven by whichever joints carry the load
    (not only the legs).  It records the same state and events as runtime.srb.simulator.SrbSimulator, so
    runtime.simulate records either alike."""

    on_floor = True             # floor work holds the body up throughout

    def __init__(self, ref, body, loads: np.ndarray, fatigue=None, settings=None):
        self.ref, self.body = ref, body
        self.fatigue = fatigue              # runtime.fatigue.schedule.ScheduledModel or None
        self.s = settings or SrbSettings()
        self.loads = loads                  # static_torques of the reference, per frame
        # Where resting helps: a pose that costs every joint little (lying, sitting).  Held on
        # all fours the tired arms and trunk kept their load and never recovered: a crawl that
        # stopped to rest stood still, then went on, every 2 s.  Elsewhere the motion only slows.
        self.restful = (loads / body.tau_max).max(axis=1) < RESTFUL_LOAD
        self.dt = 1.0 / self.s.rate
        self.time = 0.0
        self.phase = 0.0
        self.p = ref.com[0].copy()
        self.q = ref.rot[0].copy()
        self.stance = np.array([bool(c) for c in ref.contact[0]])
        n = len(body.tau_max)
        self.torque = np.zeros(n)
        self.load_avg = np.zeros(n)
        self.load_blend = min(1.0, self.dt / 0.5)
        self.strength_factor = np.ones(n)   # no eccentric strength: nothing is simulated to sink
        self.residual_moment = np.zeros(3)
        self.lag = np.zeros(3)
        self.limbs = None
        self.fallen = False
        self.need_torques = True
        self.events: list = []
        self.rule = TempoRule(self.s, self.events, self.ref.duration)

    def step(self) -> None:
        ref, rule = self.ref, self.rule
        rate = 0.0 if rule.resting else rule.tempo
        self.phase = min(self.phase + rate * self.dt, ref.duration)
        r = ref.sample(self.phase)
        self.p = r.com.copy()
        self.q = r.rot.copy()
        self.stance = np.array([bool(c) for c in r.contact])
        torque = self.loads[ref.frame(self.phase)]
        if self.fatigue is not None:
            torque = self.fatigue.step_torque(torque, self.body.tau_max, self.time, self.dt)
            self.load_avg += (np.minimum(torque / self.body.tau_max, 1.0) - self.load_avg) * self.load_blend
            self._update_tempo()
        self.torque = torque
        self.time += self.dt

    def _update_tempo(self) -> None:
        """The tempo rule on every joint that carries load: slow down as they tire; when they
        cannot go on, rest at the next pose that costs little (``restful``); resume once they
        could carry the motion again or recovery has stalled."""
        rule = self.rule
        rc = self.fatigue.model.residual_capacity
        weakest = weakest_loaded(rc, self.load_avg)
        ended = self.phase >= self.ref.duration - 1e-9
        if rule.resting:
            reason = rule.rest_over(weakest, ended, self.time, self.phase)
            if reason is not None:
                rule.end_rest(reason, self.time, self.phase)
            return
        rule.pace(weakest, relative_effort(self.load_avg, rc), self.phase, self.time, self.dt)
        restful = bool(self.restful[self.ref.frame(self.phase)])
        if rule.cannot_go_on(weakest) and restful and rule.may_rest(self.phase, ended, self.time):
            rule.begin_rest(weakest, self.time)

    def state(self) -> SimState:
        """The pose's state (pose_output.SimState): the reference's at the current phase."""
        return SimState(self.phase, self.p.copy(), self.q.copy(), np.zeros((2, 3)), self.stance.copy(),
                        self.rule.resting, None, 0.0)
