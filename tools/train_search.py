"""./fatigue train search --out DIR [--iterations N] [--minutes M] [--resume] [--workers W]: a residual on
the tempo rule (runtime/srb/residual.py) trained by Augmented Random Search (runtime/train/ars.py) over
whole takes.

Episodes: the training side of the fixed split (the bench's training clips, every cached corpus
training action: ./fatigue train-clips), each under a directed preset drawn at random; a pair of
antithetic weights runs the same take.  A take's score (``score``): time-warped tracking, falls,
kneels, rests, time asking more than RC * strength, and the realism directions of ./fatigue realism
(tools/realism.py) against the rule's fresh take of the same source.  A quarter of the training
sources (runtime.train.take_search.held_back) never train: every --accept-every iterations the search's
weights are run against the accepted ones on them (same takes) and replace them only where the
bootstrap's lower bound of the paired gain is above 0.  DIR/residual.npz + .json always hold the
accepted weights (zero, the rule, until something beats it); DIR/candidate.npz + .json the search's
latest iterate (for evaluation only).

--corrections and --inputs hold the search to a subspace of the residual (the named corrections, each
from the named observations and its bias; the other weights stay zero): a hypothesis such as "a
tired body sits higher and yields less" (--corrections "pelvis lower,yield" --inputs "legs
capacity,trunk capacity,relative effort,COM height error,pitch off source": the shipped residual's
12 weights) needs far fewer takes than all 105 weights.

A checkpoint is written after every iteration (about a minute of takes each); --minutes stops the
call cleanly and --resume continues bit for bit.  --workers runs the takes of an iteration in that
many processes (a bigger machine); the iterates do not depend on it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import batch  # noqa: E402
import realism  # noqa: E402
from runtime.errors import CheckpointError  # noqa: E402
from runtime.srb import residual  # noqa: E402
from runtime.train import ars, clip_cache, split, take_search  # noqa: E402

MIN_SECONDS = 0.5           # a source shorter than this is a pose, not motion
# A take's score: higher is better.  Tracking in units of 10 degrees and 10 cm of the root's height
# (its horizontal distance from the source is a tired take's shorter strides, which realism asks for),
# a fall worth several of those, the realism directions right as a share.
TRACK_DEG, TRACK_M = 10.0, 0.1
FALL, KNEEL, REST, OVER, REALISM = 5.0, 2.0, 0.25, 5.0, 2.0
SCORE_TERMS = (f"-(joint error / {TRACK_DEG:g} deg + root height error / {TRACK_M:g} m) (time-warped: slower "
               f"and shorter strides are no error) - {FALL:g} fell "
               f"- {KNEEL:g} per kneel - {REST:g} per rest or halt - {OVER:g} x share of frames asking more than "
               f"RC x strength + {REALISM:g} x share of realism directions right (against the rule's fresh take)")
VALIDATION_PRESETS = ("Untrained", "Exhausted")

_SOURCES: list[take_search.Source] = []     # set before the workers fork
_FRESH: dict[str, object] = {}              # label -> the rule's fresh take (per process)


def score(source: take_search.Source, take, fresh) -> tuple[float, dict]:
    """(score, its parts) of a tired ``take`` of ``source`` (SCORE_TERMS); ``fresh``: the rule's fresh take."""
    t = take_search.terms(take, source.reference())
    record = realism.measure_clip(source.label, source.reference(), {"fresh": fresh, "tired": take},
                                  float(source.request.height), None)
    right = [s["right"] for s in record["scores"].get("tired", [])]
    share = sum(right) / len(right) if right else 0.0
    value = (-(t.joint_err_deg / TRACK_DEG + t.height_err_m / TRACK_M) - FALL * t.fell - KNEEL * t.kneels
             - REST * t.rests - OVER * t.over_share + REALISM * share)
    return float(value), {**t.__dict__, "realism_right": sum(right), "realism_directions": len(right)}


def _fresh(source: take_search.Source):
    if source.label not in _FRESH:
        _FRESH[source.label] = take_search.run(source.request, None)
    return _FRESH[source.label]


