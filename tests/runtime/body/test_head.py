"""How a tired neck carries the head (runtime.body.head)."""
import math

import numpy as np

from runtime.body import head
from runtime.maths import quat

UPRIGHT_CHEST = quat.from_axis_angle([1.0, 0.0, 0.0], math.pi / 2)   # the proxy's y (up its spine) along world z
CHIN_DOWN = np.array([0.0, 0.0, -0.35])                                # a droop about the neck's lateral axis


def test_a_strong_neck_holds_the_whole_droop_and_a_weak_one_less():
    load = head.head_load()
    source = np.array([0.0, 0.0, 0.0, 1.0])
    strong = head.held_droop(source, CHIN_DOWN, UPRIGHT_CHEST, load, strength=10.0)
    assert np.allclose(strong, quat.from_rotvec(CHIN_DOWN))
    weak = head.held_droop(source, CHIN_DOWN, UPRIGHT_CHEST, load, strength=0.5)
    tilt = head.tilt(weak, UPRIGHT_CHEST, load)
    assert 0.0 < tilt < np.linalg.norm(CHIN_DOWN)
    # the weak neck's head leans no further than its weight moment allows
    assert load.weight * np.linalg.norm(load.com) * math.sin(tilt) <= 0.5 + 1e-6


def test_a_neck_with_nothing_left_keeps_the_source_head_and_droops_no_further():
    load = head.head_load()
    source = quat.from_rotvec(np.array([0.0, 0.0, -0.3]))
    out = head.held_droop(source, CHIN_DOWN, UPRIGHT_CHEST, load, strength=0.0)
    assert math.isclose(head.tilt(out, UPRIGHT_CHEST, load), head.tilt(source, UPRIGHT_CHEST, load), abs_tol=1e-9)


def test_the_head_load_scales_with_the_character():
    small, big = head.head_load(mass=45.0), head.head_load(mass=90.0)
    assert math.isclose(big.weight, 2.0 * small.weight) and math.isclose(big.damping, 2.0 * small.damping)
    assert 0.0 < head.held_tilt(small, 1.0) < head.held_tilt(small, 2.0) <= math.pi


def test_an_exhausted_dancer_s_head_droops_forward_without_flopping_or_whipping():
    """Before: the Exhausted preset bent this dancer's head 54 degrees against the chest (95th
    percentile) and threw it up to 109 degrees in a frame; the source stays within 37."""
    from runtime.motion import clip as clips, gait
    from runtime.fatigue import params as fatigue_params, schedule
    from runtime.body import proxy
    from runtime import simulate

    source = clips.load_deepmimic(clips.deepmimic_clip_path("dance_a"))
    preset = fatigue_params.preset("Exhausted")
    sched = schedule.from_fitness(preset.fitness, fps=30, time_scale=preset.time_scale,
                                  initial_fatigue=preset.initial_fatigue)
    take = simulate.simulate_clip(source, sched, seconds=10, out_fps=30)
    fresh = simulate.simulate_clip(source, None, seconds=10, out_fps=30)
    neck = take.clip.joint_rots[:, [j.name for j in proxy.DEFAULT_JOINTS].index("neck")]
    whip = np.degrees(quat.angle_between(neck[1:], neck[:-1]))
    assert np.percentile(gait.head_chest_bend_series(take.clip), 95) < 50.0
    assert np.percentile(whip, 99) < 25.0
    assert gait.posture_gain(take, fresh, gait.head_pitch_series) > 0.0     # the head goes forward
    assert not take.fell
