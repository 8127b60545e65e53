"""The braced rest (runtime.reference.rest_posture): bent forward, hands on the thighs, chosen from the body's state."""
import math

import numpy as np

from runtime.motion import clip as clips, gait
from runtime.fatigue import params as fatigue_params, schedule
from runtime.maths import quat
from runtime.reference import rest_posture
from runtime import simulate


def test_the_rest_bends_in_and_out_and_only_arms_that_can_brace_do():
    posture = rest_posture.RestPosture(dt=0.1)
    bends = [posture.update(True, arms_rc=0.8) for _ in range(10)]
    assert bends[0] > 0.0 and bends[-1] == 1.0 and posture.braced
    out = [posture.update(False, arms_rc=0.8) for _ in range(10)]
    assert out[-1] == 0.0
    weak = rest_posture.RestPosture(dt=0.1)
    assert weak.update(True, arms_rc=0.1) == 0.0 and not weak.braced


def test_the_hinge_tips_the_pelvis_forward_about_the_centre_of_mass():
    upright = quat.from_axis_angle([1.0, 0.0, 0.0], math.pi / 2)       # proxy y (up) along world z
    com, pelvis = np.zeros(3), np.array([0.0, 0.0, -0.1])
    pos, rot = rest_posture.hinged(com, pelvis, upright, math.radians(25.0))
    up = quat.rotate(rot, np.array([0.0, 1.0, 0.0]))
    assert abs(math.degrees(math.acos(up[2])) - 25.0) < 1e-6             # tipped 25 degrees
    assert abs(np.linalg.norm(pos - com) - 0.1) < 1e-12                   # about the centre of mass
    assert pos[2] > pelvis[2]                                             # the hips swing back and up


def test_an_exhausted_body_rests_bent_forward_and_straightens_to_go_on():
    source = clips.load_deepmimic(clips.deepmimic_clip_path("kick"))
    p = fatigue_params.preset("Exhausted")
    take = simulate.simulate_clip(source, schedule.from_fitness(p.fitness, fps=30, time_scale=p.time_scale,
                                                           initial_fatigue=p.initial_fatigue), out_fps=30)
    rests = [(a["frame"], b["frame"]) for a, b in zip(take.events, take.events[1:])
             if a["kind"] == "rest" and b["kind"] == "resume"]
    assert rests and not take.fell
    trunk = gait.trunk_pitch_series(take.clip)
    start, end = rests[0]
    settled = trunk[start + int(rest_posture.BEND_IN_S * take.fps) + 2:end]
    assert settled.size and settled.min() > trunk[max(start - 3, 0)] + 10.0    # bent well forward of where it stopped
    assert np.median(settled) > math.degrees(rest_posture.PELVIS_LEAN)
