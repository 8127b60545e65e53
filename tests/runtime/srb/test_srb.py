"""SRB mode: body, contact-force QP, leg IK, and simulate() end to end (runtime only, no bpy)."""
import math
from dataclasses import replace

import numpy as np
import pytest

from runtime import errors
from runtime.motion import clip as C
from runtime.engines.pybullet import kinematics
from runtime.motion import gait, metrics, pose_error
from runtime.body import proxy
from runtime.maths import quat
from runtime.fatigue import direction, schedule
from runtime import simulate
from runtime.srb import simulator as srb
from runtime.reference import rigid_body as srb_body
from runtime.srb import contact_qp, feet
from runtime.fatigue import effort
from runtime.reference import legs as srb_legs
from runtime.reference import reference as srb_reference
from runtime.srb import rest_steps
from runtime.maths import rotation
from runtime.fatigue import tempo

from made_clips import idle_clip, load


@pytest.fixture(scope="module")
def stalled_walk():
    """A walker whose legs truly cannot go on (fitness 0 at 90x, starting 65 % fatigued: it rests
    where a tired walker at the Exhausted preset, or starting 58 % fatigued, keeps walking on
    shorter steps), 8 s of walk."""
    return simulate.simulate_clip(load("walk"), schedule.from_fitness(0.0, fps=30, time_scale=90, initial_fatigue=0.65),
                             seconds=8.0, out_fps=30)


@pytest.fixture(scope="module")
def standing_stalled_walk():
    """A walker like stalled_walk, more tired still (75 % fatigued: standing recovers, so at 65 %
    it rested once), every rest taken standing (kneeling off: runtime.floor.kneel)."""
    return simulate.simulate_clip(load("walk"), schedule.from_fitness(0.0, fps=30, time_scale=90, initial_fatigue=0.75),
                             seconds=8.0, out_fps=30, kneeling=False)


def test_body_matches_the_proxy(kin, body):
    heavier = srb_body.body_from_proxy(kin, 2.0 * body.mass)     # inertia and strength scale with mass
    np.testing.assert_allclose(heavier.inertia, 2.0 * body.inertia, rtol=1e-12)
    np.testing.assert_allclose(heavier.tau_max, 2.0 * body.tau_max, rtol=1e-12)
    np.testing.assert_allclose(body.inertia, body.inertia.T, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(body.inertia) > 0)
    assert body.thigh == pytest.approx(0.422, abs=0.005) and body.shin == pytest.approx(0.41, abs=0.005)
    assert np.all(body.sole[:, 1] < 0)           # sole below the ankle (link frame is Y-up)
    assert body.leg_dofs.shape == (2, 7)
    names = [f"{j.name}{a}" for j in proxy.DEFAULT_JOINTS for a in range(j.dofs)]
    assert [names[d] for d in body.leg_dofs[0]] == ["right_hip0", "right_hip1", "right_hip2", "right_knee0",
                                                    "right_ankle0", "right_ankle1", "right_ankle2"]


def _standing_corners(body):
    corners = []
    for y in (-0.085, 0.085):
        ankle = np.array([0.0, y, -body.sole_drop])
        corners.extend(ankle + body.sole @ rotation.quat_matrix(C.Y_UP_TO_Z_UP).T)
    return np.array(corners)


def _one_foot_under_a_leaning_body(body):
    """The sole corners of one foot, and a centre of mass 4.5 cm ahead of its ankle."""
    ankle = np.array([0.0, 0.085, -body.sole_drop])
    return ankle + body.sole @ rotation.quat_matrix(C.Y_UP_TO_Z_UP).T, np.array([0.045, 0.085, 0.9])


def test_qp_holds_a_standing_body_within_friction(body):
    corners = _standing_corners(body)
    com = np.array([0.045, 0.0, 0.9])
    f = contact_qp.solve_contact_forces(body, com, np.eye(3), np.zeros(3), np.zeros(3), corners)
    np.testing.assert_allclose(f.sum(axis=0), [0, 0, body.mass * 9.81], rtol=1e-3, atol=0.5)
    assert np.all(f[:, 2] >= -1e-9)
    assert np.all(np.abs(f[:, :2]) <= 0.8 * f[:, 2:3] + 1e-6)


def test_qp_does_not_buy_the_source_s_moment_with_the_centre_of_mass(body):
    """One foot down, asked to hold the body still and to pitch it: the foot's sole supplies a
    moderate moment without moving the centre of mass; a large one only through friction, which
    pushed the centre of mass 8.9 m/s^2 off (a fresh kick's body drifted off its path and its
    planted ankle 0.17 m off the source's).  The centre of mass comes first: the moment gets what
    is left."""
    corners, com = _one_foot_under_a_leaning_body(body)

    def solve(moment, settings=contact_qp.QpSettings()):
        f = contact_qp.solve_contact_forces(body, com, np.eye(3), np.zeros(3), np.array([0.0, moment, 0.0]), corners,
                                            settings=settings)
        return (np.linalg.norm(f.sum(axis=0) / body.mass + srb_body.GRAVITY),
                np.cross(corners - com, f).sum(axis=0)[1])

    weighted = replace(contact_qp.QpSettings(), moment_cost=math.inf)
    assert solve(400.0, weighted)[0] > contact_qp.QpSettings().moment_cost    # the trade the weights make
    lost, pitch = solve(400.0)
    assert lost < 0.01 and pitch > 20.0
    assert solve(100.0) == solve(100.0, weighted)          # a moment that costs little is matched as before


def test_qp_puts_the_centre_of_mass_first_only_within_the_legs_strength(body):
    """A fresh body's re-solve (centre of mass first) may ask the legs more than the forces the
    weights chose: it is held within the strength it is given, which the weights' forces, asked
    nothing of it, may exceed."""
    corners, com = _one_foot_under_a_leaning_body(body)
    rows = np.random.default_rng(1).normal(0, 0.1, (7, 3 * len(corners)))
    free = contact_qp.solve_contact_forces(body, com, np.eye(3), np.zeros(3), np.array([0.0, 400.0, 0.0]), corners)
    cap = 0.5 * np.abs(rows @ free.ravel()).max()
    bounds = np.tile([-cap, cap], (7, 1))
    asked = []

    def strength():
        asked.append(True)
        return rows, bounds

    held = contact_qp.solve_contact_forces(body, com, np.eye(3), np.zeros(3), np.array([0.0, 400.0, 0.0]), corners,
                                           strength=strength)
    assert asked and np.all(np.abs(rows @ held.ravel()) <= cap + 1e-6)
    asked.clear()
    standing = contact_qp.solve_contact_forces(body, com, np.eye(3), np.zeros(3), np.zeros(3), corners,
                                               strength=strength)
    assert not asked and np.allclose(standing, contact_qp.solve_contact_forces(
        body, com, np.eye(3), np.zeros(3), np.zeros(3), corners))      # asked only for a re-solve


def test_qp_pushes_nothing_where_a_fresh_body_should_fall_faster_than_gravity(body):
    """A root that drops in a frame asks the centre of mass to fall faster than gravity while the
    body pitches: the weights push it up to buy the moment (a real clip's body was thrown 0.29 m
    up); the centre of mass first pushes nothing."""
    corners = _standing_corners(body)
    com = np.array([0.045, 0.0, 0.9])
    weighted = replace(contact_qp.QpSettings(), moment_cost=math.inf)

    def lift(settings=contact_qp.QpSettings()):
        f = contact_qp.solve_contact_forces(body, com, np.eye(3), np.array([0.0, 0.0, -12.0]),
                                            np.array([0.0, 400.0, 0.0]), corners, settings=settings)
        return f[:, 2].sum()

    assert lift(weighted) > 0.5 * body.mass * 9.81
    assert lift() == 0.0


