"""SRB policy: numpy inference (the bake's) against torch (the trainer's), the model card, the
observation/action conventions, and that a policy is a pure correction of the rule."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runtime import errors
from runtime.motion import clip as clips
from runtime.engines.pybullet import kinematics
from runtime.srb import policy as pol, simulator as srb
from runtime.maths import quat
from runtime.fatigue import schedule
from runtime import simulate
from runtime.reference import rigid_body as srb_body
from runtime.reference import reference as srb_reference

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def walk_sim():
    walk = clips.load_deepmimic(clips.deepmimic_clip_path("walk")).repeated(2.0)
    with kinematics.Kinematics() as kin:
        body = srb_body.body_from_proxy(kin)
        ref = srb_reference.build_reference(walk, kin.analyse(walk), body)
    return ref, body


def _zero_policy(kind="window", hidden=(8,)) -> pol.SrbPolicy:
    sizes = [pol.observation_size(kind), *hidden, pol.ACTION_SIZE]
    mlp = pol.Mlp([np.zeros((a, b)) for a, b in zip(sizes[:-1], sizes[1:])], [np.zeros(b) for b in sizes[1:]],
                  np.zeros(sizes[0]), np.ones(sizes[0]))
    return pol.SrbPolicy(mlp, {"name": "zero", "observation": {"kind": kind, "size": sizes[0]}})


@pytest.mark.parametrize("kind", pol.KINDS)
def test_observation_has_the_documented_size_fresh_and_tired(walk_sim, kind):
    ref, body = walk_sim
    for model in (None, schedule.ScheduledModel(schedule.from_fitness(0.3, fps=30, time_scale=20))):
        sim = srb.SrbSimulator(ref, body, model)
        for _ in range(10):
            sim.step()
        obs = pol.observe(sim, kind)
        assert obs.shape == (pol.observation_size(kind),) and np.isfinite(obs).all()


def test_actions_are_in_the_heading_frame(walk_sim):
    ref, body = walk_sim
    sim = srb.SrbSimulator(ref, body)
    sim.q = quat.from_axis_angle([0.0, 0.0, 1.0], math.pi / 2)     # facing world +y
    pol.apply(sim, np.array([1.0, 0.0, 0.0, 0.0, 0.0, 1.0]))
    # "forward" for the right foot is world +y; "left" velocity is world -x.
    assert np.allclose(sim.landing_adjust[0], [0.0, pol.LANDING_SCALE * body.height / 1.62], atol=1e-12)
    assert np.allclose(sim.velocity_adjust, [-pol.VELOCITY_SCALE, 0.0], atol=1e-12)
    pol.apply(sim, np.full(6, 5.0))                                # clipped to the documented range
    assert np.abs(sim.velocity_adjust).max() <= pol.VELOCITY_SCALE * math.sqrt(2) + 1e-12


@pytest.mark.slow
def test_a_policy_that_outputs_zero_is_the_rule_bit_for_bit():
    walk = clips.load_deepmimic(clips.deepmimic_clip_path("walk"))
    sched = schedule.from_fitness(0.3, fps=30, time_scale=30)
    plain = simulate.simulate_clip(walk, sched, seconds=1.5, out_fps=30, simulate_limbs=False)
    zero = simulate.simulate_clip(walk, sched, seconds=1.5, out_fps=30, simulate_limbs=False, policy=_zero_policy())
    assert np.array_equal(plain.clip.joint_rots, zero.clip.joint_rots)
    assert np.array_equal(plain.com, zero.com)
    assert "zero" in zero.notes["foot_placement"] and "rule" in plain.notes["foot_placement"]


def test_a_policy_steps_back_to_the_rule_where_it_does_not_know_the_motion(walk_sim):
    """Familiarity bounds in the card: full corrections on observations like its training ones,
    none (the rule, bit for bit) far from them, a linear fade between; none in the card: full."""
    ref, body = walk_sim
    sizes = [pol.observation_size("window"), pol.ACTION_SIZE]
    mlp = pol.Mlp([np.zeros((sizes[0], sizes[1]))], [np.full(sizes[1], 0.5)], np.zeros(sizes[0]), np.ones(sizes[0]))
    card = {"name": "constant", "observation": {"kind": "window", "size": sizes[0]}}
    sim = srb.SrbSimulator(ref, body)
    obs = pol.observe(sim, "window")
    z2 = pol.unfamiliarity(mlp, obs)
    assert pol.SrbPolicy(mlp, card).confidence(obs) == 1.0
    for bounds, expected in (([2.0 * z2, 4.0 * z2], 1.0), ([0.2 * z2, 0.6 * z2], 0.0), ([0.5 * z2, 1.5 * z2], 0.5)):
        policy = pol.SrbPolicy(mlp, dict(card, observation=dict(card["observation"], familiar_z2=bounds)))
        assert policy.confidence(obs) == pytest.approx(expected)
        sim = srb.SrbSimulator(ref, body)
        policy.control(sim)
        assert np.allclose(sim.velocity_adjust, pol.VELOCITY_SCALE * expected * np.array(
            [math.cos(quat.yaw(sim.q)) - math.sin(quat.yaw(sim.q)), math.sin(quat.yaw(sim.q)) + math.cos(quat.yaw(sim.q))]) * 0.5)
        if expected == 0.0:
            assert not sim.landing_adjust.any() and not sim.velocity_adjust.any()
    with pytest.raises(errors.PolicyError, match="familiar_z2"):
        pol.SrbPolicy(mlp, dict(card, observation=dict(card["observation"], familiar_z2=[3.0, 1.0])))


def test_the_tempo_action_keeps_a_share_of_the_rules_tempo(walk_sim):
    """Only a negative tempo action slows (a tired body may pace itself below the rule, never
    above it); an older six-action policy leaves the tempo to the rule."""
    ref, body = walk_sim
    sim = srb.SrbSimulator(ref, body)
    for a, kept in ((-1.0, 1.0 - pol.TEMPO_SCALE), (-0.5, 1.0 - 0.5 * pol.TEMPO_SCALE), (0.0, 1.0), (1.0, 1.0)):
        pol.apply(sim, np.r_[np.zeros(pol.LANDING_VELOCITY), a])
        assert sim.tempo_adjust == pytest.approx(kept)
    pol.apply(sim, np.r_[np.zeros(pol.LANDING_VELOCITY), -1.0])
    pol.apply(sim, np.zeros(pol.LANDING_VELOCITY))
    assert sim.tempo_adjust == pytest.approx(1.0 - pol.TEMPO_SCALE)      # untouched by a six-action policy
    pol.release(sim)
    assert sim.tempo_adjust == 1.0 and not sim.landing_adjust.any() and not sim.velocity_adjust.any()


def test_the_fatigue_gate_fades_the_corrections_in_as_the_legs_tire():
    assert pol.fatigue_gate(None, 1.0) == 1.0
    assert pol.fatigue_gate((0.9, 0.6), 1.0) == 0.0 and pol.fatigue_gate((0.9, 0.6), 0.9) == 0.0
    assert pol.fatigue_gate((0.9, 0.6), 0.75) == pytest.approx(0.5)
    assert pol.fatigue_gate((0.9, 0.6), 0.6) == 1.0 and pol.fatigue_gate((0.9, 0.6), 0.1) == 1.0
    mlp = _zero_policy().mlp
    card = {"name": "gated", "observation": {"kind": "window", "size": pol.observation_size("window")}}
    for bad in ([0.6, 0.9], [1.2, 0.5], [0.5]):
        with pytest.raises(errors.PolicyError, match="gate"):
            pol.SrbPolicy(mlp, dict(card, gate={"fatigue_rc": bad}))


class _Counting(pol.SrbPolicy):
    looked = 0

    def control(self, sim) -> None:
        real = pol.observe

        def counted(*args):
            type(self).looked += 1
            return real(*args)
        pol.observe = counted
        try:
            super().control(sim)
        finally:
            pol.observe = real


@pytest.mark.slow
def test_a_gated_policy_leaves_a_fresh_body_to_the_rule_and_paces_a_tired_one():
    """A policy that always slows and shifts, gated on the legs' capacity: fresh, the take is the
    rule's bit for bit and the policy never even looks; tired, it acts, and the take plays slower."""
    sizes = [pol.observation_size("window"), pol.ACTION_SIZE]
    bias = np.r_[np.full(pol.LANDING_VELOCITY, 0.2), -1.0]
    mlp = pol.Mlp([np.zeros((sizes[0], sizes[1]))], [bias], np.zeros(sizes[0]), np.ones(sizes[0]))
    card = {"name": "gated", "observation": {"kind": "window", "size": sizes[0]}, "gate": {"fatigue_rc": [0.9, 0.6]}}
    walk = clips.load_deepmimic(clips.deepmimic_clip_path("walk"))
    plain = simulate.simulate_clip(walk, None, seconds=1.5, out_fps=30, simulate_limbs=False)
    _Counting.looked = 0
    gated = simulate.simulate_clip(walk, None, seconds=1.5, out_fps=30, simulate_limbs=False, policy=_Counting(mlp, card))
    assert np.array_equal(plain.clip.joint_rots, gated.clip.joint_rots) and np.array_equal(plain.com, gated.com)
    assert _Counting.looked == 0
    tired = schedule.from_fitness(0.0, fps=30, time_scale=40, initial_fatigue=0.5)
    rule = simulate.simulate_clip(walk, tired, seconds=3.0, out_fps=30, simulate_limbs=False)
    paced = simulate.simulate_clip(walk, tired, seconds=3.0, out_fps=30, simulate_limbs=False, policy=_Counting(mlp, card))
    assert _Counting.looked > 0
    assert paced.clip.frames > rule.clip.frames          # the same source, played slower


