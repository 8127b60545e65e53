"""SRB training environment: episodes of a clip under random fatigue, the policy's reward.

Episodes run the same SrbSimulator the bake runs (without the PyBullet upper body: it does not
move the centre of mass), so what the policy learns is what it meets at bake time.  Fatigue is
randomised per episode (fresh, or a fitness, speed-up and starting fatigue drawn at random) so one
policy serves many fitness levels, and the observation carries it (runtime.srb.policy.observe).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..calibration import take_strength
from ..body import proxy
from ..engines.pybullet.kinematics import Kinematics
from ..errors import TrainingClipError
from ..fatigue import schedule
from ..maths import quat
from ..motion import clip as clips
from ..reference import playback, pose_output
from ..reference.prepare import prepare as setup_chain
from ..reference.reference import Reference
from ..reference.rigid_body import Body
from ..srb import policy as pol
from ..srb import simulator as srb
from . import clip_cache

LEG_SLOTS = [slot for leg in pose_output.LEG_SLOTS for slot in leg]

EPISODE_SECONDS = 8.0
FRESH_SHARE = 0.25                  # episodes without fatigue
TIME_SCALE_RANGE = (5.0, 40.0)      # fatigue speed-ups drawn (log-uniform)
INITIAL_FATIGUE_MAX = 0.4
AUGMENT_SPEEDS = (0.8, 1.25)        # --augment: each clip also mirrored and played this much faster
ACTION_PENALTY = 0.1                # per unit mean squared action (0.02 before 2026-11-23)
FALL_REWARD = -10.0                 # a fall ends the episode: worth about 10 steps of tracking
FAMILIAR_PERCENTILE = 99.0          # of training observations: where a policy's corrections start to fade
FAMILIAR_STEPS = 6000               # control steps (200 s) of rollouts that measure it
SEGMENT_SECONDS = 10.0              # a long performance trains in pieces this long (segments)
# Reward weights: the pose is what an animator sees, the centre of mass what keeps the body up.
POSE_WEIGHT, COM_WEIGHT, COM_VEL_WEIGHT, ALIVE_WEIGHT = 0.4, 0.3, 0.2, 0.1
POSE_SIGMA = 0.15                   # rad: rms leg-and-pelvis angle error at which the pose term is 1/e
EFFORT_WEIGHT = 0.2                 # per unit mean (tau / (RC * tau_max))^2 over the leg DoFs (tired episodes)
PROGRESS_WEIGHT = 0.2               # per control step played at full speed: a rest or a slower tempo earns less
REWARD_TERMS = (f"{POSE_WEIGHT:g} exp(-mean(angle(leg joints and pelvis, reference at the current phase)^2) / "
                f"{POSE_SIGMA:g}^2) + {COM_WEIGHT:g} exp(-|COM position error / scale|^2 / 0.08^2) "
                f"+ {COM_VEL_WEIGHT:g} exp(-|COM velocity error|^2 / 0.6^2) + {ALIVE_WEIGHT:g} (alive) "
                f"- {EFFORT_WEIGHT:g} mean over leg DoFs (tau / (RC tau_max))^2 (under fatigue) "
                f"+ {PROGRESS_WEIGHT:g} min(source seconds played / seconds taken, 1) "
                "- ACTION_PENALTY * mean squared action applied; a fall: FALL_REWARD, the episode ends")


@dataclass
class PreparedClip:
    name: str
    ref: Reference
    body: Body          # with the clip's calibrated strength


def variants(names: list[str], augment: bool) -> list[tuple[str, bool, float]]:
    """(clip, mirrored, speed) to train on: each clip as it is, and with ``augment`` also mirrored
    and played at AUGMENT_SPEEDS (a general policy should not care which side leads or how fast)."""
    out = []
    for name in names:
        out.append((name, False, 1.0))
        if augment:
            out.append((name, True, 1.0))
            out.extend((name, False, speed) for speed in AUGMENT_SPEEDS)
    return out


def load_source(name: str) -> tuple[clips.Clip, float, object, float]:
    """(clip, height, proportions, mass) of a training source: a DeepMimic clip by name (the default
    humanoid), or a corpus action cached as the bake's request (a path ending in .npz,
    runtime.train.clip_cache: the character's own height and proportions)."""
    if name.endswith(".npz"):
        req = clip_cache.load(name)
        return req.clip, float(req.height), req.plan, float(req.mass)
    return clips.load_deepmimic(clips.deepmimic_clip_path(name)), proxy.DEFAULT_HEIGHT, None, proxy.DEFAULT_MASS