def test_qp_respects_fatigue_torque_bounds(body):
    corners = _standing_corners(body)
    rows = np.random.default_rng(0).normal(0, 0.1, (3, 3 * len(corners)))
    cap = np.array([[-5.0, 5.0], [-2.0, 2.0], [-1.0, 1.0]])
    f = contact_qp.solve_contact_forces(body, np.array([0.045, 0, 0.9]), np.eye(3), np.zeros(3), np.zeros(3),
                                 corners, rows, cap)
    tau = rows @ f.ravel()
    assert np.all(tau >= cap[:, 0] - 1e-6) and np.all(tau <= cap[:, 1] + 1e-6)


def test_leg_ik_reaches_the_target_on_the_real_proxy(kin, body):
    walk = load("walk")
    root_pos, root_rot, joints = walk.sample(0.4)
    root_R = quat.to_matrix(root_rot)
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    rng = np.random.default_rng(1)
    for side, k in (("right", 0), ("left", 1)):
        hi, ki, ai = (names.index(f"{side}_{n}") for n in ("hip", "knee", "ankle"))
        kin.set_pose(root_pos, root_rot, joints)
        kin.link_frames()
        ankle0 = kin.joint_positions()[kin.link_names.index(f"{side}_ankle")]
        hip = kin.joint_positions()[kin.link_names.index(f"{side}_hip")]
        # Reachable targets: pull the ankle 6 cm towards the hip, then move it a few cm around.
        target = ankle0 + 0.06 * (hip - ankle0) / np.linalg.norm(hip - ankle0) + rng.uniform(-0.03, 0.03, 3)
        foot_R = quat.to_matrix(quat.from_axis_angle([0, 0, 1.0], 0.3)) @ quat.to_matrix(C.Y_UP_TO_Z_UP)
        q_hip, knee, q_ankle = srb_legs.leg_ik(body, k, root_pos, root_R, joints[hi], target, foot_R)
        posed = joints.copy()
        posed[hi], posed[ki], posed[ai] = q_hip, quat.from_axis_angle([0, 0, 1.0], knee), q_ankle
        kin.set_pose(root_pos, root_rot, posed)
        _, rots = kin.link_frames()
        ankle = kin.joint_positions()[kin.link_names.index(f"{side}_ankle")]
        assert np.linalg.norm(ankle - target) < 1e-3
        foot_rot = rots[kin.link_names.index(f"{side}_ankle")]
        assert np.degrees(quat.angle_between(foot_rot, rotation.matrix_to_quat(foot_R))) < 0.5


@pytest.mark.slow
def test_fresh_walk_tracks_the_reference_and_is_deterministic():
    walk = load("walk")
    a = simulate.simulate_clip(walk, None, seconds=3.0, out_fps=30)
    b = simulate.simulate_clip(walk, None, seconds=3.0, out_fps=30)
    assert not a.fell
    assert a.mode == "srb"
    reference = walk.repeated(a.reference_time[-1])
    assert metrics.root_error_m(a, reference) < 0.05
    assert metrics.joint_error_deg(a, reference) < 5.0
    assert metrics.phase_rate_mean(a) == pytest.approx(1.0, abs=0.01)
    for x, y in ((a.clip.root_pos, b.clip.root_pos), (a.clip.joint_rots, b.clip.joint_rots), (a.torque, b.torque)):
        assert np.array_equal(x, y)


@pytest.mark.slow
def test_tired_jumps_are_lower_and_torques_stay_within_the_fatigued_bounds():
    jump = load("jump")
    tired = simulate.simulate_clip(jump, schedule.from_fitness(0.25, fps=30, time_scale=80), seconds=8.0, out_fps=30)
    fresh = simulate.simulate_clip(jump, None, seconds=8.0, out_fps=30)
    assert not tired.fell and not fresh.fell
    fresh_apex = metrics.flight_apexes(fresh, 0.0)
    tired_apex = metrics.flight_apexes(tired, 0.0)
    assert len(fresh_apex) >= 2 and len(tired_apex) >= 2
    assert tired_apex[-1] < 0.9 * fresh_apex[-1]
    # Physical honesty: every applied torque within RC * strength of the step it was applied
    # (strength: tau_max, up to ECCENTRIC_STRENGTH times that for legs lowering the body).
    legs = [d for d, part in enumerate(proxy.dof_body_parts()) if part == "legs"]
    assert np.all(tired.strength >= tired.tau_max - 1e-9)
    assert np.all(tired.strength <= effort.ECCENTRIC_STRENGTH * tired.tau_max + 1e-9)
    assert (tired.strength[:, legs] > 1.2 * tired.tau_max[legs]).any()     # the landings
    bound = tired.fatigue["RC"][:-1, legs] * tired.strength[1:, legs] + 1e-6
    assert np.all(np.abs(tired.torque[1:, legs]) <= bound + 0.02 * tired.tau_max[legs])
    assert tired.fatigue["MF"][:, legs].max() > 0.2
    assert np.all(tired.tau_max >= np.array(proxy.dof_tau_max()))


@pytest.mark.slow
def test_floor_work_follows_the_reference_and_says_so():
    crawl = load("crawl")
    take = simulate.simulate_clip(crawl, None, seconds=1.0, out_fps=30)
    assert take.mode == "srb-reference-follow"
    assert "reference followed" in take.notes["pelvis_and_legs"]
    assert not take.fell


@pytest.mark.slow
def test_progress_and_cancel():
    walk = load("walk")
    seen = []
    simulate.simulate_clip(walk, None, seconds=1.0, progress=seen.append)
    assert seen and seen[-1] == pytest.approx(1.0) and seen == sorted(seen)
    import pybullet

    def open_clients():
        return {c for c in range(64) if pybullet.isConnected(physicsClientId=c)}

    before = open_clients()
    for mode in ("srb", "torque"):
        calls = []
        with pytest.raises(errors.SimulationCancelled, match="nothing was written"):
            simulate.simulate_clip(walk, None, seconds=2.0, mode=mode, cancel=lambda: calls.append(1) or len(calls) > 10)
    # ...and a cancelled bake leaves no PyBullet client open (an interactive session cancels often)
    assert open_clients() == before


@pytest.mark.slow
def test_a_take_that_would_outgrow_its_limit_stops_and_says_what_it_did_not_play(monkeypatch):
    monkeypatch.setattr(simulate, "MAX_STRETCH", 0.7)    # (plus a second) a 10 s walk needs 10 s at least
    walk = load("walk")
    take = simulate.simulate_clip(walk, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=10.0, out_fps=30)
    stopped = [e for e in take.events if e["kind"] == "stopped"]
    assert stopped and "were not played" in stopped[0]["reason"]
    assert take.reference_time[-1] < 10.0 - 0.5 and not take.fell


