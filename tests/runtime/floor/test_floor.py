"""Floor work: the static joint loads of a body held up by more than its feet, and what they do
to a take (tiring the working limbs, slowing the motion, resting only where resting helps)."""
from types import SimpleNamespace

import numpy as np
import pytest

from runtime.motion import clip as C
from runtime.floor import work as floor
from runtime.reference import support
from runtime.body import proxy
from runtime.maths import quat
from runtime.fatigue import schedule
from runtime import simulate

from made_clips import seated_typist

G = support.GRAVITY


def _two_links(hip_touches: bool):
    """A 30 kg pelvis on the floor at the origin and a 10 kg thigh 0.3 m ahead of its hip joint,
    held out level (or resting on the floor too), still."""
    names = ("root", "right_hip")
    frames = 3
    ck = SimpleNamespace(
        link_names=names, fps=30.0, floor_height=0.0,
        link_mass=np.array([30.0, 10.0]),
        link_pos=np.tile([[0.0, 0.0, 0.1], [0.3, 0.0, 0.1]], (frames, 1, 1)),
        joint_pos=np.tile([[0.0, 0.0, 0.1], [0.0, 0.0, 0.1]], (frames, 1, 1)),
        link_rot=np.tile(quat.IDENTITY, (frames, 2, 1)),
        com=np.tile([0.3 * 10.0 / 40.0, 0.0, 0.1], (frames, 1)),
        touching=np.tile([True, hip_touches], (frames, 1)))
    return ck, np.zeros((frames, 3))


def _dof(name: str, axis: int) -> int:
    return [(n, a) for n, a, _ in proxy.dof_table()].index((name, axis))


def test_a_joint_carries_the_weight_beyond_it_less_what_the_floor_takes():
    held, acc = _two_links(hip_touches=False)
    loads = floor.static_torques(held, acc)
    # Held out level: the hip holds the thigh's weight on its 0.3 m lever, about the lateral axis.
    assert loads[:, _dof("right_hip", 1)] == pytest.approx(10.0 * G * 0.3, rel=1e-9)
    assert np.delete(loads, _dof("right_hip", 1), axis=1).max() == pytest.approx(0.0, abs=1e-9)
    # Resting on the floor as well, the floor carries the thigh and the hip holds nothing.
    rested, acc = _two_links(hip_touches=True)
    assert floor.static_torques(rested, acc).max() < 0.01 * 10.0 * G * 0.3


def test_support_shares_carry_the_weight_and_balance_it():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    shares = floor.support_shares(points, np.array([0.25, 0.25]), 100.0)
    assert shares.min() >= 0.0 and shares.sum() == pytest.approx(100.0, rel=1e-3)
    assert shares @ points == pytest.approx([25.0, 25.0], rel=1e-2)
    # A centre of mass beyond the support: the nearest balance, never a pulling floor.
    assert floor.support_shares(points, np.array([2.0, 0.0]), 100.0).min() >= 0.0


@pytest.fixture(scope="module")
def crawls():
    crawl = C.load_deepmimic(C.deepmimic_clip_path("crawl"))
    tired = schedule.from_fitness(0.25, fps=30, time_scale=40)
    return {name: simulate.simulate_clip(crawl, sched, seconds=6.0, out_fps=30)
            for name, sched in (("fresh", None), ("tired", tired))}


@pytest.mark.slow
def test_a_tired_crawl_tires_the_arms_and_trunk_that_carry_it_and_slows(crawls):
    fresh, tired = crawls["fresh"], crawls["tired"]
    assert fresh.mode == tired.mode == "srb-reference-follow" and not tired.fell
    assert tired.notes["support"].startswith("hands, knees or back on the floor")
    parts = np.array(proxy.dof_body_parts())
    rc = tired.fatigue["RC"]
    for part in ("arms", "trunk", "legs"):          # hands and knees hold it up, the trunk bridges them
        assert rc[:, parts == part].min() < 0.9, part
    assert rc[:, parts == "arms"].min() < 0.5
    # Fresh follows the source at its tempo; tired takes longer over the same motion.
    assert fresh.duration_stretch() == pytest.approx(1.0, abs=0.02)
    assert tired.duration_stretch() > 1.1
    # The pose is the source's, at whatever moment of it the take shows.
    _, _, joints = C.load_deepmimic(C.deepmimic_clip_path("crawl")).repeated(6.0).sample_many(tired.reference_time)
    assert float(quat.angle_between(tired.clip.joint_rots, joints).max()) < 1e-4


