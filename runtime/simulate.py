"""simulate(request) -> Take: the one entry point every backend and the bench call.

Modes: "srb" (default; runtime.srb.simulator) and "torque" (experimental: the whole body sampled under
fatigued torques with no help on the root, runtime.torque.samcon, on MuJoCo).  In SRB mode, clips whose
reference touches the floor with something other than the feet (rolls, crawls, get-ups) cannot
be carried by foot contacts alone: they bake with the pelvis following the reference, and the
Take says so.
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from . import calibration
from .engines import chooser
from .engines.limbs import limb_rate_for, whole_steps
from .errors import EngineMissing, SimulationCancelled, SimulationError
from .fatigue import direction as directing
from .fatigue.breathing import breathe
from .fatigue.contract import Simulator
from .fatigue.effort import ECCENTRIC_STRENGTH
from .fatigue.schedule import FatigueSchedule, ScheduledModel
from .fatigue.tempo import MAX_STRETCH
from .floor import kneel, work as floor, stretches
from .maths import quat
from .motion import hinges
from .motion.clip import Clip
from .motion.take import FATIGUE_FIELDS, Event, Take, TakeFrame, unfatigued
from .reference import playback, pose_output
from .reference.prepare import prepare
from .request import SimulationRequest, effort_economy_problem, height_problem, mass_problem, output_fps_problem
from .srb import simulator as srb
from .srb.policy import POLICY_RATE, attach
from .srb.residual import load_any
from .torque import samcon

MODES = ("srb", "torque")


@dataclass(frozen=True)
class Tuning:
    """What the bench, the tests and training set on top of a request and a bake never does (so
    never in the worker file): the SRB's settings, a push, the strength, the limbs kinematic, the
    clip simulated as keyed, a loaded policy."""
    settings: srb.SrbSettings | None = None        # None: SrbSettings() (the request's effort_economy on top)
    push: tuple[float, float, np.ndarray] | None = None   # (time s, duration s, force N) on the body
    tau_max: np.ndarray | None = None              # strength per DoF (N*m; None: calibrated on a fresh pass)
    simulate_limbs: bool = True                    # False: trunk, neck and arms kinematic (faster)
    real_speed: bool = True                        # False: a slow-motion clip simulated as keyed
    policy: object = None                          # a loaded policy run instead of the request's file


def simulate(request: SimulationRequest, progress: Callable[[float], None] | None = None,
             cancel: Callable[[], bool] | None = None, tuning: Tuning | None = None) -> Take:
    """Simulate ``request`` (runtime.request.SimulationRequest) and return the Take.

    The request's fields: ``schedule`` None is fatigue off; ``seconds`` how much source motion to
    play (looping clips cycle; default one pass); ``hold`` extra seconds standing at the end;
    ``out_fps`` the Take's frame rate (default the clip's; the SRB takes a whole number of steps per
    output frame, at least 60 Hz); ``plan`` the character's proportions and de Leva masses
    (runtime.body.anthropometry; None: the default humanoid); ``policy`` an SRB policy file
    (runtime.srb.policy.SrbPolicy corrects foot placement and COM velocity,
    runtime.srb.residual.ResidualPolicy the tempo rule's choices; loaded here: PolicyError on a bad
    file); ``effort_economy`` how far tired joints (limbs, knees) yield to their loads
    (srb.SrbSettings.effort_economy; None: its default); ``engine`` the physics engine
    (runtime.engines.chooser); ``breathing`` a take under fatigue breathes (runtime.fatigue.breathing;
    without fatigue it never does); ``kneeling`` legs too tired to recover standing rest on the
    knees (runtime.floor.kneel); ``tiredness`` how tired the body should be over the source
    (runtime.fatigue.direction: the starting fatigue and the speed-up of the schedule are solved to
    meet it; SRB mode).  A clip that plays in slow motion (runtime.reference.playback: its flights
    fall slower than gravity) is simulated at the speed it was performed and the Take played back
    at the clip's.  ``progress(fraction)`` is called about 100 times; ``cancel()`` returning True
    stops with SimulationCancelled.  ``tuning``: what a bake never sets (Tuning).  Deterministic:
    same inputs and engine, bit-identical Take.
    """
    tuning = tuning or Tuning()
    if tuning.policy is None and request.policy:
        tuning = replace(tuning, policy=load_any(request.policy))
    mode, engine, height = request.mode, request.engine, request.height
    if mode not in MODES:
        raise SimulationError(f"unknown simulation mode {mode!r}: use one of {', '.join(MODES)}")
    if mode == "torque":
        if engine not in (None, "auto", "mujoco"):
            raise SimulationError("torque mode runs on MuJoCo (its batched rollouts): use the engine "
                                  "Automatic or MuJoCo")
        engine = "mujoco"
    try:
        engine = chooser.resolve(engine)
    except EngineMissing as exc:
        raise SimulationError(str(exc)) from None
    problem = height_problem(height) or mass_problem(request.mass)
    if problem is None and request.effort_economy is not None:
        problem = effort_economy_problem(request.effort_economy)
    if problem is not None:
        raise SimulationError(problem)
    if request.effort_economy is not None:
        tuning = replace(tuning, settings=replace(tuning.settings or srb.SrbSettings(),
                                                  effort_economy=float(request.effort_economy)))
    clip, seconds = request.clip, request.seconds
    cut = clip.root_cut(height)
    if cut is not None:
        raise SimulationError(f"clip '{clip.name}' root jumps {cut[1]:.2f} m between frames {cut[0]} and {cut[0] + 1}: "
                              "a cut, teleport or stepped key, not motion; simulate the parts on either side separately")
    # Knees and elbows the proxy can bend: what they turn off their hinge is taken by the hip or
    # shoulder and the ankle (runtime.motion.hinges), so hands and feet land where the source puts them.
    clip = hinges.fit_hinges(clip)
    source = clip.repeated(seconds) if (clip.loop and seconds) else clip
    if not clip.loop and seconds:
        source = clip.repeated(min(seconds, clip.duration))
    out_fps = float(request.out_fps or clip.fps)
    if output_fps_problem(out_fps) is not None:
        raise SimulationError(output_fps_problem(out_fps))
    request = replace(request, clip=clip, out_fps=out_fps, engine=engine)
    analysed = None
    if tuning.real_speed:
        analysed = chooser.shared_kinematics(height, request.plan if mode != "torque" else None, engine).analyse(source)
        k = playback.slowdown(analysed)
        if k is not None:
            schedule, tiredness = request.schedule, request.tiredness
            faster = replace(request, schedule=schedule.played_faster(k) if schedule is not None else None,
                             hold=request.hold / k, out_fps=out_fps * k,
                             tiredness=tiredness.played_faster(k) if tiredness is not None else None)
            take = _simulate_source(faster, tuning, source.played_faster(k), progress, cancel)
            return take.played_slower(k, f"'{clip.name}' plays {k:.1f}x slower than it was performed (its flights "
                                         f"fall at 1/{k * k:.0f} g, a capture keyed at a lower frame rate than it "
                                         f"was recorded at): simulated at the speed it was performed, baked back "
                                         f"in slow motion")
    return _simulate_source(request, tuning, source, progress, cancel, analysed)


def simulate_clip(clip: Clip, schedule: FatigueSchedule | None = None, *, progress=None, cancel=None,
                  settings=None, push=None, tau_max=None, simulate_limbs: bool = True, real_speed: bool = True,
                  policy=None, **fields) -> Take:
    """simulate() of SimulationRequest(clip, schedule, **fields) with Tuning(settings, push, tau_max,
    simulate_limbs, real_speed, policy): the keywords the tests, the bench and the tools write
    (``policy`` a loaded policy)."""
    tuning = Tuning(settings, push, tau_max, simulate_limbs, real_speed, policy)
    return simulate(SimulationRequest(clip, schedule, **fields), progress, cancel, tuning)


def _simulate_source(request: SimulationRequest, tuning: Tuning, source: Clip, progress, cancel,
                   analysed=None) -> Take:
    """simulate()'s work on a request it has checked (its clip fitted, out_fps and engine resolved):
    ``source`` (the part of the clip to play, at the speed to simulate) to a Take at out_fps;
    ``analysed``: ``source``'s kinematics on this mode's proxy, where simulate() has them already;
    a take under fatigue breathes (runtime.fatigue.breathing) at the speed it was simulated."""
    clip, schedule, mode, height, mass = request.clip, request.schedule, request.mode, request.height, request.mass
    hold, out_fps, plan, engine, tiredness = request.hold, request.out_fps, request.plan, request.engine, request.tiredness
    settings, push, tau_max, simulate_limbs, policy = (tuning.settings, tuning.push, tuning.tau_max,
                                                       tuning.simulate_limbs, tuning.policy)
    breathes = request.breathing and schedule is not None
    if mode == "torque":
        prepared = prepare(source, chooser.shared_kinematics(height, None, engine), mass, analysed)
        # The sampled body has the floor under it: hands, knees or back on it where the clip puts
        # them are the motion (a cartwheel).  What the clip does not show, it cannot stand on.
        if prepared.support.unseen and stretches.floor_frames(prepared.ck, prepared.support).any():
            if prepared.support.unseen_holder() == "slow_motion":
                # Slow motion as in SRB mode (simulate() played it at its real speed where its
                # flights time it); here they do not, and torque mode keeps nothing as keyed.
                raise SimulationError(
                    f"clip '{clip.name}' plays in slow motion (in {100 * prepared.support.slow.mean():.0f} % of its "
                    "frames it flies or leans slower than gravity allows: a capture keyed at a lower frame rate "
                    "than it was recorded at) with too few flights to time it by, and torque mode simulates only "
                    "real speed: re-import it with Update Scene FPS/Duration ticked (or set the scene's frame "
                    "rate to the file's)")
            held = prepared.support.described(floor_work=True)[0].split(":")[0]
            raise SimulationError(f"torque mode simulates only the floor, and clip '{clip.name}' is held up "
                                  f"part of the time by {held}: bake it in SRB mode")
        take = _sampled(request, source, prepared, (settings or srb.SrbSettings()).effort_economy, progress, cancel)
        return breathe(take) if breathes else take
    settings = settings or srb.SrbSettings()
    steps_per_frame = whole_steps(settings.rate, out_fps)
    if settings.rate != out_fps * steps_per_frame:
        settings = replace(settings, rate=out_fps * steps_per_frame)
    limb_rate = limb_rate_for(settings.rate)
    wall0 = _time.perf_counter()
    kin = chooser.shared_kinematics(height, plan, engine)
    prepared = prepare(source, kin, mass, analysed)
    ck, body, ref, support = prepared.ck, prepared.body, prepared.ref, prepared.support
    if schedule is not None and schedule.dofs != len(body.tau_max):
        raise SimulationError(f"fatigue schedule has {schedule.dofs} DoFs, the proxy {len(body.tau_max)}")
    on_floor = stretches.floor_frames(ck, support)
    stretch_kind = stretches.kind(on_floor)
    floor_work, mixed = stretch_kind == "floor", stretch_kind == "mixed"
    floor_loads = floor.static_torques(ck, ref.com_acc, support) if (floor_work or mixed) else None
    directed = tiredness is not None and schedule is not None
    record: list | None = [] if directed and not floor_work else None
    if (tau_max is None or record is not None) and not floor_work:
        measured = calibration.take_strength(clip, source, ref, body, settings, simulate_limbs, plan,
                                             (on_floor, floor_loads) if mixed else None, engine, record)
        tau_max = measured if tau_max is None else tau_max
    elif tau_max is None:
        tau_max = calibration.floor_strength(body.tau_max, floor_loads)
    if tau_max is not None:
        tau_max = np.asarray(tau_max, dtype=np.float64)
        if tau_max.shape != body.tau_max.shape or not (np.isfinite(tau_max).all() and (tau_max > 0).all()):
            raise SimulationError(f"tau_max must be {body.tau_max.size} positive numbers")
        body = replace(body, tau_max=tau_max)
    notes = _notes(support, plan, settings, policy, floor_work, float(on_floor.mean()) if mixed else None)
    notes["engine"] = chooser.LABELS[engine]

    def take_under(schedule, progress) -> Take:
        model = ScheduledModel(schedule) if schedule is not None else None
        limbs = None
        if simulate_limbs and not floor_work:
            limbs = chooser.limb_simulator(engine, height, rate=limb_rate, mass=mass, plan=plan)
            limbs.reset(ref.clip.root_pos[0], ref.clip.root_rot[0], ref.clip.joint_rots[0])
        if floor_work:
            sim = floor.FloorSimulator(ref, body, floor_loads, model, settings)
        else:
            sim = srb.SrbSimulator(ref, body, model, settings, push, limbs)
            attach(sim, policy)
            if mixed:
                sim = stretches.MixedSimulator(sim, floor.FloorSimulator(ref, body, floor_loads, model, settings),
                                               on_floor)
            if model is not None and request.kneeling:
                sim = kneel.KneelingRests(sim, kin)
        sim.need_torques = False
        # Everything below runs with engine bodies open: they close however it ends (a cancel too).
        try:
            frames, held_up = _run(sim, ref, hold, out_fps, progress, cancel, floor_work)
            wall = _time.perf_counter() - wall0
            take = _assemble(frames, sim, ref, source, out_fps, model, dict(notes), held_up, wall)
            take.stats.update(support.shares())    # share of frames held up by each unseen support
            take.engine = engine
            return breathe(take, still=held_up) if breathes else take
        finally:
            if limbs is not None:
                limbs.close()

    if not directed:
        return take_under(schedule, progress)
    loads = _fresh_loads(record, floor_loads, body.tau_max, source, clip)
    direction = directing.solve(tiredness, schedule, loads, source.duration)
    asked = direction.asked
    best, tried, began = None, [], 0.0
    for end in directing.PASSES:
        take = take_under(direction.schedule, _scaled(progress, began, end))
        got = directing.reached(take.fatigue["MF"], take.reference_time, direction)
        judged = directing.asking(direction, asked)
        missed = directing.miss(judged, got)
        if best is None or missed < best[0]:
            best = (missed, take, judged, got)
        tried.append((direction.asked, got))
        aims = directing.next_aims(asked, tried)
        if missed <= directing.RETRY or aims is None or end == directing.PASSES[-1]:
            break
        # The tired body moves less (or more) than the fresh one the solve read its loads from.
        direction = directing.solve(directing.aimed(direction, aims), schedule, loads, source.duration)
        began = end
    if progress is not None:
        progress(1.0)
    _, take, direction, got = best
    _report_direction(take, direction, got)
    return take


def _scaled(progress, lo: float, hi: float):
    """``progress`` reporting lo..hi for a pass that reports 0..1."""
    if progress is None:
        return None
    return lambda f: progress(lo + (hi - lo) * f)


def _fresh_loads(record: list | None, floor_loads, tau_max: np.ndarray, source: Clip, clip: Clip) -> np.ndarray:
    """The fresh motion's load per DoF (share of strength) on the solve's frames: calibration's
    ``record`` (phase, |torque|) of the SRB's pass, or floor work's static loads."""
    if record is None:
        phase = np.arange(len(floor_loads)) / source.fps
        return directing.frame_loads(phase, np.abs(floor_loads) / tau_max, source.duration)
    phase = np.array([p for p, _ in record])
    loads = np.array([m for _, m in record]) / tau_max
    looped = clip.loop and source.duration > 2.0 * clip.duration + 1e-9   # calibration measured two cycles
    return directing.frame_loads(phase, loads, source.duration, phase[-1] if looped and len(phase) else None)


def _report_direction(take: Take, direction: directing.DirectedFatigue, reached: tuple[float, ...]) -> None:
    """What the solve chose and the tiredness the take reached at each key, per body part at
    the end, into the take's stats and a note."""
    mf = take.fatigue["MF"]
    w = direction.work_weights
    stats = take.stats
    stats["tiredness_start"] = float(directing.body_tiredness(mf[0], w))
    stats["tiredness_start_asked"] = direction.starting_fatigue
    stats["tiredness_end"] = reached[-1]
    stats["tiredness_end_asked"] = direction.asked[-1]
    stats["tiredness_peak"] = float(directing.body_tiredness(mf, w).max())
    stats["speed_up"] = direction.speed_ups[0]
    for part, value in directing.part_tiredness(mf[-1], w).items():
        stats[f"tiredness_end_{part}"] = value
    missed = [f"{a:.2f} at {t:.1f} s reached {r:.2f}" for t, a, r in zip(direction.stretch_ends, direction.asked, reached)
              if abs(a - r) > directing.REACHED]
    stats["endurance_change"] = direction.endurance[0]
    speed = ", ".join(f"{s:.3g}x" for s in direction.speed_ups)
    line = (f"asked {direction.starting_fatigue:.2f} -> {direction.asked[-1]:.2f}, reached "
            f"{stats['tiredness_start']:.2f} -> {reached[-1]:.2f}; solved: every joint starts "
            f"{direction.starting_fatigue:.2f} fatigued, fatigue runs {speed} real time")
    changed = [e for e in direction.endurance if e != 1.0]
    if changed:
        line += (f", {max(changed, key=lambda e: max(e, 1.0 / e)):.3g}x as fatiguing (F up, R down) as the keyed "
                 "fitness where its loads alone settle short of a key")
    if missed:
        line += ("; not reached: " + "; ".join(missed) + " (the motion has not the work to tire that far, "
                 "or not the rest to recover)")
    take.notes["tiredness"] = line