@pytest.mark.parametrize("kwargs, match", [
    (dict(mode="magic"), "mode"),
    (dict(height=17.0), "units"),
    (dict(mass=1.0), "mass"),
    (dict(tau_max=np.ones(3)), "tau_max"),
    (dict(effort_economy=-1.0), "effort economy -1.0: use 0"),
    (dict(effort_economy=float("nan")), "effort economy"),
])
def test_bad_simulation_input_names_the_fix(kwargs, match):
    with pytest.raises(errors.SimulationError, match=match):
        simulate.simulate_clip(load("walk"), None, seconds=0.5, **kwargs)


def test_a_clip_with_a_cut_is_refused_naming_its_frames():
    walk = load("walk")
    pos = walk.root_pos.copy()
    pos[10:, 0] -= 3.0                  # snapped back 3 m: two takes spliced
    with pytest.raises(errors.SimulationError, match=r"root jumps 2\.9\d m between frames 9 and 10: a cut, teleport or stepped key"):
        simulate.simulate_clip(replace(walk, root_pos=pos), None, seconds=0.5)


@pytest.mark.slow
def test_an_exhausted_walker_slows_and_keeps_going():
    """Tired people keep walking at 0.52-0.79 of their fresh speed, without stopping
    (../shared/reference/fatigue_kinematics.json).  At the Exhausted preset (every joint half
    fatigued, fitness 0) a 10 s walk crawled at a third of its tempo and rested five times; its
    legs, though tired, can carry a walk."""
    walk = load("walk")
    sched, keys = direction.preset_schedule("Exhausted", 30.0, 10.0)
    take = simulate.simulate_clip(walk, sched, seconds=10.0, out_fps=30, tiredness=keys)
    assert not take.fell
    kinds = [e["kind"] for e in take.events]
    assert "rest" not in kinds and "stopped" not in kinds
    assert take.reference_time[-1] == pytest.approx(10.0, abs=0.05)        # the whole walk, played
    assert 0.55 <= metrics.phase_rate_mean(take) < 0.85
    assert take.duration_stretch() < tempo.PERFORMANCE_STRETCH


@pytest.mark.slow
def test_a_walker_that_cannot_go_on_pauses_and_the_source_waits(stalled_walk):
    take = stalled_walk
    assert not take.fell
    kinds = [e["kind"] for e in take.events]
    assert "rest" in kinds and "resume" in kinds
    assert take.duration_stretch() > 1.3          # slower, with pauses: longer than the source
    # During a rest the source does not advance.
    start, end = metrics.rest_spans(take)[0]
    assert end is None or end - start > 10
    assert take.reference_time[start + 10] == pytest.approx(take.reference_time[start + 1], abs=1e-9)


@pytest.mark.slow
def test_standing_still_a_tired_body_keeps_the_clock(kin, body):
    """Slowing a still pose changes nothing but the take's length: a tired idle (12 s standing,
    fitness 0.25 at 60x) played at a third of its rate between rests, ran out of take (3x) and
    never finished.  It rests when it must (standing easy), and the still source plays on."""
    walk, idle = load("walk"), idle_clip(12.0)
    assert srb_reference.build_reference(idle, kin.analyse(idle), body).still.all()
    take = simulate.simulate_clip(idle, schedule.from_fitness(0.25, fps=30, time_scale=60), out_fps=30)
    kinds = [e["kind"] for e in take.events]
    assert "rest" in kinds and "stopped" not in kinds and not take.fell
    assert take.duration_stretch() < 1.05
    # A walk never stands still (its tired tempo still slows: see the exhausted walker).
    assert not srb_reference.build_reference(walk, kin.analyse(walk), body).still.any()


@pytest.mark.slow
def test_an_exhausted_idle_stands_over_its_ankles_instead_of_collapsing():
    """Over the middle of the soles each ankle holds about 11 % of its strength, more than an
    exhausted one sustains: a 60 s idle at the Exhausted preset drained its ankles and collapsed
    at 46 s (at 15 s when its rests also stopped the clock).  Resting, it now stands nearer its
    ankles, as far ahead as they can still easily hold."""
    take = simulate.simulate_clip(idle_clip(60.0), schedule.from_preset("Exhausted", fps=30), out_fps=30)
    kinds = [e["kind"] for e in take.events]
    assert not take.fell and "rest" in kinds and "stopped" not in kinds
    legs = [d for d, part in enumerate(proxy.dof_body_parts()) if part == "legs"]
    assert take.fatigue["RC"][-1, legs].min() > 0.05


@pytest.mark.slow
def test_a_tired_dancer_with_no_restful_moment_rests_where_it_can_before_a_knee_gives_way():
    """dance_b never stands upright over both feet: at fitness 0 (20x) its legs sank below the rest
    threshold and it danced on, waiting for a restful moment, until a standing knee gave way
    (21.6 s).  After REST_WAIT it rests at the next moment both feet are down."""
    take = simulate.simulate_clip(load("dance_b"), schedule.from_fitness(0.0, fps=30, time_scale=20), seconds=20.0,
                             out_fps=30)
    assert not take.fell
    assert any(e["kind"] == "rest" for e in take.events)


@pytest.mark.slow
def test_a_rest_that_stops_paying_ends_and_says_so(stalled_walk):
    take = stalled_walk
    assert not take.fell
    resumes = [e for e in take.events if e["kind"] == "resume"]
    assert resumes and all(e["reason"] in ("recovered", "recovery stalled", "the performance goes on") for e in resumes)
    rests = [e["frame"] for e in take.events if e["kind"] == "rest"]
    for start, resume in zip(rests, resumes):
        if resume["reason"] == "recovery stalled":   # it stood at least the stall time
            assert resume["time"] - start / 30.0 >= srb.SrbSettings().rest_stall - 1e-6


@pytest.mark.slow
def test_a_huge_push_topples_the_body_and_a_small_one_does_not():
    walk = load("walk")
    small = simulate.simulate_clip(walk, None, seconds=3.0, push=(1.5, 0.2, np.array([0.0, 200.0, 0.0])),
                              simulate_limbs=False)
    huge = simulate.simulate_clip(walk, None, seconds=3.0, push=(1.5, 0.2, np.array([0.0, 4000.0, 0.0])),
                             simulate_limbs=False)
    assert not small.fell
    assert huge.fell and 1.5 < next(e["time"] for e in huge.events if e["kind"] == "fall") < 3.0


@pytest.mark.slow
def test_a_slowed_tempo_slows_ground_phases_but_not_flights(kin, body):
    """A flight is ballistic: slowing its reference would let gravity pull the body far below the
    arc (that made tired dancers and spinners collapse).  Only ground phases take the tempo."""
    jump = load("jump").repeated(3.0)
    ref = srb_reference.build_reference(jump, kin.analyse(jump), body)
    sim = srb.SrbSimulator(ref, body, None, srb.SrbSettings())
    sim.tempo = 0.5                       # no fatigue model: the tempo stays where it is set
    advance = {True: [], False: []}
    while sim.phase < 2.5 and not sim.fallen:
        before = sim.phase
        grounded = bool(ref.sample(before).contact.any())
        sim.step()
        advance[grounded].append(sim.phase - before)
    assert advance[False], "the clip has flights"
    air, ground = np.array(advance[False]), np.array(advance[True])
    # At least full rate in the air (a lower flight plays faster and lands with the source's
    # landing; an early landing may skip ahead), never behind.
    assert air.min() >= sim.dt - 1e-12
    assert np.median(ground) == pytest.approx(0.5 * sim.dt)


