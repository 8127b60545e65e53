"""Torque mode and the slow-motion judgement, broken on purpose (issue 44, items 4-6): a capture in
slow motion is judged the same way in both modes and refused with its own reason and fix; a take
that falls is never finished; a cartwheel whose hands a retarget leaves above the floor is floor
work, not slow motion; a clip of a few frames is baked at its own length."""
from dataclasses import replace
from functools import partial

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime import clip as C  # noqa: E402
from runtime import samcon, schedule  # noqa: E402
from runtime.simulate import simulate  # noqa: E402
from runtime.tempo import MAX_STRETCH  # noqa: E402

FEW_SAMPLES = partial(samcon.SamconSettings, samples=60, keep=6)


def _load(name):
    return C.load_deepmimic(C.deepmimic_clip_path(name))


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
        take = simulate(clip, None, mode="torque")
        assert take.frames == simulate(clip, None).frames == frames
        assert take.reference_time[-1] == pytest.approx(clip.duration, abs=1e-12)
        assert take.duration_stretch() == pytest.approx(1.0) and take.finished
        slower = simulate(clip, tired, mode="torque")
        played = slower.reference_time
        assert played[-1] == pytest.approx(clip.duration, abs=1e-12) and np.all(played <= clip.duration + 1e-12)
        assert frames <= slower.frames <= MAX_STRETCH * (frames - 1) + 1 and slower.finished
        assert slower.duration_stretch() == pytest.approx((slower.frames - 1) / fps / clip.duration)
