"""./fatigue realism: do tired takes move the way tired people move?

Every bench clip (the DeepMimic clips of ./fatigue bench) and every humanoid action of the real-file
corpus (../shared/corpus, both manifests) is baked Fresh, Average and Exhausted (the shipped
presets; SRB mode unless ``--mode torque``): the bench clips through runtime.simulate as the
bench does, the corpus through the button's own calls in Blender (tools/corpus.py, one process per
file).  Each take is measured (runtime.motion.gait: trunk, chest and head pitch, head-to-chest bend, knee
flexion in stance, arm elevation, progression speed, stride, cadence, rests per 10 s of source,
take stretch, finished, fell, breathing rate), each tired take is compared with
the fresh one, and every change is scored against the direction the published findings give
(EXPECTED below, each row citing its entry in ../shared/reference/fatigue_kinematics.json).

Nothing here knows a clip by name: which rows apply to a clip is read from the clip (whether its
source travels, whether it runs, stands, raises its arms or jumps).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import corpus  # noqa: E402
import corpus_import  # noqa: E402
import effectors  # noqa: E402
from runtime.motion import clip as clips  # noqa: E402
from runtime.motion import gait, metrics

CONDITIONS = corpus.CONDITIONS          # fresh, average, exhausted -> the panel's preset names
BENCH_LOOP_SECONDS = 10.0               # a looping bench clip plays this long unless --seconds says
REFERENCE = corpus_import.CORPUS.parent / "reference" / "fatigue_kinematics.json"   # ../shared/reference
BEND_LIMIT_DEG = 50.0                   # issue 40: head-to-chest bend at the 95th percentile, unless the source bends so far
REST_LIMIT_PER_10S = 2.0
UPRIGHT_SHARE = 0.8                     # a clip "stands" when its fresh take's trunk is upright this much of the time
RUN_FLIGHT_SHARE = 0.15                 # locomotion "runs" when its fresh take flies this much of the time
MIN_TRAVEL_M = 1.0                      # a clip that travels gets this far from its start
JUMP_M = 0.05                           # a fresh two-footed flight higher than this is a jump


@dataclass(frozen=True)
class Expectation:
    """One direction the published findings give for fatigue: ``key`` of a change (compare),
    ``direction`` "down", "up" or "at most" (``limit``) from ``baseline`` (1 for a ratio, 0 for a
    change in degrees), the kind of clip it ``applies`` to (applicability), and the entries of
    REFERENCE it comes from: (section, index in it or None for a text field, words of that entry)."""
    name: str
    key: str
    direction: str
    baseline: float
    applies: str
    cites: tuple[tuple[str, int | None, str], ...]
    note: str = ""
    limit: float | None = None

    def right(self, value: float) -> bool:
        if self.direction == "down":
            return value < self.baseline
        if self.direction == "up":
            return value > self.baseline
        return value <= self.limit

    def reference(self) -> str:
        cited = "; ".join(f"{section}[{i}] {words}" if i is not None else f"{section}: {words}"
                          for section, i, words in self.cites)
        return cited + (f" ({self.note})" if self.note else "")


EXPECTED: tuple[Expectation, ...] = (
    Expectation("speed down", "speed_ratio", "down", 1.0, "locomotion",
                (("walking", 2, "Granacher et al. 2010"), ("jumping", 2, "Nicol, Komi & Marconnet 1991")),
                "gait speed down (young, single task); sprint speed x0.84 after a marathon"),
    Expectation("stride down", "stride_ratio", "down", 1.0, "locomotion",
                (("walking", 2, "Granacher et al. 2010"), ("running", 3, "Sports Biomech 2024")),
                "stride length down; step length SMD -1.27 at free speed"),
    Expectation("cadence down", "cadence_ratio", "down", 1.0, "runs", (("running", 5, "Apte et al. 2021"),),
                "running cadence down; walking cadence is left out: the walking findings are mixed "
                "(walking[5] stride duration down)"),
    Expectation("knee flexion in stance up", "knee_stance_change_deg", "up", 0.0, "locomotion",
                (("walking", 3, "Parijat & Lockhart 2008"), ("running", 4, "Zandbergen et al. 2023")),
                "knee flexion at heel contact / initial contact up"),
    Expectation("rests few", "rests_per_10s", "at most", 0.0, "locomotion", (("walking", 4, "Nagano et al. 2014"),),
                f"6 min of maximal-speed walking: people tired by walking keep walking, the change is in the "
                f"steps; at most {REST_LIMIT_PER_10S:g} rests per 10 s of source (issue 39)", limit=REST_LIMIT_PER_10S),
    Expectation("trunk forward", "trunk_pitch_change_deg", "up", 0.0, "upright",
                (("walking", 6, "Hart et al. 2009"), ("running", 0, "Koblbauer et al. 2014"),
                 ("arms", 3, "Dupuis et al. 2021")),
                "trunk flexion up; peak trunk flexion +4 deg; the trunk takes over from a tired shoulder"),
    Expectation("head forward", "head_pitch_change_deg", "up", 0.0, "upright",
                (("_about", None, "head and trunk forward"),),
                "acted tired styles exaggerate the published directions"),
    Expectation("arm elevation down", "arm_elevation_change_deg", "down", 0.0, "arms raised",
                (("arms", 3, "Dupuis et al. 2021"),), "glenohumeral elevation down"),
    Expectation("jump height down", "jump_ratio", "down", 1.0, "jumps",
                (("jumping", 0, "Pereira et al. 2014"), ("jumping", 1, "Moura et al. 2024")),
                "countermovement jump height -5.5 %; -7.5 to -10.4 %"),
    Expectation("slower", "stretch", "up", 1.0, "not locomotion",
                (("jumping", 0, "Pereira et al. 2014"), ("arms", 3, "Dupuis et al. 2021")),
                "movement duration +10 %; speed down (locomotion: scored on its speed instead)"),
)


def _ratio(a, b) -> float | None:
    return float(a / b) if a is not None and b is not None and b > 1e-9 else None


def compare(tired, fresh, tired_features: gait.TakeFeatures, fresh_features: gait.TakeFeatures) -> dict:
    """A tired take against the fresh one: ratios of pace and gait, posture changes (degrees) at
    the same moments of the source (runtime.motion.metrics' matched gains), and the tired take's pace."""
    drop = metrics.arm_elevation_drop_deg(tired, fresh)
    t, f = tired_features, fresh_features
    return {
        "speed_ratio": _ratio(t.speed_mps, f.speed_mps),
        "overall_speed_ratio": _ratio(t.overall_speed_mps, f.overall_speed_mps),
        "stride_ratio": _ratio(t.stride_m, f.stride_m),
        "cadence_ratio": _ratio(t.cadence_spm, f.cadence_spm),
        "jump_ratio": _ratio(t.jump_height_m, f.jump_height_m) if f.jump_height_m > JUMP_M else None,
        "trunk_pitch_change_deg": gait.posture_gain(tired, fresh, gait.trunk_pitch_series),
        "chest_pitch_change_deg": gait.posture_gain(tired, fresh, gait.chest_pitch_series),
        "head_pitch_change_deg": gait.posture_gain(tired, fresh, gait.head_pitch_series),
        "head_chest_bend_change_deg": gait.posture_gain(tired, fresh, gait.head_chest_bend_series),
        "knee_stance_change_deg": metrics.knee_flexion_gain_deg(tired, fresh),
        "arm_elevation_change_deg": -drop if drop is not None else None,
        "rests_per_10s": t.rests_per_10s,
        "stretch": t.stretch,
    }


def applicability(source: clips.Clip, fresh: gait.TakeFeatures, fresh_take) -> dict[str, bool]:
    """Which kinds of clip this is, read from the clip and its fresh take.  It travels: the source
    goes somewhere (runtime.motion.metrics.travels, or over 2 s windows at the same 0.5 m/s, so a walk along
    a figure of eight travels: runtime.motion.gait.window_speed; at the speed it was performed where it
    plays in slow motion: runtime.reference.playback) and gets MIN_TRAVEL_M from its start (a step back to
    sit down does not travel).  Locomotion: it travels with the trunk upright (walks,
    runs, a travelling dance; not a cartwheel, a flip or a crawl), so the walking and running rows
    apply.  Runs: locomotion that flies RUN_FLIGHT_SHARE of the time without two-footed jumps.
    Stands: the trunk upright (UPRIGHT_SHARE of the time).  Raises its arms above 30 degrees.  Jumps:
    two-footed flights above JUMP_M.  Not locomotion: everything else."""
    k = float(fresh_take.stats.get("playback_slowdown", 1.0))
    windowed = gait.window_speed(source.root_pos, source.fps)
    travels = gait.reach(source.root_pos) >= MIN_TRAVEL_M and (
        metrics.travels(source, 0.5 / k) or (windowed is not None and windowed * k > 0.5))
    upright = fresh.upright_fraction >= UPRIGHT_SHARE
    jumps = fresh.jump_height_m > JUMP_M
    locomotion = travels and upright
    return {
        "travels": travels,
        "locomotion": locomotion,
        "runs": locomotion and fresh.flight_fraction >= RUN_FLIGHT_SHARE and not jumps,
        "upright": upright,
        "arms raised": bool(metrics.arm_elevation_series(fresh_take).max() > 30.0),
        "jumps": jumps,
        "not locomotion": not locomotion,
    }


def score(change: dict, applies: dict[str, bool]) -> list[dict]:
    """Each applicable expectation with a measured value: the value and whether it goes the published way."""
    out = []
    for e in EXPECTED:
        value = change.get(e.key)
        if not applies[e.applies] or value is None:
            continue
        out.append({"expectation": e.name, "value": value, "right": e.right(value), "reference": e.reference()})
    return out


def source_posture(source: clips.Clip) -> dict:
    return {"seconds": source.duration,
            "trunk_pitch_deg": float(gait.trunk_pitch_series(source).mean()),
            "chest_pitch_deg": float(gait.chest_pitch_series(source).mean()),
            "head_pitch_deg": float(gait.head_pitch_series(source).mean()),
            "head_chest_bend_p95_deg": float(np.percentile(gait.head_chest_bend_series(source), 95)),
            "window_speed_mps": gait.window_speed(source.root_pos, source.fps), "reach_m": gait.reach(source.root_pos)}


def measure_clip(label: str, source: clips.Clip, takes: dict, height: float, strips: Path | None,
                 effector_strips: Path | None = None) -> dict:
    """One clip's takes (condition -> Take, fresh among them) measured, compared and scored; the
    worst end effector of each (tools/effectors.py), a strip in ``effector_strips`` when over its limit."""
    feats = {c: gait.features(take, source.duration) for c, take in takes.items()}
    applies = applicability(source, feats["fresh"], takes["fresh"])
    changes = {c: compare(takes[c], takes["fresh"], feats[c], feats["fresh"]) for c in takes if c != "fresh"}
    record = {"clip": label, "status": "baked", "height_m": height, "source": source_posture(source),
              "applies": applies, "takes": {c: asdict(f) for c, f in feats.items()}, "changes": changes,
              "scores": {c: score(ch, applies) for c, ch in changes.items()}, "strip": None,
              "effectors": {c: effectors.measure_and_strip(label, c, t, source, effector_strips) for c, t in takes.items()}}
    if strips is not None:
        strips.mkdir(parents=True, exist_ok=True)
        name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)
        record["strip"] = str(write_strip(label, source, takes, height, strips / f"{name}.png"))
    return record


# -- stick strips -----------------------------------------------------------------------------
def worst_moments(take, source: clips.Clip) -> list[tuple[str, int]]:
    """(what, frame) of the moments a viewer should see: the largest head-to-chest bend, the largest
    pose difference from the source, the first rest (its middle) and the fall where there are
    those, else the last frame."""
    last = take.frames - 1
    bend = gait.head_chest_bend_series(take.clip)
    diff = gait.pose_difference_series(take, source)
    out = [(f"bend {bend.max():.0f} deg", int(bend.argmax())), (f"pose off {diff.max():.0f} deg", int(diff.argmax()))]
    spans = metrics.rest_spans(take)
    if spans:
        start, end = spans[0]
        out.append(("rest", min((start + (last if end is None else end)) // 2, last)))
    out += [("fall", min(e["frame"], last)) for e in take.events if e["kind"] == "fall"][:1]
    if len(out) == 2:
        out.append(("end", last))
    return out


def write_strip(label: str, source: clips.Clip, takes: dict, height: float, path: Path) -> Path:
    """Per condition a row: at each worst moment the source (grey) beside the take (coloured), both
    seen from the side in their own facing."""
    import bench_plots
    import matplotlib.pyplot as plt

    from runtime.engines import chooser as engine

    rows = list(takes.items())
    fig, axes = plt.subplots(len(rows), 1, figsize=(13, 2.8 * len(rows)), squeeze=False)
    with engine.kinematics(engine.resolve(), height) as kin:
        for ax, (condition, take) in zip(axes[:, 0], rows):
            moments = worst_moments(take, source)
            frames = [f for _, f in moments]
            pos, rot, joints = source.sample_many(take.reference_time[frames])
            src = SimpleNamespace(clip=SimpleNamespace(root_pos=pos, root_rot=rot, joint_rots=joints))
            mine = effectors.with_head(bench_plots.joint_positions(kin, take, frames), take.clip, frames, kin.scale)
            theirs = effectors.with_head(bench_plots.joint_positions(kin, src, list(range(len(frames)))), src.clip,
                                         list(range(len(frames))), kin.scale)
            for k, (what, frame) in enumerate(moments):
                for j, (pose, rr, colour) in enumerate(((theirs[k], rot[k], "0.65"),
                                                        (mine[k], take.clip.root_rot[frame], None))):
                    x0 = 2.4 * k * height / 1.75 + 0.9 * j * height / 1.75
                    effectors.draw_pose(ax, effectors.side_view(pose, effectors.facing_yaw(rr)), x0, colour,
                                        bench_plots.BONES + [("neck", "neck_top")])
                ax.text(2.4 * k * height / 1.75 + 0.45 * height / 1.75, -0.15,
                        f"{what} @ {frame / take.fps:.1f} s (source {take.reference_time[frame]:.1f} s)",
                        ha="center", fontsize=8)
            ax.axhline(0.0, color="0.8", lw=1)
            ax.set_aspect("equal")
            ax.set_ylim(-0.3, 1.2 * height)
            ax.set_title(f"{condition}: source (grey) beside the take, seen from its right side", fontsize=10)
            ax.axis("off")
    fig.suptitle(label)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


# -- one clip or one corpus file, in a child process ------------------------------------------
def bench_source(clip: clips.Clip, seconds: float | None) -> clips.Clip:
    """What a bench clip plays: a loop for ``seconds`` (BENCH_LOOP_SECONDS by default), a clip that
    does not loop once, cut to its first ``seconds``."""
    if clip.loop:
        return clip.repeated(seconds or BENCH_LOOP_SECONDS)
    if seconds is not None and seconds < clip.duration:
        n = int(round(seconds * clip.fps)) + 1
        return replace(clip, root_pos=clip.root_pos[:n], root_rot=clip.root_rot[:n], joint_rots=clip.joint_rots[:n])
    return clip


def _take_line(label: str, condition: str, take, source_duration: float, wall: float) -> str:
    fall = gait.fall_time(take)
    what = (f"FELL at {fall:.1f} s" if fall is not None else "finished" if gait.finished(take, source_duration)
            else f"cut at {take.reference_time[-1]:.1f} of {source_duration:.1f} s of source")
    rests = sum(e["kind"] == "rest" for e in take.events)
    kneels = sum(e["kind"] == "kneel" for e in take.events)
    return (f"  {label} {condition}: {take.frames} frames, x{take.duration_stretch():.2f} long, {rests} rests"
            f"{f' ({kneels} kneeling)' if kneels else ''}, "
            f"{what} ({wall:.1f} s)")


def run_bench_clip(name: str, conditions: list[str], seconds: float | None, mode: str, strips: Path | None,
                   effector_strips: Path | None = None) -> list[dict]:
    from runtime.body import proxy
    from runtime.fatigue import direction
    from runtime import simulate

    clip = clips.load_deepmimic(clips.deepmimic_clip_path(name))
    source = bench_source(clip, seconds)
    takes = {}
    for condition in conditions:
        t0 = time.perf_counter()
        sched, keys = (None, None) if condition == "fresh" else direction.preset_schedule(
            CONDITIONS[condition], 30.0, source.duration)
        takes[condition] = simulate.simulate_clip(source, sched, mode=mode, out_fps=30.0, tiredness=keys)
        print(_take_line(name, condition, takes[condition], source.duration, time.perf_counter() - t0), flush=True)
    record = measure_clip(name, source, takes, proxy.DEFAULT_HEIGHT, strips, effector_strips)
    return [record | {"kind": "bench"}]


def run_corpus_file(path: Path, rel: str, conditions: list[str], seconds: float | None, update_fps: bool,
                    mode: str | None, strips: Path | None, log_dir: Path, actions: list[str] | None,
                    effector_strips: Path | None = None) -> list[dict]:
    """Every action of one corpus file baked through tools/corpus.py (the button's calls), each take
    handed here as it is baked."""
    baked: dict[tuple, dict] = {}
    clock = {"t": time.perf_counter()}

    def on_take(row, condition, take, job):
        key = (row["armature"], row["action"])
        entry = baked.setdefault(key, {"source": job.request.clip, "height": float(job.request.height), "takes": {}})
        entry["takes"][condition] = take
        now = time.perf_counter()
        print(_take_line(f"{rel} [{row['action']}]", condition, take, job.request.clip.duration, now - clock["t"]),
              flush=True)
        clock["t"] = now

    rows = corpus.run_file(path, conditions, seconds, update_fps, log_dir, actions, None, mode, on_take=on_take)
    out = []
    for row in rows:
        label = f"{rel} [{row.get('action')}]"
        base = {"kind": "corpus", "file": rel, "armature": row.get("armature"), "action": row.get("action")}
        entry = baked.get((row.get("armature"), row.get("action")))
        if row["status"] != "baked" or entry is None or "fresh" not in entry["takes"]:
            out.append(base | {"clip": label, "status": row["status"], "message": row.get("message", "")})
            continue
        try:
            out.append(base | measure_clip(label, entry["source"], entry["takes"], entry["height"], strips,
                                           effector_strips))
        except Exception as exc:            # reported, never raised: the next action still counts
            log = log_dir / f"{Path(rel).name}.{row.get('action')}.realism.log".replace("|", "_")
            log.write_text(traceback.format_exc(), encoding="utf-8")
            out.append(base | {"clip": label, "status": "error", "message": f"{type(exc).__name__}: {exc} (log: {log})"})
    return out


def _child(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench")
    ap.add_argument("--file", type=Path)
    ap.add_argument("--rel")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--conditions", required=True)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--mode", default="srb")
    ap.add_argument("--strips", type=Path)
    ap.add_argument("--effector-strips", type=Path)
    ap.add_argument("--update-fps", action="store_true")
    ap.add_argument("--log-dir", type=Path, required=True)
    ap.add_argument("--actions")
    a = ap.parse_args(argv)
    conditions = a.conditions.split(",")
    if a.bench:
        records = run_bench_clip(a.bench, conditions, a.seconds, a.mode, a.strips, a.effector_strips)
    else:
        records = run_corpus_file(a.file, a.rel, conditions, a.seconds, a.update_fps, a.mode, a.strips, a.log_dir,
                                  a.actions.split(",") if a.actions else None, a.effector_strips)
    a.out.write_text(json.dumps(records, default=float), encoding="utf-8")
    return 0


@dataclass(frozen=True)
class Job:
    label: str
    args: list[str]          # the child's arguments naming its clip or file
    cost: float              # rough seconds of source, to start the longest first


_print_lock = threading.Lock()


def run_job(job: Job, common: list[str], log_dir: Path) -> list[dict]:
    """One clip or file in its own Python process, its progress lines printed as they come; a crash
    there is this job's error, not the run's."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "records.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--out", str(out), "--log-dir", str(log_dir)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        proc = subprocess.Popen(cmd + job.args + common, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env)
        tail = []
        for line in proc.stdout:
            tail = (tail + [line])[-200:]
            if line.startswith("  "):
                with _print_lock:
                    print(line.rstrip(), flush=True)
        proc.wait()
        if proc.returncode == 0 and out.is_file():
            return json.loads(out.read_text(encoding="utf-8"))
        log = log_dir / f"{Path(job.label).name}.crash.log"
        log.write_text("".join(tail), encoding="utf-8")
        return [{"clip": job.label, "status": "error",
                 "message": f"the bake process exited with {proc.returncode} (log: {log})"}]


def _corpus_cost(cf: corpus_import.CorpusFile, seconds: float | None) -> float:
    frames, fps = cf.meta.get("frames"), float(cf.meta.get("fps") or 24.0)
    length = (sum(max(b - a, 1.0) for a, b in frames.values()) / 24.0 if isinstance(frames, dict)
              else float(frames or 100) / fps)
    if seconds is not None:
        length = min(length, seconds * (len(frames) if isinstance(frames, dict) else 1))
    return length


def plan_jobs(a) -> list[Job]:
    parts = [p for p in (a.clips or "").split(",") if p]
    jobs = []
    if not a.corpus_only:
        for name in clips.DEEPMIMIC_CLIPS:
            if parts and name not in [p.lower() for p in parts]:
                continue
            cost = a.seconds or BENCH_LOOP_SECONDS
            jobs.append(Job(name, ["--bench", name], cost))
    if not a.no_corpus:
        for cf in corpus_import.corpus_files(a.corpus, ("MANIFEST.json", corpus_import.NEXT_MANIFEST)):
            if not cf.humanoid or (parts and not any(p.lower() in cf.rel.lower() for p in parts)):
                continue
            args = ["--file", str(cf.path), "--rel", cf.rel]
            if cf.fmt == "bvh" and a.bvh_import == "update":
                args.append("--update-fps")
            if a.actions:
                args += ["--actions", a.actions]
            jobs.append(Job(cf.rel, args, _corpus_cost(cf, a.seconds)))
    return sorted(jobs, key=lambda j: -j.cost)


# -- report -----------------------------------------------------------------------------------
def _cell(v, fmt: str, unit: str = "", width: int = 7) -> str:
    return (format(v, fmt) + unit if v is not None else "-").rjust(width)


HEADER = (f"{'clip':44s} {'condition':9s} {'speed':>7s} {'stride':>7s} {'cadence':>7s} {'rest/10s':>8s} "
          f"{'stretch':>7s} {'fin':>3s} {'fell':>7s} {'trunk':>6s} {'head':>6s} {'bend95':>6s} {'breath':>6s} {'eff95':>6s}")


def table_lines(records: list[dict]) -> list[str]:
    """Per clip: the source, the fresh take (absolute numbers: m/s, m, steps/min, degrees), and each
    tired take against it (speed, stride, cadence as ratios; trunk and head pitch as changes)."""
    lines = [HEADER]
    for r in records:
        if r.get("status") != "baked":
            lines.append(f"{r['clip'][:44]:44s} {r.get('status', '').upper()}: {r.get('message', '')}")
            continue
        s = r["source"]
        lines.append(f"{r['clip'][:44]:44s} {'source':9s} {'':7s} {'':7s} {'':7s} {'':8s} {_cell(s['seconds'], '.1f', 's')} "
                     f"{'':3s} {'':7s} {_cell(s['trunk_pitch_deg'], '+.1f', '', 6)} {_cell(s['head_pitch_deg'], '+.1f', '', 6)} "
                     f"{_cell(s['head_chest_bend_p95_deg'], '.1f', '', 6)}")
        for c, t in r["takes"].items():
            ch = r["changes"].get(c)
            if ch is None:
                gait_cells = (_cell(t["speed_mps"], ".2f", "m/s"), _cell(t["stride_m"], ".2f", "m"),
                              _cell(t["cadence_spm"], ".0f"))
                posture = (t["trunk_pitch_deg"], t["head_pitch_deg"])
            else:
                gait_cells = (_cell(ch["speed_ratio"], ".2f", "x"), _cell(ch["stride_ratio"], ".2f", "x"),
                              _cell(ch["cadence_ratio"], ".2f", "x"))
                posture = (ch["trunk_pitch_change_deg"], ch["head_pitch_change_deg"])
            fell = f"@{t['fall_time_s']:.1f}s" if t["fell"] else "-"
            lines.append(f"{'':44s} {c:9s} {' '.join(gait_cells)} {_cell(t['rests_per_10s'], '.1f', '', 8)} "
                         f"{_cell(t['stretch'], '.2f')} {'yes' if t['finished'] else 'NO':>3s} {fell:>7s} "
                         f"{_cell(posture[0], '+.1f', '', 6)} {_cell(posture[1], '+.1f', '', 6)} "
                         f"{_cell(t['head_chest_bend_p95_deg'], '.1f', '', 6)} {_cell(t['breath_per_min'], '.1f', '', 6)} "
                         f"{_cell(r['effectors'][c]['effector_p95_m'], '.3f', '', 6)}")
    return lines


def summarise(records: list[dict], conditions: list[str]) -> dict:
    baked = [r for r in records if r.get("status") == "baked"]
    tired = [c for c in conditions if c != "fresh"]
    scores = [(r, c, s) for r in baked for c in tired for s in r["scores"].get(c, [])]
    per_condition = {c: [s["right"] for r, cc, s in scores if cc == c] for c in tired}
    per_expectation = {e.name: [s["right"] for _, _, s in scores if s["expectation"] == e.name] for e in EXPECTED}
    takes = [(r, c, t) for r in baked for c, t in r["takes"].items()]
    bent = [f"{r['clip']} {c} ({t['head_chest_bend_p95_deg']:.0f} deg; source {r['source']['head_chest_bend_p95_deg']:.0f})"
            for r, c, t in takes if t["head_chest_bend_p95_deg"] > BEND_LIMIT_DEG
            and r["source"]["head_chest_bend_p95_deg"] <= BEND_LIMIT_DEG]
    right = [s["right"] for _, _, s in scores]
    return {
        "clips": len(records), "baked": len(baked),
        "not_baked": [f"{r['clip']}: {r.get('status')}: {r.get('message', '')}" for r in records if r.get("status") != "baked"],
        "direction_right": sum(right), "directions": len(right),
        "direction_right_pct": 100.0 * sum(right) / len(right) if right else None,
        "by_condition": {c: {"right": sum(v), "of": len(v)} for c, v in per_condition.items()},
        "by_expectation": {k: {"right": sum(v), "of": len(v)} for k, v in per_expectation.items()},
        "takes": len(takes), "finished": sum(t["finished"] for _, _, t in takes),
        "not_finished": [f"{r['clip']} {c} ({t['source_seconds']:.1f} s of source, x{t['stretch']:.2f})"
                         for r, c, t in takes if not t["finished"]],
        "falls": [f"{r['clip']} {c} at {t['fall_time_s']:.1f} s ({t.get('fall_cause') or 'cause unknown'})"
                  for r, c, t in takes if t["fell"]],
        "bend_over_limit": bent,
        "effectors": effectors.summary([(r["clip"], c, m) for r in baked for c, m in r["effectors"].items()]),
    }


def summary_lines(s: dict) -> list[str]:
    pct = "-" if s["direction_right_pct"] is None else f"{s['direction_right_pct']:.0f} %"
    by_c = ", ".join(f"{c} {v['right']}/{v['of']}" for c, v in s["by_condition"].items())
    by_e = "; ".join(f"{k} {v['right']}/{v['of']}" for k, v in s["by_expectation"].items() if v["of"])
    lines = [f"direction right on {pct} ({s['direction_right']}/{s['directions']}) of the applicable reference "
             f"directions ({by_c or 'no tired condition'}); finished {s['finished']}/{s['takes']} takes; "
             f"falls: {', '.join(s['falls']) if s['falls'] else 'none'}",
             f"  by expectation: {by_e or '-'}",
             f"  head-chest bend p95 over {BEND_LIMIT_DEG:g} deg where the source stays below: "
             + (", ".join(s["bend_over_limit"]) if s["bend_over_limit"] else "none")]
    if s["not_finished"]:
        lines.append("  not finished: " + ", ".join(s["not_finished"]))
    if s["not_baked"]:
        lines.append("  not baked: " + "; ".join(s["not_baked"]))
    return lines + effectors.summary_lines(s["effectors"])


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--child":
        return _child(argv[1:])
    ap = argparse.ArgumentParser(prog="./fatigue realism", description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write every measure, change and score here")
    ap.add_argument("--strips", type=Path, metavar="DIR", help="write a stick strip per clip here (<clip>.png)")
    ap.add_argument("--clips", help="comma-separated bench clip names or parts of corpus paths (default: all)")
    ap.add_argument("--actions", help="corpus: comma-separated action names (default: every action)")
    ap.add_argument("--seconds", type=float, help="play at most the first S seconds of each clip "
                                                  f"(default: whole clips; bench loops {BENCH_LOOP_SECONDS:g} s)")
    ap.add_argument("--conditions", default=",".join(CONDITIONS), help="fresh,average,exhausted (fresh always runs)")
    ap.add_argument("--mode", choices=("srb", "torque"), default="srb", help="simulation mode (default srb)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes at once (default 2)")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--no-corpus", action="store_true", help="the bench clips only")
    where.add_argument("--corpus-only", action="store_true", help="the corpus files only")
    ap.add_argument("--bvh-import", choices=("default", "update"), default="update",
                    help="BVH: 'Update Scene FPS/Duration' ticked (default: the capture at its own speed, so rates "
                         "and rests per 10 s are in real seconds; torque mode refuses the slow-motion default "
                         "import), or the importer's defaults")
    ap.add_argument("--corpus", type=Path, default=corpus_import.CORPUS, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    conditions = ["fresh"] + [c for c in a.conditions.split(",") if c and c != "fresh"]
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        print(f"fatigue realism: unknown condition {bad[0]!r}: use {', '.join(CONDITIONS)}", file=sys.stderr)
        return 2
    if a.seconds is not None and not (0.5 <= a.seconds <= 600):
        print("fatigue realism: --seconds must be between 0.5 and 600", file=sys.stderr)
        return 2
    jobs = plan_jobs(a)
    if not jobs:
        print("fatigue realism: no clip matches (see --clips; the corpus lives in ../shared/corpus)", file=sys.stderr)
        return 2
    common = ["--conditions", ",".join(conditions), "--mode", a.mode]
    if a.seconds is not None:
        common += ["--seconds", str(a.seconds)]
    if a.strips is not None:
        common += ["--strips", str(a.strips.resolve())]
    effector_strips = (a.strips or Path(tempfile.mkdtemp(prefix="fatigue_realism_strips_"))).resolve()
    common += ["--effector-strips", str(effector_strips)]
    log_dir = Path(tempfile.mkdtemp(prefix="fatigue_realism_logs_"))
    print(f"realism: {len(jobs)} clips or files, {', '.join(conditions)}, {a.mode} mode, {a.jobs} at once", flush=True)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(lambda job: run_job(job, common, log_dir), jobs))
    order = {j.label: i for i, j in enumerate(sorted(jobs, key=lambda j: (j.args[0] != "--bench", j.label)))}
    records = [r for job, rs in sorted(zip(jobs, results), key=lambda jr: order[jr[0].label]) for r in rs]
    print()
    print("speed, stride, cadence: fresh in m/s, m, steps/min, tired as ratios to fresh; trunk, head: pitch forward "
          "(deg), fresh and source absolute, tired as the change at the same moments; bend95: head-to-chest bend, "
          "95th percentile (deg); breath: breaths/min (- : fresh takes do not breathe; a clip shorter than two breaths has no rate); "
          "eff95: worst end effector off the source, 95th percentile (m, 1.75 m body; a fresh take at the same frame)")
    for line in table_lines(records):
        print(line)
    summary = summarise(records, conditions)
    summary.update(wall_s=round(time.perf_counter() - t0, 1), jobs=a.jobs, cores=os.cpu_count(), mode=a.mode,
                   seconds=a.seconds, reference=str(REFERENCE))
    print()
    for line in summary_lines(summary):
        print(line)
    print(f"strips in {effector_strips}")
    if a.json is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"summary": summary,
                                      "expected": [asdict(e) | {"reference": e.reference()} for e in EXPECTED],
                                      "records": records}, indent=1, default=float), encoding="utf-8")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
