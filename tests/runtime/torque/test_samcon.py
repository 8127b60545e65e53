"""The sampling-based whole-body tracker (runtime.torque.samcon): the same body as the proxy, motors on
the joints only, the same take however the samples are spread over processes, a walk kept up."""
import hashlib
import sys

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime import errors
from runtime.motion import clip as C  # noqa: E402
from runtime.engines import chooser
from runtime.maths import quat
from runtime.torque import samcon
from runtime import simulate  # noqa: E402
from runtime.engines.mujoco.kinematics import MujocoKinematics  # noqa: E402


def _load(name):
    return C.load_deepmimic(C.deepmimic_clip_path(name))


@pytest.mark.parametrize("order", samcon.ORDERS)
def test_hinge_angles_give_back_the_rotation(order):
    q = quat.normalize(np.random.default_rng(1).standard_normal((200, 4)))
    back = samcon.from_euler(samcon.to_euler(q, order), order)
    np.testing.assert_allclose(np.abs((back * q).sum(axis=1)), 1.0, atol=1e-12)


def test_the_sampled_body_is_the_proxy_and_its_hinges_keep_clear_of_gimbal_lock():
    dance = _load("dance_a")
    orders = samcon.gimbal_free_orders(dance.joint_rots)
    body = samcon.SampledBody(orders=orders)
    kin = MujocoKinematics()
    ids = [body.model.body(n).id for n in kin.link_names]
    for t in range(0, dance.frames, 11):
        angles = body.angles_of(dance.joint_rots[t])
        body.set_state(body.qpos_of(dance.root_pos[t], dance.root_rot[t], angles), np.zeros(body.model.nv))
        kin.set_pose(dance.root_pos[t], dance.root_rot[t], dance.joint_rots[t])
        com, _ = kin.link_frames()
        np.testing.assert_allclose(body.data.xipos[ids], com, atol=1e-9)
    # The right shoulder's arm swings overhead: x-y-z hinges come within 10 degrees of the
    # lock, the chosen order stays 27 degrees clear of it.
    shoulder = [j.name for j in samcon.proxy.DEFAULT_JOINTS].index("right_shoulder")
    middle = np.abs(samcon.to_euler(dance.joint_rots[:, shoulder], orders[shoulder])[:, 1])
    assert np.degrees(middle.max()) < 65.0
    assert np.degrees(np.abs(samcon.to_euler(dance.joint_rots[:, shoulder], (0, 1, 2))[:, 1]).max()) > 80.0


def test_the_sampler_s_servo_angles_do_not_depend_on_the_quaternions_sign():
    """Issue 51: a knee or elbow quaternion with w < 0 set its servo 2 pi from the clip's angle."""
    dance = _load("dance_a")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(dance.joint_rots))
    frames = dance.joint_rots[::15]
    assert np.array_equal(body.angles_of(-frames), body.angles_of(frames))


def test_motors_drive_the_joints_and_nothing_holds_the_root():
    import mujoco

    body = samcon.SampledBody()
    m = body.model
    assert m.nu == 28
    targets = m.actuator_trnid[:, 0]
    assert all(m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE for j in targets)
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and 0 not in targets


def _digest(result) -> str:
    return hashlib.sha256(result.root_pos.tobytes() + result.joint_rots.tobytes()).hexdigest()


def test_the_same_take_whatever_the_number_of_threads():
    walk = _load("walk")
    floor = chooser.shared_kinematics(engine="mujoco").analyse(walk).floor_height
    runs = [samcon.track(walk, 0.4, samcon.SamconSettings(samples=24, keep=6, threads=t), floor=floor) for t in (1, 2, 1)]
    assert len({_digest(r) for r in runs}) == 1
    assert runs[0].fell_at is None and len(runs[0].root_pos) == int(round(0.4 * walk.fps)) + 1


