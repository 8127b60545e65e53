"""Per-body-part fitness multipliers (runtime.fatigue.schedule): each DoF takes its part's
multiplier; a fitter part (m > 1) tires m times slower and recovers m times faster, or has its
fitness raised m times (up to 1), and the keyed speed-up scales the rates frame by frame."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.body import proxy
from runtime.fatigue import params, schedule

FRAMES = 6


def by_part(**values: float) -> dict[str, np.ndarray]:
    """A per-frame curve per body part: a ramp scaled by the given value (1 where none is given)."""
    ramp = np.linspace(0.5, 1.5, FRAMES)
    return {part: ramp * values.get(part, 1.0) for part in proxy.BODY_PARTS}


def columns_of(part: str) -> np.ndarray:
    return np.flatnonzero(np.array(proxy.dof_body_parts()) == part)


def test_each_dof_takes_its_parts_multiplier():
    parts = by_part(**{part: k + 2.0 for k, part in enumerate(proxy.BODY_PARTS)})
    M = schedule.dof_multipliers(parts)
    assert M.shape == (FRAMES, len(proxy.dof_body_parts()))
    for part in proxy.BODY_PARTS:
        for d in columns_of(part):
            np.testing.assert_array_equal(M[:, d], parts[part])


def test_a_fitter_part_tires_slower_and_recovers_faster():
    legs, arms = proxy.BODY_PARTS[0], proxy.BODY_PARTS[1]
    M = schedule.dof_multipliers({part: np.full(FRAMES, 3.0 if part == legs else (0.0 if part == arms else 1.0))
                                  for part in proxy.BODY_PARTS})
    F, R, r = np.full(FRAMES, 0.02), np.full(FRAMES, 0.004), np.full(FRAMES, 10.0)
    ts = np.linspace(1.0, 4.0, FRAMES)
    s = schedule.from_rates_by_part(F, R, r, M, 30.0, ts, 0.25)
    plain = columns_of(proxy.BODY_PARTS[2])[0]
    fit = columns_of(legs)[0]
    np.testing.assert_allclose(s.F[:, plain], F * ts)
    np.testing.assert_allclose(s.R[:, plain], R * ts)
    np.testing.assert_allclose(s.F[:, fit], s.F[:, plain] / 3.0)
    np.testing.assert_allclose(s.R[:, fit], s.R[:, plain] * 3.0)
    np.testing.assert_array_equal(s.r, np.broadcast_to(r[:, None], s.r.shape))
    weak = columns_of(arms)[0]      # a zero multiplier is held at the smallest one, not divided by
    np.testing.assert_allclose(s.F[:, weak], s.F[:, plain] / schedule.MIN_PART_MULTIPLIER)
    assert (s.initial_fatigue == 0.25).all() and s.fps == 30.0


def test_a_parts_multiplier_raises_its_fitness_up_to_one():
    legs = proxy.BODY_PARTS[0]
    M = schedule.dof_multipliers({part: np.full(FRAMES, 4.0 if part == legs else 1.0) for part in proxy.BODY_PARTS})
    fitness = np.linspace(0.1, 0.4, FRAMES)
    s = schedule.from_fitness_by_part(fitness, M, 30.0, np.full(FRAMES, 2.0), 0.1)
    same = schedule.from_fitness(np.clip(fitness[:, None] * M, 0.0, 1.0), 30.0, 2.0, 0.1)
    np.testing.assert_array_equal(s.F, same.F)
    np.testing.assert_array_equal(s.R, same.R)
    capped = schedule.from_fitness(np.ones((FRAMES, M.shape[1])), 30.0, 2.0)
    d = columns_of(legs)[0]
    np.testing.assert_array_equal(s.F[-1, d], capped.F[-1, d])       # 0.4 x 4 is held at fitness 1


def test_a_keyed_speed_up_scales_each_frames_rates():
    M = schedule.dof_multipliers(by_part())
    fitness = np.full(FRAMES, 0.5)
    ts = np.linspace(1.0, 3.0, FRAMES)
    s = schedule.from_fitness_by_part(fitness, M, 30.0, ts)
    p = params.dof_parameters(np.clip(fitness[:, None] * M, 0.0, 1.0), 1.0)
    np.testing.assert_allclose(s.F, p["F"] * ts[:, None])
    np.testing.assert_allclose(s.R, p["R"] * ts[:, None])
    np.testing.assert_array_equal(s.r, p["r"])
    with pytest.raises(KeyError):
        schedule.dof_multipliers({proxy.BODY_PARTS[0]: fitness})
