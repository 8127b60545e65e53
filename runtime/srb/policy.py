"""Shipped SRB policies, run by numpy at bake time: what they observe, what they do, the MLP.

Why a policy: the SRB's one-step QP cannot plan, and a fixed Raibert rule places the feet the same
way fresh or tired.  The seed ("Adaptive Tracking of a Single-Rigid-Body Character") learns where
to put the next foot and how fast the body should go; here the policy also sees fatigue (the legs'
residual capacity and the fitness triplet F, R, r) so it can adapt to a tired body.

The policy acts at POLICY_RATE on top of the rule (it outputs corrections, zero = the rule):
- ``landing``: a shift (heading frame, metres / ``LANDING_SCALE``) of each swing foot's landing
  point, added to the Raibert correction;
- ``velocity``: a shift (heading frame, m/s / ``VELOCITY_SCALE``) of the COM velocity target;
- ``tempo`` (cards with ACTION_SIZE actions): how much of the tempo rule's tempo a moving body
  keeps, 1 + TEMPO_SCALE * a for a in [-1, 0] (a tired body may pace itself slower than the rule;
  a positive action keeps the rule's tempo).  Older cards have the first LANDING_VELOCITY actions.

Fatigue gate: a card may say the policy acts only on a tired body (``gate.fatigue_rc``: its
corrections grow from nothing where the legs' weakest residual capacity falls below the first value
to all of them at the second).  A fresh body then follows the rule exactly (the rule tracks a fresh
take to millimetres; a policy that always corrects costs fresh takes accuracy), and the policy costs
nothing while the body is fresh.

Two kinds of observation: "phase" (a per-clip policy knows where it is in its one clip) and
"window" (a general policy reads the next REFERENCE_WINDOW seconds of any clip instead).  Both
start with the same body, feet and fatigue terms.  Everything is in the heading frame and lengths
are divided by the body's scale, so one policy serves any height, direction and place.

Familiarity: a policy knows only the motions it trained on, and on others its corrections can do
worse than the rule (measured: a walk-and-dance policy on a run, root error 0.19 m against the
rule's 0.08).  The card records how far from its training observations the policy usually goes
(``observation.familiar_z2``: the 99th percentile of the mean squared normalised observation over
rollouts of its training clips, and twice that); beyond the first its corrections fade, beyond the
second the rule acts alone.

Training lives in runtime/train (torch); this module needs numpy only.
"""
from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import PolicyError
from ..maths import quat, repeatable
from .rest_steps import Standing

POLICY_RATE = 30.0                    # Hz: policy decisions per second of simulated time
LANDING_SCALE = 0.15                   # m (1.62 m body) of landing shift per unit action
VELOCITY_SCALE = 0.3                   # m/s of COM velocity target shift per unit action
REFERENCE_WINDOW = (0.1, 0.2, 0.4)     # s ahead (at the current tempo) a general policy reads
LANDING_VELOCITY = 6                   # landing xy per foot (4), COM velocity xy (2)
ACTION_SIZE = 7                        # ... and the share of the tempo kept
ACTION_SIZES = (LANDING_VELOCITY, ACTION_SIZE)
ACTION_LAYOUT = ("right landing x", "right landing y", "left landing x", "left landing y", "COM velocity x",
                 "COM velocity y", "tempo kept")
TEMPO_SCALE = 0.3                      # share of the tempo a full negative tempo action gives up
KINDS = ("phase", "window")
FAMILIARITY_NOTE = ("familiar_z2: corrections fade from the first to the second value of the mean squared "
                    "normalised observation (runtime/policy.py)")
MODELS_DIR = Path(__file__).resolve().parent.parent.parent / "models"
DEFAULT_MODEL = MODELS_DIR / "srb_general.npz"


def observation_size(kind: str) -> int:
    base = 3 + 3 + 3 + 1 + 2 + 4 + 2 + 3 + 3 + 2
    return base + (2 if kind == "phase" else 6 * len(REFERENCE_WINDOW))