@pytest.mark.slow
def test_a_sampled_walk_stays_up_on_its_own_and_follows_the_clip():
    """No root help: without sampling the servos alone let the walker fall within a second and a
    half; sampling keeps it walking, close to the clip."""
    walk = _load("walk")
    floor = chooser.shared_kinematics(engine="mujoco").analyse(walk).floor_height
    alone = samcon.track(walk, 3.0, samcon.SamconSettings(samples=1, keep=1, spread_scale=0.0, retries=0,
                                                          threads=1), floor=floor)
    assert alone.fell_at is not None and alone.fell_at < 1.5
    sampled = samcon.track(walk, 3.0, samcon.SamconSettings(samples=300, keep=30), floor=floor)
    assert sampled.fell_at is None
    pos, _, joints = walk.sample_many(np.arange(len(sampled.root_pos)) / walk.fps)
    joint_err = 2.0 * np.arccos(np.minimum(np.abs((sampled.joint_rots * joints).sum(axis=-1)), 1.0))
    assert np.degrees(np.median(joint_err)) < 8.0
    assert np.median(np.linalg.norm(sampled.root_pos - pos, axis=1)) < 0.15


def test_a_tired_sampled_body_books_its_torques_and_stays_within_what_it_has_left():
    """Under fatigue every motor is capped by the residual capacity of the path it continues
    (caps set per window from its start); the take carries the 3CC state of the path it chose."""
    from runtime.fatigue import schedule

    walk = _load("walk")
    floor = chooser.shared_kinematics(engine="mujoco").analyse(walk).floor_height
    tau_max = np.array(samcon.proxy.dof_tau_max())
    tired = schedule.from_fitness(0.1, fps=30, time_scale=60, initial_fatigue=0.5)
    result = samcon.track(walk, 1.0, samcon.SamconSettings(samples=60, keep=10), floor=floor, tau_max=tau_max,
                          schedule=tired)
    rc = result.fatigue["RC"]
    assert rc[0].max() <= 0.5 + 1e-9 and rc[-1].min() < rc[0].min()       # it started half spent and tired on
    window = int(round(0.1 * walk.fps)) + 1
    for f in range(1, len(rc)):
        allowed = tau_max * rc[max(0, f - window):f].max(axis=0)
        assert (np.abs(result.torque[f]) <= allowed + 1e-6).all()
    take = result.take("walk")
    assert take.mode == "torque" and not take.residual_force.any() and take.frames == len(result.root_pos)
    assert take.contacts.any(axis=1).mean() > 0.9                        # a walk: a foot down nearly always


def test_a_diverging_sample_leaves_no_log_file_behind(tmp_path, monkeypatch):
    """MuJoCo writes the warnings of an unstable simulation to MUJOCO_LOG.TXT in the current
    folder (a user's home, Blender's folder); the sampler keeps them in memory."""
    from runtime.engines.mujoco import model as mujoco_model

    monkeypatch.chdir(tmp_path)
    body = samcon.SampledBody()
    sim = samcon._Rollouts(body, 2)
    qpos = body.data.qpos.copy()
    qpos[2] = 1.0
    start = sim.state_of(qpos, np.zeros(body.model.nv))
    body.set_caps(np.full(28, 1e12))
    sim.run(np.repeat(start[None], 4, axis=0), np.full((4, 20, 28), 1e9))
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    # Kept by whichever copy of the module installed the handler first (the add-on's, under
    # Blender's package name, when a bake ran earlier in this process).
    copies = [m for name, m in sys.modules.items() if name.endswith("engines.mujoco.model")]
    assert mujoco_model in copies and any("unstable" in w for m in copies for w in m.WARNINGS)


def test_torque_mode_is_the_sampler_with_progress_and_cancel():
    """simulate(mode="torque"): the sampler on MuJoCo whatever engine SRB mode uses, progress
    every window, and a cancel between windows."""
    walk = _load("walk")
    seen = []
    take = simulate.simulate_clip(walk, None, mode="torque", seconds=0.3, progress=seen.append)
    assert take.mode == "torque" and take.engine == "mujoco" and not take.fell
    assert not take.residual_force.any() and take.stats["residual_moment_nm_mean"] == 0.0
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen) and len(seen) >= 3
    assert "compute per second of motion" in take.notes["cost"]
    assert take.notes["effort_economy"].startswith("1: tired arms")       # the bake's setting reaches it
    stubborn = simulate.simulate_clip(walk, None, mode="torque", seconds=0.1, settings=simulate.srb.SrbSettings(effort_economy=0.0))
    assert stubborn.notes["effort_economy"].startswith("off")
    asked = []
    with pytest.raises(errors.SimulationCancelled):
        simulate.simulate_clip(walk, None, mode="torque", seconds=0.3, cancel=lambda: asked.append(1) or len(asked) > 2)