def segments(clip: clips.Clip, seconds: float = SEGMENT_SECONDS) -> list[clips.Clip]:
    """A long performance as consecutive pieces of about ``seconds`` (episodes start at a piece's
    first frame, so every stretch of a long take is trained on, not only its opening)."""
    if clip.loop or clip.duration <= 1.5 * seconds:
        return [clip]
    step = int(round(seconds * clip.fps))
    n = max(1, int(round((clip.frames - 1) / step)))
    ends = [k * step for k in range(n)] + [clip.frames - 1]     # the last piece takes the remainder
    return [replace(clip, name=f"{clip.name}#{k}", root_pos=clip.root_pos[a:b + 1], root_rot=clip.root_rot[a:b + 1],
                    joint_rots=clip.joint_rots[a:b + 1]) for k, (a, b) in enumerate(zip(ends, ends[1:]))]


def prepare(name: str, seconds: float = EPISODE_SECONDS, mirror: bool = False, speed: float = 1.0,
            piece: int | None = None) -> PreparedClip:
    """Reference and strength of a training source (load_source; mirrored, played ``speed`` times
    faster, ``piece`` of its segments), as simulate() would make them: at the character's height
    and proportions, a slow-motion capture at the speed it was performed."""
    clip, height, plan, mass = load_source(name)
    if piece is not None:
        clip = segments(clip)[piece]
    if mirror:
        clip = clip.mirrored()
    if speed != 1.0:
        clip = replace(clip, name=f"{clip.name}@{speed:g}x", fps=clip.fps * speed)
    source = clip.repeated(seconds) if clip.loop else clip
    with Kinematics(height, plan) as kin:
        k = playback.slowdown(kin.analyse(source))
        if k is not None:
            clip, source = clip.played_faster(k), source.played_faster(k)
        prepared = setup_chain(source, kin, mass)
        ref, body = prepared.ref, prepared.body
        if prepared.support.floor_work:
            raise TrainingClipError(f"clip {name!r} is floor work (held up by more than its feet on the floor): "
                                    "the SRB follows its reference and no policy acts; leave it out of --clips")
        tau_max = take_strength(clip, source, ref, body, None, False)
    return PreparedClip(clip.name, ref, replace(body, tau_max=tau_max))


def pose_error(sim: srb.SrbSimulator) -> float:
    """Mean squared angle (rad^2) of the legs' joints and the pelvis from the reference's at the
    current phase: the pose the bake would output now (runtime.reference.pose_output), where the
    policy's landing and velocity shifts show (the upper body follows the reference here)."""
    _, root_rot, joints = pose_output.pose(sim.ref, sim.body, sim.state())
    _, ref_rot, ref_joints = sim.ref.clip.sample(min(sim.phase, sim.ref.duration))
    angles = quat.angle_between(np.vstack([joints[LEG_SLOTS], root_rot[None]]),
                                np.vstack([ref_joints[LEG_SLOTS], ref_rot[None]]))
    return float(np.mean(angles ** 2))


def effort(sim: srb.SrbSimulator) -> float:
    """Fatigue-weighted effort of the legs, mean (tau / (RC * tau_max))^2: a tired joint's torque
    costs more.  0 for a fresh body (its leg torques are not computed in training)."""
    if sim.fatigue is None:
        return 0.0
    legs = sim.leg_dofs
    rc = sim.fatigue.model.residual_capacity[legs]
    load = sim.torque[legs] / (np.maximum(rc, 1e-3) * sim.body.tau_max[legs])
    return float(np.mean(load ** 2))


def reward(sim: srb.SrbSimulator, action: np.ndarray, progress: float = 1.0,
           action_penalty: float = ACTION_PENALTY) -> float:
    """Track the reference's pose (legs and pelvis) and centre of mass (position, then velocity)
    where the body is in the source now (being late costs only ``progress``: the share of real
    time the source advanced), stay up, spend a tired body's strength sparingly, play the
    performance on, act gently (REWARD_TERMS)."""
    ref = sim.ref
    r = ref.sample(min(sim.phase, ref.duration))
    rate = 0.0 if sim.resting else sim.tempo
    scale = sim.body.height / 1.62
    e_p = (sim.p - sim.com_target(r)) / scale
    e_v = sim.v - sim.rule_velocity(r, rate)
    # The action penalty keeps the rule wherever a correction does not pay: on clips it never saw
    # the rule is the safe bet.
    return (POSE_WEIGHT * math.exp(-pose_error(sim) / POSE_SIGMA ** 2)
            + COM_WEIGHT * math.exp(-float(e_p @ e_p) / 0.08 ** 2)
            + COM_VEL_WEIGHT * math.exp(-float(e_v @ e_v) / 0.6 ** 2)
            + ALIVE_WEIGHT - EFFORT_WEIGHT * effort(sim) + PROGRESS_WEIGHT * min(max(progress, 0.0), 1.0)
            - action_penalty * float(action @ action) / len(action))