def _heading(sim: Standing) -> tuple[float, float]:
    """cos, sin of the body's heading (yaw of its orientation)."""
    yaw = float(quat.yaw(sim.q))
    return math.cos(yaw), math.sin(yaw)


def observe(sim: Standing, kind: str) -> np.ndarray:
    """The policy's view of an SrbSimulator now (see the module docstring for the terms)."""
    ref, body = sim.ref, sim.body
    c, s = _heading(sim)

    def flat(v):           # world xy -> heading frame xy
        return (c * v[0] + s * v[1], -s * v[0] + c * v[1])

    scale = body.height / 1.62
    phase = min(sim.phase, ref.duration)
    r = ref.sample(phase)
    rate = 0.0 if sim.resting else sim.tempo
    e_p = (sim.p - sim.com_target(r)) / scale
    e_v = sim.v - sim.rule_velocity(r, rate)
    obs = [*flat(e_p), e_p[2], *flat(e_v), e_v[2], *flat(sim.v), sim.v[2],
           (sim.p[2] - ref.floor) / max(ref.standing_com, 1e-6)]
    for foot in sim.feet:
        obs.append(1.0 if foot.stance else 0.0)
    for foot in sim.feet:
        obs.extend(v / scale for v in flat(foot.offset))
    for foot in sim.feet:
        span = max(foot.land_phase - foot.lift_phase, 1e-6)
        obs.append(0.0 if foot.stance else min(max((phase - foot.lift_phase) / span, 0.0), 1.5))
    if sim.fatigue is not None:
        model = sim.fatigue.model
        legs = body.leg_dofs
        rc = model.residual_capacity
        obs.extend([float(rc[legs[0]].min()), float(rc[legs[1]].min()), float(rc[legs.ravel()].mean())])
        idx = legs.ravel()
        obs.extend([math.log10(float(np.mean(model.F[idx]))), math.log10(float(np.mean(model.R[idx]))),
                    float(np.mean(model.r[idx]))])
    else:
        obs.extend([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])     # fresh: full capacity, no fatigue rates
    obs.extend([sim.tempo, 1.0 if sim.resting else 0.0])
    if kind == "phase":
        angle = 2.0 * math.pi * phase / max(ref.duration, 1e-6)
        obs.extend([math.cos(angle), math.sin(angle)])
    else:
        for ahead in REFERENCE_WINDOW:
            f = ref.sample(min(phase + ahead * max(rate, 0.25), ref.duration))
            obs.extend([*flat(f.com_vel), f.com_vel[2], float(f.contact[0]), float(f.contact[1]),
                        (f.com[2] - ref.floor) / max(ref.standing_com, 1e-6)])
    return np.asarray(obs, dtype=np.float64)


def attach(sim: Standing, policy) -> None:
    """Let ``policy`` (anything with ``control(sim)``, or None) correct an SrbSimulator every
    control step, POLICY_RATE times per simulated second."""
    sim.controller = policy
    sim.control_every = max(1, int(round(sim.s.rate / POLICY_RATE)))


def apply(sim: Standing, action: np.ndarray) -> None:
    """Set the simulator's corrections from an action in [-1, 1] (heading frame, scaled; the
    tempo's share where the action has one)."""
    a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    c, s = _heading(sim)
    scale = sim.body.height / 1.62

    def world(x, y):       # heading frame xy -> world xy
        return np.array([c * x - s * y, s * x + c * y])

    sim.landing_adjust[0] = world(a[0], a[1]) * (LANDING_SCALE * scale)
    sim.landing_adjust[1] = world(a[2], a[3]) * (LANDING_SCALE * scale)
    sim.velocity_adjust[:] = world(a[4], a[5]) * VELOCITY_SCALE
    if len(a) > LANDING_VELOCITY:
        sim.tempo_adjust = 1.0 + TEMPO_SCALE * min(float(a[LANDING_VELOCITY]), 0.0)


def release(sim: Standing) -> None:
    """Hand the simulator back to the rule alone (no shifts, all of the tempo)."""
    sim.landing_adjust[:] = 0.0
    sim.velocity_adjust[:] = 0.0
    sim.tempo_adjust = 1.0


