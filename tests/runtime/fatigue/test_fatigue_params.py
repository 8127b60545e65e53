"""Published parameter sets, presets, fitness map, DoF regions and schedules."""
import json
from pathlib import Path

import numpy as np
import pytest

from runtime.fatigue import params as fatigue_params, schedule
from runtime.body import proxy
from runtime.errors import FatigueParameterError

SHARED = Path(__file__).resolve().parents[4] / "shared" / "reference" / "fatigue_literature.json"


@pytest.mark.skipif(not SHARED.exists(), reason="shared/ reference not beside this checkout")
def test_shipped_parameters_match_the_shared_reference():
    ref = json.loads(SHARED.read_text())
    lit = fatigue_params.literature()
    assert lit["frey_law_2012"]["regions"] == ref["frey_law_2012_table1"]["regions"]
    assert lit["looft_2018_rest_multiplier"]["regions"] == ref["looft_2018_rest_multiplier"]["regions"]
    assert lit["frey_law_avin_2010_power_model"]["regions"] == ref["frey_law_avin_2010_power_model"]["regions"]


def test_every_parameter_set_names_its_source():
    lit = fatigue_params.literature()
    for key in ("frey_law_2012", "looft_2018_rest_multiplier", "frey_law_avin_2010_power_model"):
        assert lit[key]["source"]
    for seed in lit["seeds"].values():
        assert seed["source"]


def test_regions_without_a_rest_multiplier_use_the_general_one():
    assert fatigue_params.published_region("shoulder").r == fatigue_params.published_region("general").r
    assert fatigue_params.published_region("grip").r == 30
    with pytest.raises(KeyError, match="known"):
        fatigue_params.published_region("tail")


def test_default_proxy_has_28_dofs_each_with_a_published_region():
    regions = proxy.dof_regions()
    assert len(regions) == 28
    assert set(regions) <= set(fatigue_params.regions())
    assert regions.count("knee") == 2 and regions.count("elbow") == 2
    assert set(proxy.dof_body_parts()) == set(proxy.BODY_PARTS)


def test_fitness_map_is_smooth_monotone_and_centred_on_published_values():
    f = np.linspace(0, 1, 101)
    kF, kR, kr = fatigue_params.fitness_multipliers(f)
    assert kF[50] == pytest.approx(1.0) and kR[50] == pytest.approx(1.0)
    assert np.all(np.diff(kF) < 0) and np.all(np.diff(kR) > 0)
    # Smooth: no kink (second differences of log multipliers vanish for the log-linear map).
    np.testing.assert_allclose(np.diff(np.log(kF), 2), 0.0, atol=1e-12)
    assert np.all(kr == 1.0)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="fitness"):
            fatigue_params.fitness_multipliers(bad)


def test_presets_order_endurance_as_named():
    sustainable = {}
    for name in ("Athlete", "Average", "Untrained", "Exhausted"):
        p = fatigue_params.PRESETS[name]
        arr = fatigue_params.dof_parameters(p.fitness, p.time_scale)
        sustainable[name] = float(np.mean(arr["R"] / (arr["F"] + arr["R"])))
    assert sustainable["Athlete"] > sustainable["Average"] > sustainable["Untrained"] > sustainable["Exhausted"]
    assert fatigue_params.PRESETS["Exhausted"].initial_fatigue > 0
    with pytest.raises(KeyError, match="choose one of"):
        fatigue_params.preset("Superhuman")


def test_time_scale_speeds_rates_but_not_the_rest_multiplier():
    slow = fatigue_params.dof_parameters(0.5, 1.0)
    fast = fatigue_params.dof_parameters(0.5, 20.0)
    np.testing.assert_allclose(fast["F"], 20 * slow["F"])
    np.testing.assert_allclose(fast["R"], 20 * slow["R"])
    np.testing.assert_array_equal(fast["r"], slow["r"])
    with pytest.raises(ValueError, match="time_scale"):
        fatigue_params.dof_parameters(0.5, 0.0)


def test_seed_parameter_sets_give_one_triplet_for_the_whole_body():
    arr = fatigue_params.dof_parameters(0.5, 1.0, base="discovering_fatigued_movements")
    assert np.all(arr["F"] == 1.0) and np.all(arr["R"] == 0.01)
    mv = fatigue_params.seed_parameters("musclevae")
    assert (mv.LD, mv.LR, mv.r) == (50, 50, 2.0)


def test_keyframed_fitness_becomes_a_per_frame_schedule():
    fitness = np.linspace(1.0, 0.0, 90)  # fresh at frame 0, exhausted at frame 89
    s = schedule.from_fitness(fitness, fps=30, time_scale=20)
    assert (s.frames, s.dofs) == (90, 28)
    assert np.all(np.diff(s.F[:, 0]) > 0)  # fatigue rate rises as fitness falls
    assert s.frame_at(0.0) == 0 and s.frame_at(1.0) == 30 and s.frame_at(99.0) == 89
    model = schedule.ScheduledModel(s)
    tau_max = np.full(28, 100.0)
    for k in range(3 * 240):
        model.step_torque(np.full(28, 60.0), tau_max, k / 240, 1 / 240)
    np.testing.assert_array_equal(model.model.F, s.F[89])


def test_schedule_from_direct_rates_and_bad_keyframes():
    s = schedule.from_parameters(F=[0.1, 0.2, 0.3], R=0.01, r=15, fps=24)
    assert s.frames == 3 and s.F[2, 5] == 0.3
    with pytest.raises(FatigueParameterError, match="R \\(recovery"):
        schedule.from_parameters(F=0.1, R=[0.01, -1.0], r=15, fps=24)
    with pytest.raises(FatigueParameterError, match="fps"):
        schedule.from_parameters(F=0.1, R=0.01, r=15, fps=0)


def test_exhausted_preset_starts_fatigued():
    s = schedule.from_preset("Exhausted", fps=30, frames=10)
    m = s.make_model()
    np.testing.assert_allclose(m.residual_capacity, 0.5)
