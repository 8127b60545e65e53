"""The proxy shaped by a skeleton's segment lengths with de Leva masses, loaded in PyBullet."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pybullet as p
import pytest

from runtime.body import anthropometry as anth
from runtime.body import proxy
from runtime.engines.pybullet import body as pybullet_body

SHARED = Path(__file__).resolve().parents[4] / "shared" / "reference" / "fatigue_literature.json"


@pytest.mark.skipif(not SHARED.exists(), reason="shared/ reference not beside this checkout")
def test_shipped_table_matches_the_shared_reference():
    shared = json.loads(SHARED.read_text())["de_leva_1996_segments"]
    assert anth.de_leva() == shared


def _load(plan=None, height=proxy.DEFAULT_HEIGHT):
    cid = p.connect(p.DIRECT)
    body, links = pybullet_body.load_body(cid, height, plan=plan)
    return cid, body, links


def _joint_world(cid, body, links):
    return {name: np.array(p.getLinkState(body, i, physicsClientId=cid)[4]) for name, i in links.items()}


def _masses(cid, body, links):
    return {name: p.getDynamicsInfo(body, i, physicsClientId=cid)[0] for name, i in links.items()}


def test_neutral_plan_keeps_the_default_geometry_and_mass_with_de_leva_distribution():
    cid, body, links = _load()
    cid2, body2, links2 = _load(anth.BodyPlan())
    try:
        a, b = _joint_world(cid, body, links), _joint_world(cid2, body2, links2)
        for name in links:
            assert np.allclose(a[name], b[name], atol=1e-6), name
        m_default, m_plan = _masses(cid, body, links), _masses(cid2, body2, links2)
        base = p.getDynamicsInfo(body2, -1, physicsClientId=cid2)[0]
        assert sum(m_plan.values()) + base == pytest.approx(sum(m_default.values()) + base, rel=1e-4)
        table = anth.de_leva()["male"]
        total = sum(m_plan.values()) + base
        assert m_plan["right_hip"] / total == pytest.approx(table["thigh"]["mass"], rel=1e-3)
        assert m_plan["chest"] / total == pytest.approx(table["upper_trunk"]["mass"] + table["middle_trunk"]["mass"],
                                                        rel=1e-3)
        assert m_plan["right_hip"] > m_default["right_hip"]          # de Leva: heavier thighs than DeepMimic
    finally:
        p.disconnect(cid)
        p.disconnect(cid2)


def test_measured_lengths_shape_the_proxy():
    height = 1.80
    ref = anth.default_lengths(height)
    lengths = dict(ref, thigh=ref["thigh"] * 1.2, shank=ref["shank"] * 1.1, upper_arm=ref["upper_arm"] * 0.9,
                   shoulder_width=ref["shoulder_width"] * 1.15)
    plan = anth.plan_from_lengths(lengths, height)
    assert plan.ratio("thigh") == pytest.approx(1.2) and plan.ratio("chest") == pytest.approx(1.0)
    cid, body, links = _load(plan, height)
    try:
        w = _joint_world(cid, body, links)
        measured = {
            "thigh": np.linalg.norm(w["right_knee"] - w["right_hip"]),
            "shank": np.linalg.norm(w["right_ankle"] - w["right_knee"]),
            "upper_arm": np.linalg.norm(w["right_elbow"] - w["right_shoulder"]),
            "shoulder_width": np.linalg.norm(w["right_shoulder"] - w["left_shoulder"]),
            "pelvis": np.linalg.norm(w["chest"] - w["root"]),
        }
        for name, value in measured.items():
            assert value == pytest.approx(lengths[name], rel=1e-4), name
        # the thigh's centre of mass sits where de Leva puts it along the longer thigh
        com = np.array(p.getLinkState(body, links["right_hip"], physicsClientId=cid)[0])
        frac = np.linalg.norm(com - w["right_hip"]) / measured["thigh"]
        assert frac == pytest.approx(anth.de_leva()["male"]["thigh"]["com"], abs=1e-3)
    finally:
        p.disconnect(cid)


def test_absurd_lengths_are_clamped_and_reported():
    plan = anth.plan_from_lengths({"thigh": 5.0, "forearm": float("nan"), "shank": 0.0}, 1.7)
    assert plan.ratio("thigh") == anth.RATIO_RANGE[1]
    assert plan.ratio("forearm") == 1.0 and plan.ratio("shank") == 1.0
    assert any("thigh" in n and "clamped" in n for n in plan.notes)
    assert any("forearm" in n for n in plan.notes) and any("shank" in n for n in plan.notes)
    with pytest.raises(ValueError, match="unknown segment 'tail'"):
        anth.plan_from_lengths({"tail": 0.5}, 1.7)
    with pytest.raises(ValueError, match="sex 'x'"):
        anth.plan_from_lengths({}, 1.7, sex="x")


def test_a_clamped_length_in_rig_units_is_not_called_metres():
    """A rig in centimetres (175 units tall, shoulders 20.472 units apart): the note gives the
    share of the height, the same as for the rig in metres, never '20.472 m'."""
    in_cm = anth.plan_from_lengths({"shoulder_width": 20.472}, 175.0)
    in_m = anth.plan_from_lengths({"shoulder_width": 0.20472}, 1.75)
    assert in_cm.notes == in_m.notes and len(in_cm.notes) == 1
    assert " m " not in in_cm.notes[0] and "11.7 % of the body's height" in in_cm.notes[0], in_cm.notes


def test_female_table_and_plan_keys():
    male = anth.BodyPlan()
    female = anth.BodyPlan(sex="female")
    assert male.key() != female.key()
    assert anth.urdf_path(female).read_text() != anth.urdf_path(male).read_text()
    assert anth.urdf_path(female) == anth.urdf_path(anth.BodyPlan(sex="female"))
