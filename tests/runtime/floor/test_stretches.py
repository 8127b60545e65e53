"""What holds the body up, stretch by stretch (runtime.floor.stretches): the feet where they carry it
(balance simulated), floor work where hands, knees, back or an unseen support do (pose as keyed,
its load booked), one clock, fatigue model and tempo rule across the switches."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.motion import clip as C
from runtime.motion import metrics
from runtime.maths import quat
from runtime import simulate
from runtime.floor import stretches


def test_short_feet_gaps_next_to_floor_work_are_closed():
    """Nobody stands up for a moment between two kneels, or for a moment before a hang."""
    m = np.zeros(100, dtype=bool)
    m[20:40] = True
    m[45:60] = True             # 5 frames of feet between: closed
    m[80:97] = True             # 3 frames to the end: closed; 20 frames before: kept
    out = stretches._close_gaps(m, 10)
    assert out[20:60].all() and out[80:].all() and not out[60:80].any() and not out[:20].any()


def test_floor_work_grows_while_the_body_is_low():
    m = np.zeros(10, dtype=bool)
    m[2:4] = True
    low = np.zeros(10, dtype=bool)
    low[4:7] = True
    assert np.flatnonzero(stretches._grow_while(m, low)).tolist() == [2, 3, 4, 5, 6]


@pytest.mark.parametrize("mask, kind", [([0] * 40, "feet"), ([1] * 40, "floor"), ([1] * 39 + [0], "floor"),
                                        ([1] * 20 + [0] * 20, "mixed")])
def test_kind(mask, kind):
    assert stretches.kind(np.array(mask, dtype=bool)) == kind


@pytest.mark.slow
def test_a_cartwheel_balances_on_its_feet_and_keeps_its_hands_on_the_floor():
    """A cartwheel is hands on the floor, not an unseen step: there the pose is the keyed one;
    on its feet before and after, the SRB balances it; no pop where floor work begins."""
    cart = C.load_deepmimic(C.deepmimic_clip_path("cartwheel"))
    take = simulate.simulate_clip(cart, None, out_fps=30)
    assert not take.fell and take.mode == "srb"
    share = take.stats["floor_work"]
    assert 0.2 < share < 0.8
    support = take.notes["support"]
    assert support.startswith("its feet (") and "hands, knees or back on the floor (" in support
    ref_pos, ref_rot, _ = cart.sample_many(take.reference_time)
    off = np.linalg.norm(take.clip.root_pos - ref_pos, axis=1)
    assert off.max() > 1e-4                    # the feet's stretches are simulated, not copied
    step = np.linalg.norm(np.diff(take.clip.root_pos, axis=0), axis=1)
    ref_step = np.linalg.norm(np.diff(ref_pos, axis=0), axis=1)
    assert step.max() < ref_step.max() + 0.05  # eased where floor work begins: no jump of the root
    assert metrics.joint_error_deg(take, cart) < 5.0
    turn = np.degrees(quat.angle_between(take.clip.root_rot[1:], take.clip.root_rot[:-1]))
    ref_turn = np.degrees(quat.angle_between(ref_rot[1:], ref_rot[:-1]))
    assert turn.max() < ref_turn.max() + 10.0