@pytest.mark.slow
def test_an_exhausted_character_rests_even_where_the_motion_offers_no_restful_moment(kin, body):
    walk = load("walk").repeated(3.0)
    ref = srb_reference.build_reference(walk, kin.analyse(walk), body)
    ref = srb_reference.Reference(**{**{f: getattr(ref, f) for f in ref.__dataclass_fields__},
                           "restful": np.zeros_like(ref.restful)})
    model = schedule.ScheduledModel(schedule.from_fitness(0.5, fps=30))
    legs = body.leg_dofs.ravel()
    rested = {}
    for capacity in (0.3, 0.1):           # tired (between exhausted and rest) vs exhausted
        sim = srb.SrbSimulator(ref, body, model, srb.SrbSettings())
        state = model.model
        state.fatigued[:], state.active[:], state.resting[:] = 0.0, 0.0, 1.0
        state.fatigued[legs], state.resting[legs] = 1.0 - capacity, capacity
        for _ in range(60):
            sim.step()
        rested[capacity] = any(e.kind == "rest" for e in sim.events)
    assert rested == {0.3: False, 0.1: True}


def test_a_slowed_body_on_one_foot_gives_way_to_gravity_only_when_it_falls_ahead(kin, body):
    """On one foot the tempo holds while the body keeps up with the slowed motion; once its
    capture point runs ahead of the slowed reference's (it is falling onto the next step) the
    clock speeds back up to 1, so the swing foot lands in time."""
    walk = load("walk").repeated(2.0)
    ref = srb_reference.build_reference(walk, kin.analyse(walk), body)
    sim = srb.SrbSimulator(ref, body, None, srb.SrbSettings())
    r = ref.sample(0.5)
    scale = srb_body.kin_scale(body)
    slack = tempo.CAPTURE_SLACK * scale
    sim.p, sim.v = r.com.copy(), 0.5 * r.com_vel
    assert tempo.single_support_rate(0.5, sim.p, sim.v, r.com, 0.5 * r.com_vel, ref.floor, scale) == pytest.approx(0.5)
    sim.p = r.com + np.array([2.5 * slack, 0.0, 0.0])
    assert tempo.single_support_rate(0.5, sim.p, sim.v, r.com, 0.5 * r.com_vel, ref.floor, scale) == pytest.approx(1.0)
    sim.p = r.com + np.array([1.5 * slack, 0.0, 0.0])
    assert 0.5 < tempo.single_support_rate(0.5, sim.p, sim.v, r.com, 0.5 * r.com_vel, ref.floor, scale) < 1.0


@pytest.mark.slow
def test_a_tired_dancer_stays_up_and_slows_down():
    # dance_a falls onto its next steps; played in slow motion on one foot it collapsed (6.9 s)
    dance = load("dance_a")
    take = simulate.simulate_clip(dance, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=10.0,
                             out_fps=30)
    assert not take.fell
    # Slower than the source: 0.93 measured (0.81-0.88 while the chest, neck and shoulders ran
    # 30 ms behind the source: their motors fought the lag and the trunk, the weakest loaded
    # joint, drained to RC 0.32; on time it keeps 0.53, as much as the legs).
    assert metrics.phase_rate_mean(take) < 0.95


@pytest.mark.slow
def test_after_the_source_ends_a_tired_character_rests_instead_of_collapsing():
    # kick ends standing; a tired kicker held that pose until the legs gave way (fell at 10 s)
    kick = load("kick")
    take = simulate.simulate_clip(kick, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=kick.duration,
                             hold=9.0, out_fps=30)
    assert not take.fell
    end = int(np.argmax(take.reference_time >= take.reference_time[-1] - 1e-9))
    rests = [e for e in take.events if e["kind"] == "rest"]
    assert rests and not [e for e in take.events if e["kind"] == "resume" and e["frame"] > max(end, rests[-1]["frame"])]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["walk", "jump", "dance_b"])
@pytest.mark.parametrize("fps", [24.0, 120.0])
def test_film_and_capture_frame_rates_bake_without_falling(name, fps):
    """Real motion comes at 24 fps (film) to 120 fps (capture); contact timing, smoothing windows
    and the Newton check work in seconds, not frames."""
    clip = load(name).resampled(fps)
    fresh = simulate.simulate_clip(clip, None, seconds=4.0, out_fps=30)
    reference = clip.repeated(max(fresh.reference_time[-1], clip.duration)) if clip.loop else clip
    assert not fresh.fell
    assert metrics.root_error_m(fresh, reference) < 0.1
    tired = simulate.simulate_clip(clip, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=4.0, out_fps=30)
    assert not tired.fell


@pytest.mark.slow
def test_a_small_character_walks_on_its_own_scale():
    """Contact tolerances scale with the body: a fixed 2 cm let a 0.5 m character's 5 cm feet count
    tilted soles and hovering swing feet as down, and its walk fell."""
    walk = load("walk")
    scale = 0.5 / proxy.DEFAULT_HEIGHT
    small = C.Clip("small", walk.fps, walk.root_pos * scale, walk.root_rot, walk.joint_rots, loop=True)
    take = simulate.simulate_clip(small, None, height=0.5, mass=10.0, seconds=4.0, out_fps=30)
    assert not take.fell
    assert metrics.root_error_m(take, small.repeated(4.0)) < 0.02 * 0.5     # 2 % of its height


@pytest.mark.slow
@pytest.mark.parametrize("fps", [24.0, 25.0, 30000 / 1001, 120.0])
def test_a_take_has_one_evenly_timed_frame_per_scene_frame(fps, monkeypatch):
    """The take is baked at the scene's rate: at 120 fps it had one frame per 60 Hz SRB step (it
    played back twice as fast) and at 24 fps its frames were 0.8 to 1.2 frame intervals apart."""
    clip = load("walk").resampled(fps)
    rates = []
    init = srb.SrbSimulator.__init__

    def spy(self, ref, body, fatigue=None, settings=None, *args, **kwargs):
        rates.append(settings.rate)
        init(self, ref, body, fatigue, settings, *args, **kwargs)

    monkeypatch.setattr(srb.SrbSimulator, "__init__", spy)
    take = simulate.simulate_clip(clip, None, seconds=1.0)
    assert take.fps == fps and take.frames == math.ceil(fps - 1e-9) + 1
    assert np.allclose(np.diff(take.reference_time[:-1]), 1.0 / fps, rtol=1e-6)
    # ...the last frame too, also where the source runs out between two frames (it was recorded
    # then, up to a frame early)
    # (a tired tempo ends it anywhere: 24 fps had its last frame 0.67 frames after the one before)
    take = simulate.simulate_clip(clip, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=4.0)
    assert take.stats["seconds_simulated"] * fps == pytest.approx(take.frames - 1, abs=1e-6)
    # the fewest whole steps per frame that give about 60 Hz: NTSC's 29.97 fps runs at 59.94 Hz
    steps = rates[-1] / fps
    assert steps == round(steps) and rates[-1] > 59.0 and (steps == 1 or rates[-1] - fps < 59.0)