def _run(sim: Simulator, ref, hold: float, out_fps: float, progress, cancel,
         floor_work: bool) -> tuple[list[TakeFrame], np.ndarray]:
    """Step ``sim`` until the source has played and the end has
    been held for ``hold`` s, recording a TakeFrame every 1 / ``out_fps`` s, and per frame whether
    floor work held the body up (``floor_work``: throughout; a stretches.MixedSimulator says)."""
    max_time = MAX_STRETCH * ref.duration + hold + 1.0
    advance = sim.step
    frames: list[TakeFrame] = []
    held_up: list[bool] = []
    next_out = 0.0
    last_report = -1
    end_time = None
    while True:
        done = sim.phase >= ref.duration - 1e-9
        if done and end_time is None:
            # A source that ran out ahead of real time holds its last pose until the source's
            # length: a take is never shorter than its source.  Fresh, an early landing near the
            # end left no ground to catch up on (runtime.fatigue.tempo.catch_up_pace); tired,
            # lower flights play faster (tempo.flight_rate) and on one foot gravity keeps the
            # clock (tempo.single_support_rate), so nothing gives that time back (an Exhausted
            # 0.8 s dash played in 0.63 s).  Waiting in the air for the source's landing instead
            # landed a tired spin on legs still tucked for the flight, and it fell.
            end_time = max(sim.time, ref.duration - 0.5 * sim.dt)
        if (end_time is not None and sim.time >= end_time + hold - 1e-9) or sim.time >= max_time or sim.fallen:
            break
        if sim.time >= next_out - 1e-9:
            frames.append(_record(sim))
            held_up.append(getattr(sim, "on_floor", floor_work))
            next_out += 1.0 / out_fps
        # Leg torques are only needed every step under fatigue; otherwise for recorded frames.
        sim.need_torques = sim.time + sim.dt >= next_out - 1e-9
        advance()
        if cancel is not None and cancel():
            raise SimulationCancelled("bake cancelled: nothing was written")
        pct = int(100 * min(sim.phase / max(ref.duration, 1e-9), 1.0))
        if progress is not None and pct != last_report:
            last_report = pct
            progress(pct / 100.0)
    # The last frame on the take's frame grid too: hold the end a fraction of a frame longer
    # (it was recorded whenever the source ran out, up to a frame early).
    while not sim.fallen and sim.time < next_out - 1e-9 and frames:
        advance()
    frames.append(_record(sim))
    held_up.append(getattr(sim, "on_floor", floor_work))
    if sim.phase < ref.duration - 1e-9 and not sim.fallen:
        sim.events.append(Event(sim.time, "stopped",
                                f"the take reached {MAX_STRETCH:g}x the source length; the last "
                                f"{ref.duration - sim.phase:.1f} s of the source were not played"))
    return frames, np.array(held_up, dtype=bool)


