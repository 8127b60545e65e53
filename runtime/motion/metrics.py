"""Measures of a Take against its reference clip: tracking quality and visible fatigue effects.

Shared by the bench and the tests, so a number in a report and a test assertion mean the same.
"""
from __future__ import annotations

import numpy as np

from ..body import proxy
from ..maths import quat, repeatable
from .clip import Clip
from .take import Take


def joint_error_deg(take: Take, reference: Clip) -> float:
    """Mean geodesic angle (degrees) between the Take's joints and the reference at the same phase
    (so a slower take is compared with the motion it is showing, not with the clock)."""
    _, _, ref_joints = reference.sample_many(take.reference_time)
    return float(np.degrees(quat.angle_between(take.clip.joint_rots, ref_joints)).mean())


def root_error_m(take: Take, reference: Clip) -> float:
    """Mean distance (m) of the Take's root from the reference root at the same phase."""
    ref_pos, _, _ = reference.sample_many(take.reference_time)
    return float(np.linalg.norm(take.clip.root_pos - ref_pos, axis=1).mean())


def residual_force_bw(take: Take, mass: float) -> tuple[float, float]:
    """Mean and max non-physical root force, in body weights."""
    bw = np.linalg.norm(take.residual_force, axis=1) / (mass * 9.81)
    return float(bw.mean()), float(bw.max())


def flight_apexes(take: Take, floor_height: float) -> list[float]:
    """Rise of the COM above its standing height at the top of each jump: flight phases (no foot
    down) that start from both feet, so strides of a run do not count."""
    both = take.contacts.all(axis=1)
    air = ~take.contacts.any(axis=1)
    standing = np.percentile(take.com[both, 2], 90) if both.any() else np.median(take.com[:, 2])
    apexes = []
    t = 1
    while t < take.frames:
        if air[t] and not air[t - 1]:
            start = t
            while t < take.frames and air[t]:
                t += 1
            launched_from_both = both[max(0, start - 3):start].any()
            if launched_from_both and t - start >= 2:
                apexes.append(float(take.com[start:t, 2].max() - standing))
        t += 1
    del floor_height
    return apexes


def jump_apex_ratio(take: Take, floor_height: float = 0.0) -> float | None:
    """Apex rise of the last jump over the first (None for clips without two-footed jumps)."""
    apexes = flight_apexes(take, floor_height)
    if len(apexes) < 2 or apexes[0] <= 1e-3:
        return None
    return max(apexes[-1], 0.0) / apexes[0]


def speed_ratio(take: Take) -> float | None:
    """Horizontal COM speed over the last third over the first third (locomotion clips)."""
    n = take.frames
    if n < 9:
        return None
    xy = take.com[:, :2]
    third = n // 3
    first = np.linalg.norm(xy[third] - xy[0]) / (third / take.fps)
    last = np.linalg.norm(xy[-1] - xy[-1 - third]) / (third / take.fps)
    return float(last / first) if first > 0.2 else None


def _joint_index(name: str) -> int:
    return [j.name for j in proxy.DEFAULT_JOINTS].index(name)


def knee_flexion_per_leg(take: Take) -> np.ndarray:
    """Per frame, the flexion (degrees) of each knee: right, left (the order of ``contacts``)."""
    knees = [_joint_index("right_knee"), _joint_index("left_knee")]
    return np.degrees(np.abs(quat.to_rotvec(take.clip.joint_rots[:, knees])[..., 2]))


def knee_flexion_series(take: Take) -> np.ndarray:
    """Per frame, the mean flexion (degrees) of both knees."""
    return knee_flexion_per_leg(take).mean(axis=1)


def head_pitch_series(take: Take) -> np.ndarray:
    """Per frame, the forward pitch (degrees, chin down positive) of the neck joint."""
    neck = quat.to_rotvec(take.clip.joint_rots[:, _joint_index("neck")])
    return -np.degrees(neck[:, 2])   # flexion about the lateral (link z) axis


def _spans_until_resume(take: Take, kind: str) -> list[tuple[int, int | None]]:
    """(frame of each ``kind`` event, the first resume frame after it or None when the take ends first)."""
    resumes = [e["frame"] for e in take.events if e["kind"] == "resume"]
    return [(e["frame"], next((f for f in resumes if f > e["frame"]), None))
            for e in take.events if e["kind"] == kind]


def rest_spans(take: Take) -> list[tuple[int, int | None]]:
    """(rest frame, the first resume frame after it or None when the take ends resting), per rest."""
    return _spans_until_resume(take, "rest")


def kneel_spans(take: Take) -> list[tuple[int, int | None]]:
    """(kneel frame, the first resume frame after it or None when the take ends kneeling), per
    kneel (a rest taken on the knees, runtime.floor.kneel: from getting down to being back up)."""
    return _spans_until_resume(take, "kneel")


def moving_frames(take: Take) -> np.ndarray:
    """Frames in which the source motion is being performed: not resting, not holding after its end."""
    moving = take.reference_time < take.reference_time[-1] - 1e-9
    for start, end in rest_spans(take):
        moving[start:end] = False
    return moving