def test_the_sampler_s_clip_is_exact_at_whole_steps_and_linear_between():
    from runtime.torque.sampled_reference import SampledReference

    walk = _load("walk")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(walk.joint_rots))
    ref = SampledReference(walk, 0.4, 250.0, 0.1, body)
    assert ref.total == 100 and ref.windows == 4
    full = ref.targets(25.0, 1.0, 25)
    np.testing.assert_array_equal(full, ref.angles[26:51] + 0.1 * ref.rates[26:51])
    half = ref.targets(25.0, 0.5, 2)               # steps 25.5 and 26
    np.testing.assert_allclose(half[0], 0.5 * (ref.angles[25] + ref.angles[26]) + 0.05 * 0.5 * (ref.rates[25] + ref.rates[26]))
    held = ref.targets(25.0, 0.0, 3)               # resting: the pose held, no rate
    np.testing.assert_array_equal(held, np.repeat(ref.angles[25][None], 3, axis=0))
    end = ref.end(50.0, 0.5)
    np.testing.assert_array_equal(end.com, ref.com[50])
    np.testing.assert_allclose(end.com_vel, 0.5 * (ref.com[75] - ref.com[25]) / (2 * 0.1))


def test_tired_sampled_knees_bend_under_the_body_as_in_srb_mode():
    """The effort economy's yield (effort.PathGive): a tired knee's servo and the search's pose
    target give way to the load it carries, so the stance knees bend deeper than with the economy
    off, on the same draws; fresh, the economy changes nothing."""
    from runtime.motion import metrics
    from runtime.fatigue import schedule

    walk = _load("walk")
    floor = chooser.shared_kinematics(engine="mujoco").analyse(walk).floor_height
    tired = schedule.from_fitness(0.1, fps=30, time_scale=60, initial_fatigue=0.5)
    settings = samcon.SamconSettings(samples=60, keep=10)
    takes = [samcon.track(walk, 1.5, settings, floor=floor, schedule=tired, effort_economy=economy).take("walk")
             for economy in (1.0, 0.0)]
    assert not any(e["kind"] == "fall" for t in takes for e in t.events)
    assert metrics.knee_flexion_gain_deg(takes[0], takes[1]) > 3.0
    fresh = [samcon.track(walk, 0.3, settings, floor=floor, effort_economy=economy) for economy in (1.0, 0.0)]
    assert np.array_equal(fresh[0].joint_rots, fresh[1].joint_rots)


def test_a_tired_sampled_body_rests_where_its_feet_are_down_and_recovers():
    """Exhausted from the start (RC 0.15, below SRB mode's exhausted threshold), on both feet: the
    sampler holds the clip still while the joints recover (its effort economy lets the held
    pose cost them less), then plays on, slower; a take cut short by the length limit says so."""
    from runtime.fatigue import schedule as S

    punch = _load("punch")
    tired = S.from_fitness(0.25, fps=30.0, time_scale=150.0, initial_fatigue=0.85)
    settings = samcon.SamconSettings(samples=200, keep=20)
    take = samcon.track(punch, 1.0, settings, schedule=tired, max_stretch=9.0).take("punch")
    kinds = [e["kind"] for e in take.events]
    assert kinds[:2] == ["rest", "resume"] and take.events[0]["frame"] == 0 and "fall" not in kinds
    resumed = take.events[1]["frame"]
    assert np.all(take.reference_time[:resumed] == 0.0) and take.reference_time[-1] > 0.2   # held, then on
    rc = take.fatigue["RC"].min(axis=1)
    assert rc[resumed] > rc[0] + 0.05                                         # recovered while resting
    assert np.all(np.diff(take.reference_time) >= 0.0)
    if kinds[-1] == "stopped":
        assert "were not played" in take.events[-1]["reason"] and take.reference_time[-1] < 1.0
    else:
        assert take.reference_time[-1] == pytest.approx(1.0, abs=1e-6)       # its first second, played to the end
    # Cut short while it rests (1.5x the clip): the take ends there and says what it left out.
    short = samcon.track(punch, 1.0, settings, schedule=tired, max_stretch=1.5).take("punch")
    kinds = [e["kind"] for e in short.events]
    assert kinds[0] == "rest" and kinds[-1] == "stopped" and short.reference_time[-1] < 1.0
    assert short.events[-1]["reason"].endswith("s of the source were not played")


