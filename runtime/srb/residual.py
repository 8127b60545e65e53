"""A residual on the tempo rule: small, bounded corrections of what the rule itself decides.

Why a residual and not a policy of its own: the rule already tracks (fresh takes to millimetres)
and paces a tired body; what it cannot do is trade over a whole take (pace early so a forced rest
never comes, lean the trunk to spare tired knees, yield more or less).  A residual starts as the
rule (all weights zero: every take is the rule's, bit for bit) and is trained on whole takes
(runtime/train/ars.py), so it only moves where a correction pays over the take.

What it corrects (CORRECTIONS, each action in [-1, 1] times its range): the share of the rule's
tempo kept (never faster than the source), how far the trunk leans beyond the rule's lean, how much
lower the pelvis sits, how far tired joints yield (the effort economy, as a factor) and the relative
effort at which the body rests.  What it sees (OBSERVATION, about 20 numbers, normalised by the
statistics its training saw): residual capacity and its rate per body part, the gait's phase, the
centre of mass's height and velocity errors, the body's pitch and roll off the source's, the time
since the last rest and the rule's own tempo and effort.  Like the SRB policy it is gated on the
legs' fatigue, so fresh takes are the rule's and cost nothing.

numpy only: the bake runs it (runtime.simulate, through the simulator's controller hook).
"""
from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..body import proxy
from ..errors import PolicyError
from ..fatigue.params import MAX_EFFORT_ECONOMY
from ..maths import quat
from ..reference.rigid_body import kin_scale
from .policy import MODELS_DIR, fatigue_gate, legs_capacity, release, SrbPolicy
from .rest_steps import Standing

KIND = "residual"
PARTS = ("legs", "trunk", "arms", "neck")
OBSERVATION = (*(f"{p} capacity" for p in PARTS), *(f"{p} capacity rate" for p in PARTS),
               "right foot down", "left foot down", "swing progress", "COM height error", "COM velocity error xy",
               "COM velocity error z", "pitch off source", "roll off source", "time since rest", "tempo",
               "relative effort", "resting")
CORRECTIONS = ("tempo kept", "trunk lean", "pelvis lower", "yield", "rest effort")
TEMPO_RANGE = 0.25        # share of the rule's tempo a full action takes off (or gives back, up to the source's)
LEAN_RANGE = 0.1          # rad of trunk lean beyond the rule's (never leaning back past upright)
HEIGHT_RANGE = 0.03       # m (1.62 m body) the pelvis sits lower (or higher, down to the rule's sag of 0)
YIELD_RANGE = 0.5         # log of the effort economy's factor (x0.61 .. x1.65)
REST_RANGE = 0.1          # relative effort at which a rest begins, +-
REST_TIME_CAP = 30.0      # s: time since the last rest saturates here
DEFAULT_MODEL = MODELS_DIR / "srb_residual.npz"   # Foot placement: Paced
DEFAULT_GATE = (0.95, 0.7)   # legs' capacity where the corrections start and where they are whole
TRAINERS = "./fatigue train srb, or ./fatigue train search for a residual"
NOTE = "runtime/srb/residual.py: bounded corrections of the tempo rule; zero weights are the rule"


def observation_size() -> int:
    return len(OBSERVATION)


def weight_shape() -> tuple[int, int]:
    """A row per correction, a column per observation and the bias."""
    return len(CORRECTIONS), observation_size() + 1


def _part_dofs() -> dict[str, np.ndarray]:
    parts = np.array(proxy.dof_body_parts())
    return {p: np.flatnonzero(parts == p) for p in PARTS}


_PART_DOFS = _part_dofs()


def observe(sim: Standing) -> np.ndarray:
    """The residual's view of an SrbSimulator now (OBSERVATION, raw: normalised by the policy)."""
    ref = sim.ref
    obs = np.empty(len(OBSERVATION))
    n = len(PARTS)
    if sim.fatigue is not None:
        m = sim.fatigue.model
        rc = m.residual_capacity
        rate = m.R * m.fatigued - m.F * m.active          # d RC / dt = -d MF / dt (3CC, outside rests)
        for i, p in enumerate(PARTS):
            dofs = _PART_DOFS[p]
            obs[i] = float(rc[dofs].min()) if dofs.size else 1.0
            obs[n + i] = float(rate[dofs].mean()) if dofs.size else 0.0
    else:
        obs[:n], obs[n:2 * n] = 1.0, 0.0
    k = 2 * n
    phase = min(sim.phase, ref.duration)
    swing = 0.0
    for j, foot in enumerate(sim.feet):
        obs[k + j] = 1.0 if foot.stance else 0.0
        if not foot.stance:
            span = max(foot.land_phase - foot.lift_phase, 1e-6)
            swing = max(swing, min(max((phase - foot.lift_phase) / span, 0.0), 1.5))
    obs[k + 2] = swing
    scale = kin_scale(sim.body)
    r = ref.sample(phase)
    obs[k + 3] = (sim.p[2] - sim.p_target[2]) / scale
    e_v = sim.v - sim.v_target
    obs[k + 4] = math.hypot(float(e_v[0]), float(e_v[1]))
    obs[k + 5] = float(e_v[2])
    off = quat.to_rotvec(quat.multiply(sim.q, quat.conjugate(r.rot)))
    yaw = float(quat.yaw(sim.q))
    c, s = math.cos(yaw), math.sin(yaw)
    obs[k + 6] = -s * off[0] + c * off[1]        # about the body's lateral axis: pitch
    obs[k + 7] = c * off[0] + s * off[1]         # about its forward axis: roll
    last = max((e.time for e in sim.events if e.kind in ("rest", "resume")), default=0.0)
    obs[k + 8] = 0.0 if sim.resting else min(sim.time - last, REST_TIME_CAP)
    obs[k + 9] = sim.tempo
    obs[k + 10] = sim.rule.effort
    obs[k + 11] = 1.0 if sim.resting else 0.0
    return obs