def matched_gain(tired: Take, fresh: Take, series, stance) -> float | None:
    """Mean of ``series(tired) - series(fresh)`` at the same moment of the source motion (matched
    by reference time: a tired take is slower), over frames where the tired body performs the
    motion (rests and the hold after the end excluded: rests are counted apart) and
    ``stance(tired.contacts, fresh contacts at that moment)`` holds.  A series with a column per
    leg takes a stance mask of the same shape and pools the legs.  None when there is no such frame."""
    order = np.argsort(fresh.reference_time, kind="stable")
    moments, values = fresh.reference_time[order], series(fresh)[order]
    at = tired.reference_time
    matched = (np.interp(at, moments, values) if values.ndim == 1 else
               np.stack([np.interp(at, moments, column) for column in values.T], axis=1))
    after = np.clip(np.searchsorted(moments, at), 0, len(order) - 1)
    before = np.maximum(after - 1, 0)
    nearest = order[np.where(np.abs(moments[before] - at) <= np.abs(moments[after] - at), before, after)]
    use = stance(tired.contacts, fresh.contacts[nearest])
    moving = moving_frames(tired)
    use = use & (moving[:, None] if use.ndim > 1 else moving)
    if not use.any():
        return None
    return float((series(tired) - matched)[use].mean())


def knee_flexion_gain_deg(tired: Take, fresh: Take) -> float | None:
    """How much more a tired knee under the body bends than the fresh one: each knee while its
    own foot is down in both takes at the same moment of the source (rests and the hold after the
    end excluded), pooled over both legs.  None when there is no such frame.

    Why each leg on its own: "both feet down" leaves a run nothing but a stumble's few frames (a
    tired sampled run read -19 degrees from 4 frames where the fresh one was in the air, while its
    stance knees bent 7-12 degrees deeper), and a knee bends under load only where its foot is down."""
    return matched_gain(tired, fresh, knee_flexion_per_leg, lambda mine, theirs: mine & theirs)


def head_pitch_gain_deg(tired: Take, fresh: Take) -> float | None:
    """How much further forward the tired head pitches than the fresh one, a foot down, same moments."""
    return matched_gain(tired, fresh, head_pitch_series, lambda mine, theirs: mine.any(axis=1))


def arm_elevation_series(take: Take) -> np.ndarray:
    """Per frame, the mean elevation (degrees) of both upper arms from hanging straight down."""
    shoulders = [_joint_index("right_shoulder"), _joint_index("left_shoulder")]
    down = np.array([0.0, -1.0, 0.0])  # upper arm direction at rest, shoulder link frame
    arm = quat.rotate(take.clip.joint_rots[:, shoulders], down)
    return np.degrees(repeatable.arccos(np.clip(arm @ down, -1, 1))).mean(axis=1)


def arm_elevation_deg(take: Take) -> float:
    """Mean elevation (degrees) of both upper arms from hanging straight down."""
    return float(arm_elevation_series(take).mean())


def arm_elevation_drop_deg(tired: Take, fresh: Take, raised_deg: float = 30.0) -> float | None:
    """How much lower the tired arms are than the fresh ones at the same moment of the source motion
    (matched by reference time, since a tired take is slower), over the moments the fresh arms are
    raised above ``raised_deg``.  None when they never are (nothing to let drop)."""
    fresh_arm = arm_elevation_series(fresh)
    order = np.argsort(fresh.reference_time, kind="stable")
    matched = np.interp(tired.reference_time, fresh.reference_time[order], fresh_arm[order])
    raised = matched > raised_deg
    if not raised.any():
        return None
    return float((matched - arm_elevation_series(tired))[raised].mean())


def min_residual_capacity(take: Take) -> float:
    return float(take.fatigue["RC"].min())


def phase_rate_mean(take: Take) -> float:
    """Source seconds shown per take second until the source motion ends (1 = original tempo;
    a hold after the end does not count)."""
    end = take.reference_time[-1]
    reached = np.flatnonzero(take.reference_time >= end - 1e-9)
    last = int(reached[0]) if reached.size else take.frames - 1
    span = last / take.fps
    return float((take.reference_time[last] - take.reference_time[0]) / span) if span > 0 else 1.0


def travels(reference: Clip, min_speed: float = 0.5) -> bool:
    """Whether the reference goes somewhere (net horizontal speed above ``min_speed`` m/s)."""
    net = np.linalg.norm(reference.root_pos[-1, :2] - reference.root_pos[0, :2])
    return bool(net / max(reference.duration, 1e-9) > min_speed)


def recovers_in_rests(take: Take) -> bool | None:
    """True when RC of the legs rose during some rest (None when the take never rested)."""
    spans = rest_spans(take)
    if not spans:
        return None
    legs = [d for d, part in enumerate(proxy.dof_body_parts()) if part == "legs"]
    rc = take.fatigue["RC"][:, legs].min(axis=1)
    last = take.frames - 1
    for start, resume in spans:
        start = min(start, last)
        end = min(last if resume is None else resume, last)
        if end > start and rc[start:end + 1].max() > rc[start] + 0.02:
            return True
    return False