class SrbEnv:
    """One episode at a time over ``prepared`` clips; ``reset`` then ``step(action)``."""

    def __init__(self, prepared: list[PreparedClip], kind: str, seed: int,
                 episode_seconds: float = EPISODE_SECONDS, gate: tuple[float, float] | None = None,
                 action_penalty: float = ACTION_PENALTY):
        if kind not in pol.KINDS:
            raise ValueError(f"observation kind {kind!r}: use one of {pol.KINDS}")
        self.prepared, self.kind, self.gate, self.action_penalty = prepared, kind, gate, action_penalty
        self.share = 0.0        # how much of its action the gate let the policy apply, the last step
        self.rng = np.random.default_rng(seed)
        self.episode_seconds = episode_seconds
        self.sim: srb.SrbSimulator | None = None
        self.clip_name = ""

    def reset(self) -> np.ndarray:
        item = self.prepared[int(self.rng.integers(len(self.prepared)))]
        model = None
        if self.rng.random() >= FRESH_SHARE:
            lo, hi = (math.log(v) for v in TIME_SCALE_RANGE)
            sched = schedule.from_fitness(float(self.rng.random()), fps=30.0,
                                          time_scale=math.exp(self.rng.uniform(lo, hi)),
                                          initial_fatigue=float(self.rng.uniform(0.0, INITIAL_FATIGUE_MAX)))
            model = schedule.ScheduledModel(sched)
        sim = srb.SrbSimulator(item.ref, item.body, model, srb.SrbSettings())
        sim.need_torques = False
        pol.attach(sim, _Held)      # the env sets the corrections; the simulator applies them
        self.sim, self.clip_name = sim, item.name
        return pol.observe(sim, self.kind)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool]:
        """Apply ``action`` for one control step (scaled by the fatigue gate, as the bake does):
        (observation, reward, fell, episode over)."""
        sim = self.sim
        self.share = pol.fatigue_gate(self.gate, pol.legs_capacity(sim))
        action = self.share * np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        pol.apply(sim, action)
        phase, time = sim.phase, sim.time
        for _ in range(sim.control_every):
            sim.step()
            if sim.fallen:
                break
        fell = sim.fallen
        over = fell or sim.phase >= sim.ref.duration - 1e-9 or sim.time >= self.episode_seconds
        progress = (sim.phase - phase) / max(sim.time - time, 1e-9)
        r = FALL_REWARD if fell else reward(sim, action, progress, self.action_penalty)
        return pol.observe(sim, self.kind), r, fell, over


def prepare_all(names: list[str], augment: bool = False) -> list[PreparedClip]:
    """Every training variant of ``names`` (see variants), each long performance in its pieces
    (see segments), prepared; a variant or piece that is floor work is left out (a jump played
    slower can look held up by something unseen), the rest trains."""
    out = []
    for name, mirror, speed in variants(names, augment):
        pieces = len(segments(load_source(name)[0]))
        for k in range(pieces):
            try:
                out.append(prepare(name, mirror=mirror, speed=speed, piece=k if pieces > 1 else None))
            except TrainingClipError:
                continue
    return out


def familiar_z2(mlp: pol.Mlp, kind: str, prepared: list[PreparedClip], steps: int = FAMILIAR_STEPS,
                seed: int = 0, gate: tuple[float, float] | None = None) -> list[float]:
    """Familiarity bounds for a model card (see runtime.srb.policy): the 99th percentile of the
    unfamiliarity of what the policy sees over ``steps`` control steps of rollouts of its training
    clips (where its ``gate`` lets it act), under the training's random fatigue and acting with its
    mean action, and twice that."""
    env = SrbEnv(prepared, kind, seed, gate=gate)
    seen = []
    obs = env.reset()
    for _ in range(10 * steps):           # a gated policy is silent, and not measured, on a fresh body
        if len(seen) >= steps:
            break
        looked = pol.unfamiliarity(mlp, obs)
        obs, _, _, over = env.step(mlp(obs))
        if env.share > 0.0:
            seen.append(looked)
        if over:
            obs = env.reset()
    low = float(np.percentile(seen, FAMILIAR_PERCENTILE))
    return [low, 2.0 * low]


def mean_reward(mlp: pol.Mlp | None, kind: str, prepared: list[PreparedClip], episodes: int,
                seed: int = 0, gate: tuple[float, float] | None = None, action_penalty: float = ACTION_PENALTY) -> dict:
    """Reward per control step and falls over the same ``episodes`` (same clips, fatigue and
    starts for any policy) acting with ``mlp``'s mean action, or as the rule alone (None): the
    learning signal without the exploration noise of the training curve."""
    env = SrbEnv(prepared, kind, seed, gate=gate, action_penalty=action_penalty)
    total, steps, falls = 0.0, 0, 0
    rule = np.zeros(pol.ACTION_SIZE)
    for _ in range(episodes):
        obs, over = env.reset(), False
        while not over:
            obs, r, fell, over = env.step(rule if mlp is None else mlp(obs))
            total, steps, falls = total + r, steps + 1, falls + int(fell)
    return {"reward_per_step": total / max(steps, 1), "steps": steps, "falls": falls, "episodes": episodes}


class _Held:
    """Stands in for a policy between control steps: keeps the corrections the env applied."""

    @staticmethod
    def control(sim) -> None:
        return None
