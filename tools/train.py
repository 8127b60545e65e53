"""./fatigue train srb (--clips a,b | --split train) --steps N --out DIR [--minutes M] [--resume]: train an SRB policy.
(./fatigue train search ...: the residual on the tempo rule, tools/train_search.py.)

``--clips`` names DeepMimic clips or corpus actions cached by ``./fatigue train-clips`` (their
.npz); ``--split train`` is the training side of the fixed split (runtime/train/split.json): the
bench's training clips and every cached training-side corpus action the SRB carries (floor work
and sources under MIN_SECONDS are left out, each named), the evaluation side held out.

Rollouts run in one process per worker (default: the cores available, at most 16), the update in
torch on one thread.  A checkpoint is written after every iteration; ``--minutes`` stops this call
cleanly (continue with ``--resume``), so long runs split into chunks that fit a session.  The
result is DIR/srb_policy.npz + .json (weights for numpy inference and the model card), the
learning curve (JSON + PNG).  Ship one by copying both files to models/.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import batch  # noqa: E402

from runtime.motion import clip as clips  # noqa: E402
from runtime.srb import policy as pol  # noqa: E402


MIN_SECONDS = 0.5      # --split: a source shorter than this is a pose, not motion to learn from


def split_sources(cache: Path) -> tuple[list[str], list[str]]:
    """(training sources, held-out sources) of the fixed split: bench clip names and the cached
    corpus actions' fresh requests (runtime.train.clip_cache)."""
    from runtime.train import clip_cache, split

    s = split.load()
    train = s.bench_train_clips + [a.requests["fresh"] for a in clip_cache.actions(cache, "train")]
    held = s.bench_eval_clips + [a.requests["fresh"] for a in clip_cache.actions(cache, "eval")]
    return train, held


