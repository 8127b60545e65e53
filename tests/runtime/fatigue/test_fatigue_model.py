"""3CC / 3CC-r model: conservation, bounds, closed form, asymptote, recovery, determinism, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.fatigue import validation
from runtime.errors import FatigueParameterError
from runtime.fatigue.model import FORMULATIONS, ThreeCompartmentModel

rates = st.floats(1e-4, 5.0)
big_rates = st.floats(10.0, 50.0)
steps = st.sampled_from([1 / 2400, 1 / 240, 1 / 120, 1 / 60, 1 / 30, 1 / 24])


def assert_valid_state(m: ThreeCompartmentModel):
    for arr in (m.active, m.resting, m.fatigued):
        assert np.all(arr >= 0.0) and np.all(arr <= 1.0)
    np.testing.assert_allclose(m.active + m.resting + m.fatigued, 1.0, atol=1e-12, rtol=0)


@settings(max_examples=60, deadline=None)
@given(F=rates, R=rates, r=st.floats(1.0, 30.0), LD=big_rates, LR=big_rates, dt=steps,
       formulation=st.sampled_from(FORMULATIONS), seed=st.integers(0, 2**31 - 1))
def test_compartments_stay_in_bounds_and_sum_to_one(F, R, r, LD, LR, dt, formulation, seed):
    rng = np.random.default_rng(seed)
    n = 28
    m = ThreeCompartmentModel(n, F * rng.uniform(0.5, 2, n), R, r, LD, LR, formulation=formulation)
    for _ in range(200):
        demand = rng.uniform(-1.5, 1.5, n) * (rng.uniform(size=n) < 0.8)
        delivered = m.step(demand, dt)
        assert np.all(delivered >= 0.0) and np.all(delivered <= 1.0 + 1e-12)
        assert_valid_state(m)


@settings(max_examples=30, deadline=None)
@given(dt=steps, formulation=st.sampled_from(FORMULATIONS), seed=st.integers(0, 2**31 - 1))
def test_parameters_changing_every_step_keep_the_state_valid(dt, formulation, seed):
    rng = np.random.default_rng(seed)
    n = 6
    m = ThreeCompartmentModel(n, 0.1, 0.01, formulation=formulation)
    for _ in range(150):
        m.set_parameters(rng.uniform(1e-3, 3, n), rng.uniform(1e-3, 1, n), rng.uniform(1, 30, n),
                         rng.uniform(10, 50, n), rng.uniform(10, 50, n))
        m.step(rng.uniform(0, 1, n), dt)
        assert_valid_state(m)


def test_torque_bound_clips_torque_to_residual_capacity():
    m = ThreeCompartmentModel(2, 1.0, 0.01)
    m.reset(fatigued=[0.3, 0.0])
    applied = m.step_torque([150.0, -40.0], np.array([100.0, 100.0]), 1 / 240)
    np.testing.assert_allclose(applied, [70.0, -40.0])  # RC = 0.7 caps the first; sign kept
    assert m.target_load[0] == 1.0  # TL = min(|tau|/tau_max, 1)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_endurance_matches_closed_form_at_240_hz(formulation):
    # Knee and shoulder (the fastest-tiring regions) at 20..90 % load.
    loads = np.arange(0.2, 0.91, 0.1)
    for F, R in ((0.015, 0.00149), (0.0182, 0.00168)):
        et = validation.simulate_endurance(F, R, loads, 1 / 240, formulation=formulation)
        cf = validation.closed_form_endurance(F, R, loads)
        assert np.max(np.abs(et - cf) / cf) <= 0.01


def test_recruitment_from_zero_activation_costs_about_one_over_LD():
    loads = np.array([0.5, 0.9])
    F, R = 0.0182, 0.00168
    activated = validation.simulate_endurance(F, R, loads)
    from_zero = validation.simulate_endurance(F, R, loads, initial_active=0.0)
    np.testing.assert_allclose(from_zero - activated, 1 / 10, atol=0.02)


def test_a_wrong_integrator_would_fail_the_closed_form_check():
    # Guard that the check is sharp: halving F shifts ET far beyond the 1 % tolerance.
    loads = np.array([0.5])
    et = validation.simulate_endurance(0.0182 / 2, 0.00168, loads)
    cf = validation.closed_form_endurance(0.0182, 0.00168, loads)
    assert abs(et[0] - cf[0]) / cf[0] > 0.5


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_sustained_submaximal_load_settles_at_the_asymptote(formulation):
    # Demanding everything forever leaves a residual capacity of R/(F+R).
    F, R = 0.5, 0.05
    m = ThreeCompartmentModel(1, F, R, 1.0, formulation=formulation)
    for _ in range(int(200 / 0.01)):
        m.step([1.0], 0.01)
    assert m.active[0] == pytest.approx(R / (F + R), rel=0.02)
    assert_valid_state(m)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_recovery_after_the_load_is_removed(formulation):
    F, R, r = 0.2, 0.02, 15.0
    m = ThreeCompartmentModel(1, F, R, r, formulation=formulation)
    for _ in range(int(10 / 0.01)):
        m.step([0.8], 0.01)
    tired = m.fatigued[0]
    assert tired > 0.3
    for _ in range(int(5 / 0.01)):
        m.step([0.0], 0.01)
    # At rest MF decays at r*R: exp(-r*R*t) over 5 s.
    assert m.fatigued[0] == pytest.approx(tired * math.exp(-r * R * 5.0), rel=0.05)
    assert m.active[0] < 1e-6


def test_rest_multiplier_speeds_recovery_only_at_rest():
    slow = ThreeCompartmentModel(1, 0.2, 0.02, 1.0)
    fast = ThreeCompartmentModel(1, 0.2, 0.02, 20.0)
    for m in (slow, fast):
        for _ in range(1000):
            m.step([0.8], 0.01)
    # While holding the load (MA just below TL) both recover at R: nearly identical fatigue.
    assert fast.fatigued[0] == pytest.approx(slow.fatigued[0], rel=0.02)
    for m in (slow, fast):
        for _ in range(300):
            m.step([0.0], 0.01)
    assert fast.fatigued[0] < 0.5 * slow.fatigued[0]


def test_time_varying_parameters_take_effect_immediately():
    m = ThreeCompartmentModel(2, 0.05, 0.005)
    for k in range(2000):
        if k == 1000:
            m.set_parameters([0.05, 0.5], 0.005)  # second actuator becomes 10x more fatigable
        m.step([0.5, 0.5], 0.005)
    assert m.fatigued[1] > 3 * m.fatigued[0]


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_same_inputs_give_bit_identical_state(formulation):
    rng = np.random.default_rng(7)
    demands = rng.uniform(-1, 1, (500, 28))
    runs = []
    for _ in range(2):
        m = ThreeCompartmentModel(28, 0.3, 0.03, 10.0, formulation=formulation)
        out = [m.step(d, 1 / 240).copy() for d in demands]
        runs.append((np.array(out), m.active.copy(), m.fatigued.copy()))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


def test_large_steps_are_substepped_not_unstable():
    # dt = 1/24 s with LD = LR = 50 would overshoot with a single explicit Euler step.
    m = ThreeCompartmentModel(1, 1.0, 0.1, 10.0, LD=50.0, LR=50.0)
    for _ in range(240):
        m.step([0.7], 1 / 24)
        assert_valid_state(m)
        assert m.active[0] <= 0.7 + 1e-12


@pytest.mark.parametrize("bad", [
    dict(F=-0.1), dict(F=0.0), dict(F=float("nan")), dict(R=0.0), dict(R=float("inf")),
    dict(r=0.0), dict(LD=-10.0), dict(LR=0.0), dict(F=1e6),
])
def test_bad_parameters_are_rejected_with_a_clear_message(bad):
    kwargs = dict(F=0.01, R=0.001, r=1.0, LD=10.0, LR=10.0) | bad
    name = next(iter(bad))
    with pytest.raises(FatigueParameterError, match=rf"^{name} \(") as info:
        ThreeCompartmentModel(4, **kwargs)
    assert "must be" in str(info.value)


def test_bad_shapes_steps_and_demands_are_rejected():
    with pytest.raises(FatigueParameterError, match="3 numbers"):
        ThreeCompartmentModel(3, [0.1, 0.2], 0.01)
    m = ThreeCompartmentModel(3, 0.1, 0.01)
    with pytest.raises(FatigueParameterError, match="dt"):
        m.step([0.1, 0.1, 0.1], 0.0)
    with pytest.raises(FatigueParameterError, match="NaN"):
        m.step([0.1, float("nan"), 0.1], 0.01)
    with pytest.raises(FatigueParameterError, match="formulation"):
        ThreeCompartmentModel(3, 0.1, 0.01, formulation="magic")
    with pytest.raises(FatigueParameterError, match="initial"):
        m.reset(fatigued=0.8, active=0.5)


def test_snapshot_reports_residual_capacity():
    m = ThreeCompartmentModel(2, 1.0, 0.1)
    for _ in range(100):
        m.step([0.9, 0.1], 0.01)
    snap = m.snapshot()
    np.testing.assert_array_equal(snap["RC"], 1.0 - snap["MF"])
    np.testing.assert_array_equal(snap["TL"], [0.9, 0.1])
    assert snap["MF"][0] > snap["MF"][1]