def _notes(support, plan, settings, policy, floor_work: bool,
           floor_share: float | None = None) -> dict[str, str]:
    """How each body part was simulated, in words (the Take's notes); ``floor_share``: the share of
    frames floor work holds up when the feet carry the rest (runtime.floor.stretches), else None."""
    notes = {
        "pelvis_and_legs": "SRB: centre of mass simulated on contact forces from a QP, legs by IK onto "
                           "simulated feet; leg joint torques from the contact forces, within RC * strength "
                           f"(tau_max; up to {ECCENTRIC_STRENGTH:g}x it while the body sinks onto the legs)",
        "orientation": "follows the reference's momentum-consistent orientation; the moment the "
                       "contacts could not supply is reported as residual_moment",
        "arms_trunk_neck": ("articulated upper body on the SRB pelvis, joint motors capped at "
                            "RC * tau_max per DoF: gravity makes weak joints sag"),
    }
    notes["proportions"] = ("default humanoid (DeepMimic proportions and masses, scaled to the height)"
                            if plan is None else
                            "the character's: segment ratios " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                                        sorted(plan.ratios.items()))
                            + f"; de Leva (1996) {plan.sex} segment masses")
    economy = (settings or srb.SrbSettings()).effort_economy
    notes["effort_economy"] = _economy_note(economy)
    notes["foot_placement"] = ("Raibert rule" if policy is None else
                               f"Raibert rule corrected by the policy {policy.name!r} at {POLICY_RATE:g} Hz")
    notes["support"], pelvis = support.described()
    if floor_share is not None:
        what, how = support.described(floor_work=True)[0].split(": ", 1)
        pelvis = support.described(floor_work=True)[1]
        notes["support"] = (f"its feet ({100 * (1 - floor_share):.0f} % of the frames: balance simulated) and "
                            f"{what} ({100 * floor_share:.0f} %: {how})")
        notes["pelvis_and_legs"] += ("; where something other than the feet holds the body up: " + pelvis
                                     + " (runtime.stretches)")
    if floor_work:
        notes["pelvis_and_legs"] = pelvis
        notes["arms_trunk_neck"] = ("pose follows the reference; every joint books the static torque of holding "
                                    "the body up on what touches the floor (runtime.floor): the working limbs "
                                    "tire, the motion slows and pauses until they recover; no joint sags")
    return notes