def test_torque_mode_refuses_a_clip_held_up_by_what_it_does_not_show_in_one_line():
    from made_clips import seated_typist

    with pytest.raises(errors.SimulationError) as err:
        simulate.simulate_clip(seated_typist(2.0), None, mode="torque")
    message = str(err.value)
    assert "\n" not in message and "an unseen seat" in message and message.endswith("bake it in SRB mode")
    # Hands on the floor are the floor's to carry: a cartwheel is simulated (cancelled here once it runs).
    with pytest.raises(errors.SimulationCancelled):
        simulate.simulate_clip(_load("cartwheel"), None, mode="torque", cancel=lambda: True)


def test_a_fast_arm_is_not_held_back_by_its_damper():
    """dance_a circles its right arm at about 6 rad/s.  A passive damper of a tenth of the servo's
    stiffness would hold a shoulder below 2.6 rad/s at its strength (the arm lagged 115 degrees
    behind the clip on average over the first second); damped within the servo, with only
    strength / PEAK_SPEED left passive, it follows.  The legs keep their passive damper."""
    body = samcon.SampledBody()
    kinds = [name.split("_")[-1] for name, _, _ in samcon.proxy.dof_table()]
    assert all(body.damped_by_servo[k] == (kind in ("chest", "neck", "shoulder", "elbow")) for k, kind in enumerate(kinds))
    dance = _load("dance_a")
    floor = chooser.shared_kinematics(engine="mujoco").analyse(dance).floor_height
    result = samcon.track(dance, 1.0, samcon.SamconSettings(samples=60, keep=6), floor=floor)
    _, _, joints = dance.sample_many(result.reference_time)
    shoulder = np.degrees(quat.angle_between(result.joint_rots[:, 5], joints[:, 5]))
    assert result.fell_at is None and shoulder.mean() < 40.0


def test_the_sampler_s_clock_knows_a_looping_clip_s_feet_and_a_body_that_lands_early():
    """The clock reads the clip's feet (where it may rest, where it flies) over the whole take: a
    looping run flies in its last cycle as in its first.  In the clip's flight, a body that left
    the floor and is down again has landed early (a tired, lower jump): the clip goes on from its
    own landing; one still in the air, or one that never left the floor, keeps the clip's clock."""
    from runtime.torque.sampled_reference import Clock, SampledReference

    run = _load("run")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(run.joint_rots))
    ref = SampledReference(run, 3.0, 250.0, 0.1, body)
    flying = ~ref.feet(run, samcon.proxy.DEFAULT_HEIGHT).any(axis=1)
    cycle = int(round(run.duration * 250.0))
    assert 0.2 < flying[:cycle].mean() and flying[-cycle:].mean() == pytest.approx(flying[:cycle].mean(), abs=0.02)

    jump = _load("jump")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(jump.joint_rots))
    ref = SampledReference(jump, jump.duration, 250.0, 0.1, body)
    feet = ref.feet(jump, samcon.proxy.DEFAULT_HEIGHT)
    takeoff = int(np.flatnonzero(~feet.any(axis=1))[0])
    landing = takeoff + int(np.flatnonzero(feet[takeoff:].any(axis=1))[0])
    assert landing - takeoff > 50                                # a flight of more than 0.2 s
    down, up = np.ones((25, 2), dtype=bool), np.zeros((25, 2), dtype=bool)
    cases = {"never left the floor": [down], "still in the air": [up], "left and landed": [up, down],
             "landed within the window": [np.concatenate([up[:20], down[:5]])]}
    for case, windows in cases.items():
        clock = Clock(ref, feet)
        clock.x = float(takeoff + 10)
        for window in windows:
            clock.land(window)
        assert clock.x == (landing if "landed" in case else takeoff + 10), case


