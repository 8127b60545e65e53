"""Gait and posture of a take, as a viewer judges a tired person: how far the trunk, chest and head
lean, how the head bends against the chest, how fast the body gets somewhere, how long and how
often its steps are, how often it stops, whether it plays its whole source.

Read by ``./fatigue realism`` (tools/realism.py), which compares a tired take with the fresh one and
scores each change against the published directions.  Every series takes a Clip (a Take's pose
stream is one: ``take.clip``), so the source is measured the same way as the takes.

Angles are in degrees.  Pitches are of a body segment's long axis against world vertical, in the
facing direction of that segment (forward positive: a trunk leaning forward, a head dropped toward
the chest); the facing direction is the horizontal normal of the segment's lateral axis, so a
segment pitched far forward still knows where forward is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..body import proxy
from ..maths import quat, repeatable
from . import metrics
from .clip import Clip
from .take import Take

UP = np.array([0.0, 1.0, 0.0])        # a link's long axis: the proxy's links share one rest frame (x fwd, y up, z right)
RIGHT = np.array([0.0, 0.0, 1.0])
WORLD_UP = np.array([0.0, 0.0, 1.0])
# The chest and neck joints' origins along their parent's long axis (runtime/data/humanoid.urdf,
# URDF units): the trunk line runs from the hips' centre (root) through the chest joint to the neck.
ROOT_TO_CHEST = 0.944604
CHEST_TO_NECK = 0.895576
SPEED_WINDOW_S = 1.2        # a stride or more: the root's sway from step to step averages out
MIN_CONTACT_S = 0.1         # a foot down (or up) for less is a flicker (a sampled body's chatter), not a step:
                            # a stance or a swing lasts 0.2 s or more even in a sprint
UPRIGHT_DEG = 45.0          # a trunk within this of vertical is upright (not crawling, flipping, lying)
TRAVEL_WINDOW_S = 2.0       # a couple of strides: how far a clip gets in this long says whether it travels


def _joint(name: str) -> int:
    return [j.name for j in proxy.DEFAULT_JOINTS].index(name)


def segment_rotations(clip: Clip) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World rotations (T, 4) of the pelvis (root), chest and head (the neck joint's link)."""
    root = clip.root_rot
    chest = quat.multiply(root, clip.joint_rots[:, _joint("chest")])
    head = quat.multiply(chest, clip.joint_rots[:, _joint("neck")])
    return root, chest, head