def _record(sim: Simulator) -> TakeFrame:
    """The TakeFrame of now: ``sim`` an SrbSimulator or floor.FloorSimulator."""
    model = sim.fatigue.model if sim.fatigue is not None else None
    fatigue = model.snapshot() if model is not None else None
    state = sim.state()
    return TakeFrame(state.phase, state.com, sim.torque.copy(), fatigue, sim.residual_moment.copy(),
                     sim.strength_factor.copy(), state=state)


def _assemble(frames, sim, ref, source, out_fps, model, notes, held_up, wall) -> Take:
    """The Take from the recorded frames; ``held_up`` (per frame): floor work held the body up
    there (its pose is the reference's), else the feet did (the SRB's pose)."""
    phase = np.array([f.phase for f in frames])
    floor_work = bool(held_up.all())
    if floor_work:
        root_pos, root_rot, joints = ref.clip.sample_many(phase)
        contacts = np.array([ref.sample(ph).contact for ph in phase], dtype=bool)
    elif not held_up.any():
        limb_slots = sim.limbs.joint_slots if sim.limbs is not None else None
        root_pos, root_rot, joints, contacts = pose_output.poses(ref, sim.body, [f.state for f in frames], limb_slots)
    else:
        root_pos, root_rot, joints, contacts = stretches.mixed_poses(ref, sim.srb, frames, held_up, out_fps)
    clip = Clip(
        name=f"{source.name}.fatigued", fps=out_fps, root_pos=root_pos,
        root_rot=quat.make_continuous(root_rot), joint_rots=quat.make_continuous(joints), loop=False,
    )
    com = np.array([f.com for f in frames])
    torque = np.array([f.torque for f in frames])
    strength = np.array([f.strength_factor for f in frames]) * sim.body.tau_max
    if model is not None:
        fatigue = {k: np.array([f.fatigue[k] for f in frames]) for k in FATIGUE_FIELDS}
    else:
        fatigue = unfatigued(torque, strength)
    residual_moment = np.array([f.residual_moment for f in frames])
    events = [e.at(out_fps) for e in sim.events]
    simulated = float(sim.time)
    take = Take(
        mode="srb" if not floor_work else "srb-reference-follow",
        fps=out_fps,
        clip=clip,
        reference_time=phase,
        fatigue=fatigue,
        torque=torque,
        contacts=contacts,
        residual_force=np.zeros((len(frames), 3)),      # nothing helps the root in SRB mode
        com=com,
        events=events,
        notes=notes,
        tau_max=sim.body.tau_max.copy(),
        strength=strength,
        stats={"seconds_simulated": simulated, "wall_seconds": wall,
               "realtime_x": simulated / wall if wall > 0 else float("inf"),
               "residual_moment_nm_mean": float(np.linalg.norm(residual_moment, axis=1).mean()),
               "floor_work": float(held_up.mean()),
               # How far shorter tired strides left the body behind the source's path at the end.
               "behind_source_m": float(np.linalg.norm(sim.lag[:2]))},
    )
    return take


