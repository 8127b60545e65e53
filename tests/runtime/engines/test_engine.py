"""Two physics engines, one body: MuJoCo builds the proxy PyBullet loads, answers the same
kinematic questions, drives the upper body the same way, and runs where PyBullet is missing."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from runtime import errors
from runtime.body import anthropometry, description as body_description, proxy
from runtime.engines import chooser as engine
from runtime.engines.pybullet import body as pybullet_body
from runtime.fatigue import schedule
from runtime.maths import lowpass
from runtime import simulate
from runtime.motion import clip as clips
from runtime.engines.pybullet.kinematics import Kinematics
from runtime.engines.mujoco.kinematics import MujocoKinematics

ROOT = Path(__file__).resolve().parents[3]


def _clip(name: str, seconds: float | None = None):
    clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
    return clip.repeated(seconds) if seconds else clip


@pytest.mark.parametrize("plan", [None, anthropometry.BodyPlan(ratios={"thigh": 1.1, "shank": 0.95, "upper_arm": 1.05},
                                                               sex="female")])
def test_the_description_has_the_masses_and_inertias_pybullet_gives_the_urdf(plan):
    import pybullet

    client = pybullet.connect(pybullet.DIRECT)
    try:
        body, links = pybullet_body.load_body(client, 1.8, plan=plan)
        described = {link.name: link for link in body_description.proxy_links(1.8, plan)}
        for name, j in links.items():
            mass, _, inertia, com = pybullet.getDynamicsInfo(body, j, physicsClientId=client)[:4]
            link = described[name]
            assert link.mass == pytest.approx(mass, rel=1e-12)
            np.testing.assert_allclose(link.com, com, atol=1e-9)
            np.testing.assert_allclose(link.inertia, inertia, rtol=1e-5)
    finally:
        pybullet.disconnect(client)


@pytest.mark.parametrize("name", ["walk", "roll"])
def test_mujoco_kinematics_equal_pybullets(name):
    clip = _clip(name)
    with Kinematics(1.7) as pb, MujocoKinematics(1.7) as mj:
        a, b = pb.analyse(clip), mj.analyse(clip)
    np.testing.assert_allclose(b.link_pos, a.link_pos, atol=1e-9)
    np.testing.assert_allclose(b.joint_pos, a.joint_pos, atol=1e-6)    # PyBullet keeps link origins in float32
    np.testing.assert_allclose(b.com, a.com, atol=1e-9)
    same_rotation = np.abs(np.abs(np.sum(a.link_rot * b.link_rot, axis=-1)) - 1.0)
    assert same_rotation.max() < 1e-9
    assert b.floor_height == pytest.approx(a.floor_height, abs=1e-9)
    assert np.array_equal(a.touching, b.touching)
    assert np.array_equal(a.foot_contact, b.foot_contact)
    np.testing.assert_allclose(b.link_mass, a.link_mass)
    np.testing.assert_allclose(b.link_inertia, a.link_inertia, rtol=1e-5)


def test_the_upper_body_carries_the_same_loads_on_both_engines():
    """A punch with the arms strong enough to follow: each engine's motors apply the torques of
    following it, so their torque curves match (correlation per DoF) and so does the tracking.
    Compared as the fatigue model feels them, over 50 ms: with the ball joints on time (no lag to
    fight) MuJoCo's torques are smooth from step to step and PyBullet's solver keeps a step-to-step
    noise of its own (the chest's change per frame 9 vs 20 N*m) that averages out within a few frames."""
    clip = _clip("punch")
    tau = np.array(proxy.dof_tau_max()) * 5.0
    takes = {e: simulate.simulate_clip(clip, seconds=2.0, engine=e, tau_max=tau) for e in ("pybullet", "mujoco")}
    fps = takes["pybullet"].fps
    a, b = (lowpass.smooth(takes[e].torque, fps, width=0.05) for e in ("pybullet", "mujoco"))
    table = proxy.dof_table()
    for d, (name, _, _) in enumerate(table):
        if name.split("_")[-1] in ("chest", "shoulder", "elbow") and np.std(a[:, d]) > 1.0:
            assert np.corrcoef(a[:, d], b[:, d])[0, 1] > 0.7, (name, d)
            assert np.sqrt(np.mean(b[:, d] ** 2)) == pytest.approx(np.sqrt(np.mean(a[:, d] ** 2)), rel=0.25)
    pa, pb = takes["pybullet"].clip.joint_rots, takes["mujoco"].clip.joint_rots
    apart = np.degrees(2.0 * np.arccos(np.clip(np.abs(np.sum(pa * pb, axis=-1)), 0.0, 1.0)))
    assert np.median(apart) < 1.0


def test_a_character_is_as_strong_on_either_engine(monkeypatch):
    """Strength is measured on one engine's upper body whichever engine runs the take, so
    dance_a's shoulders (whose motors share their moment among the axes differently on each
    engine) come out the same; where that engine is missing, the take's own measures it."""
    clip = _clip("dance_a")
    first, second = (simulate.simulate_clip(clip, seconds=1.0, engine=e) for e in ("pybullet", "mujoco"))
    assert np.allclose(first.tau_max, second.tau_max, rtol=1e-6)      # the kinematics differ in last digits
    assert (first.tau_max > np.array(proxy.dof_tau_max())).any()       # the motion raised some
    monkeypatch.setitem(engine._probed, "mujoco", False)
    own = simulate.simulate_clip(clip, seconds=1.0, engine="pybullet")
    assert not np.allclose(own.tau_max, first.tau_max, rtol=0.05)      # PyBullet's shoulders differ


def test_a_mujoco_take_is_the_same_bit_for_bit():
    clip = _clip("jump", 3.0)
    tired = schedule.from_fitness(0.25, fps=30.0, time_scale=40.0)
    first = simulate.simulate_clip(clip, tired, seconds=3.0, engine="mujoco")
    second = simulate.simulate_clip(clip, tired, seconds=3.0, engine="mujoco")
    assert first.engine == second.engine == "mujoco" and first.notes["engine"] == "MuJoCo"
    assert np.array_equal(first.clip.joint_rots, second.clip.joint_rots)
    assert np.array_equal(first.clip.root_pos, second.clip.root_pos)
    assert np.array_equal(first.fatigue["MF"], second.fatigue["MF"])
    assert np.array_equal(first.torque, second.torque)


def test_engine_choice_and_its_messages(monkeypatch):
    assert engine.resolve("auto") == "pybullet"          # both import here: PyBullet first
    assert engine.resolve(None) == "pybullet"
    assert engine.resolve("MuJoCo") == "mujoco"
    with pytest.raises(errors.EngineMissing, match="unknown physics engine 'havok'"):
        engine.resolve("havok")
    monkeypatch.setitem(engine._probed, "pybullet", False)
    assert engine.resolve("auto") == "mujoco"
    with pytest.raises(errors.EngineMissing) as missing:
        engine.resolve("pybullet")
    assert "\n" not in str(missing.value) and "Physics engine" in str(missing.value)
    monkeypatch.setitem(engine._probed, "mujoco", False)
    with pytest.raises(errors.EngineMissing, match="no physics engine imports"):
        engine.resolve("auto")
    with pytest.raises(errors.SimulationError, match="no physics engine imports"):
        simulate.simulate_clip(_clip("walk", 1.0))


def test_torque_mode_says_it_needs_mujoco():
    with pytest.raises(errors.SimulationError, match="torque mode runs on MuJoCo"):
        simulate.simulate_clip(_clip("walk", 1.0), mode="torque", engine="pybullet")


def test_without_pybullet_a_take_runs_on_mujoco():
    """What a Windows or macOS user gets: no pybullet (nor pybullet_data) at all."""
    code = textwrap.dedent(f"""
        import importlib.abc, sys
        class NoPybullet(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("pybullet", "pybullet_data", "pybullet_utils", "pybullet_envs"):
                    raise ModuleNotFoundError(name, name=name)
        sys.meta_path.insert(0, NoPybullet())
        sys.path.insert(0, {str(ROOT)!r})
        from runtime import simulate
        from runtime.motion import clip
        c = clip.load_deepmimic(clip.deepmimic_clip_path("walk"))
        take = simulate.simulate_clip(c, seconds=2.0)
        assert "pybullet" not in sys.modules
        print(take.engine, take.frames, take.fell)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["mujoco", "61", "False"]



def test_an_unstable_mujoco_body_stops_the_take_in_one_line(tmp_path, monkeypatch):
    """MuJoCo resets a body whose state blows up and would go on from rest; the take stops
    instead, in one line, and no MUJOCO_LOG.TXT lands in the user's folder."""
    from runtime.maths import quat
    from runtime.engines.mujoco.limbs import MujocoLimbSimulator

    monkeypatch.chdir(tmp_path)
    sim = MujocoLimbSimulator()
    poses = np.tile(quat.IDENTITY, (len(proxy.DEFAULT_JOINTS), 1))
    sim.reset([0.0, 0.0, 1.0], quat.IDENTITY, poses)
    sim.data.qvel[:] = 1e12
    with pytest.raises(errors.SimulationError) as failed:
        sim.step([0.0, 0.0, 1.0], quat.IDENTITY, np.zeros(3), poses, np.zeros((len(poses), 3)),
                 np.full(len(sim.dofs), 50.0), 1.0 / 60.0)
    assert "became unstable" in str(failed.value) and "\n" not in str(failed.value)
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
