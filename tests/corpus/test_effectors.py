"""tools/effectors.py: the worst end effector per take, the run's summary and the strips of the
takes over its limit, on a hand-made take (a straightened elbow)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from runtime.body import proxy
from runtime.maths import quat
from runtime.motion.clip import Clip
from runtime.motion.take import Take

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import effectors  # noqa: E402

NAMES = [j.name for j in proxy.DEFAULT_JOINTS]


def arm_clip(bend_deg: float, frames: int = 31) -> Clip:
    joints = np.tile(quat.IDENTITY, (frames, len(NAMES), 1))
    joints[:, NAMES.index("right_elbow")] = quat.from_rotvec([0.0, 0.0, -math.radians(bend_deg)])
    root = np.tile([0.0, 0.0, 0.9], (frames, 1))
    return Clip("arm", 30.0, root, np.tile(quat.IDENTITY, (frames, 1)), joints)


def take_of(clip: Clip) -> Take:
    T = clip.frames
    zeros = np.zeros((T, len(proxy.dof_table())))
    return Take(mode="srb", fps=clip.fps, clip=clip, reference_time=np.arange(T) / clip.fps,
                fatigue={k: zeros for k in ("MA", "MR", "MF", "TL", "RC")}, torque=zeros,
                contacts=np.ones((T, 2), dtype=bool), residual_force=np.zeros((T, 3)), com=np.zeros((T, 3)))


def test_a_take_over_the_limit_gets_a_strip_and_leads_the_summary(tmp_path):
    source = arm_clip(90.0)
    straight = effectors.measure_and_strip("arm", "fresh", take_of(arm_clip(0.0)), source, tmp_path)
    kept = effectors.measure_and_strip("arm kept", "fresh", take_of(arm_clip(85.0)), source, tmp_path)
    assert straight["effector"] == "right_wrist" and straight["effector_p95_m"] > effectors.LIMIT_M
    assert straight["strip"] is not None and Path(straight["strip"]).stat().st_size > 0
    assert kept["effector_p95_m"] < effectors.LIMIT_M and kept["strip"] is None
    s = effectors.summary([("arm", "fresh", straight), ("arm kept", "fresh", kept)])
    assert s["fresh"]["takes"] == 2 and s["fresh"]["over_limit"] == 1
    assert s["fresh"]["median_m"] == pytest.approx((straight["effector_p95_m"] + kept["effector_p95_m"]) / 2)
    assert [w["take"] for w in s["fresh"]["worst"]] == ["arm", "arm kept"]
    lines = effectors.summary_lines(s)
    assert "1/2 takes over 0.10 m" in lines[0] and "right_wrist" in lines[1] and "arm" in lines[1]
