"""What a bake reports: the Last Bake panel's report, its one-line summary and the engine's label."""
from __future__ import annotations

import numpy as np

from ..runtime.body import proxy
from ..runtime.motion import metrics
from ..runtime.motion.take import tempo_phrase
from ..runtime.reference.support import FEET_ONLY
from .rig.rigify import SNAP_HINT


BEHIND_NOTICE_M = 0.1    # m: a take that ends this far short of the source's path says so in its summary


def engine_label(name: str) -> str:
    """runtime.engines.chooser's name of the engine that ran -> its label (the panel and the batch say it)."""
    from ..runtime.engines.chooser import LABELS

    return LABELS.get(name, name or "unknown")


def make_report(job, take, action, meshes) -> dict:
    rests = [e for e in take.events if e.get("kind") == "rest"]
    stopped = [e for e in take.events if e.get("kind") == "stopped"]
    falls = [e for e in take.events if e.get("kind") == "fall"]
    rf = np.asarray(take.residual_force, dtype=np.float64)
    stats = {k: float(v) for k, v in take.stats.items()}
    timings = dict(job.timings)
    timings["blender"] = sum(v for k, v in timings.items() if k in ("check", "read", "schedule", "write"))
    return {
        "armature": job.obj_name,
        "action": action.name,
        "source": job.source,
        "mode": take.mode,
        "support": take.notes.get("support", FEET_ONLY),
        "foot_placement": take.notes.get("foot_placement", "Raibert rule"),
        "effort_economy": take.notes.get("effort_economy", ""),
        "backend": job.backend,
        "engine": engine_label(take.engine),
        "source_frames": [job.frame_start, job.frame_end],
        "frames": int(take.frames),
        "take_frames": [job.frame_start, job.frame_start + int(take.frames) - 1],
        "fps": float(job.fps),
        "height": float(job.request.height),
        "mass": float(job.request.mass),
        "proportions": ({k: round(v, 3) for k, v in job.request.plan.ratios.items()}
                        if job.request.plan is not None else "default"),
        "duration_stretch": float(take.duration_stretch()),
        "peak_fatigue": take.peak_fatigue_by(proxy.dof_body_parts()),
        "peak_fatigue_by_region": take.peak_fatigue_by(proxy.dof_regions()),
        "seconds_sim": stats.get("seconds_simulated", 0.0),
        "realtime_x": stats.get("realtime_x", 0.0),
        "residual_force_bw_mean": metrics.residual_force_bw(take, float(job.request.mass))[0] if rf.size else 0.0,
        "fatigue": "off" if job.request.schedule is None else "on",
        "breathing": ([round(stats["breaths_per_min_peak"], 1), round(stats["breaths_per_min_end"], 1)]
                      if take.breath is not None and "breaths_per_min_peak" in stats else None),
        "tiredness": tiredness(stats),
        "rests": len(rests),
        "rest_frames": [int(e.get("frame", 0)) + job.frame_start for e in rests],
        "kneels": sum(e.get("kind") == "kneel" for e in take.events),
        "fell": bool(take.fell),
        "fall_frame": int(falls[0].get("frame", 0)) + job.frame_start if falls else None,
        "finished": bool(take.finished),
        "residual_force_max_n": float(np.linalg.norm(rf, axis=1).max()) if rf.size else 0.0,
        "residual_moment_nm_mean": stats.get("residual_moment_nm_mean", 0.0),
        "behind_source_m": stats.get("behind_source_m", 0.0),
        "notes": dict(take.notes),
        "warnings": all_warnings(job, take, stopped),
        "name_notes": [job.take_note] if job.take_note else [],
        "meshes": list(meshes),
        "keyed_on": keyed_on(job),
        "stats": stats,
        "timings": timings,
    }


def keyed_on(job) -> dict | None:
    """What a take on a generated Rigify rig was keyed on (None for a take keyed on its mapped
    bones): the controls, the IK/FK switches keyed to FK, how far the played DEF bones came from the
    simulation, and how to go back to IK."""
    done = getattr(job, "controls", None)
    if done is None:
        return None
    return {"controls": list(done.controls), "switches": list(done.switches),
            "played_error_m": round(done.error_m, 5), "played_error_p95_m": round(done.error_p95_m, 5),
            "to_ik": SNAP_HINT}


def tiredness(stats: dict) -> dict | None:
    """How tired the take was directed to be and how tired it got (runtime.fatigue.direction), for
    the panel: asked and reached at the start and the end, per body part at the end, the solved
    speed-up; None for a take whose rates ran as given."""
    if "tiredness_end_asked" not in stats:
        return None
    return {
        "asked": [round(stats["tiredness_start_asked"], 2), round(stats["tiredness_end_asked"], 2)],
        "reached": [round(stats["tiredness_start"], 2), round(stats["tiredness_end"], 2)],
        "parts": {part: round(stats[f"tiredness_end_{part}"], 2) for part in proxy.BODY_PARTS
                  if f"tiredness_end_{part}" in stats},
        "speed_up": round(stats["speed_up"], 3),
        "endurance_change": round(stats.get("endurance_change", 1.0), 3),
    }


def all_warnings(job, take, stopped: list) -> list[str]:
    """Every warning of the bake, each once: the job's (names, units, the retarget's reading), those
    the retarget added while writing the take (job.info), the playback's, why the take stopped and a
    tiredness the take was asked for and did not reach."""
    found = list(job.warnings) + list(job.info.warnings)
    found += ([take.notes["playback"]] if "playback" in take.notes else []) + [e["reason"] for e in stopped]
    found += [take.notes["tiredness"]] if "not reached" in take.notes.get("tiredness", "") else []
    return list(dict.fromkeys(found))


def summary(report: dict) -> str:
    """One line for the operator's INFO report."""
    peak = max(report["peak_fatigue"].items(), key=lambda kv: kv[1]) if report["peak_fatigue"] else ("-", 0.0)
    tempo = tempo_phrase(report["frames"], report["duration_stretch"], report["fell"],
                         report["source_frames"][1] - report["source_frames"][0] + 1)
    return (f"Baked '{report['action']}': {report['frames']} frames ({tempo}), "
            f"peak fatigue {peak[1]:.0%} ({peak[0]}), {report['rests']} rest(s)"
            + (f", tired {report['tiredness']['reached'][0]:.2f} -> {report['tiredness']['reached'][1]:.2f} "
               f"(asked {report['tiredness']['asked'][0]:.2f} -> {report['tiredness']['asked'][1]:.2f})"
               if report.get("tiredness") else "")
            + (f" ({report['kneels']} on its knees)" if report.get("kneels") else "")
            + ((f", FELL at frame {report['fall_frame']}" if report.get("fall_frame") is not None else ", FELL")
               if report["fell"] else "")
            + (f", ends {report['behind_source_m']:.1f} m short of the source's path (shorter tired strides)"
               if report.get("behind_source_m", 0.0) >= BEHIND_NOTICE_M else "")
            + ("" if report.get("finished", True) else ", UNFINISHED: too tired to play the whole source")
            + ("" if report.get("support", FEET_ONLY) == FEET_ONLY else f"; held up by {report['support']}"))
