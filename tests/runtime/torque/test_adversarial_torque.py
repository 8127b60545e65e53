"""Torque mode and the slow-motion judgement, broken on purpose (issue 44, items 4-6): a capture in
slow motion is judged the same way in both modes and refused with its own reason and fix; a take
that falls is never finished; a cartwheel whose hands a retarget leaves above the floor is floor
work, not slow motion; a clip of a few frames is baked at its own length."""
from dataclasses import replace
from functools import partial

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime.motion import clip as C  # noqa: E402
from runtime.engines import chooser
from runtime.reference import playback, prepare
from runtime.body import proxy
from runtime.maths import quat
from runtime.torque import samcon
from runtime.fatigue import schedule
from runtime.floor import stretches  # noqa: E402
from runtime.errors import SimulationError  # noqa: E402
from runtime.simulate import simulate_clip  # noqa: E402
from runtime.fatigue.tempo import MAX_STRETCH  # noqa: E402

FEW_SAMPLES = partial(samcon.SamconSettings, samples=60, keep=6)


def _load(name):
    return C.load_deepmimic(C.deepmimic_clip_path(name))


def _jump_capture(frames: int, slower: float = 5.0) -> C.Clip:
    """The first ``frames`` frames of jumps recorded at 24 * ``slower`` fps and imported one capture
    frame per scene frame at 24 fps (Blender's BVH importer without Update Scene FPS)."""
    real = replace(_load("jump"), loop=True).repeated(frames / (24.0 * slower) + 1.0).resampled(24.0 * slower)
    return replace(real, root_pos=real.root_pos[:frames], root_rot=real.root_rot[:frames],
                   joint_rots=real.joint_rots[:frames], fps=24.0, name="jump_capture")


def _support(clip, engine="mujoco"):
    return prepare.prepare(clip, chooser.shared_kinematics(engine=engine), proxy.DEFAULT_MASS).support


def test_a_slow_motion_capture_with_one_flight_is_refused_in_torque_mode_for_what_it_is():
    """Frames 1-126 of a capture played 5x slower: one flight, cut by the clip's end.  Its flight
    (feet barely moving at a fifth of their speed) passed for feet on an unseen step or box, and
    torque mode told the animator to bake in SRB mode.  Both modes judge it slow motion, and
    torque mode, which keeps nothing as keyed, names the fix: import at the file's frame rate."""
    capture = _jump_capture(126)
    assert playback.slowdown(chooser.shared_kinematics(engine="mujoco").analyse(capture)) is None     # too few flights
    support = _support(capture)
    assert support.shares()["raised_feet"] == 0.0 and support.shares()["slow_motion"] > 0.2
    assert support.described(floor_work=True)[0].startswith("slow motion")
    with pytest.raises(SimulationError) as err:
        simulate_clip(capture, None, mode="torque")
    message = str(err.value)
    assert "\n" not in message and "slow motion" in message and "Update Scene FPS" in message
    assert "step or box" not in message and "SRB mode" not in message


def test_a_slow_motion_capture_that_falls_in_torque_mode_is_not_finished(monkeypatch):
    """With two flights to time it by, torque mode plays the capture at the speed it was performed,
    as SRB mode does, and hands it back on the clip's timeline.  A body too weak to stand falls
    at once: the take says it fell, covers only what it played, and is not finished."""
    monkeypatch.setattr(samcon, "SamconSettings", FEW_SAMPLES)
    monkeypatch.setattr(samcon, "fresh_strength", lambda mass=proxy.DEFAULT_MASS: np.ones(len(proxy.dof_tau_max())))
    capture = _jump_capture(480)
    take = simulate_clip(capture, None, mode="torque")
    assert "5.0x slower than it was performed" in take.notes["playback"]
    assert take.fps == pytest.approx(capture.fps) and take.fell and not take.finished
    assert take.reference_time[-1] < 0.5 * capture.duration
    stopped = replace(take, events=[{"time": 1.0, "kind": "stopped", "frame": 24, "reason": "length limit"}])
    assert not stopped.finished and replace(take, events=[]).finished


