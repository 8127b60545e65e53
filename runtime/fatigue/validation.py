"""Validation of the fatigue model against published endurance data (numpy only).

Endurance time (ET): a sustained isometric load TL held from a rested state (MF = 0) until task
failure, MA + MR < TL.  Three references:

* the closed form of the 3CC model holding MA = TL exactly,
  ET = -ln(1 - R*(1-TL)/(F*TL)) / R  (defined while F*TL > R*(1-TL));
* Frey Law & Avin's (2010) power model ET = b0 * TL^b1, fitted to 194 published studies;
* the project's integrator (this module), vectorised over every region and load at once.

The closed form assumes the muscle is at its target from t = 0, so ``et_model`` starts rested but
already activated (MA = TL, MF = 0).  Starting from MA = 0 adds the recruitment time, about
1/LD = 0.1 s, reported separately as ``et_model_from_zero_activation``.  Validation uses r = 1:
Frey-Law's 2012 fits have no rest multiplier.
"""
from __future__ import annotations

import time

import numpy as np

from ..maths import repeatable
from . import params as fatigue_params
from .model import ThreeCompartmentModel

DEFAULT_LOADS = tuple(round(0.1 * k, 1) for k in range(1, 10))


def closed_form_endurance(F: float, R: float, loads) -> np.ndarray:
    """ET (s) of the 3CC model holding MA = TL; inf where the load is sustainable forever."""
    loads = np.asarray(loads, dtype=np.float64)
    ratio = R * (1.0 - loads) / (F * loads)
    with np.errstate(divide="ignore", invalid="ignore"):
        et = -repeatable.log1p(-ratio) / R
    return np.where(ratio < 1.0, et, np.inf)


def power_model_endurance(b0: float, b1: float, loads) -> np.ndarray:
    """Frey Law & Avin (2010): ET = b0 * f^b1 (s), f = fraction of maximum."""
    return b0 * repeatable.power(np.asarray(loads, dtype=np.float64), b1)


def simulate_endurance(F, R, loads, dt: float = 1.0 / 240.0, LD: float = 10.0, LR: float = 10.0,
                       formulation: str = "torque_bound", initial_active=None,
                       max_time: float = 20000.0) -> np.ndarray:
    """ET (s) from the integrator for actuators with rates F, R under constant loads (vectorised).

    ``initial_active`` defaults to the loads (rested, already at target).  Returns inf for an
    actuator that has not failed by ``max_time``.  The crossing of
    MA + MR = TL is interpolated linearly inside the failing step.
    """
    loads = np.asarray(loads, dtype=np.float64)
    n = loads.size
    model = ThreeCompartmentModel(n, F, R, 1.0, LD, LR, formulation=formulation)
    model.reset(active=loads if initial_active is None else initial_active)
    et = np.full(n, np.inf)
    margin_prev = model.active + model.resting - loads
    t = 0.0
    steps = int(np.ceil(max_time / dt))
    for _ in range(steps):
        model.step(loads, dt)
        t += dt
        margin = model.active + model.resting - loads
        failed = (margin < 0.0) & np.isinf(et)
        if failed.any():
            frac = margin_prev[failed] / (margin_prev[failed] - margin[failed])
            et[failed] = t - dt + dt * frac
            if np.isfinite(et).all():
                break
        margin_prev = margin
    return et


def _rel_err(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a - b) / b


def step_cost_us(n: int = 28, dt: float = 1.0 / 240.0, steps: int = 20000, repeats: int = 5,
                 formulation: str = "torque_bound") -> list[float]:
    """Wall time (microseconds) of one full-body step_torque, one value per repeat."""
    rng = np.random.default_rng(0)
    params = fatigue_params.dof_parameters(0.5, 20.0)
    model = ThreeCompartmentModel(n, params["F"], params["R"], params["r"], formulation=formulation)
    tau_max = np.full(n, 100.0)
    torques = rng.normal(0.0, 60.0, (64, n))
    costs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for k in range(steps):
            model.step_torque(torques[k & 63], tau_max, dt)
        costs.append((time.perf_counter() - t0) / steps * 1e6)
    return costs