def test_feet_turn_smoothly_between_the_frames_of_a_clip(kin, body):
    """PyBullet hands back link rotations with either sign; sampling between two frames of
    opposite sign blended a foot through a half turn (tired dance_a: 163 deg in one frame)."""
    dance = load("dance_a")
    ref = srb_reference.build_reference(dance, kin.analyse(dance), body)
    feet = np.array([ref.sample(t).foot_rot for t in np.arange(0.0, dance.duration, 0.25 / dance.fps)])
    assert np.degrees(quat.angle_between(feet[1:], feet[:-1])).max() < 10.0


@pytest.mark.slow
def test_a_foot_lifted_for_a_moment_comes_down_where_it_was(kin, body):
    """A tap or a flicker in the source's contacts is not a step: re-placing the foot at a
    corrected spot within a few frames popped the knee (fresh dance_a: 38 deg in one frame)."""
    dance = load("dance_a")
    ref = srb_reference.build_reference(dance, kin.analyse(dance), body)
    sim = srb.SrbSimulator(ref, body, None, srb.SrbSettings())
    brief, lifted = 0, [None, None]
    while sim.phase < dance.duration - 0.05 and not sim.fallen:
        was = [f.stance for f in sim.feet]
        sim.step()
        for k, foot in enumerate(sim.feet):
            if was[k] and not foot.stance:
                lifted[k] = foot.offset.copy()
            elif not was[k] and foot.stance and lifted[k] is not None:
                if foot.land_phase - foot.lift_phase <= feet.SHORT_LIFT:
                    brief += 1
                    assert np.allclose(foot.offset, lifted[k], atol=1e-9)
                lifted[k] = None
    assert brief and not sim.fallen


@pytest.mark.slow
def test_an_early_landing_does_not_snap_the_pelvis_round():
    """spin lands early from a turning hop: the pelvis snapped onto the source's landing
    orientation (11.2 rad/s for a frame, the source never exceeds 6.3); it now keeps turning."""
    spin = load("spin")
    take = simulate.simulate_clip(spin, None, out_fps=30)
    assert (np.diff(take.reference_time) * 30 > 1.3).any()       # it does land early
    turning = np.linalg.norm(C.angular_velocity(take.clip.root_rot, 30.0, world=True), axis=1)
    source = np.linalg.norm(C.angular_velocity(spin.root_rot, spin.fps, world=True), axis=1)
    assert turning.max() < 1.2 * source.max()


@pytest.mark.slow
def test_a_fresh_take_that_lands_early_is_as_long_as_its_source():
    """spin's hop lands sooner than the source's and the clock skips on to the source's landing;
    nothing gave that time back, so its fresh take ended 0.22 s (7 frames) before its source.  The
    clock now plays slower on the ground until it is back on time: as long as the source, each
    moment of it at its own frame again by the end."""
    spin = load("spin")
    take = simulate.simulate_clip(spin, None, out_fps=30, simulate_limbs=False)
    on_time = take.reference_time[0] + np.arange(take.frames) / 30.0
    ahead = take.reference_time - on_time
    assert ahead.max() > 0.1                                         # it does land early
    assert take.frames == int(np.ceil(spin.duration * 30.0 - 1e-9)) + 1
    assert take.reference_time[-1] == pytest.approx(spin.duration)
    assert ahead[-3:].max() < 0.5 / 30.0                             # back on time by the end
    assert not take.fell


def test_a_tired_take_of_bounds_with_no_ground_stride_is_never_shorter_than_its_source():
    """Two running strides played once: tired, each lower flight plays faster so that the legs
    reach the landing pose at touchdown, its stances keep the clock (the body falls onto the next
    step), and nothing gave the time back: the Exhausted take ended 0.875x as long as its source
    (a real 0.8 s dash, 0.79x).  A tired take's end now waits for the source's length, as a fresh
    one's does."""
    run = load("run")
    bounds = replace(run, name="bounds", loop=False)
    sched, keys = direction.preset_schedule("Exhausted", 30.0, bounds.duration)
    take = simulate.simulate_clip(bounds, sched, out_fps=30.0, tiredness=keys, simulate_limbs=False)
    on_time = np.arange(take.frames) / 30.0
    assert (take.reference_time > on_time + 0.05).any()          # its lower flights do run ahead
    assert not take.fell
    assert take.reference_time[-1] == pytest.approx(bounds.duration)
    assert (take.frames - 1) / 30.0 >= bounds.duration - 0.5 / 30.0


def test_a_fresh_kick_keeps_its_planted_foot_under_the_source_s_hips():
    """The contact QP bought the kick's rate of angular momentum with friction and pushed its
    body off its path, the planted foot with it: its worst end effector was 0.17 m off the
    source's relative to the hips (95th percentile); the centre of mass first, within the legs'
    strength, keeps it under the bar (0.045 m)."""
    kick = load("kick")
    take = simulate.simulate_clip(kick, None, out_fps=30.0)
    assert not take.fell
    assert pose_error.end_effector_error(take, kick, 1.75, True).worst_m < 0.10


@pytest.mark.slow
def test_a_shorter_flight_lands_in_the_landing_pose_without_a_leg_snap():
    """A tired hop lands sooner than the source's; played at the source's rate its legs were still
    in mid-air pose at touchdown and snapped (60 deg in a frame on spin, the source's largest per-
    frame leg turn is 26 deg).  The flight now plays faster, so the landing pose arrives in time."""
    spin = load("spin")
    take = simulate.simulate_clip(spin, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=6.0, out_fps=30)
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    legs = [names.index(f"{side}_{part}") for side in ("right", "left") for part in ("hip", "knee", "ankle")]
    turn = np.degrees(quat.angle_between(take.clip.joint_rots[1:, legs], take.clip.joint_rots[:-1, legs]))
    source = spin.resampled(30.0)
    source_turn = np.degrees(quat.angle_between(source.joint_rots[1:, legs], source.joint_rots[:-1, legs]))
    assert not take.fell
    assert turn[:-2].max() < 1.5 * source_turn.max()     # the last frame may cut a flight short


@pytest.mark.slow
def test_a_tired_jumper_lands_short_and_goes_on_from_there_over_its_feet(kin):
    """A lower jump is shorter; chasing the source's landing spot dragged the body ahead of its
    planted feet (legs stretched back like a plank).  The motion goes on from where it landed."""
    jump = load("jump")
    fresh = simulate.simulate_clip(jump, None, seconds=10.0, out_fps=30)
    tired = simulate.simulate_clip(jump, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=10.0, out_fps=30)
    assert not tired.fell

    def pelvis_off_feet(take):   # 95th percentile, both feet down, horizontal metres
        ck = kin.analyse(take.clip)
        ankles = ck.joint_pos[:, [ck.link_names.index(f"{s}_ankle") for s in ("right", "left")], :2].mean(axis=1)
        off = np.linalg.norm(take.clip.root_pos[:, :2] - ankles, axis=1)
        return float(np.percentile(off[take.contacts.all(axis=1)], 95))

    assert pelvis_off_feet(tired) < pelvis_off_feet(fresh) + 0.08
    # ...so its knees bend for the landings at least as the fresh ones do (they were 10 deg
    # straighter while the body was pulled toward the source's landing spots)
    assert metrics.knee_flexion_gain_deg(tired, fresh) > -1.0       # (within a degree)
    # ...and it lands short, behind the source's path (never pulled ahead of it)
    source = jump.repeated(max(tired.reference_time[-1], jump.duration))
    source_xy = np.stack([np.interp(tired.reference_time, np.arange(source.frames) / source.fps, source.root_pos[:, i])
                          for i in range(2)], axis=1)
    travel = source_xy[-1] - source_xy[0]
    along = (tired.clip.root_pos[:, :2] - source_xy) @ (travel / np.linalg.norm(travel))
    assert along[-1] < -0.1 and along.max() < 0.1


