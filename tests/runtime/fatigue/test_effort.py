"""Effort economy (runtime.fatigue.effort) and the setup chain (runtime.reference.prepare) through their public calls."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.motion import clip as C
from runtime.fatigue import effort
from runtime.engines import chooser
from runtime.reference import prepare
from runtime.body import proxy
from runtime.reference.rigid_body import body_from_proxy
from runtime.engines.limbs import LIMB_JOINTS
from runtime.maths import quat


def test_a_torque_costs_nothing_extra_fresh_and_more_the_less_capacity_is_left():
    assert effort.fatigue_cost(1.0) == 0.0
    costs = effort.fatigue_cost(np.array([0.9, 0.5, 0.1, 0.0]))
    assert np.all(np.diff(costs) > 0) and costs[-1] == effort.fatigue_cost(0.05)   # floored at 0.05


def test_legs_hold_more_while_the_body_sinks_than_while_it_rises():
    assert effort.yielding_strength(0.5, 1.0) == 1.0                  # rising
    assert effort.yielding_strength(0.0, 1.0) == 1.0
    assert effort.yielding_strength(-effort.YIELD_SPEED, 1.0) == effort.ECCENTRIC_STRENGTH
    assert 1.0 < effort.yielding_strength(-0.5 * effort.YIELD_SPEED, 1.0) < effort.ECCENTRIC_STRENGTH


def test_fresh_knees_do_not_sag_and_tired_ones_sag_at_a_bounded_rate():
    body = body_from_proxy(chooser.shared_kinematics())
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    knees = effort.KneeSag([names.index("right_knee"), names.index("left_knee")])
    joints = np.tile([0.0, 0.0, 0.0, 1.0], (len(names), 1))
    load = np.full(len(body.tau_max), 0.5)
    assert knees.sag(body, 1.0, load, np.ones(len(body.tau_max)), joints, 1 / 60) == 0.0
    tired = np.full(len(body.tau_max), 0.3)
    first = knees.sag(body, 1.0, load, tired, joints, 1 / 60)
    assert first > 0.0 and np.all(knees.give == pytest.approx(effort.MAX_GIVE_RATE / 60))
    for _ in range(600):
        last = knees.sag(body, 1.0, load, tired, joints, 1 / 60)
    assert np.all(knees.give <= effort.MAX_KNEE_GIVE) and last > first


def test_tired_limbs_yield_within_their_caps_and_not_at_all_without_economy():
    spherical = [name not in ("right_elbow", "left_elbow") for name in LIMB_JOINTS]
    give = effort.LimbGive(spherical, dt=1 / 60)
    n = len(give.load)
    give.book(np.full(n, 50.0))
    assert give.yields(0.0, np.full(n, 0.2), np.full(n, 0.01), 1 / 60) is None
    for _ in range(600):
        out = give.yields(1.0, np.full(n, 0.2), np.full(n, 0.01), 1 / 60)
    k = 0
    for sph, cap in zip(spherical, give.caps):
        width = 3 if sph else 1
        assert np.linalg.norm(out[k:k + width]) <= cap + 1e-12
        k += width


def test_a_sampled_path_s_tired_joints_yield_to_their_load_but_hips_and_ankles_hold():
    """Torque mode's yield: nothing fresh; tired, a limb or trunk against the torque it holds, a
    knee into its bend whichever way its torque went, the head forward (chin down) whichever way
    its torque went, within each joint's cap and at a bounded pace; knees stand tall at rest."""
    joints = proxy.DEFAULT_JOINTS
    give = effort.PathGive(joints, window=0.1)
    names = [j.name for j in joints for _ in range(j.dofs)]
    path = give.fresh()
    held = np.full((25, give.dofs), 0.4) * np.where(np.arange(give.dofs) % 2, 1.0, -1.0)   # N*m over tau_max 1
    held[:12] *= -0.5                                # a knee pulled into its crouch, then pushing up
    path = give.booked(path, path[1], held, np.ones(give.dofs))
    assert np.all(give.give(path, np.ones(give.dofs), 1.0, False) == 0.0)                 # fresh: none
    tired = np.full(give.dofs, 0.3)
    assert np.all(give.give(path, tired, 0.0, False) == 0.0)                              # economy 0: none
    first = give.give(path, tired, 1.0, False)
    assert np.abs(first).max() == pytest.approx(effort.MAX_GIVE_RATE * 0.1)
    for _ in range(100):
        path = give.booked(path, give.give(path, tired, 1.0, False), held, np.ones(give.dofs))
    settled = path[1]
    for k, name in enumerate(names):
        if name.endswith(("hip", "ankle")):
            assert settled[k] == 0.0
        elif name.endswith("knee"):
            assert settled[k] == pytest.approx(effort.KNEE_BENDS * effort.MAX_KNEE_GIVE)    # into its bend
        elif name == "neck":
            continue
        else:
            assert settled[k] != 0.0 and np.sign(settled[k]) == -np.sign(held[-1, k])  # against its load
    neck = slice(names.index("neck"), names.index("neck") + 3)
    assert np.allclose(settled[neck], [0.0, 0.0, effort.HEAD_DROOPS * effort.MAX_HEAD_DROOP])      # chin down
    first_dof = 0
    for joint in joints:
        part = settled[first_dof:first_dof + joint.dofs]
        most = (effort.MAX_KNEE_GIVE if joint.name.endswith("knee") else effort.MAX_HEAD_DROOP
                if joint.name == "neck" else effort.MAX_UPRIGHT_GIVE
                if joint.name in effort.UPRIGHT_JOINTS else effort.MAX_GIVE)
        assert np.linalg.norm(part) <= most + 1e-12
        first_dof += joint.dofs
    resting = give.give(path, tired, 1.0, True)
    knees = [k for k, name in enumerate(names) if name.endswith("knee")]
    arms = [k for k, name in enumerate(names) if name.endswith("elbow")]
    assert np.all(np.abs(resting[knees]) < np.abs(settled[knees]))                          # standing up again
    assert np.all(resting[arms] == settled[arms])