def test_a_link_the_clip_itself_puts_on_the_floor_is_not_a_fall():
    """A cartwheel's hands carry it: the sampler reads the clip's own floor contacts (within 2 cm
    of the floor and of the lower foot, 0.1 s either side) and a hand on the floor there is the
    motion.  Elsewhere, and in every clip that stays on its feet, any link but a foot on the
    floor is a fall."""
    from runtime.torque.sampled_reference import SampledReference

    for name in ("walk", "run", "jump"):
        clip = _load(name)
        body = samcon.SampledBody(floor=chooser.shared_kinematics(engine="mujoco").analyse(clip).floor_height,
                                  orders=samcon.gimbal_free_orders(clip.joint_rots))
        assert not SampledReference(clip, clip.duration, 250.0, 0.1, body).grounded.any(), name

    wheel = _load("cartwheel")
    body = samcon.SampledBody(floor=chooser.shared_kinematics(engine="mujoco").analyse(wheel).floor_height,
                              orders=samcon.gimbal_free_orders(wheel.joint_rots))
    ref = SampledReference(wheel, wheel.duration, 250.0, 0.1, body)
    links = [link.name for link in samcon.proxy_links(samcon.proxy.DEFAULT_HEIGHT, None)
             if link.shapes and link.name not in samcon.FOOT_LINKS]
    on_floor = {links[i] for i in np.flatnonzero(ref.grounded.any(axis=0))}
    assert on_floor == {"right_wrist", "left_wrist"}
    assert 0.2 < ref.grounded.any(axis=1).mean() < 0.5
    lowest = {}
    for step in np.flatnonzero(ref.grounded.any(axis=1)):
        body.set_state(body.qpos_of(ref.pos[step], ref.rot[step], ref.angles[step]), np.zeros(body.model.nv))
        lowest[int(step)] = float(body.clearance()[0].min())
    hands = min(lowest, key=lowest.get)                       # the clip's hand nearest the floor (it hovers over it)
    assert lowest[hands] < 0.02
    sim = samcon._Rollouts(body, 1)
    on_it = ref.pos[hands] - np.array([0.0, 0.0, lowest[hands] + 0.005])
    state = sim.state_of(body.qpos_of(on_it, ref.rot[hands], ref.angles[hands]), np.zeros(body.model.nv))
    controls = ref.targets(float(hands), 1.0, 5)[None]
    _, fallen, sensors = sim.run(state[None], controls)
    assert sensors[0, :, :body.touch_sensors].any() and fallen.all()    # the hand touches: without the clip's say, a fall
    _, fallen, _ = sim.run(state[None], controls, on_floor=ref.on_floor(float(hands), 1.0, 5))
    assert not fallen.any()
    assert not ref.on_floor(0.0, 1.0, 25).any()              # standing at the start: a hand down would be a fall


def test_a_push_off_is_seen_to_its_landing():
    """Where the clip takes off within a window and its usual look-ahead, the samples are
    followed on past its landing (at most ``landing_lookahead`` windows), so a push-off whose
    landing collapses costs a fall; on the ground, and in a clip that never leaves it, the
    usual look-ahead."""
    from runtime.torque.sampled_reference import Clock, SampledReference

    jump = _load("jump")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(jump.joint_rots))
    ref = SampledReference(jump, jump.duration, 250.0, 0.1, body)
    feet = ref.feet(jump, samcon.proxy.DEFAULT_HEIGHT)
    clock = Clock(ref, feet)
    takeoff = int(np.flatnonzero(~feet.any(axis=1))[0])
    landing = takeoff + int(np.flatnonzero(feet[takeoff:].any(axis=1))[0])
    x = float(takeoff - 5)                                    # the window of the push-off
    ahead = clock.windows_to_land(x, 1.0, 2, 6)
    # The fewest windows that reach the landing (this one among them), and one more past it.
    assert ahead > 2 and x + (ahead - 1) * 25 < landing <= x + ahead * 25
    assert clock.windows_to_land(x, 0.5, 2, 6) == 6           # played slower, the landing is further: at most 6
    assert clock.windows_to_land(x, 1.0, 2, 2) == 0           # switched off
    assert clock.windows_to_land(float(takeoff - 100), 1.0, 2, 6) == 0   # no take-off within 0.3 s
    walk = _load("walk")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(walk.joint_rots))
    ref = SampledReference(walk, walk.duration, 250.0, 0.1, body)
    clock = Clock(ref, ref.feet(walk, samcon.proxy.DEFAULT_HEIGHT))
    assert all(clock.windows_to_land(float(x), 1.0, 2, 6) == 0 for x in range(0, ref.total, 25))