def _short_arms(clip: C.Clip, degrees: float = 30.0) -> C.Clip:
    """``clip`` with both elbows bent ``degrees`` further throughout: where the clip had its hands on
    the floor they stop 3-5 cm short of it (an actor's arms longer than the proxy's)."""
    joints = clip.joint_rots.copy()
    for side in ("right", "left"):
        j = clip.joints.index(f"{side}_elbow")
        sense = np.sign(np.median(quat.hinge_angle(joints[:, j])))
        bend = quat.from_axis_angle(C.REVOLUTE_AXIS, np.radians(degrees) * sense)
        joints[:, j] = quat.multiply(joints[:, j], np.broadcast_to(bend, joints[:, j].shape))
    return replace(clip, joint_rots=joints, name=f"{clip.name}_short_arms")


@pytest.mark.parametrize("engine", ["pybullet", "mujoco"])
def test_a_cartwheel_whose_hands_stop_short_of_the_floor_is_floor_work_not_slow_motion(engine):
    """At its own frame rate, a cartwheel whose hands a retarget left a few centimetres above the
    floor was called slow motion in 16 % of its frames (nothing touching, a body that does not
    fall) and the animator told to re-import at another frame rate.  Slow motion is judged on
    flights, with nothing of the body near the floor: here the hands hold it up."""
    if engine == "pybullet":
        pytest.importorskip("pybullet")
    cartwheel = _short_arms(_load("cartwheel"))
    support = _support(cartwheel, engine)
    assert support.shares()["slow_motion"] == 0.0 and not support.unseen
    assert support.reaching.any() and support.described(floor_work=True)[0].startswith("hands, knees or back")
    on_floor = stretches.floor_frames(chooser.shared_kinematics(engine=engine).analyse(cartwheel), support)
    assert 0.3 < on_floor.mean() < 0.5
    take = simulate_clip(cartwheel, None, engine=engine)
    assert not take.fell and "slow motion" not in take.notes["support"]
    assert "hands, knees or back on the floor" in take.notes["support"]


def test_torque_mode_puts_the_short_armed_cartwheel_on_its_hands(monkeypatch):
    """Torque mode no longer refuses that cartwheel, and its sampled body may put the hands on the
    floor where the clip holds them just above it (a hand there is the motion, not a fall)."""
    monkeypatch.setattr(samcon, "SamconSettings", FEW_SAMPLES)
    cartwheel = _short_arms(_load("cartwheel"))
    take = simulate_clip(cartwheel, None, mode="torque", seconds=1.7)
    assert not take.fell and take.reference_time[-1] == pytest.approx(1.7)


@pytest.mark.parametrize("fps", [120.0, 24.0])
def test_torque_mode_bakes_a_clip_of_a_few_frames_at_its_own_length(monkeypatch, fps):
    """Sources of 2, 3 and 6 frames gave 13-frame takes at 120 fps (the sampler's whole 0.1 s
    window, its last pose held) reported at x1.00 tempo.  Now the take ends where its source
    does: fresh, at its length, as in SRB mode; Exhausted, slower (it starts half fatigued), and
    its tempo figure says so (a tired clip of one window also crashed the sampler)."""
    monkeypatch.setattr(samcon, "SamconSettings", FEW_SAMPLES)
    walk = replace(_load("walk"), loop=False).resampled(fps)
    tired = schedule.from_preset("Exhausted", fps=fps)
    for frames in (2, 3, 6):
        clip = replace(walk, root_pos=walk.root_pos[:frames], root_rot=walk.root_rot[:frames],
                       joint_rots=walk.joint_rots[:frames], name=f"walk{frames}")
        take = simulate_clip(clip, None, mode="torque")
        assert take.frames == simulate_clip(clip, None).frames == frames
        assert take.reference_time[-1] == pytest.approx(clip.duration, abs=1e-12)
        assert take.duration_stretch() == pytest.approx(1.0) and take.finished
        slower = simulate_clip(clip, tired, mode="torque")
        played = slower.reference_time
        assert played[-1] == pytest.approx(clip.duration, abs=1e-12) and np.all(played <= clip.duration + 1e-12)
        assert frames <= slower.frames <= MAX_STRETCH * (frames - 1) + 1 and slower.finished
        assert slower.duration_stretch() == pytest.approx((slower.frames - 1) / fps / clip.duration)