def _rollout(task: tuple[int, str, np.ndarray, np.ndarray, np.ndarray]) -> ars.Outcome:
    index, preset, weights, mean, std = task
    source = _SOURCES[index]
    policy = take_search.Recording(residual.Linear(weights, mean, std))
    take = take_search.run(take_search.tired_request(source, preset), policy)
    value, _ = score(source, take, _fresh(source))
    return ars.Outcome(value, policy.count, policy.total.copy(), policy.squares.copy())


class Runner:
    """Runs rollouts here (one worker) or in a pool of forked processes, results in order."""

    def __init__(self, workers: int):
        self.pool = get_context("fork").Pool(workers) if workers > 1 else None

    def map(self, tasks: list) -> list:
        return self.pool.map(_rollout, tasks, chunksize=1) if self.pool else [_rollout(t) for t in tasks]

    def close(self) -> None:
        if self.pool:
            self.pool.close()
            self.pool.join()


def sources(cache: Path, seconds: float) -> list[take_search.Source]:
    """The training side of the fixed split as whole-take sources (poses under MIN_SECONDS out)."""
    s = split.load()
    out = [take_search.bench_source(n, seconds) for n in s.bench_train_clips]
    for action in clip_cache.actions(cache, "train"):
        src = take_search.corpus_source(action)
        if src.request.clip.duration >= MIN_SECONDS:
            out.append(src)
    return out


def _validation(held: list[int], count: int, presets=VALIDATION_PRESETS) -> list[tuple[int, str]]:
    pairs = [(i, p) for p in presets for i in held]
    return pairs[:count]


def accept_check(search: ars.Search, runner: Runner, held: list[int], count: int, log) -> dict:
    """Search weights against the accepted ones on the held-back takes: accept where the paired
    bootstrap's lower bound is above 0.  Returns the row recorded in the checkpoint."""
    meta = search.meta
    episodes = _validation(held, count, meta.get("validation_presets", VALIDATION_PRESETS))
    accepted = meta["accepted"]
    tasks = []
    if accepted.get("scores") is None:
        tasks += [(i, p, np.array(accepted["weights"]), np.array(accepted["mean"]), np.array(accepted["std"]))
                  for i, p in episodes]
    mean, std = search.normaliser.mean, search.normaliser.std
    tasks += [(i, p, search.weights, mean, std) for i, p in episodes]
    outcomes = runner.map(tasks)
    if accepted.get("scores") is None:
        accepted["scores"] = [o.score for o in outcomes[:len(episodes)]]
        outcomes = outcomes[len(episodes):]
    new = [o.score for o in outcomes]
    diff = np.array(new) - np.array(accepted["scores"])
    bound = ars.paired_lower_bound(diff, seed=search.iteration)
    row = {"iteration": search.iteration, "episodes": len(episodes), "mean_gain": float(diff.mean()),
           "lower_bound": bound, "accepted": bool(bound > 0.0)}
    if row["accepted"]:
        meta["accepted"] = {"weights": search.weights.tolist(), "mean": mean.tolist(), "std": std.tolist(),
                            "scores": new, "iteration": search.iteration}
    meta.setdefault("acceptance", []).append(row)
    log(f"acceptance at iteration {search.iteration}: mean gain {row['mean_gain']:+.4f} over {len(episodes)} "
        f"held-back takes, lower bound {bound:+.4f}: {'accepted' if row['accepted'] else 'kept the current weights'}")
    return row


def write_outputs(search: ars.Search, out: Path, labels: list[str], held: list[int], wall: float) -> None:
    """The accepted residual and its card, the curve (JSON, PNG)."""
    a = search.meta["accepted"]
    policy = residual.ResidualPolicy(residual.Linear(np.array(a["weights"]), np.array(a["mean"]), np.array(a["std"])))
    policy.save(out / "residual.npz", {
        "name": "residual (ARS)", "training": {
            "sources": [lbl for i, lbl in enumerate(labels) if i not in held],
            "held_back": [labels[i] for i in held], "presets": list(take_search.PRESETS),
            "iterations": search.iteration, "takes": 2 * search.config.directions * search.iteration,
            "wall_s": round(wall, 1), "hardware": f"{platform.machine()} {os.cpu_count()} cores",
            "config": search.config.__dict__, "score": SCORE_TERMS,
            "subspace": search.meta.get("subspace") or "every weight"},
        "accepted_at_iteration": a.get("iteration"), "acceptance": search.meta.get("acceptance", [])})
    candidate = residual.ResidualPolicy(residual.Linear(search.weights, search.normaliser.mean, search.normaliser.std))
    candidate.save(out / "candidate.npz", {"name": f"residual (ARS iterate {search.iteration}, not accepted)",
                                           "training": {"iterations": search.iteration, "score": SCORE_TERMS}})
    (out / "curve.json").write_text(json.dumps(search.curve, indent=1), encoding="utf-8")
    plot_curve(search.curve, search.meta.get("acceptance", []), out / "curve.png")