def test_legs_too_tired_to_launch_a_jump_stand_and_gather_first():
    """Standing upright on both feet within 1.5 s of the clip's take-off, legs below SRB mode's
    resume threshold (0.7) rest first (the clip held), once per take-off; fresher legs, a
    crouch (resting there would load the legs) and a clip that never flies go straight on."""
    from types import SimpleNamespace

    from runtime.torque.sampled_reference import Clock, SampledReference

    def legs_at(rc):
        capacity = np.ones(len(samcon.proxy.dof_tau_max()))
        capacity[np.array(samcon.proxy.leg_dofs()).ravel()] = rc
        return SimpleNamespace(residual_capacity=capacity, target_load=np.full(len(capacity), 0.1))

    jump = _load("jump")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(jump.joint_rots))
    ref = SampledReference(jump, jump.duration, 250.0, 0.1, body)
    feet = ref.feet(jump, samcon.proxy.DEFAULT_HEIGHT)
    takeoff = int(np.flatnonzero(~feet.any(axis=1))[0])
    clock = Clock(ref, feet)
    assert clock.standing[0] and not clock.standing[takeoff - 50]          # upright at the start, crouched before the push
    assert takeoff - 250 * 1.5 <= 0                                        # ... within the lead of it
    assert clock.tempo(0.0, legs_at(0.8)) > 0.0 and not clock.events       # fresh enough: on
    assert clock.tempo(0.1, legs_at(0.6)) == 0.0 and [e.kind for e in clock.events] == ["rest"]
    assert clock.tempo(0.2, legs_at(0.75)) > 0.0 and clock.events[-1].kind == "resume"   # recovered
    clock.rule.no_rest_before = 0.0
    assert clock.tempo(0.3, legs_at(0.6)) > 0.0 and len(clock.events) == 2 # once per take-off
    crouched = Clock(ref, feet)
    crouched.x = float(takeoff - 50)
    assert crouched.tempo(0.0, legs_at(0.6)) > 0.0 and not crouched.events

    walk = _load("walk")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(walk.joint_rots))
    ref = SampledReference(walk, walk.duration, 250.0, 0.1, body)
    clock = Clock(ref, ref.feet(walk, samcon.proxy.DEFAULT_HEIGHT))
    for x in range(0, ref.total, 25):
        clock.x = float(x)
        assert clock.tempo(0.0, legs_at(0.6)) > 0.0
    assert not clock.events


def test_a_hop_that_comes_down_on_the_other_foot_goes_on_where_the_clip_has_that_foot_down():
    """The spin's hop-turn takes off from the left foot and the clip lands on the right.  A tired
    body that comes down early on the right goes on from the clip's landing; one back on its left
    (the turn failed) goes on from where the clip next has the left foot down, before it flies
    again, not from a landing that would lift the foot it stands on."""
    from runtime.torque.sampled_reference import Clock, SampledReference

    spin = _load("spin")
    body = samcon.SampledBody(orders=samcon.gimbal_free_orders(spin.joint_rots))
    ref = SampledReference(spin, spin.duration, 250.0, 0.1, body)
    feet = ref.feet(spin, samcon.proxy.DEFAULT_HEIGHT)
    airborne = ~feet.any(axis=1)
    takeoff = int(np.argmax(airborne))
    landing = takeoff + int(np.argmax(~airborne[takeoff:]))
    assert feet[landing].tolist() == [True, False] and feet[takeoff - 1].tolist() == [False, True]
    left_down = landing + int(np.argmax(feet[landing:, 1]))
    assert left_down - landing > 50 and not airborne[landing:left_down].any()   # 0.2 s and more on the right alone
    up = np.zeros((25, 2), dtype=bool)
    for down, goes_on in (([True, False], landing), ([False, True], left_down), ([True, True], landing)):
        clock = Clock(ref, feet)
        clock.x = float(takeoff + 10)
        clock.land(np.concatenate([up[:20], np.broadcast_to(down, (5, 2))]))
        assert clock.x == goes_on, down
