"""The result of a simulation, one type for every mode: what the bake writes back to Blender.

Per output frame: the body pose (root + local joint rotations in proxy order, like a Clip), the
fatigue state of every DoF, the torques the muscles produced, foot contacts, any non-physical
help, and the reference phase (seconds of the source clip: a tired take plays it slower, so the
take can be longer than the clip).  ``notes`` says in words how each body part was simulated.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .clip import Clip

FATIGUE_FIELDS = ("MA", "MR", "MF", "TL", "RC")
EVENT_KINDS = ("rest", "resume", "halt", "fall", "stopped", "kneel")


def unfatigued(torque: np.ndarray, strength: np.ndarray) -> dict[str, np.ndarray]:
    """The fatigue arrays of a take simulated with fatigue off: each DoF's load as its active
    share, nothing fatigued, full capacity throughout."""
    tl = np.minimum(np.abs(torque) / strength, 1.0)
    return {"MA": tl, "MR": 1.0 - tl, "MF": np.zeros_like(tl), "TL": tl, "RC": np.ones_like(tl)}


def tempo_phrase(frames: int, stretch: float, fell: bool, source_frames: int) -> str:
    """A take's tempo in a few words, for its summary line: ``x1.25 tempo``, or, for a take that
    fell (it ends where it falls, so its length over the little source it covered is no tempo), how
    far into its ``source_frames``-frame source it fell."""
    if not fell:
        return f"x{stretch:.2f} tempo"
    played = (frames - 1) / stretch if stretch > 0.0 and np.isfinite(stretch) else 0.0
    if played < 1.0:
        return f"fell before playing its {source_frames}-frame source"
    return f"fell {played:.0f} frames into its {source_frames}-frame source"


@dataclass(frozen=True)
class Event:
    """Something the simulated body did, ``time`` seconds into the take: one of EVENT_KINDS, with
    the reason for a resume or a stop.  Simulators record these; the Take holds them as dicts
    (``at``) with the output frame they fall on, computed here and nowhere else."""
    time: float
    kind: str
    reason: str | None = None

    def at(self, fps: float) -> dict:
        """The Take's record of this event at ``fps`` output frames per second."""
        out = {"time": self.time, "kind": self.kind, "frame": int(round(self.time * fps))}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class TakeFrame:
    """What a simulation records at one output frame; runtime.simulate assembles a Take from them.
    The pose comes as a simulator state to be posed afterwards (``state``, a
    runtime.reference.pose_output.SimState: SRB mode, floor work)."""
    phase: float                     # s of the source shown
    com: np.ndarray                  # (3,) centre of mass
    torque: np.ndarray               # (DoF,) N*m
    fatigue: dict | None             # the fatigue model's snapshot (None: fatigue off)
    residual_moment: np.ndarray      # (3,) N*m the contacts could not supply
    strength_factor: np.ndarray      # (DoF,) strength over tau_max this frame
    state: object = None


@dataclass
class Take:
    mode: str
    fps: float
    clip: Clip                       # the pose stream as a Clip (root + joints per frame)
    reference_time: np.ndarray       # (T,) seconds of the source clip shown at each frame
    fatigue: dict[str, np.ndarray]   # MA, MR, MF, TL, RC: (T, DoF)
    torque: np.ndarray               # (T, DoF) N*m applied by the muscles
    contacts: np.ndarray             # (T, 2) right, left foot on the ground
    residual_force: np.ndarray       # (T, 3) non-physical help on the root, N (zero when none)
    com: np.ndarray                  # (T, 3) simulated centre of mass
    tau_max: np.ndarray | None = None  # (DoF,) strength the fatigue bounds scaled
    strength: np.ndarray | None = None  # (T, DoF) N*m, that strength at each frame: tau_max, more for legs lowering the body
    events: list[dict] = field(default_factory=list)   # Event.at(fps): {"time", "kind", "frame", "reason"?}
    notes: dict[str, str] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)
    engine: str = ""                 # runtime.engines.chooser name that simulated it ("" before the engine was recorded)
    breath: np.ndarray | None = None   # (T,) the breath (runtime.fatigue.breathing); None: the take does not breathe

    @property
    def frames(self) -> int:
        return self.clip.frames

    @property
    def fell(self) -> bool:
        return any(e["kind"] == "fall" for e in self.events)

    @property
    def finished(self) -> bool:
        """Whether the take played its source to the end: it neither fell (a fall ends a take
        where it happens) nor was stopped at the length limit."""
        return not any(e["kind"] in ("fall", "stopped") for e in self.events)

    def played_slower(self, factor: float, note: str) -> "Take":
        """This take (of a clip played ``factor`` times faster: Clip.played_faster) back on the
        clip's own timeline: the same frames, ``factor`` times longer apart; ``note`` says why."""
        stats = dict(self.stats)
        stats["playback_slowdown"] = float(factor)
        for key in ("seconds_simulated", "realtime_x"):
            if key in stats:
                stats[key] = stats[key] * factor
        return replace(self, fps=self.fps / factor, clip=replace(self.clip, fps=self.clip.fps / factor),
                       reference_time=self.reference_time * factor,
                       events=[{**e, "time": e["time"] * factor} for e in self.events],
                       notes={**self.notes, "playback": note}, stats=stats)

    def duration_stretch(self) -> float:
        """Take length over the length of source motion it covers (1 = same tempo)."""
        covered = float(self.reference_time[-1] - self.reference_time[0])
        return (self.frames - 1) / self.fps / covered if covered > 0 else float("inf")

    def peak_fatigue_by(self, groups: list[str]) -> dict[str, float]:
        """Largest MF reached in each group (e.g. proxy.dof_body_parts())."""
        mf = self.fatigue["MF"]
        out: dict[str, float] = {}
        for d, g in enumerate(groups):
            out[g] = max(out.get(g, 0.0), float(mf[:, d].max()))
        return out