def plot_curve(curve: list[dict], acceptance: list[dict], path: Path) -> None:
    """The pairs' scores per iteration, and each acceptance check's paired gain (PNG)."""
    import bench_plots       # matplotlib, headless
    plt = bench_plots.plt
    if not curve:
        return
    it = [c["iteration"] for c in curve]
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
    ax[0].plot(it, [c["mean"] for c in curve], color="C0", label="mean of the pairs")
    ax[0].plot(it, [c["best"] for c in curve], color="0.6", lw=0.8, label="best of the pairs")
    ax[0].set_xlabel("iteration")
    ax[0].set_ylabel("take score")
    ax[0].legend(fontsize=7)
    if acceptance:
        ax[1].axhline(0.0, color="0.7", lw=0.8)
        ax[1].plot([a["iteration"] for a in acceptance], [a["mean_gain"] for a in acceptance], "o-", color="C2",
                   label="mean gain vs accepted")
        ax[1].plot([a["iteration"] for a in acceptance], [a["lower_bound"] for a in acceptance], "v", color="C3",
                   label="bootstrap lower bound")
        ax[1].legend(fontsize=7)
    ax[1].set_xlabel("iteration")
    ax[1].set_ylabel("held-back gain")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def subspace(corrections: str | None, inputs: str | None) -> tuple[np.ndarray | None, dict | None, str | None]:
    """(free mask, its names for the card, problem) from the comma-separated names given."""
    if corrections is None and inputs is None:
        return None, None, None
    rows = [c.strip() for c in corrections.split(",")] if corrections else list(residual.CORRECTIONS)
    cols = [o.strip() for o in inputs.split(",")] if inputs else list(residual.OBSERVATION)
    for given, known, flag in ((rows, residual.CORRECTIONS, "--corrections"), (cols, residual.OBSERVATION, "--inputs")):
        unknown = [g for g in given if g not in known]
        if unknown or not given:
            return None, None, f"{flag}: {', '.join(unknown) or 'none given'} not among: {', '.join(known)}"
    free = np.zeros(residual.weight_shape())
    for r in rows:
        i = residual.CORRECTIONS.index(r)
        free[i, -1] = 1.0
        for c in cols:
            free[i, residual.OBSERVATION.index(c)] = 1.0
    return free, {"corrections": rows, "inputs": cols}, None