def legs_capacity(sim: Standing) -> float:
    """The weakest leg DoF's residual capacity (1 for a body without fatigue)."""
    if sim.fatigue is None:
        return 1.0
    return float(sim.fatigue.model.residual_capacity[sim.body.leg_dofs.ravel()].min())


def fatigue_gate(bounds: tuple[float, float] | None, capacity: float) -> float:
    """How much of its corrections a fatigue-gated policy applies at the legs' ``capacity``: 0 at
    or above ``bounds[0]``, all at or below ``bounds[1]``, linear between; 1 without bounds."""
    if bounds is None:
        return 1.0
    fresh, tired = bounds
    return min(max((fresh - capacity) / (fresh - tired), 0.0), 1.0)


@dataclass
class Mlp:
    """Tanh MLP with a linear output: the policy's mean action (deterministic at bake time)."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]
    obs_mean: np.ndarray
    obs_std: np.ndarray

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = np.clip((obs - self.obs_mean) / self.obs_std, -10.0, 10.0)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = x @ w + b
            if i < last:
                x = repeatable.tanh(x)
        return x

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"obs_mean": self.obs_mean, "obs_std": self.obs_std}
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            out[f"w{i}"], out[f"b{i}"] = w, b
        return out

    @classmethod
    def from_arrays(cls, z) -> "Mlp":
        n = sum(1 for k in z if k.startswith("w"))
        missing = [k for k in ("obs_mean", "obs_std", *(f"{c}{i}" for i in range(n) for c in "wb")) if k not in z]
        if n == 0 or missing:
            raise PolicyError(f"policy weights lack {', '.join(missing) or 'w0, b0'}: retrain it (./fatigue train srb)")
        return cls([np.asarray(z[f"w{i}"], dtype=np.float64) for i in range(n)],
                   [np.asarray(z[f"b{i}"], dtype=np.float64) for i in range(n)],
                   np.asarray(z["obs_mean"], dtype=np.float64), np.asarray(z["obs_std"], dtype=np.float64))

    def check(self) -> None:
        """Raise PolicyError unless the layers chain (each layer's outputs the next one's inputs,
        a bias per output), the normalisation fits the inputs and every number is finite."""
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if w.ndim != 2 or b.shape != (w.shape[1],):
                raise PolicyError(f"policy layer {i}: weights {w.shape} and bias {b.shape} do not fit: "
                                  "retrain it (./fatigue train srb)")
            if i and self.weights[i - 1].shape[1] != w.shape[0]:
                raise PolicyError(f"policy layer {i} takes {w.shape[0]} inputs but layer {i - 1} gives "
                                  f"{self.weights[i - 1].shape[1]}: retrain it (./fatigue train srb)")
        if self.obs_mean.shape != (self.weights[0].shape[0],) or self.obs_std.shape != self.obs_mean.shape:
            raise PolicyError(f"policy normalisation {self.obs_mean.shape} / {self.obs_std.shape} does not fit its "
                              f"{self.weights[0].shape[0]} inputs: retrain it (./fatigue train srb)")
        arrays = [*self.weights, *self.biases, self.obs_mean, self.obs_std]
        if not all(np.isfinite(a).all() for a in arrays) or not (self.obs_std > 0.0).all():
            raise PolicyError("policy weights hold NaN, infinite or non-positive scale values: "
                              "retrain it (./fatigue train srb)")


def unfamiliarity(mlp: "Mlp", obs: np.ndarray) -> float:
    """Mean squared normalised observation (as the MLP sees it): about 1 on the training data."""
    z = np.clip((obs - mlp.obs_mean) / mlp.obs_std, -10.0, 10.0)
    return float(z @ z) / len(z)


def _pair(value) -> tuple[float, float] | None:
    """Two finite numbers from a card's list, or None (absent or not two numbers)."""
    try:
        pair = (float(value[0]), float(value[1])) if len(value) == 2 else None
    except (TypeError, ValueError, KeyError):
        return None
    return pair if pair is not None and all(math.isfinite(v) for v in pair) else None