@pytest.mark.slow
def test_floor_work_rests_only_in_a_pose_that_costs_little():
    """An exhausted get-up (lying, then pushing up) may rest lying down, never on all fours."""
    getup = C.load_deepmimic(C.deepmimic_clip_path("getup_facedown"))
    take = simulate.simulate_clip(getup, schedule.from_fitness(0.1, fps=30, time_scale=80), out_fps=30, hold=2.0)
    rests = [e for e in take.events if e["kind"] == "rest"]
    assert rests, "an exhausted get-up should pause"
    for e in rests:
        f = min(e["frame"], take.frames - 1)
        assert (np.abs(take.torque[f]) / take.tau_max).max() < floor.RESTFUL_LOAD + 0.05
    again = simulate.simulate_clip(getup, schedule.from_fitness(0.1, fps=30, time_scale=80), out_fps=30, hold=2.0)
    assert np.array_equal(take.fatigue["RC"], again.fatigue["RC"])      # deterministic


def test_outside_support_measures_the_distance_to_the_hull():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.5]])
    assert support.outside_support(np.array([0.3, 0.6]), square) == 0.0
    assert support.outside_support(np.array([1.5, 0.5]), square) == pytest.approx(0.5)
    assert support.outside_support(np.array([2.0, 2.0]), square) == pytest.approx(np.sqrt(2.0))
    assert support.outside_support(np.array([0.5, 1.0]), square[:2]) == pytest.approx(1.0)   # a segment
    assert support.outside_support(np.array([0.0, 3.0]), square[:1]) == pytest.approx(3.0)   # a point
    assert support.outside_support(np.zeros(2), np.zeros((0, 2))) == float("inf")


@pytest.mark.slow
def test_a_seated_character_is_held_by_its_seat_not_its_legs():
    """Feet on the floor and nothing else: carried by its feet, a tired sitter's legs held the
    whole body in a squat and it fell within 4 s.  The unseen seat now carries it."""
    from runtime.engines.pybullet import kinematics
    from runtime.maths import lowpass

    with kinematics.Kinematics() as kin:
        ck = kin.analyse(seated_typist())
        assert support.held_elsewhere(ck, lowpass.derivative(ck.com, ck.fps)).mean() > 0.9
        for name in ("walk", "punch", "kick", "dance_b", "spin"):     # standing motion stands on its feet
            other = kin.analyse(C.load_deepmimic(C.deepmimic_clip_path(name)))
            assert not support.held_elsewhere(other, lowpass.derivative(other.com, other.fps)).any(), name
    take = simulate.simulate_clip(seated_typist(), schedule.from_fitness(0.25, fps=30, time_scale=40), out_fps=30)
    assert not take.fell and take.mode == "srb-reference-follow"
    assert "does not show" in take.notes["pelvis_and_legs"]
    assert take.notes["support"].startswith("an unseen seat")
    legs = np.array(proxy.dof_body_parts()) == "legs"
    assert take.fatigue["TL"][:, legs].mean() < 0.1       # the seat, not the knees, holds the body up
    arms = np.array(proxy.dof_body_parts()) == "arms"
    # The forearms held out over the keys tire, a little: their hold is near the endurance limit.
    assert take.fatigue["RC"][:, arms].min() < 0.97
    assert take.fatigue["TL"][:, arms].mean() > take.fatigue["TL"][:, legs].mean()


def walk_off_a_box(height: float = 0.2) -> C.Clip:
    """A walk that starts on a box ``height`` high (not part of the clip), steps off it after
    1.5 s, falls freely to the floor and walks on."""
    from dataclasses import replace

    walk = C.load_deepmimic(C.deepmimic_clip_path("walk")).repeated(4.0)
    t = np.arange(walk.frames) / walk.fps
    drop = np.sqrt(2.0 * height / G)
    lift = np.where(t < 1.5, height, np.where(t < 1.5 + drop, height - 0.5 * G * (t - 1.5) ** 2, 0.0))
    return replace(walk, name="box", root_pos=walk.root_pos + np.outer(np.maximum(lift, 0.0), [0.0, 0.0, 1.0]))