@pytest.mark.slow
def test_tired_knees_bend_under_the_body_gradually_and_the_deeper_stance_costs_them():
    """Effort economy in the legs: the QP's fatigue bounds bite only at peak loads, so a tired
    body stood as tall as a fresh one.  Tired knees yield to the load they carry (less stiff
    muscle), the body sinks, and the knees pay for the deeper stance."""
    jump = C.load_deepmimic(C.deepmimic_clip_path("jump"))
    fitness = np.array([0.15 if part == "legs" else 0.8 for part in proxy.dof_body_parts()])
    sched = schedule.from_fitness(fitness[None, :], fps=30, time_scale=40)
    economical = simulate.simulate_clip(jump, sched, seconds=6.0, out_fps=30)
    stubborn = simulate.simulate_clip(jump, sched, seconds=6.0, out_fps=30, settings=srb.SrbSettings(effort_economy=0.0))
    assert not economical.fell and not stubborn.fell
    gain = metrics.knee_flexion_gain_deg(economical, stubborn)
    assert gain > 2.0
    both = economical.contacts.all(axis=1), stubborn.contacts.all(axis=1)
    assert economical.com[both[0], 2].mean() < stubborn.com[both[1], 2].mean() - 0.005
    # Gradually, at the pace of fatigue: little of it in the first second (these legs tire fast:
    # fitness 0.15 at 40x, so the first second already holds a few percent of the take's gain).
    first = metrics.knee_flexion_series(economical)[:30] - metrics.knee_flexion_series(stubborn)[:30]
    assert abs(first.mean()) < 0.5 * gain
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    offsets = np.cumsum([0] + [j.dofs for j in proxy.DEFAULT_JOINTS])
    knees = [offsets[names.index(n)] for n in ("right_knee", "left_knee")]
    assert economical.fatigue["RC"][:, knees].min() < 0.6     # they tire
    # Fresh knees never yield.
    fresh = simulate.simulate_clip(jump, None, seconds=2.0, out_fps=30)
    assert np.array_equal(fresh.clip.root_pos, simulate.simulate_clip(
        jump, None, seconds=2.0, out_fps=30, settings=srb.SrbSettings(effort_economy=0.0)).clip.root_pos)


@pytest.mark.slow
def test_a_tired_run_shortens_its_strides_where_its_cadence_cannot_slow():
    """A run's stances fall onto the next step and its flights are ballistic, so the tempo rule
    cannot slow its clock (speed ratio 0.995 with exhausted legs before): a tired run now takes
    shorter strides at nearly the source's cadence, and covers less ground."""
    run = C.load_deepmimic(C.deepmimic_clip_path("run"))
    fitness = np.array([0.1 if part == "legs" else 0.8 for part in proxy.dof_body_parts()])
    tired = simulate.simulate_clip(run, schedule.from_fitness(fitness[None, :], fps=30, time_scale=40),
                              seconds=8.0, out_fps=30)
    fresh = simulate.simulate_clip(run, None, seconds=8.0, out_fps=30)
    assert not tired.fell
    assert metrics.speed_ratio(fresh) > 0.98
    assert metrics.speed_ratio(tired) < 0.95
    assert metrics.phase_rate_mean(tired) > 0.9          # mostly shorter strides, not slower steps
    # The take says how far behind the source's path its strides left it.
    assert tired.stats["behind_source_m"] > 0.5 and fresh.stats["behind_source_m"] == 0.0


def _com_path_at_tempo(ref, body, tempo: float, until_phase: float):
    """The SRB's centre of mass after every step of ``ref`` played at a held ``tempo`` (no fatigue
    model: the tempo stays where it is set) up to ``until_phase``, and the step length."""
    sim = srb.SrbSimulator(ref, body, None, srb.SrbSettings())
    sim.tempo = tempo
    path = []
    while sim.phase < until_phase and not sim.fallen:
        sim.step()
        path.append(sim.p.copy())
    assert not sim.fallen
    return np.array(path), sim.dt


@pytest.mark.slow
def test_a_slowed_run_covers_ground_at_its_tempo_through_its_flights(kin, body):
    """A slowed run keeps the source's clock in its flights and shortens its strides instead: the
    body takes off at the tempo's share of the source's speed, so its target must keep that pace
    in the air too.  It kept the stance's stride (reset to a full one on the step the source's
    foot left the floor), ran ahead, and every landing pulled the body back up to speed: a run
    held at tempo 0.8 went at 0.87 of the source's speed."""
    run = load("run").repeated(6.0)
    ref = srb_reference.build_reference(run, kin.analyse(run), body)
    source_speed = np.linalg.norm(ref.com[-1, :2] - ref.com[0, :2]) / ref.duration
    for tempo in (1.0, 0.8):
        path, dt = _com_path_at_tempo(ref, body, tempo, until_phase=4.0)
        settled = int(round(1.0 / dt))    # from 1 s on
        speed = np.linalg.norm(path[-1, :2] - path[settled, :2]) / ((len(path) - 1 - settled) * dt)
        assert speed / source_speed == pytest.approx(tempo, abs=0.02)


@pytest.mark.slow
def test_tired_knees_read_either_quaternion_sign_of_the_source():
    """q and -q are one rotation; a source stored with negative-w knee quaternions (other tools,
    other conventions) read as a knee bent the other way round the circle and sank the body."""
    from dataclasses import replace

    jump = C.load_deepmimic(C.deepmimic_clip_path("jump"))
    names = [j.name for j in proxy.DEFAULT_JOINTS]
    joints = jump.joint_rots.copy()
    for n in ("right_knee", "left_knee"):
        joints[:, names.index(n)] *= -1.0
    fitness = np.array([0.15 if part == "legs" else 0.8 for part in proxy.dof_body_parts()])
    sched = schedule.from_fitness(fitness[None, :], fps=30, time_scale=40)
    a = simulate.simulate_clip(jump, sched, seconds=4.0, out_fps=30)
    b = simulate.simulate_clip(replace(jump, joint_rots=joints), sched, seconds=4.0, out_fps=30)
    assert a.frames == b.frames
    assert np.abs(a.com - b.com).max() < 1e-9


@pytest.mark.slow
def test_a_jittery_high_rate_capture_walks_on_its_path():
    """Raw optical capture at 120 fps carries frame-to-frame jitter.  Differenced twice it swamped
    the centre-of-mass acceleration and the feet never counted as still: the walk drifted 0.2 to
    0.8 m off its path.  Rates of change are low-passed (runtime.maths.lowpass)."""
    from dataclasses import replace

    rng = np.random.default_rng(7)
    walk = load("walk").repeated(4.0).resampled(120.0)
    jitter = quat.from_rotvec(rng.normal(0.0, math.radians(1.0), walk.joint_rots.shape[:-1] + (3,)))
    noisy = replace(walk, loop=False, joint_rots=quat.multiply(walk.joint_rots, jitter),
                    root_pos=walk.root_pos + rng.normal(0.0, 0.003, walk.root_pos.shape))
    take = simulate.simulate_clip(noisy, None, out_fps=30)
    assert not take.fell
    assert metrics.root_error_m(take, noisy) < 0.02