def endurance_report(dt: float = 1.0 / 240.0, loads=DEFAULT_LOADS) -> dict:
    """Endurance times per region: model (both formulations), closed form, power model."""
    lit = fatigue_params.literature()
    power = lit["frey_law_avin_2010_power_model"]["regions"]
    names = list(fatigue_params.regions())
    loads = np.asarray(loads, dtype=np.float64)
    # One model over every (region, load) pair: the whole table costs one simulation.
    F = np.repeat([fatigue_params.published_region(r).F for r in names], loads.size)
    R = np.repeat([fatigue_params.published_region(r).R for r in names], loads.size)
    tiled = np.tile(loads, len(names))
    cf = closed_form_endurance(F, R, tiled)
    horizon = 1.5 * float(cf[np.isfinite(cf)].max())
    # Activated and from-zero starts share one vectorised run.
    both = simulate_endurance(np.tile(F, 2), np.tile(R, 2), np.tile(tiled, 2), dt,
                              initial_active=np.concatenate([tiled, np.zeros_like(tiled)]), max_time=horizon)
    runs = {
        "et_model": both[: tiled.size],
        "et_model_from_zero_activation": both[tiled.size:],
        "et_model_3cc_r": simulate_endurance(F, R, tiled, dt, formulation="activation_clip", max_time=horizon),
    }
    report = {"dt": dt, "loads": loads.tolist(), "regions": {}}
    in_cf_range = (loads >= 0.2 - 1e-9) & (loads <= 0.9 + 1e-9)
    in_pw_range = (loads >= 0.2 - 1e-9) & (loads <= 0.7 + 1e-9)
    errs_cf, errs_pw, errs_cf_3ccr = [], [], []
    for k, name in enumerate(names):
        sl = slice(k * loads.size, (k + 1) * loads.size)
        p = fatigue_params.published_region(name)
        et_pw = power_model_endurance(power[name]["b0"], power[name]["b1"], loads)
        entry = {
            "F": p.F, "R": p.R,
            "loads": loads.tolist(),
            "et_closed_form": _finite_or_none(cf[sl]),
            "et_power_model": _finite_or_none(et_pw),
        }
        for key, et in runs.items():
            entry[key] = _finite_or_none(et[sl])
        report["regions"][name] = entry
        errs_cf.append(_rel_err(runs["et_model"][sl], cf[sl])[in_cf_range])
        errs_cf_3ccr.append(_rel_err(runs["et_model_3cc_r"][sl], cf[sl])[in_cf_range])
        errs_pw.append(_rel_err(runs["et_model"][sl], et_pw)[in_pw_range])
        entry["max_rel_err_power_20_70"] = float(errs_pw[-1].max())
    report["max_rel_err_closed_form"] = float(np.max(errs_cf))
    report["max_rel_err_closed_form_3cc_r"] = float(np.max(errs_cf_3ccr))
    report["max_rel_err_power_20_70"] = float(np.max(errs_pw))
    report["ranges"] = {"closed_form": [0.2, 0.9], "power_model": [0.2, 0.7]}
    return report


def _finite_or_none(values: np.ndarray) -> list:
    return [float(v) if np.isfinite(v) else None for v in values]