@pytest.mark.slow
def test_feet_on_an_unseen_box_are_what_carries_the_body():
    """The floor is one level per clip (where the feet return to).  Started on a box the body
    was in the air, dropped and fell within 0.4 s, fresh; now the feet on the box carry it."""
    from runtime.engines.pybullet import kinematics
    from runtime.maths import lowpass

    with kinematics.Kinematics() as kin:
        ck = kin.analyse(walk_off_a_box())
        acc = lowpass.derivative(lowpass.derivative(ck.com, ck.fps), ck.fps)
        raised = support.raised_feet(ck, acc, support.hanging_hands(ck, acc))
        t = np.arange(len(raised)) / ck.fps
        assert raised[t < 1.4].any(axis=1).mean() > 0.9 and not raised[t > 2.0].any()
        for name in ("walk", "run", "jump", "kick", "dance_a", "dance_b", "spin", "backflip", "spinkick"):
            other = kin.analyse(C.load_deepmimic(C.deepmimic_clip_path(name)))      # real flights fall freely
            other_acc = lowpass.derivative(lowpass.derivative(other.com, other.fps), other.fps)
            assert not support.raised_feet(other, other_acc, support.hanging_hands(other, other_acc)).any(), name
    take = simulate.simulate_clip(walk_off_a_box(), None, out_fps=30)
    # on the box the feet on it carry the body (pose as keyed); off it, the walk's balance is simulated
    assert not take.fell and take.mode == "srb" and 0.3 < take.stats["floor_work"] < 0.6
    assert "above the floor" in take.notes["pelvis_and_legs"] and take.stats["raised_feet"] > 0.3
    assert take.notes["support"].startswith("its feet (") and "an unseen step or box (" in take.notes["support"]
    tired = simulate.simulate_clip(walk_off_a_box(), schedule.from_fitness(0.25, fps=30, time_scale=40), out_fps=30)
    legs = np.array(proxy.dof_body_parts()) == "legs"
    assert not tired.fell and tired.fatigue["RC"][:, legs].min() < 0.95     # standing on the box costs the legs


def pull_ups(seconds: float = 6.0) -> C.Clip:
    """Hanging from a bar the clip does not show (feet 0.5 m or more off the ground), arms
    overhead, one pull-up every 2 s."""
    from dataclasses import replace

    walk = C.load_deepmimic(C.deepmimic_clip_path("walk"))
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    frames = int(round(seconds * 30)) + 1
    up = 0.5 - 0.5 * np.cos(np.pi * np.arange(frames) / 30.0)
    z = [0.0, 0.0, 1.0]
    joints = np.tile(quat.IDENTITY, (frames, len(names), 1))
    for side in ("right", "left"):
        joints[:, names.index(f"{side}_shoulder")] = np.stack([quat.from_axis_angle(z, 0.95 * np.pi - 1.2 * u) for u in up])
        joints[:, names.index(f"{side}_elbow")] = np.stack([quat.from_axis_angle(z, -2.2 * u) for u in up])
    root = np.tile(walk.root_pos[0], (frames, 1))
    root[:, 2] += 0.5 + 0.35 * up
    return replace(walk, name="pull-ups", loop=False, root_pos=root, root_rot=np.tile(walk.root_rot[0], (frames, 1)),
                   joint_rots=joints)


@pytest.mark.slow
def test_pull_ups_hang_from_the_hands_and_tire_the_arms():
    """Carried off the floor with the hands above the centre of mass, the body hangs: its arms
    and trunk carry it, not its legs (taken for feet on a box, the legs held the body up)."""
    take = simulate.simulate_clip(pull_ups(), schedule.from_fitness(0.25, fps=30, time_scale=40), out_fps=30)
    assert not take.fell and take.mode == "srb-reference-follow" and take.stats["hanging"] > 0.3
    assert "hangs from its hands" in take.notes["pelvis_and_legs"]
    assert take.notes["support"].startswith("an unseen bar or ledge it hangs from")
    parts = np.array(proxy.dof_body_parts())
    load = {part: take.fatigue["TL"][:, parts == part].mean() for part in ("arms", "legs")}
    assert load["arms"] > 5 * load["legs"]
    assert take.fatigue["RC"][:, parts == "arms"].min() < 0.5 < take.fatigue["RC"][:, parts == "legs"].min()


def test_a_capture_in_slow_motion_is_named_slow_motion_not_a_box_or_a_seat():
    """A capture played slower than it was recorded (a 120 fps BVH imported at 24 fps): its flights
    last longer than gravity allows and its walk lingers outside the stance foot, falling far
    slower than a pendulum would.  Neither is a box to stand on nor a seat (a seat needs a lowered
    pelvis): both are slow motion, kept as keyed; the same clips in real time are not."""
    from dataclasses import replace

    from runtime.engines.pybullet import kinematics
    from runtime.maths import lowpass

    def support_of(clip):
        with kinematics.Kinematics() as kin:
            ck = kin.analyse(clip)
            vel = lowpass.derivative(ck.com, ck.fps)
            return support.find_support(ck, vel, lowpass.derivative(vel, ck.fps))

    for name in ("jump", "kick"):
        clip = C.load_deepmimic(C.deepmimic_clip_path(name))
        assert not support_of(clip).floor_work, name
        slow = support_of(replace(clip, fps=clip.fps / 5))
        assert slow.slow.any() and not slow.raised.any() and not slow.held.any(), name
        assert slow.described()[0].startswith("slow motion"), name
        assert "Update Scene FPS" in slow.described()[1]