@pytest.mark.slow
def test_a_policy_changes_the_take_deterministically():
    rng = np.random.default_rng(0)
    p = _zero_policy()
    p.mlp.weights[-1][:] = 0.3 * rng.standard_normal(p.mlp.weights[-1].shape)
    p.mlp.biases[0][:] = rng.standard_normal(p.mlp.biases[0].shape)
    jump = clips.load_deepmimic(clips.deepmimic_clip_path("jump"))
    a = simulate.simulate_clip(jump, None, seconds=1.5, out_fps=30, simulate_limbs=False, policy=p)
    b = simulate.simulate_clip(jump, None, seconds=1.5, out_fps=30, simulate_limbs=False, policy=p)
    plain = simulate.simulate_clip(jump, None, seconds=1.5, out_fps=30, simulate_limbs=False)
    assert np.array_equal(a.com, b.com)
    assert not np.array_equal(a.com, plain.com)


def test_numpy_inference_equals_torch():
    torch = pytest.importorskip("torch")
    from runtime.train import ppo

    torch.manual_seed(3)
    size = pol.observation_size("window")
    net = ppo.ActorCritic(size, pol.ACTION_SIZE, (64, 64), -1.0)
    for m in net.actor:                       # make the output layer non-trivial
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.normal_(m.weight, std=0.3)
    rng = np.random.default_rng(1)
    mean, std = rng.standard_normal(size), rng.uniform(0.5, 2.0, size)
    mlp = net.to_numpy(mean, std)
    obs = rng.standard_normal((32, size)) * 3.0
    with torch.no_grad():
        expected = net.actor(torch.from_numpy(np.clip((obs - mean) / std, -10, 10))).numpy()
    got = np.array([mlp(o) for o in obs])
    assert np.abs(got - expected).max() < 1e-5
    assert np.abs(expected).max() > 0.1