@pytest.mark.slow
def test_a_slowed_jumper_still_pushes_off_and_lands_at_the_source_s_pace(kin, body):
    """A push played in slow motion launches nothing (its acceleration scales with the tempo
    squared): tired jumps vanished while the legs could still have jumped most of the height.
    The push into a flight and the landing out of it keep the source's clock; the stances
    between them take the tempo."""
    jump = load("jump").repeated(4.0)
    ref = srb_reference.build_reference(jump, kin.analyse(jump), body)
    assert ref.ballistic.any() and not ref.ballistic[~ref.contact.any(axis=1)].any()
    apex = {}
    for tempo in (1.0, 0.5):
        path, _ = _com_path_at_tempo(ref, body, tempo, until_phase=3.4)
        apex[tempo] = path[:, 2].max() - ref.com[0, 2]
    assert apex[1.0] > 0.1
    assert apex[0.5] > 0.9 * apex[1.0]


@pytest.mark.slow
def test_a_tired_dancer_on_one_leg_does_not_sink_until_it_gives_way():
    """Tired knees bend under the body, but a knee under the body holds more the further it
    yields: allowed an arm's 30 degrees, a tired dancer's standing knee sank until the leg gave
    way (dance_b, tired, at 10.7 s)."""
    dance = load("dance_b")
    take = simulate.simulate_clip(dance, schedule.from_fitness(0.25, fps=30, time_scale=40), seconds=12.0,
                             out_fps=30)
    assert not take.fell


@pytest.mark.slow
def test_legs_hold_more_while_lowering_the_body_than_they_push():
    """Eccentric strength: tau_max is what the legs push with; landings (the body sinking onto
    its legs) may use up to ECCENTRIC_STRENGTH times it, so the push-offs, not the landings, set
    how strong a jumper must be."""
    take = simulate.simulate_clip(load("jump"), None, seconds=4.0, out_fps=30)
    legs = [d for d, part in enumerate(proxy.dof_body_parts()) if part == "legs"]
    ratio = take.strength[:, legs] / take.tau_max[legs]
    falling = np.gradient(take.com[:, 2], 1.0 / 30) < -0.3
    rising = np.gradient(take.com[:, 2], 1.0 / 30) > 0.3
    assert ratio[falling].mean() > 1.2 and np.allclose(ratio[rising], 1.0, atol=0.05)
    # The landings need more than tau_max (so one strength for both would be set by them) ...
    assert (np.abs(take.torque[:, legs]) > take.tau_max[legs]).any()
    # ... and stay within what a yielding leg holds.
    assert np.all(np.abs(take.torque[:, legs]) <= 1.05 * take.strength[:, legs] + 1e-6)


def _standing_rests(take) -> list[tuple[int, int]]:
    """(first frame, end frame) of each rest while the body stands: to its end, or until it goes
    down on its knees (runtime.floor.kneel)."""
    kneels = [k for k, _ in metrics.kneel_spans(take)]
    out = []
    for start, end in metrics.rest_spans(take):
        end = take.frames if end is None else end
        out.append((start, min([end] + [k for k in kneels if start <= k < end])))
    return out


def _soles(take, source):
    """Per frame and foot: the lowest sole corner above the source's floor (T, 2), and the
    sole centres (T, 2, 3)."""
    with kinematics.Kinematics() as k:
        floor = k.analyse(source).floor_height
        sole = k.analyse(take.clip).sole
    return sole[..., 2].min(axis=2) - floor, sole.mean(axis=2)


@pytest.mark.slow
def test_a_rest_in_a_wide_stance_stands_on_both_feet(standing_stalled_walk):
    """A walker stops mid-stride, feet a stride apart: its rest height must be reachable from
    both feet (hips set for vertical legs left the feet floating 3-5 cm above the floor)."""
    take = standing_stalled_walk
    spans = metrics.rest_spans(take)
    assert spans
    lowest, _ = _soles(take, load("walk"))
    checked = 0
    for start, end in _standing_rests(take):
        lifted = np.flatnonzero(~take.contacts[start + 1:end].all(axis=1))   # a closing step
        down = start + 1 + (int(lifted[-1]) + 1 if lifted.size else 0)
        settled = slice(down + 15, end)                 # after half a second of settling
        if end - settled.start > 15:                    # (a rest the take ends in may be too short)
            checked += 1
            assert np.abs(lowest[settled]).max() < 0.005
    assert checked >= 2


@pytest.mark.slow
def test_a_rest_begun_mid_stride_brings_the_feet_together(standing_stalled_walk):
    """A rest begins wherever both feet are down: mid-stride, feet 0.4-0.6 m apart.  Where the
    staying leg can hold the body alone, the weight goes onto it and the other foot steps in
    beside it (a few centimetres off the floor) before the body stands easy; where it cannot,
    the body rests where it stands, both feet down throughout."""
    take = standing_stalled_walk
    lowest, centres = _soles(take, load("walk"))
    apart = np.linalg.norm(centres[:, 0, :2] - centres[:, 1, :2], axis=1)
    closed = 0
    for start, end in _standing_rests(take):
        lifted = ~take.contacts[start + 1:end].all(axis=1)
        if lifted.any():
            closed += 1
            assert apart[start] > 0.3 and apart[end - 1] < 0.25
            steps = np.flatnonzero(lifted)
            assert steps[-1] - steps[0] + 1 == lifted.sum()            # one step, in one go
            assert lifted.sum() / 30.0 == pytest.approx(rest_steps.CLOSE_STEP_TIME, abs=0.1)
            assert lowest[start + 1:end].max() < 2.0 * rest_steps.CLOSE_STEP_LIFT
        else:
            assert abs(apart[end - 1] - apart[start]) < 0.05
    assert not take.fell


def test_a_closing_step_needs_a_leg_that_can_stand_alone(kin, body):
    walk = load("walk").repeated(3.0)
    ref = srb_reference.build_reference(walk, kin.analyse(walk), body)
    feet = ref.ankle[:, 0, :2] - ref.ankle[:, 1, :2]
    legs = body.leg_dofs.ravel()

    def plan(frame, capacity, offsets=None):
        model = schedule.ScheduledModel(schedule.from_fitness(0.5, fps=30))
        model.model.fatigued[legs], model.model.resting[legs] = 1.0 - capacity, capacity
        sim = srb.SrbSimulator(ref, body, model, srb.SrbSettings())
        r = ref.sample(frame / walk.fps)
        sim.phase, sim.p = frame / walk.fps, r.com.copy()
        if offsets is not None:
            for foot, offset in zip(sim.feet, offsets):
                foot.offset[:] = offset
        return rest_steps.plan_closing_step(sim, r), r

    # Mid-stride, both feet down and a stride apart: fresh legs step in, exhausted ones do not.
    wide = np.flatnonzero(ref.contact.all(axis=1) & (np.linalg.norm(feet, axis=1) > 0.4))
    fresh = [(f, *plan(f, 1.0)) for f in wide]
    stepping = [(f, p, r) for f, p, r in fresh if p is not None]
    assert stepping, "fresh legs step in from some mid-stride stance"
    frame, step, r = stepping[0]
    assert plan(frame, 0.05)[0] is None              # exhausted: it rests where it stands
    stay = 1 - step.foot
    beside = step.anchor[:2] - r.ankle[stay, :2]
    assert np.linalg.norm(beside) == pytest.approx(np.linalg.norm(body.hip[0] - body.hip[1]), abs=0.02)  # hip width
    # The feet together already: nothing to close.
    offsets = np.zeros((2, 3))
    offsets[step.foot, :2] = step.anchor[:2] - r.ankle[step.foot, :2]
    assert plan(frame, 1.0, offsets)[0] is None


