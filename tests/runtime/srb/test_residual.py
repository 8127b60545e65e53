"""The residual on the tempo rule: zero weights are the rule bit for bit (whole baked takes, tired
walk and tired jump), corrections move the take, a bad residual file is one line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from runtime.errors import PolicyError
from runtime.fatigue import direction, params
from runtime.motion import clip as clips
from runtime.request import SimulationRequest
from runtime.simulate import Tuning, simulate
from runtime.srb import residual


def _request(name: str, preset: str, seconds: float) -> SimulationRequest:
    clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
    played = seconds if clip.loop else clip.duration
    sched, keys = direction.preset_schedule(preset, 30.0, played)
    return SimulationRequest(clip=clip, schedule=sched, seconds=seconds if clip.loop else None,
                             hold=0.0 if clip.loop else 0.5, out_fps=30.0, tiredness=keys)


def _same(a, b) -> bool:
    arrays = ("root_pos", "root_rot", "joint_rots")
    return (all(np.array_equal(getattr(a.clip, k), getattr(b.clip, k)) for k in arrays)
            and all(np.array_equal(x, y) for x, y in ((a.reference_time, b.reference_time), (a.torque, b.torque),
                                                     (a.com, b.com), (a.contacts, b.contacts)))
            and all(np.array_equal(a.fatigue[k], b.fatigue[k]) for k in a.fatigue)
            and a.events == b.events)


@pytest.fixture(scope="module", params=[("walk", "Exhausted", 5.0), ("jump", "Untrained", 0.0)], ids=["walk", "jump"])
def tired(request):
    req = _request(*request.param)
    return req, simulate(req)


class _Counting(residual.ResidualPolicy):
    def __init__(self, linear, gate=residual.DEFAULT_GATE):
        super().__init__(linear, gate=gate)
        self.acted = 0

    def act(self, obs):
        self.acted += 1
        return super().act(obs)


def test_zero_residual_is_the_rule_bit_for_bit(tired):
    req, rule = tired
    zero = _Counting(residual.Linear.zero())
    assert _same(rule, simulate(req, tuning=Tuning(policy=zero)))
    assert zero.acted > 30          # its gate opened: the zero corrections were applied, not skipped


def test_a_tempo_correction_changes_the_tired_take(tired):
    req, rule = tired
    linear = residual.Linear.zero()
    linear.weights[residual.CORRECTIONS.index("tempo kept")] = 0.0
    linear.obs_mean[:] = 0.0
    # A bias through the always-on "tempo" input: keep less of the rule's tempo, lean further.
    linear.weights[0, residual.OBSERVATION.index("tempo")] = -1.0
    linear.weights[1, residual.OBSERVATION.index("tempo")] = 1.0
    slower = simulate(req, tuning=Tuning(policy=residual.ResidualPolicy(linear)))
    assert not _same(rule, slower)


def test_observation_is_finite_and_documented():
    req = _request("walk", "Exhausted", 1.0)
    seen = []

    class Watch(_Counting):
        def act(self, obs):
            seen.append(obs)
            return super().act(obs)

    simulate(req, tuning=Tuning(policy=Watch(residual.Linear.zero(), gate=None)))
    assert seen and all(o.shape == (len(residual.OBSERVATION),) and np.isfinite(o).all() for o in seen)


@pytest.mark.parametrize("damage", ["truncated", "wrong shape"])
def test_a_bad_residual_file_is_one_line(tmp_path, damage):
    policy = residual.ResidualPolicy(residual.Linear.zero())
    path = tmp_path / "r.npz"
    policy.save(path, {"name": "test"})
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:40])
    else:
        np.savez(path, weights=np.zeros((2, 3)), obs_mean=np.zeros(3), obs_std=np.ones(3))
    with pytest.raises(PolicyError) as exc:
        residual.load_any(path)
    assert "\n" not in str(exc.value) and "retrain" in str(exc.value)


def test_a_saved_residual_loads_back_the_same(tmp_path):
    linear = residual.Linear.zero()
    linear.weights[:] = np.arange(linear.weights.size).reshape(linear.weights.shape) * 1e-3
    path = tmp_path / "r.npz"
    residual.ResidualPolicy(linear).save(path, {"name": "test"})
    back = residual.load_any(path)
    assert isinstance(back, residual.ResidualPolicy) and np.array_equal(back.linear.weights, linear.weights)
    assert back.gate == residual.DEFAULT_GATE


def test_the_shipped_residual_card_matches_its_weights():
    """models/srb_residual.json names the residual's inputs and corrections in the order its
    weights have them, and carries its training and its evaluation on clips it never trained on."""
    card = json.loads(residual.DEFAULT_MODEL.with_suffix(".json").read_text())
    shipped = residual.load_any(residual.DEFAULT_MODEL)
    assert card["kind"] == "residual"
    assert tuple(card["observation"]) == residual.OBSERVATION and tuple(card["corrections"]) == residual.CORRECTIONS
    assert shipped.linear.weights.shape == residual.weight_shape()
    training = card["training"]
    assert training["sources"] and not set(training["sources"]) & set(training["held_back"])
    assert any(a["accepted"] for a in card["acceptance"]), "shipped weights passed a paired held-back check"
    rows = card["evaluation_split"]["rows"]
    assert {r["condition"] for r in rows} == {"fresh", *(name.lower() for name in params.PRESETS)}, "every preset"
    assert not {r["clip"] for r in rows} & set(training["sources"]), "evaluated on clips it never trained on"


def test_the_shipped_residual_keeps_fresh_takes_and_paces_tired_ones(tired):
    """models/srb_residual (Foot placement: Paced) loads as a residual, a fresh take baked with it
    is the rule's bit for bit, and it changes the tired take it acts on."""
    req, rule = tired
    shipped = residual.load_any(residual.DEFAULT_MODEL)
    assert isinstance(shipped, residual.ResidualPolicy) and np.abs(shipped.linear.weights).max() > 0.0
    assert not _same(rule, simulate(req, tuning=Tuning(policy=shipped)))
    fresh = SimulationRequest(clip=req.clip, seconds=2.0 if req.clip.loop else None, hold=req.hold, out_fps=30.0)
    assert _same(simulate(fresh), simulate(fresh, tuning=Tuning(policy=residual.load_any(residual.DEFAULT_MODEL))))
