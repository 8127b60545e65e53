"""A clip in slow motion (a capture imported one recorded frame per scene frame) is simulated at
the speed it was performed and baked back at its own: the slow-down read off its flights."""
from dataclasses import replace

import numpy as np
import pytest

from runtime.motion import clip as C
from runtime.engines import chooser
from runtime.reference import playback
from runtime.simulate import simulate_clip


def _parabola_flights(k: float, fps: float = 24.0):
    """Centre-of-mass heights of two flights falling at g / k^2, with stance between."""
    t = np.arange(int(0.4 * k * fps)) / fps
    arc = 1.0 + 1.4 * t - 0.5 * 9.81 / k ** 2 * t ** 2
    stand = np.full(10, 1.0)
    z = np.concatenate([stand, arc, stand, arc, stand])
    air = np.concatenate([np.zeros(10), np.ones(len(t)), np.zeros(10), np.ones(len(t)), np.zeros(10)]).astype(bool)
    com = np.stack([0.5 * np.arange(len(z)) / fps, np.zeros(len(z)), z], axis=1)    # moving on at 0.5 m/s
    return com, air, fps


@pytest.mark.parametrize("k", [1.0, 2.0, 4.2])
def test_each_flight_is_timed_by_gravity(k):
    com, air, fps = _parabola_flights(k)
    found = playback.flight_slowdowns(com, air, fps)
    assert len(found) == 2
    assert found == pytest.approx([k, k], rel=1e-6)


def test_a_flight_that_is_not_free_is_not_timed():
    """Rising, bobbing with unseen steps, or pushed sideways: not gravity's clock."""
    t = np.arange(48) / 24.0
    air = np.ones(48, dtype=bool)
    rising = np.stack([0 * t, 0 * t, 1.0 + 0.1 * t + 0.5 * t ** 2], axis=1)
    bobbing = np.stack([0.5 * t, 0 * t, 1.0 - 0.1 * t ** 2 + 0.03 * np.sin(2 * np.pi * 2.0 * t)], axis=1)
    pushed = np.stack([2.0 * t ** 2, 0 * t, 1.0 + t - 0.5 * t ** 2], axis=1)
    for com in (rising, bobbing, pushed):
        found = playback.flight_slowdowns(com, air, 24.0)
        assert len(found) == 1 and np.isnan(found[0])
    falling = np.stack([0.5 * t, 0 * t, 1.0 + t - 0.5 * 9.81 / 9.0 * t ** 2], axis=1)
    assert playback.flight_slowdowns(falling, air, 24.0) == pytest.approx([3.0])
    on_a_bar = np.broadcast_to([0.0, 0.0, 2.0], (48, 1, 3))        # a hand above the body, holding still
    assert np.isnan(playback.flight_slowdowns(falling, air, 24.0, on_a_bar)[0])
    waving = falling[:, None, :] + np.array([0.0, 0.2, 0.3])         # a hand raised to the shoulder, flying with it
    assert playback.flight_slowdowns(falling, air, 24.0, waving) == pytest.approx([3.0])


def _jumps(slower: float):
    jump = C.load_deepmimic(C.deepmimic_clip_path("jump"))
    twice = replace(jump, loop=True).repeated(2.0 * jump.duration)
    return replace(twice, fps=twice.fps / slower, name=f"jump_x{slower:g}")


def test_real_speed_jumps_play_as_keyed_and_slowed_ones_are_found():
    analyse = chooser.shared_kinematics().analyse
    assert playback.slowdown(analyse(_jumps(1.0))) is None
    assert playback.slowdown(analyse(_jumps(1.3))) is None       # not clearly slow motion
    assert playback.slowdown(analyse(_jumps(4.0))) == pytest.approx(4.0, rel=0.15)


@pytest.mark.slow
def test_a_slow_motion_clip_is_simulated_at_real_speed_and_baked_back_at_its_own():
    slow = _jumps(4.0)
    take = simulate_clip(slow, seconds=None)
    k = take.stats["playback_slowdown"]
    assert k == pytest.approx(4.0, rel=0.15)
    assert "slower than it was performed" in take.notes["playback"] and "jump_x4" in take.notes["playback"]
    assert take.fps == pytest.approx(slow.fps) and take.clip.fps == pytest.approx(slow.fps)
    assert take.reference_time[-1] == pytest.approx(slow.duration, abs=1.0 / slow.fps)
    assert not take.fell
    # The flights are simulated (at real speed they can be), not kept as keyed in slow motion.
    assert take.stats["floor_work"] == 0.0
    as_keyed = simulate_clip(slow, real_speed=False)
    assert "playback" not in as_keyed.notes and as_keyed.stats["floor_work"] > 0.0


def _cartoon_hop(height: float = 0.4, hop: float = 0.3, seconds: float = 3.0) -> C.Clip:
    """Standing still, then a hop keyed ``height`` m up and down in ``hop`` s (a parabola at
    8 h / T^2: 3.6 g), then standing again: cartoon timing."""
    from tests.support.made_clips import idle_clip

    clip = idle_clip(seconds)
    t = np.arange(clip.frames) / clip.fps
    s = (t - 1.0) / hop
    lift = np.where((s > 0.0) & (s < 1.0), 4.0 * height * s * (1.0 - s), 0.0)
    root = clip.root_pos.copy()
    root[:, 2] += lift
    return replace(clip, name="hop", root_pos=root)


def test_captured_flights_are_simulated_and_a_keyed_hop_is_kept_as_keyed():
    """Captured flights fall at 1 g and are thrown; a hop keyed faster than gravity allows is kept
    as keyed (playback.keyed_flights): simulated as a throw it carried the body far above the
    keyed hop and landed it late."""
    from runtime.engines.pybullet.kinematics import Kinematics

    kin = Kinematics()
    try:
        for name in ("jump", "run", "dance_b", "spinkick", "backflip", "spin"):
            assert not playback.keyed_flights(kin.analyse(C.load_deepmimic(C.deepmimic_clip_path(name)))).any(), name
        hop = _cartoon_hop()
        assert playback.keyed_flights(kin.analyse(hop)).any()
    finally:
        kin.close()
    take = simulate_clip(hop, None, out_fps=30)
    assert take.stats["keyed_flight"] > 0.0 and not take.fell
    lift = take.clip.root_pos[:, 2] - hop.root_pos[:, 2]
    assert np.abs(lift).max() < 0.05          # m: up and down with the keyed hop, and back on the floor