def square_wave_trace(F: float, R: float, r: float = 1.0, load: float = 0.6, period: float = 20.0,
                      duty: float = 0.5, duration: float = 120.0, dt: float = 1.0 / 240.0,
                      formulation: str = "torque_bound", LD: float = 10.0, LR: float = 10.0) -> dict:
    """MA, MR, MF, RC, TL over time under an on/off load: the figure the seed papers show."""
    model = ThreeCompartmentModel(1, F, R, r, LD, LR, formulation=formulation)
    steps = int(round(duration / dt))
    out = {k: np.empty(steps) for k in ("t", "TL", "MA", "MR", "MF", "RC", "delivered")}
    for i in range(steps):
        t = i * dt
        tl = load if (t % period) < duty * period else 0.0
        delivered = model.step(np.array([tl]), dt)
        out["t"][i] = t + dt
        out["TL"][i] = tl
        out["MA"][i] = model.active[0]
        out["MR"][i] = model.resting[0]
        out["MF"][i] = model.fatigued[0]
        out["RC"][i] = 1.0 - model.fatigued[0]
        out["delivered"][i] = delivered[0]
    return out


STANDING_LOAD = 0.05         # share of strength a leg joint holds standing (runtime.srb.rest_steps)
STANDING_SPEED_UP = 50.0     # the fastest a directed take runs fatigue without need (direction.CALM)
STANDING_MINUTES = 30.0
STANDING_FLOOR = 0.7         # standing must give the legs back at least this (the rule's resume_rc)
INTERMITTENT = (3.0, 2.0)    # s on, s off: Burnley 2009, de Ruiter 2014


def standing_report(dt: float = 0.05) -> dict:
    """Standing does not drain the legs: knees and ankles holding STANDING_LOAD for
    STANDING_MINUTES from half fatigued, STANDING_SPEED_UP times faster than published, at
    fitness 0, 0.25, 0.5 and 1 (what the endurance limit is for; runtime.fatigue.model)."""
    fitness = (0.0, 0.25, 0.5, 1.0)
    regions = ("knee", "ankle")
    rows = []
    for f in fitness:
        p = fatigue_params.dof_parameters(f, STANDING_SPEED_UP, list(regions))
        model = ThreeCompartmentModel(len(regions), p["F"], p["R"], p["r"], p["LD"], p["LR"])
        model.reset(fatigued=0.5)
        for _ in range(int(STANDING_MINUTES * 60.0 / dt)):
            model.step(np.full(len(regions), STANDING_LOAD), dt)
        rows.append({"fitness": f, "rc_end": dict(zip(regions, model.residual_capacity.tolist()))})
    worst = min(min(r["rc_end"].values()) for r in rows)
    return {"load": STANDING_LOAD, "speed_up": STANDING_SPEED_UP, "minutes": STANDING_MINUTES, "rows": rows,
            "worst_rc": worst, "floor": STANDING_FLOOR, "passed": bool(worst >= STANDING_FLOOR)}


def intermittent_report(dt: float = 0.05, minutes: float = 30.0) -> dict:
    """The highest knee load the model carries for ``minutes`` in 3 s on / 2 s off contractions
    (its residual capacity never falling below the load), published beside it: the critical
    torque (Burnley 2009, 0.295 of maximum) and the fatigue threshold (de Ruiter 2014, 0.305
    untrained .. 0.414 trained)."""
    lit = fatigue_params.literature()["sustainable_load"]
    loads = np.round(np.arange(0.05, 0.96, 0.01), 2)
    p = fatigue_params.published_region("knee")
    out = {"published": {"burnley_2009": lit["burnley_2009"]["critical_torque_fraction"],
                         "de_ruiter_2014": lit["de_ruiter_2014"]["fatigue_threshold_fraction"]}, "fitness": {}}
    on, off = INTERMITTENT
    for f in (0.0, 0.5, 1.0):
        kF, kR, _ = fatigue_params.fitness_multipliers(f)
        model = ThreeCompartmentModel(loads.size, p.F * float(kF), p.R * float(kR), p.r)
        held = np.ones(loads.size, dtype=bool)
        for i in range(int(minutes * 60.0 / dt)):
            working = (i * dt) % (on + off) < on
            model.step(loads if working else np.zeros(loads.size), dt)
            if working:
                held &= model.residual_capacity >= loads
        out["fitness"][str(f)] = float(loads[held].max()) if held.any() else 0.0
    return out