def test_the_proxy_s_knees_bend_the_way_the_yield_bends_them():
    jump = C.load_deepmimic(C.deepmimic_clip_path("jump"))
    knees = [i for i, j in enumerate(proxy.DEFAULT_JOINTS) if j.name.endswith("knee")]
    bend = np.array([quat.hinge_angle(jump.joint_rots[:, k]) for k in knees])
    assert np.sign(bend[:, np.abs(bend).argmax(axis=1)].diagonal()).tolist() == [effort.KNEE_BENDS] * 2   # the crouch


def test_the_setup_chain_says_what_holds_the_body_up():
    kin = chooser.shared_kinematics()
    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    crawl = C.load_deepmimic(C.deepmimic_clip_path("crawl"))
    walking = prepare.prepare(walk, kin)
    assert not walking.support.floor_work and walking.ref.clip is walk and walking.body.mass == proxy.DEFAULT_MASS
    assert prepare.prepare(crawl, kin, 70.0).support.floor_work


def test_the_trunk_leans_over_tired_knees_and_the_head_keeps_its_bearing():
    assert effort.tired_lean(1.0) == 0.0 and effort.tired_lean(effort.TIRED_LEAN_FROM) == 0.0
    assert 0.0 < effort.tired_lean(0.5) < effort.tired_lean(0.2) == pytest.approx(effort.TIRED_LEAN)
    from runtime.engines import limbs

    joints = np.tile([0.0, 0.0, 0.0, 1.0], (len(proxy.DEFAULT_JOINTS), 1))
    _, _, slots = limbs.limb_layout()
    leaned = effort.lean_trunk(joints, slots, 0.1)
    chest, neck = slots[limbs.LIMB_JOINTS.index("chest")], slots[limbs.LIMB_JOINTS.index("neck")]
    assert quat.to_rotvec(leaned[chest])[2] == pytest.approx(-0.1)                     # forward
    head = quat.multiply(leaned[chest], leaned[neck])
    assert quat.angle_between(head, joints[neck]) == pytest.approx(0.0, abs=1e-12)    # the head's bearing kept