class SrbPolicy:
    """A shipped policy: its MLP and model card.  Call ``control(sim)`` every control step."""

    def __init__(self, mlp: Mlp, card: dict):
        mlp.check()
        self.mlp, self.card = mlp, card
        observation = card.get("observation") if isinstance(card, dict) else None
        if not isinstance(observation, dict) or "kind" not in observation or "size" not in observation:
            raise PolicyError("model card has no observation kind and size: use the card written with the "
                              "weights (./fatigue train srb)")
        self.kind = observation["kind"]
        if self.kind not in KINDS:
            raise PolicyError(f"model card observation kind {self.kind!r}: expected one of {KINDS}")
        size = observation_size(self.kind)
        if observation["size"] != size or mlp.weights[0].shape[0] != size:
            raise PolicyError(f"policy expects {mlp.weights[0].shape[0]} observations, this version makes {size}: "
                              "retrain it (./fatigue train srb)")
        actions = mlp.weights[-1].shape[1]
        if actions not in ACTION_SIZES:
            raise PolicyError(f"policy has {actions} actions, one of {ACTION_SIZES} expected")
        action = card.get("action")
        card_actions = action.get("size", actions) if isinstance(action, dict) else actions
        if card_actions != actions:
            raise PolicyError(f"model card says {card_actions} actions, its network has {actions}: "
                              "use the card written with the weights (./fatigue train srb)")
        self.name = card.get("name", "srb policy")
        bounds = observation.get("familiar_z2")
        self.familiar_z2 = _pair(bounds)
        if bounds is not None and not (self.familiar_z2 and 0.0 < self.familiar_z2[0] < self.familiar_z2[1]):
            raise PolicyError(f"model card familiar_z2 {bounds!r}: expected [low, high] with 0 < low < high")
        gate = card["gate"].get("fatigue_rc") if isinstance(card.get("gate"), dict) else None
        self.gate = _pair(gate)
        if gate is not None and not (self.gate and 1.0 >= self.gate[0] > self.gate[1] >= 0.0):
            raise PolicyError(f"model card gate.fatigue_rc {gate!r}: expected [fresh, tired] "
                              "with 1 >= fresh > tired >= 0")

    @classmethod
    def load(cls, path: str | Path) -> "SrbPolicy":
        path = Path(path)
        card_path = path.with_suffix(".json")
        if not path.is_file() or not card_path.is_file():
            raise PolicyError(f"policy {path} (and its card {card_path.name}) not found: train one "
                              "with ./fatigue train srb, or bake without a policy")
        try:
            with np.load(path) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
            raise PolicyError(f"policy {path} is not a readable policy ({type(exc).__name__}: {exc}): copy it "
                              "again or retrain it (./fatigue train srb)") from exc
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise PolicyError(f"model card {card_path} is not readable JSON ({exc}): use the card written "
                              "with the weights (./fatigue train srb)") from exc
        return cls(Mlp.from_arrays(arrays), card)

    def confidence(self, obs: np.ndarray) -> float:
        """1 where the observation looks like the policy's training, fading to 0 (the rule alone)
        as it leaves it (see the module docstring); 1 for cards without familiarity bounds."""
        if self.familiar_z2 is None:
            return 1.0
        low, high = self.familiar_z2
        return min(max((high - unfamiliarity(self.mlp, obs)) / (high - low), 0.0), 1.0)

    def control(self, sim: Standing) -> None:
        share = fatigue_gate(self.gate, legs_capacity(sim))
        if share == 0.0:
            release(sim)
            return
        obs = observe(sim, self.kind)
        apply(sim, share * self.confidence(obs) * self.mlp(obs))


def default_policy() -> SrbPolicy | None:
    """The shipped general policy, or None when none is shipped."""
    return SrbPolicy.load(DEFAULT_MODEL) if DEFAULT_MODEL.is_file() else None