def pitch_deg(up: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Forward pitch (degrees) of world directions ``up`` (T, 3) from world vertical, forward being
    the horizontal direction that ``right`` (the segment's lateral axis) is to the right of."""
    forward = np.cross(WORLD_UP, right)
    forward[:, 2] = 0.0
    forward /= np.maximum(np.linalg.norm(forward, axis=1, keepdims=True), 1e-12)
    return np.degrees(repeatable.arctan2(np.einsum("ij,ij->i", up, forward), up[:, 2]))


def trunk_pitch_series(clip: Clip) -> np.ndarray:
    """Per frame, the forward pitch of the trunk line (hips' centre to the neck) in the pelvis's facing."""
    root, chest, _ = segment_rotations(clip)
    line = quat.rotate(root, ROOT_TO_CHEST * UP) + quat.rotate(chest, CHEST_TO_NECK * UP)
    return pitch_deg(line, quat.rotate(root, RIGHT))


def chest_pitch_series(clip: Clip) -> np.ndarray:
    """Per frame, the forward pitch of the chest (chest joint to neck) in the chest's facing."""
    _, chest, _ = segment_rotations(clip)
    return pitch_deg(quat.rotate(chest, UP), quat.rotate(chest, RIGHT))


def head_pitch_series(clip: Clip) -> np.ndarray:
    """Per frame, the forward pitch of the head (down toward the chest positive) in the head's facing.

    Not runtime.motion.metrics.head_pitch_series, which is the neck joint's own flexion (the head against
    the chest); this is against world vertical, so a head carried level on a leaning trunk reads 0."""
    _, _, head = segment_rotations(clip)
    return pitch_deg(quat.rotate(head, UP), quat.rotate(head, RIGHT))


def head_chest_bend_series(clip: Clip) -> np.ndarray:
    """Per frame, the angle (degrees, 0-180, any direction) between the head's and the chest's long axes."""
    _, chest, head = segment_rotations(clip)
    cos = np.einsum("ij,ij->i", quat.rotate(head, UP), quat.rotate(chest, UP))
    return np.degrees(repeatable.arccos(np.clip(cos, -1.0, 1.0)))


def _centred_mean(x: np.ndarray, half: int) -> np.ndarray:
    """Mean of ``x`` over a window of ``half`` samples either side, narrowed symmetrically at the
    ends (a steady ramp stays the same ramp)."""
    csum = np.concatenate([np.zeros((1,) + x.shape[1:]), np.cumsum(x, axis=0)])
    n = x.shape[0]
    i = np.arange(n)
    h = np.minimum(np.minimum(i, n - 1 - i), half)
    return (csum[i + h + 1] - csum[i - h]) / (2 * h + 1)[:, None]


def moving_steps(take: Take) -> np.ndarray:
    """(T - 1,) whether the step from each frame to the next is the source being performed (both
    ends moving: rests and the hold after the end left out)."""
    moving = metrics.moving_frames(take)
    return moving[:-1] & moving[1:]


def moving_seconds(take: Take) -> float:
    return float(moving_steps(take).sum() / take.fps)


def progression_speed(take: Take) -> float | None:
    """Horizontal root speed (m/s) over the frames the take performs the source: the path of the
    root averaged over SPEED_WINDOW_S (step-to-step sway removed) within each stretch of moving
    frames (a rest does not slow the path around it), its length over the time moving.  None when
    the take never moves."""
    steps = moving_steps(take)
    if not steps.any():
        return None
    edges = np.diff(np.concatenate([[0], steps.astype(np.int8), [0]]))
    length = sum(path_steps(take.clip.root_pos[a:b + 1], take.fps).sum()
                 for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))
    return float(length / (steps.sum() / take.fps))


def path_steps(root_pos: np.ndarray, fps: float) -> np.ndarray:
    """(T - 1,) horizontal distance (m) the root's path covers from each frame to the next, the path
    averaged over SPEED_WINDOW_S so the sway from step to step does not count as travel."""
    half = max(1, int(round(0.5 * SPEED_WINDOW_S * fps)))
    return np.linalg.norm(np.diff(_centred_mean(root_pos[:, :2], half), axis=0), axis=1)


def window_speed(root_pos: np.ndarray, fps: float, seconds: float = TRAVEL_WINDOW_S) -> float | None:
    """Median over every ``seconds`` window of the root's net horizontal displacement over the
    window's length (m/s): a walk along a figure of eight travels at its walking speed, a dance that
    sways to and fro does not travel.  None for a clip shorter than a window."""
    xy = root_pos[:, :2]
    n = int(round(seconds * fps))
    if n < 1 or len(xy) <= n:
        return None
    return float(np.median(np.linalg.norm(xy[n:] - xy[:-n], axis=1)) / (n / fps))


def reach(root_pos: np.ndarray) -> float:
    """How far (m) the root gets from where it starts, horizontally."""
    return float(np.linalg.norm(root_pos[:, :2] - root_pos[0, :2], axis=1).max())


def _debounced(down: np.ndarray, frames: int) -> np.ndarray:
    """A foot-contact series without runs shorter than ``frames`` (flickers of either state)."""
    out = down.copy()
    for state in (False, True):          # fill short lifts, then drop short touches
        t = 0
        while t < len(out):
            if out[t] == state:
                end = t
                while end < len(out) and out[end] == state:
                    end += 1
                if end - t < frames and t > 0 and end < len(out):
                    out[t:end] = not state
                t = end
            else:
                t += 1
    return out


def touchdowns(take: Take) -> list[tuple[int, int]]:
    """(frame, leg) of every touchdown while the take performs the source (0 right, 1 left; the
    order of ``take.contacts``), in time order."""
    moving = metrics.moving_frames(take)
    shortest = max(2, int(round(MIN_CONTACT_S * take.fps)))
    out = []
    for leg in range(take.contacts.shape[1]):
        down = _debounced(np.asarray(take.contacts[:, leg], dtype=bool), shortest)
        for t in np.flatnonzero(down[1:] & ~down[:-1]) + 1:
            if moving[t]:
                out.append((int(t), leg))
    return sorted(out)


def _strides(take: Take) -> list[tuple[int, int]]:
    """(start, end) frames of each stride: a foot's touchdown to its next, with no rest between."""
    moving = metrics.moving_frames(take)
    by_leg: dict[int, list[int]] = {}
    for t, leg in touchdowns(take):
        by_leg.setdefault(leg, []).append(t)
    return [(a, b) for frames in by_leg.values() for a, b in zip(frames, frames[1:]) if moving[a:b + 1].all()]


def stride_length(take: Take) -> float | None:
    """Median horizontal distance (m) the root travels in a stride (a foot's touchdown to its next);
    None without two touchdowns of one foot in a row."""
    strides = _strides(take)
    if not strides:
        return None
    xy = take.clip.root_pos[:, :2]
    return float(np.median([np.linalg.norm(xy[b] - xy[a]) for a, b in strides]))


def cadence(take: Take) -> float | None:
    """Steps per minute: two per stride, from the median stride time; None without a stride."""
    strides = _strides(take)
    if not strides:
        return None
    return float(120.0 * take.fps / np.median([b - a for a, b in strides]))


def stance_knee_flexion(take: Take) -> float | None:
    """Mean flexion (degrees) of each knee while its own foot is down and the take performs the source."""
    stance = np.asarray(take.contacts, dtype=bool) & metrics.moving_frames(take)[:, None]
    if not stance.any():
        return None
    return float(metrics.knee_flexion_per_leg(take)[stance].mean())


def source_seconds(take: Take) -> float:
    """Seconds of the source the take covers."""
    return float(take.reference_time[-1] - take.reference_time[0])


def rests_per_10s(take: Take) -> float:
    """Rests per 10 s of source covered."""
    rests = sum(e["kind"] == "rest" for e in take.events)
    return 10.0 * rests / max(source_seconds(take), 1e-9)


def finished(take: Take, source_duration: float) -> bool:
    """Whether the take played its whole source (to within a frame of the source's end)."""
    return bool(take.reference_time[-1] >= source_duration - 1.0 / take.fps - 1e-9)


def fall_time(take: Take) -> float | None:
    return next((float(e["time"]) for e in take.events if e["kind"] == "fall"), None)


def fall_cause(take: Take) -> str | None:
    """What the body was doing in the second before it fell, in a few words (None: it did not
    fall): the legs' residual capacity (they hold the body up) and the weakest part's where that
    is another, what it stood on, and whether it had just rested (e.g. "legs at RC 0.08 (neck
    0.03), on both feet, after a rest")."""
    fall = next((e for e in take.events if e["kind"] == "fall"), None)
    if fall is None:
        return None
    end = min(int(fall["frame"]), take.frames - 1)
    start = max(end - int(round(take.fps)), 0)
    rc = np.asarray(take.fatigue["RC"])[start:end + 1].min(axis=0)
    parts = np.array(proxy.dof_body_parts())
    weakest = min(dict.fromkeys(parts), key=lambda part: float(rc[parts == part].min()))
    down = int(round(float(np.asarray(take.contacts, dtype=bool)[start:end + 1].sum(axis=1).mean())))
    on = ("in the air", "on one foot", "on both feet")[down]
    rests = [e for e in take.events if e["kind"] in ("rest", "resume") and e["frame"] <= end]
    after = ", after a rest" if rests and rests[-1]["kind"] == "resume" else ", resting" if rests else ""
    legs = float(rc[parts == "legs"].min())
    also = "" if weakest == "legs" else f" ({weakest} {float(rc[parts == weakest].min()):.2f})"
    return f"legs at RC {legs:.2f}{also}, {on}{after}"


def breathing_rate(take: Take) -> float | None:
    """Breaths per minute when the take carries a breathing series (``take.breath``, one value per
    frame, peaks at each inhalation) with at least two breaths, else None (a fresh take does not breathe)."""
    breath = getattr(take, "breath", None)
    if breath is None:
        return None
    b = np.asarray(breath, dtype=np.float64)
    if b.shape != (take.frames,) or take.frames < 3:
        return None
    b = b - b.mean()
    rises = np.flatnonzero((b[1:] > 0) & (b[:-1] <= 0))     # one per breath, where it rises through its mean
    if len(rises) < 2:
        return None
    return float(60.0 * (len(rises) - 1) * take.fps / (rises[-1] - rises[0]))


def _moving_mean(series: np.ndarray, take: Take) -> float | None:
    moving = metrics.moving_frames(take)
    return float(series[moving].mean()) if moving.any() else None


@dataclass(frozen=True)
class TakeFeatures:
    """One take, measured: posture means over the frames it performs the source (degrees), the
    head-chest bend's 95th percentile over the whole take, gait (None where it does not step),
    pace, what became of it."""
    trunk_pitch_deg: float | None
    chest_pitch_deg: float | None
    head_pitch_deg: float | None
    head_chest_bend_p95_deg: float
    stance_knee_flexion_deg: float | None
    arm_elevation_deg: float | None
    speed_mps: float | None               # over moving frames
    overall_speed_mps: float              # root's net path over the whole take, rests and all
    stride_m: float | None
    cadence_spm: float | None
    jump_height_m: float                  # mean rise of two-footed jumps (0: none)
    flight_fraction: float                # share of moving frames with no foot down (a run flies)
    upright_fraction: float               # share of moving frames with the trunk within 45 deg of vertical
    rests: int
    rests_per_10s: float
    stretch: float                        # take duration / source seconds covered
    source_seconds: float
    finished: bool
    fell: bool
    fall_time_s: float | None
    fall_cause: str | None                # see fall_cause
    breath_per_min: float | None          # None: the take does not breathe (fresh) or is shorter than two breaths


def features(take: Take, source_duration: float) -> TakeFeatures:
    """``take`` measured; ``source_duration``: seconds of source it was asked to play."""
    moving = metrics.moving_frames(take)
    trunk = trunk_pitch_series(take.clip)
    contacts = np.asarray(take.contacts, dtype=bool)
    upright = np.abs(trunk) < UPRIGHT_DEG
    apexes = metrics.flight_apexes(take, 0.0)
    net = float(path_steps(take.clip.root_pos, take.fps).sum())
    return TakeFeatures(
        trunk_pitch_deg=_moving_mean(trunk, take),
        chest_pitch_deg=_moving_mean(chest_pitch_series(take.clip), take),
        head_pitch_deg=_moving_mean(head_pitch_series(take.clip), take),
        head_chest_bend_p95_deg=float(np.percentile(head_chest_bend_series(take.clip), 95)),
        stance_knee_flexion_deg=stance_knee_flexion(take),
        arm_elevation_deg=_moving_mean(metrics.arm_elevation_series(take), take),
        speed_mps=progression_speed(take),
        overall_speed_mps=net / max((take.frames - 1) / take.fps, 1e-9),
        stride_m=stride_length(take),
        cadence_spm=cadence(take),
        jump_height_m=float(np.mean(apexes)) if apexes else 0.0,
        flight_fraction=float((~contacts.any(axis=1))[moving].mean()) if moving.any() else 0.0,
        upright_fraction=float(upright[moving].mean()) if moving.any() else 0.0,
        rests=sum(e["kind"] == "rest" for e in take.events),
        rests_per_10s=rests_per_10s(take),
        stretch=float(take.duration_stretch()),
        source_seconds=source_seconds(take),
        finished=finished(take, source_duration),
        fell=take.fell,
        fall_time_s=fall_time(take),
        fall_cause=fall_cause(take),
        breath_per_min=breathing_rate(take),
    )


def posture_gain(tired: Take, fresh: Take, series, during: np.ndarray | None = None) -> float | None:
    """Mean of ``series(tired.clip) - series(fresh.clip)`` at the same moments of the source, over the
    frames the tired take performs it (runtime.motion.metrics.matched_gain), all of them or those
    where ``during`` (per tired frame) holds."""
    return metrics.matched_gain(tired, fresh, lambda take: series(take.clip),
                                lambda mine, theirs: np.ones(len(mine), dtype=bool) if during is None else during)


def pose_difference_series(take: Take, source: Clip) -> np.ndarray:
    """Per frame, the mean angle (degrees) between the take's joints and the source's at the moment
    of the source it shows."""
    _, _, ref = source.sample_many(take.reference_time)
    return np.degrees(quat.angle_between(take.clip.joint_rots, ref)).mean(axis=1)