def _fail(message: str) -> int:
    print(f"fatigue: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    if argv[:1] == ["search"]:      # the residual on the tempo rule, trained by random search
        import train_search

        return train_search.main(argv[1:])
    ap = argparse.ArgumentParser(prog="./fatigue train", description=__doc__)
    ap.add_argument("what", choices=["srb"], help="which policy (srb: the SRB-mode foot placement policy)")
    ap.add_argument("--clips", help="comma-separated DeepMimic clip names or cached corpus actions (.npz) to train on")
    ap.add_argument("--split", choices=["train"], help="train on the training side of the fixed split")
    ap.add_argument("--cache", type=Path, default=ROOT / "out" / "train_clips",
                    help="where ./fatigue train-clips cached the corpus (for --split)")
    ap.add_argument("--held-out", default="", help="clips kept out of training, named in the model card")
    ap.add_argument("--steps", type=int, required=True, help="control steps (1/30 s each) of experience")
    ap.add_argument("--out", type=Path, required=True, help="directory for checkpoint, weights, card, curve")
    ap.add_argument("--resume", action="store_true", help="continue the run in --out")
    ap.add_argument("--kind", default="window", choices=pol.KINDS,
                    help="window: a general policy reading the reference ahead; phase: a per-clip policy")
    ap.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--envs", type=int, default=8, help="environments per worker")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--minutes", type=float, help="stop this call after this many minutes (resumable)")
    ap.add_argument("--augment", action="store_true",
                    help="also train on every clip mirrored and played 0.8x / 1.25x as fast (general policies)")
    ap.add_argument("--no-tempo", action="store_true",
                    help="landing and COM velocity corrections only (no tempo action; runtime/srb/policy.py)")
    ap.add_argument("--gate", default="0.9,0.6",
                    help="legs' residual capacity where the corrections start and where they are whole "
                         "('none': the policy acts on a fresh body too)")
    ap.add_argument("--action-penalty", type=float, default=None,
                    help="reward lost per unit mean squared action applied (default: runtime/train/srb_env.py)")
    ap.add_argument("--gamma", type=float, default=None, help="discount per control step (default 0.99: about 3 s)")
    ap.add_argument("--init-log-std", type=float, default=None, help="log of the starting exploration std")
    ap.add_argument("--lr", type=float, default=None, help="Adam learning rate (default 3e-4)")
    ap.add_argument("--mean-decay", type=float, default=None,
                    help="loss per unit mean squared mean action: pulls corrections nothing asks for to zero")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
    if (args.clips is None) == (args.split is None):
        return _fail("give either --clips or --split train")
    problem = batch.writable_problem(args.out, folder=True)
    if problem:
        return _fail(f"--out: {problem}")
    from runtime.errors import TrainingClipError
    from runtime.train import srb_env

    if args.split:
        names, held = split_sources(args.cache)
        if not any(n.endswith(".npz") for n in names):
            return _fail(f"--split: no corpus cached in {args.cache}: run ./fatigue train-clips first")
    else:
        names = [n.strip() for n in args.clips.split(",") if n.strip()]
        held = [n.strip() for n in args.held_out.split(",") if n.strip()]
    for name in names + held:
        if name not in clips.DEEPMIMIC_CLIPS and not (name.endswith(".npz") and Path(name).is_file()):
            return _fail(f"unknown clip {name!r}; choose from {', '.join(clips.DEEPMIMIC_CLIPS)} "
                         "or a corpus action cached by ./fatigue train-clips (.npz)")
    if set(names) & set(held):
        return _fail(f"clip {sorted(set(names) & set(held))[0]!r} is both trained on and held out")
    if args.steps <= 0 or args.workers <= 0 or args.envs <= 0:
        return _fail("--steps, --workers and --envs must be positive")
    if args.action_penalty is not None and args.action_penalty < 0.0:
        return _fail("--action-penalty must not be negative")
    if args.gamma is not None and not 0.0 < args.gamma < 1.0:
        return _fail("--gamma must be between 0 and 1")
    if args.lr is not None and args.lr <= 0.0:
        return _fail("--lr must be positive")
    gate = None
    if args.gate.strip().lower() != "none":
        try:
            gate = tuple(float(v) for v in args.gate.split(","))
        except ValueError:
            gate = ()
        if len(gate) != 2 or not 1.0 >= gate[0] > gate[1] >= 0.0:
            return _fail(f"--gate {args.gate!r}: give FRESH,TIRED with 1 >= FRESH > TIRED >= 0, or none")
    if args.kind == "phase" and len(names) != 1:
        return _fail("a phase policy is per clip: give exactly one clip (or use --kind window)")
    if args.kind == "phase" and args.augment:
        return _fail("--augment is for window policies: a phase policy cannot tell a mirrored clip from its original")
    try:
        import torch  # noqa: F401
    except ImportError:
        return _fail("training needs torch: pip install torch==2.13.0 (./fatigue train installs it)")
    from runtime.train import ppo

    kept = []
    for name in names:   # refuse floor work before spawning workers (--split: leave it out)
        try:
            source = srb_env.load_source(name)[0]
            if args.split and source.duration < MIN_SECONDS:
                print(f"left out {name}: {source.duration:.2f} s, shorter than {MIN_SECONDS} s")
                continue
            if len(srb_env.segments(source)) == 1 and not args.augment:
                srb_env.prepare(name, seconds=1.0)
            elif not srb_env.prepare_all([name], args.augment):
                srb_env.prepare(name, seconds=1.0)        # raises: every variant or piece is floor work
            kept.append(name)
        except TrainingClipError as exc:
            if not args.split:
                return _fail(str(exc))
            print(f"left out {name}: floor work")
    names = kept
    if args.resume and not (args.out / "checkpoint.pt").is_file():
        return _fail(f"--resume: no checkpoint in {args.out}")
    tuning = {k: v for k, v in (("action_penalty", args.action_penalty), ("gamma", args.gamma),
                                ("init_log_std", args.init_log_std), ("lr", args.lr), ("mean_decay", args.mean_decay))
              if v is not None}
    cfg = ppo.Config(clips=names, kind=args.kind, steps=args.steps, workers=args.workers,
                     envs_per_worker=args.envs, seed=args.seed, held_out=held, augment=args.augment,
                     split=args.split or "", actions=pol.LANDING_VELOCITY if args.no_tempo else pol.ACTION_SIZE,
                     gate=gate, **tuning)
    try:
        result = ppo.train(cfg, args.out, resume=args.resume, max_minutes=args.minutes)
    except ValueError as exc:
        return _fail(str(exc))
    except OSError as exc:         # checked before the run; something changed since (a full disk, a removed folder)
        return _fail(f"--out: cannot write {exc.filename or args.out} ({exc.strerror or exc}): give another folder")
    print(f"{'finished' if result['done'] else 'stopped'} at {result['steps']} steps; wrote "
          f"{args.out / 'srb_policy.npz'}, its card and the learning curve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