def _fail(message: str) -> int:
    print(f"fatigue: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="./fatigue train search", description=__doc__)
    ap.add_argument("--out", type=Path, required=True, help="folder for the checkpoint, the residual and its curve")
    ap.add_argument("--iterations", type=int, default=200, help="ARS iterations in all (across --resume)")
    ap.add_argument("--minutes", type=float, help="stop this call after this many minutes (resumable)")
    ap.add_argument("--resume", action="store_true", help="continue the run in --out")
    ap.add_argument("--workers", type=int, default=1, help="processes running an iteration's takes")
    ap.add_argument("--cache", type=Path, default=ROOT / "out" / "train_clips",
                    help="where ./fatigue train-clips cached the corpus (none there: bench clips only)")
    ap.add_argument("--seconds", type=float, default=take_search.LOOP_SECONDS, help="how long a looping clip plays")
    ap.add_argument("--directions", type=int, default=ars.Config.directions)
    ap.add_argument("--top", type=int, default=ars.Config.top)
    ap.add_argument("--step", type=float, default=ars.Config.step)
    ap.add_argument("--noise", type=float, default=ars.Config.noise)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corrections", help="search only these corrections (comma-separated; default all)")
    ap.add_argument("--inputs", help="... from only these observations and a bias (comma-separated; default all)")
    ap.add_argument("--accept-every", type=int, default=5, help="iterations between acceptance checks")
    ap.add_argument("--validation", type=int, default=8, help="held-back takes per acceptance check")
    ap.add_argument("--validation-presets", default=",".join(VALIDATION_PRESETS),
                    help="presets of those takes (comma-separated, a new run only: a resumed one keeps its own)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
    problem = batch.writable_problem(args.out, folder=True)
    if problem:
        return _fail(f"--out: {problem}")
    if args.iterations <= 0 or args.workers <= 0 or args.accept_every <= 0 or args.validation <= 0:
        return _fail("--iterations, --workers, --accept-every and --validation must be positive")
    config = ars.Config(args.directions, args.top, args.step, args.noise, args.seed)
    if config.problem():
        return _fail(config.problem())
    shape, observations = residual.weight_shape(), residual.observation_size()
    free, names, problem = subspace(args.corrections, args.inputs)
    if problem:
        return _fail(problem)
    validation_presets = [p.strip() for p in args.validation_presets.split(",") if p.strip()]
    if not validation_presets or any(p not in take_search.PRESETS for p in validation_presets):
        return _fail(f"--validation-presets: give some of {', '.join(take_search.PRESETS)}")
    search = None
    if args.resume:
        try:
            search = ars.Search.load(args.out, shape, observations)
        except CheckpointError as exc:
            return _fail(str(exc))
    all_sources = sources(args.cache, args.seconds)
    labels = [s.label for s in all_sources]
    held = [i for i, lbl in enumerate(labels) if take_search.held_back(lbl)]
    training = [i for i in range(len(labels)) if i not in held]
    if not training or not held:
        return _fail("no training or no held-back sources: run ./fatigue train-clips first")
    if search is not None:
        if search.meta.get("sources") != labels:
            return _fail(f"--resume: the checkpoint in {args.out} trained on other sources (the corpus cache "
                         "changed): start a new run in another folder")
        if names is not None and names != search.meta.get("subspace"):
            return _fail(f"--resume: the checkpoint in {args.out} searches another subspace "
                         f"({search.meta.get('subspace') or 'every weight'}): resume without --corrections and --inputs")
    else:
        zero = residual.Linear.zero()
        search = ars.Search.start(config, shape, observations, {
            "sources": labels, "accepted": {"weights": zero.weights.tolist(), "mean": zero.obs_mean.tolist(),
                                            "std": zero.obs_std.tolist(), "scores": None, "iteration": 0},
            "validation_presets": validation_presets, **({"subspace": names} if names else {})}, free)
    _SOURCES[:] = all_sources
    episodes = [(i, p) for i in training for p in take_search.PRESETS]
    print(f"{len(training)} training sources, {len(held)} held back; {len(episodes)} episodes; "
          f"{search.iteration} iterations done", flush=True)
    t0 = time.perf_counter()
    wall_before = float(search.meta.get("wall_s", 0.0))
    runner = Runner(args.workers)
    try:
        while search.iteration < args.iterations:
            deltas, _, rollouts = search.plan(len(episodes))
            tasks = [(*episodes[r.episode], r.weights, r.obs_mean, r.obs_std) for r in rollouts]
            row = search.update(deltas, runner.map(tasks))
            print(f"iteration {row['iteration']}: score mean {row['mean']:+.4f}, best {row['best']:+.4f}, "
                  f"sigma {row['sigma']:.4f}, |W| {row['weight_norm']:.4f}  ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
            if search.iteration % args.accept_every == 0:
                accept_check(search, runner, held, args.validation, print)
            search.meta["wall_s"] = wall_before + time.perf_counter() - t0
            search.save(args.out)
            write_outputs(search, args.out, labels, held, search.meta["wall_s"])
            if args.minutes is not None and time.perf_counter() - t0 >= 60.0 * args.minutes:
                break
    finally:
        runner.close()
    done = search.iteration >= args.iterations
    print(f"{'finished' if done else 'stopped'} at iteration {search.iteration}; wrote {args.out / 'residual.npz'} "
          f"(accepted at iteration {search.meta['accepted'].get('iteration')}), its card and the curve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