def _shipped():
    """The shipped SRB policies (a residual on the rule has its own card: test_residual)."""
    return sorted(p for p in (ROOT / "models").glob("srb_*.npz")
                  if json.loads(p.with_suffix(".json").read_text()).get("kind") != "residual")


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.name)
def test_shipped_model_card_matches_its_weights(path):
    card = json.loads(path.with_suffix(".json").read_text())
    loaded = pol.SrbPolicy.load(path)                 # raises on any size mismatch
    with np.load(path) as z:
        hidden = [z[f"w{i}"].shape[1] for i in range(len(card["network"]["hidden"]))]
    assert hidden == card["network"]["hidden"]
    assert card["observation"]["size"] == pol.observation_size(card["observation"]["kind"])
    assert card["action"]["size"] in pol.ACTION_SIZES and card["action"]["size"] == loaded.mlp.biases[-1].shape[0]
    assert card["action"]["landing_scale_m"] == pol.LANDING_SCALE
    assert card["action"]["velocity_scale_m_s"] == pol.VELOCITY_SCALE
    assert card["training"]["clips"] and not set(card["training"]["clips"]) & set(card["training"]["held_out"])
    for key in ("steps", "wall_s", "hardware", "seed"):
        assert key in card["training"]
    assert card["evaluation"], "the card carries its evaluation numbers"
    assert loaded.kind == card["observation"]["kind"]


def test_a_missing_or_mismatched_model_names_the_fix(tmp_path):
    with pytest.raises(errors.PolicyError, match="train one"):
        pol.SrbPolicy.load(tmp_path / "none.npz")
    p = _zero_policy()
    np.savez(tmp_path / "m.npz", **p.mlp.arrays())
    (tmp_path / "m.json").write_text(json.dumps({"observation": {"kind": "window", "size": 3}}))
    with pytest.raises(errors.PolicyError, match="retrain"):
        pol.SrbPolicy.load(tmp_path / "m.npz")


@pytest.mark.slow
def test_bake_time_code_runs_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from runtime import simulate\nfrom runtime.motion import clip\nfrom runtime.srb import policy\n"
            "p = policy.default_policy()\n"
            "c = clip.load_deepmimic(clip.deepmimic_clip_path('walk'))\n"
            "t = simulate.simulate_clip(c, None, seconds=0.5, simulate_limbs=False, policy=p)\n"
            "print('ok', t.frames, p is not None)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_a_card_whose_action_count_differs_from_its_network_is_refused():
    p = _zero_policy()
    card = dict(p.card, action={"size": pol.LANDING_VELOCITY})
    with pytest.raises(errors.PolicyError, match=f"card says {pol.LANDING_VELOCITY} actions, its network has "
                                                 f"{pol.ACTION_SIZE}"):
        pol.SrbPolicy(p.mlp, card)
    assert pol.SrbPolicy(p.mlp, dict(p.card, action={"size": pol.ACTION_SIZE})).mlp is p.mlp