def _economy_note(economy: float) -> str:
    """What the effort economy does to a take, for its report (both modes)."""
    if economy > 0:
        return f"{economy:g}: tired arms, head and chest yield to what they hold, tired knees bend under the body"
    return "off: joints hold every pose until their strength runs out"


def _sampled(request: SimulationRequest, source: Clip, prepared, economy: float, progress, cancel) -> Take:
    """Torque mode: the whole body tracked window by window by sampling (runtime.torque.samcon) under
    fatigued torque caps, no force or moment on the root; a window where no sample stays up is a
    fall, reported and where the take ends.  No hold after the end; the character's proportions
    are not used (the sampled body is the default humanoid at ``height``).  ``prepared``: the
    source's analysis (runtime.reference.prepare), whose hands, knees or back reaching the floor
    (support.reaching) the sampler lets touch it."""
    schedule, height, mass, plan, out_fps = request.schedule, request.height, request.mass, request.plan, request.out_fps
    floor_height = prepared.ck.floor_height
    clip = source if abs(source.fps - out_fps) < 1e-9 else source.resampled(out_fps)
    settings = samcon.SamconSettings()
    reaching = None
    if prepared.support.reaching.any():
        frame = np.minimum(np.round(np.arange(clip.frames) / clip.fps * source.fps).astype(int), source.frames - 1)
        reaching = samcon.Reaching(prepared.ck.link_names, prepared.support.reaching[frame])

    def each_window(fraction: float) -> None:
        if cancel is not None and cancel():
            raise SimulationCancelled("bake cancelled: nothing was written")
        if progress is not None:
            progress(fraction)

    each_window(0.0)
    strength = None
    passes = []
    if schedule is not None:
        # Strength as SRB mode's: a fresh pass first, just strong enough for the motion.
        fresh = samcon.track(clip, settings=settings, height=height, mass=mass, floor=floor_height,
                             progress=lambda f: each_window(0.5 * f), reaching=reaching)
        strength, passes = samcon.strength_for(fresh, mass), [fresh]
    result = samcon.track(clip, settings=settings, height=height, mass=mass, floor=floor_height, tau_max=strength,
                          schedule=schedule, max_stretch=MAX_STRETCH, effort_economy=economy, reaching=reaching,
                          progress=each_window if schedule is None else (lambda f: each_window(0.5 + 0.5 * f)))
    passes.append(result)
    take = result.take(source.name)
    wall = sum(p.wall_seconds for p in passes)
    per_second = wall / max(result.seconds, 1e-9)
    take.stats.update(wall_seconds=wall, realtime_x=result.seconds / wall if wall > 0 else float("inf"))
    take.notes = {
        "pelvis_and_legs": ("torque mode (experimental): the whole body on joint servos capped at RC * tau_max "
                            "per DoF, no force or moment on the root; window by window "
                            f"({settings.window:g} s) {settings.samples} sampled offsets to the clip's targets, "
                            f"the best {settings.keep} kept, the best path replayed (runtime.samcon)"),
        "arms_trunk_neck": "the same body, on the same fatigue-bounded servos",
        "orientation": ("simulated: nothing holds the body up but the floor, under its feet and wherever the "
                        "clip itself touches it"),
        "proportions": ("default humanoid (DeepMimic proportions and masses, scaled to the height)"
                        + ("; the character's own proportions are used in SRB mode only" if plan is not None else "")),
        "effort_economy": (_economy_note(economy) + (" (SRB mode's rule)" if economy > 0 else "")
                           + "; the sampler weighs each joint's torque by what it costs it tired (1 / RC^2 - 1), "
                           "and the clip plays slower and holds still to rest as in SRB mode (the same tempo rule)"),
        "foot_placement": "found by the sampling",
        "cost": (f"{per_second:.1f} s of compute per second of motion on {result.threads} thread(s), "
                 f"{sum(p.simulated_steps for p in passes)} simulated steps"
                 + ("; a fresh pass first sets the strength (1.05 x its largest torque per joint)" if len(passes) > 1 else "")),
        "engine": chooser.LABELS["mujoco"],
    }
    return take
