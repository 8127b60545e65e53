"""The Simulator contract (runtime.fatigue.contract): every simulator runtime.simulate steps
subclasses it and defines each member itself (none left to the protocol's stubs, none reached by
forwarding an unknown name), built on a real clip and stepped."""
from __future__ import annotations

import typing

import numpy as np
import pytest

from runtime.engines import chooser
from runtime.fatigue import schedule
from runtime.fatigue.contract import Simulator
from runtime.floor import kneel, stretches
from runtime.floor.work import FloorSimulator, static_torques
from runtime.motion import clip as C
from runtime.reference.reference import build_reference
from runtime.reference.rigid_body import body_from_proxy
from runtime.srb.rest_steps import Standing
from runtime.srb.simulator import SrbSettings, SrbSimulator



def members(protocol) -> list[str]:
    """A protocol's own members: its annotations and its public methods."""
    return sorted(set(protocol.__annotations__) | {name for name, value in vars(protocol).items()
                                                    if callable(value) and not name.startswith("_")})


MEMBERS = members(Simulator)


@pytest.fixture(scope="module")
def walk():
    clip = C.load_deepmimic(C.deepmimic_clip_path("walk")).repeated(2.0)
    kin = chooser.shared_kinematics()
    ck = kin.analyse(clip)
    body = body_from_proxy(kin)
    ref = build_reference(clip, ck, body)
    return ref, body, static_torques(ck, ref.com_acc), kin


def simulators(walk):
    ref, body, loads, kin = walk
    model = lambda: schedule.ScheduledModel(schedule.from_fitness(0.5, fps=30))   # noqa: E731
    mask = np.zeros(len(loads), dtype=bool)
    mask[len(mask) // 2:] = True
    shared = model()
    return {
        "srb": SrbSimulator(ref, body, model(), SrbSettings()),
        "floor": FloorSimulator(ref, body, loads, model(), SrbSettings()),
        "mixed": stretches.MixedSimulator(SrbSimulator(ref, body, shared, SrbSettings()),
                                          FloorSimulator(ref, body, loads, shared, SrbSettings()), mask),
        "kneeling": kneel.KneelingRests(SrbSimulator(ref, body, model(), SrbSettings()), kin),
    }


def defined_by_the_class(sim, name: str) -> bool:
    """``name`` set on the instance, or defined by a class of its own (not a protocol's stub)."""
    if name in vars(sim):
        return True
    return any(name in vars(c) for c in type(sim).__mro__
               if c not in (Simulator, Standing, typing.Protocol, typing.Generic, object))


def test_the_contract_names_what_the_run_loop_reads():
    assert {"step", "state", "time", "phase", "dt", "fallen", "need_torques", "on_floor", "fatigue",
            "torque", "residual_moment", "strength_factor", "events", "body", "limbs", "lag"} <= set(MEMBERS)


@pytest.mark.parametrize("kind", ["srb", "floor", "mixed", "kneeling"])
def test_every_simulator_defines_every_member_of_the_contract(walk, kind):
    sim = simulators(walk)[kind]
    assert Simulator in type(sim).__mro__     # explicitly, not by shape
    assert not hasattr(type(sim), "__getattr__"), "members are declared, not forwarded"
    missing = [name for name in MEMBERS if not defined_by_the_class(sim, name)]
    assert not missing, f"{type(sim).__name__} leaves {missing} to the protocol"
    sim.need_torques = True
    for _ in range(5):
        sim.step()
    state = sim.state()
    n = len(sim.body.tau_max)
    assert sim.time == pytest.approx(5 * sim.dt) and sim.phase > 0.0 and not sim.fallen
    assert sim.torque.shape == sim.strength_factor.shape == (n,) and sim.residual_moment.shape == (3,)
    assert sim.on_floor == (kind == "floor") and state.phase == pytest.approx(sim.phase)
    if kind in ("mixed", "kneeling"):       # a wrapper's forwarded member belongs to what it wraps
        with pytest.raises(AttributeError, match="set it there"):
            sim.fallen = True


def test_the_srb_simulator_defines_what_its_rests_and_feet_read(walk):
    """runtime.srb.rest_steps, feet, policy and residual read the SRB through Standing."""
    sim = simulators(walk)["srb"]
    assert Standing in type(sim).__mro__
    assert {"continue_from_here", "com_target", "feet", "closing", "s"} <= set(members(Standing))
    missing = [name for name in members(Standing) if not defined_by_the_class(sim, name)]
    assert not missing, f"SrbSimulator leaves {missing} to the protocol"