def correct(sim: Standing, action: np.ndarray) -> None:
    """Set the simulator's corrections from ``action`` (CORRECTIONS, each in [-1, 1]); all zero
    leaves every number the rule uses as it is (same bits)."""
    a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    sim.tempo_adjust = 1.0 + TEMPO_RANGE * float(a[0])      # (the simulator keeps the pace at most the source's)
    sim.lean_adjust = LEAN_RANGE * float(a[1])
    sim.height_adjust = HEIGHT_RANGE * kin_scale(sim.body) * float(a[2])
    rule = sim.rule_settings
    sim.s = replace(rule, effort_economy=min(rule.effort_economy * math.exp(YIELD_RANGE * float(a[3])),
                                             MAX_EFFORT_ECONOMY),
                    rest_effort=rule.rest_effort + REST_RANGE * float(a[4]))
    sim.rule.s = sim.s


def uncorrect(sim: Standing) -> None:
    """Hand the simulator back to the rule alone (its own settings, no corrections)."""
    release(sim)
    sim.lean_adjust = sim.height_adjust = 0.0
    sim.s = sim.rule.s = sim.rule_settings


@dataclass
class Linear:
    """action = clip(W @ [clip((obs - mean) / std, +-5), 1], +-1): ARS's linear policy on normalised
    observations (V2), with a bias (its last column: a correction the observation does not explain,
    such as keeping a little less of the tempo whenever tired)."""

    weights: np.ndarray     # (corrections, observations + 1)
    obs_mean: np.ndarray
    obs_std: np.ndarray

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        z = np.clip((obs - self.obs_mean) / self.obs_std, -5.0, 5.0)
        return np.clip(self.weights[:, :-1] @ z + self.weights[:, -1], -1.0, 1.0)

    @classmethod
    def zero(cls) -> "Linear":
        n = observation_size()
        return cls(np.zeros(weight_shape()), np.zeros(n), np.ones(n))

    def check(self) -> None:
        n, a = observation_size(), len(CORRECTIONS)
        if self.weights.shape != weight_shape() or self.obs_mean.shape != (n,) or self.obs_std.shape != (n,):
            raise PolicyError(f"residual weights {self.weights.shape} / normalisation {self.obs_mean.shape}: this "
                              f"version has {a} corrections of {n} observations and a bias: retrain it (./fatigue train search)")
        if not all(np.isfinite(v).all() for v in (self.weights, self.obs_mean, self.obs_std)) \
                or not (self.obs_std > 0.0).all():
            raise PolicyError("residual weights hold NaN, infinite or non-positive scale values: retrain it "
                              "(./fatigue train search)")


class ResidualPolicy:
    """A residual as the bake runs it: ``control(sim)`` every control step (runtime.srb.policy.attach)."""

    def __init__(self, linear: Linear, card: dict | None = None, gate: tuple[float, float] | None = DEFAULT_GATE):
        linear.check()
        self.linear, self.card, self.gate = linear, card or {}, gate
        self.name = self.card.get("name", "residual")

    def control(self, sim: Standing) -> None:
        share = fatigue_gate(self.gate, legs_capacity(sim))
        if share == 0.0:
            uncorrect(sim)
            return
        correct(sim, share * self.act(observe(sim)))

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.linear(obs)

    def save(self, path: Path, card: dict) -> None:
        """Weights (.npz) and card (.json) side by side, as load reads them."""
        path = Path(path)
        np.savez(path, weights=self.linear.weights, obs_mean=self.linear.obs_mean, obs_std=self.linear.obs_std)
        card = {**card, "kind": KIND, "observation": list(OBSERVATION), "corrections": list(CORRECTIONS),
                "gate": {"fatigue_rc": list(self.gate) if self.gate else None}, "note": NOTE}
        path.with_suffix(".json").write_text(json.dumps(card, indent=1, default=float), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "ResidualPolicy":
        path = Path(path)
        card = read_card(path)
        try:
            with np.load(path) as z:
                linear = Linear(*(np.asarray(z[k], dtype=np.float64) for k in ("weights", "obs_mean", "obs_std")))
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            raise PolicyError(f"residual {path} is not readable ({type(exc).__name__}): copy it again or retrain "
                              "it (./fatigue train search)") from exc
        gate = (card.get("gate") or {}).get("fatigue_rc")
        if gate is not None and not (len(gate) == 2 and 1.0 >= float(gate[0]) > float(gate[1]) >= 0.0):
            raise PolicyError(f"residual card gate.fatigue_rc {gate!r}: expected [fresh, tired], 1 >= fresh > tired >= 0")
        return cls(linear, card, tuple(float(g) for g in gate) if gate is not None else None)


def read_card(path: Path) -> dict:
    card_path = Path(path).with_suffix(".json")
    if not Path(path).is_file() or not card_path.is_file():
        raise PolicyError(f"policy {path} (and its card {card_path.name}) not found: train one ({TRAINERS}), "
                          "or bake without a policy")
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PolicyError(f"model card {card_path} is not readable JSON ({exc}): use the card written with the "
                          f"weights ({TRAINERS})") from exc
    if not isinstance(card, dict):
        raise PolicyError(f"model card {card_path} is not a JSON object: use the card written with the weights "
                          f"({TRAINERS})")
    return card


def load_any(path: str | Path):
    """A residual (its card's kind says so) or an SRB policy, from its .npz and card."""
    return ResidualPolicy.load(path) if read_card(Path(path)).get("kind") == KIND else SrbPolicy.load(path)