def test_a_stance_foot_out_of_reach_rises_onto_its_toes(body):
    """At the end of a run's stance the body can be a little beyond the straight leg: the heel
    rises about the toes (which stay put) until the ankle is within reach."""
    foot_R = rotation.quat_matrix(C.Y_UP_TO_Z_UP)                     # flat, facing +x
    ankle = np.array([0.0, 0.1, -body.sole_drop])
    toe = ankle + foot_R @ np.array([body.sole[:, 0].max(), body.sole_drop, 0.0])
    leg = body.thigh + body.shin
    near_hip = ankle + np.array([0.1, 0.0, 0.9 * leg])
    assert srb_legs.pivot_on_toes(body, near_hip, ankle, foot_R)[0] is ankle      # within reach: as it was
    far_hip = ankle + np.array([0.25, 0.0, 0.98 * leg])
    new_ankle, new_R = srb_legs.pivot_on_toes(body, far_hip, ankle, foot_R)
    assert np.linalg.norm(new_ankle - far_hip) <= srb_legs.TOE_PIVOT_REACH * leg + 1e-6
    assert new_ankle[2] > ankle[2]                                             # the heel rose
    assert np.allclose(new_ankle + new_R @ np.array([body.sole[:, 0].max(), body.sole_drop, 0.0]), toe)


def test_next_both_down_finds_the_next_double_support(kin, body):
    walk = load("walk")
    ref = srb_reference.build_reference(walk, kin.analyse(walk), body)
    both = ref.contact.all(axis=1)
    for t in range(0, walk.frames - 1, 3):
        later = np.flatnonzero(both[t:])
        expected = (t + later[0]) / walk.fps if later.size else math.inf
        assert ref.next_both_down(t / walk.fps) == pytest.approx(expected)
    run = load("run")
    ref = srb_reference.build_reference(run, kin.analyse(run), body)
    assert ref.next_both_down(0.0) == math.inf          # a run never has both feet down


@pytest.mark.slow
def test_an_exhausted_kicker_stops_and_rests_instead_of_toppling_off_one_leg():
    # Exhausted (fitness 0, starting half fatigued): on one leg the ankle could not hold the
    # body, which sank away from its target; it toppled at 2.5 s.  Now the sinking legs make a
    # rest due, the body stops where it is, puts its free foot down and rests.
    kick = load("kick")
    take = simulate.simulate_clip(kick, schedule.from_preset("Exhausted", fps=30.0), hold=5.0, out_fps=30.0)
    kinds = [e["kind"] for e in take.events]
    assert "fall" not in kinds, take.events
    assert "rest" in kinds
    rest = next(e for e in take.events if e["kind"] == "rest")
    assert take.contacts[min(rest["frame"] + 1, len(take.contacts) - 1)].all()   # recorded before its step


@pytest.mark.slow
def test_an_exhausted_runner_keeps_running_slower():
    # Tired runners slow (x0.66 in the reference pairs) and keep running: at the Exhausted preset
    # a 12 s run halted after 1 s, rested and fell; its legs can carry a slower run.
    # (Measured against the fresh run: an Exhausted take sets off at its tired pace, so within
    # the take it need not slow further.)
    run = load("run")
    sched, keys = direction.preset_schedule("Exhausted", 30.0, 12.0)
    take = simulate.simulate_clip(run, sched, seconds=12.0, out_fps=30.0, tiredness=keys)
    fresh = simulate.simulate_clip(run, None, seconds=12.0, out_fps=30.0)
    kinds = [e["kind"] for e in take.events]
    assert "fall" not in kinds and "stopped" not in kinds, take.events
    # Speed as ./fatigue realism measures it: the root's path, sway removed, over moving frames.
    # (./fatigue realism --presets measures 0.70-0.73 at 3, 10, 30 and 90 s; this 12 s take plays
    # its lower flights faster than its tempo and measures 0.86: a tired run can still end before
    # its source, see docs/simulation.md.)
    assert 0.5 < gait.progression_speed(take) / gait.progression_speed(fresh) < 0.9


@pytest.mark.slow
def test_fresh_and_moderately_tired_bodies_never_stop():
    for name in ("run", "dance_a"):
        clip = load(name)
        take = simulate.simulate_clip(clip, schedule.from_fitness(0.25, 30.0, time_scale=20.0), seconds=6.0,
                                 out_fps=30.0, simulate_limbs=False)
        assert "halt" not in [e["kind"] for e in take.events]


def test_after_floor_work_the_body_goes_on_from_the_source_not_from_an_old_lag(kin, body):
    """Floor work keeps the keyed pose, so the body takes over where the source is: its centre of
    mass aims at the source's, not behind it by the lag that tired strides built up before (that
    aimed a one-legged stance 8 cm off its only foot, and it fell)."""
    walk = load("walk")
    ref = srb_reference.build_reference(walk, kin.analyse(walk), body)
    sim = srb.SrbSimulator(ref, body)
    sim.lag[:2] = (-0.01, -0.08)
    sim.shift[:2] = (0.05, 0.0)
    sim.resume_at(0.5)
    r = ref.sample(0.5)
    np.testing.assert_allclose(sim.com_target(r), r.com)
    np.testing.assert_allclose(sim.p, r.com)


def test_a_tired_walk_keeps_walking_on_shorter_slower_steps():
    """Travelling, the tempo shows in the stride as well as the cadence (tired walkers in the
    literature: strides x0.56-0.87, speed x0.52-0.79, no stops); before, the walk kept the
    source's footprints (stride x0.99) and only stepped less often."""
    from runtime.fatigue import params as fatigue_params

    walk = load("walk")
    p = fatigue_params.preset("Exhausted")
    tired = simulate.simulate_clip(walk, schedule.from_fitness(p.fitness, fps=30, time_scale=p.time_scale,
                                                          initial_fatigue=p.initial_fatigue), seconds=8.0, out_fps=30)
    fresh = simulate.simulate_clip(walk, None, seconds=8.0, out_fps=30)
    t, f = gait.features(tired, 8.0), gait.features(fresh, 8.0)
    assert not tired.fell and t.rests == 0
    assert 0.5 < t.speed_mps / f.speed_mps < 0.85
    assert t.stride_m / f.stride_m < 0.95 and t.cadence_spm / f.cadence_spm < 0.95


def test_only_steady_travel_counts_as_travelling():
    from runtime.reference import reference

    fps, t = 30.0, np.arange(121) / 30.0
    walk = np.stack([1.0 * t, np.zeros_like(t), np.full_like(t, 0.9)], axis=1)
    sway = np.stack([0.4 * np.sin(2.0 * np.pi * t), np.zeros_like(t), np.full_like(t, 0.9)], axis=1)
    assert reference.travelling(walk, fps, 1.0)[30:90].all()
    assert not reference.travelling(sway, fps, 1.0).any()
