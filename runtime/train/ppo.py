"""PPO for the SRB policy: torch for the update, numpy workers for the rollouts.

Why this shape: the simulator is single-threaded Python, so rollouts run in one process per core,
each stepping a few environments with the *numpy* policy the bake ships (runtime.srb.policy.Mlp) plus
Gaussian exploration; the main process turns the batch into a PPO update in torch.  Everything is
seeded; a checkpoint after every iteration lets a run stop at any time (a 10-minute command
limit, a session's end) and ``--resume`` continue it.  A resumed run is deterministic too, but
not bit-identical to an uninterrupted one (episodes in flight restart).
"""
from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..maths import repeatable
from ..srb import policy as pol
from . import srb_env


@dataclass
class Config:
    clips: list[str]
    kind: str = "window"
    augment: bool = False         # also mirrored and time-scaled copies of every clip (srb_env.variants)
    steps: int = 200_000          # control steps (1/30 s each) of experience in all
    workers: int = 2
    envs_per_worker: int = 8
    horizon: int = 64             # control steps per env per iteration
    hidden: tuple[int, ...] = (64, 64)
    gamma: float = 0.99           # ~3 s horizon at 30 Hz: a fall seconds after a bad step still counts
    lam: float = 0.95
    clip_ratio: float = 0.2
    epochs: int = 5
    minibatch: int = 1024
    lr: float = 3e-4
    init_log_std: float = -1.5    # exploration std 0.22 of the action range
    seed: int = 0
    held_out: list[str] = field(default_factory=list)
    split: str = ""               # "train": the clips are the fixed split's training side (runtime/train/split.py)
    actions: int = pol.ACTION_SIZE  # pol.ACTION_SIZES: with or without the tempo
    # Legs' RC where the corrections start, and where they are whole (policy.fatigue_gate).
    gate: tuple[float, float] | None = (0.9, 0.6)
    action_penalty: float = srb_env.ACTION_PENALTY  # per unit mean squared action applied
    # Loss per unit mean squared mean action: a correction no advantage asks for fades to the rule.
    mean_decay: float = 0.1

    @property
    def batch(self) -> int:
        return self.workers * self.envs_per_worker * self.horizon


COMPARE_EPISODES = 40   # training episodes acted out by the rule and by the trained policy's mean action


# -- networks -----------------------------------------------------------------------------------
def mlp(sizes: list[int], last_gain: float) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        linear = nn.Linear(sizes[i], sizes[i + 1])
        last = i == len(sizes) - 2
        nn.init.orthogonal_(linear.weight, gain=last_gain if last else math.sqrt(2.0))
        nn.init.zeros_(linear.bias)
        layers.append(linear)
        if not last:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers).double()


class ActorCritic(nn.Module):
    def __init__(self, obs_size: int, act_size: int, hidden: tuple[int, ...], init_log_std: float):
        super().__init__()
        # A tiny last layer: the untrained policy outputs ~0, i.e. the Raibert rule alone.
        self.actor = mlp([obs_size, *hidden, act_size], last_gain=0.01)
        self.critic = mlp([obs_size, *hidden, 1], last_gain=1.0)
        self.log_std = nn.Parameter(torch.full((act_size,), init_log_std, dtype=torch.float64))

    def to_numpy(self, obs_mean: np.ndarray, obs_std: np.ndarray) -> pol.Mlp:
        linears = [m for m in self.actor if isinstance(m, nn.Linear)]
        return pol.Mlp([m.weight.detach().numpy().T.copy() for m in linears],
                       [m.bias.detach().numpy().copy() for m in linears], obs_mean.copy(), obs_std.copy())


class Normaliser:
    """Running mean and variance of observations (frozen while a batch is collected and used)."""

    def __init__(self, size: int):
        self.count, self.mean, self.m2 = 1e-4, np.zeros(size), np.ones(size)

    def update(self, x: np.ndarray) -> None:
        n = len(x)
        mean, var = x.mean(axis=0), x.var(axis=0)
        delta = mean - self.mean
        total = self.count + n
        self.mean = self.mean + delta * n / total
        self.m2 = self.m2 + var * n + delta ** 2 * self.count * n / total
        self.count = total

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.maximum(self.m2 / self.count, 1e-6))

    def state(self) -> dict:
        return {"count": self.count, "mean": self.mean.tolist(), "m2": self.m2.tolist()}

    def load(self, state: dict) -> None:
        self.count, self.mean, self.m2 = state["count"], np.array(state["mean"]), np.array(state["m2"])


# -- rollout workers ----------------------------------------------------------------------------
def _worker(conn, clips: list[str], kind: str, envs: int, seed: int, augment: bool = False,
            gate: tuple[float, float] | None = None, action_penalty: float = srb_env.ACTION_PENALTY) -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    prepared = srb_env.prepare_all(clips, augment)
    pool = [srb_env.SrbEnv(prepared, kind, seed * 1000 + i, gate=gate, action_penalty=action_penalty)
            for i in range(envs)]
    obs = [env.reset() for env in pool]
    returns = [0.0] * envs
    lengths = [0] * envs
    while True:
        message = conn.recv()
        if message is None:
            return
        arrays, log_std, horizon, noise_seed = message
        policy = pol.Mlp.from_arrays(arrays)
        rng = np.random.default_rng(noise_seed)
        std = repeatable.exp(log_std)
        out = {k: [] for k in ("obs", "act", "rew", "fell", "over", "next_obs", "share")}
        finished = []
        for _ in range(horizon):
            for i, env in enumerate(pool):
                mean = policy(obs[i])
                act = mean + std * rng.standard_normal(mean.shape)
                nxt, r, fell, over = env.step(act)
                out["share"].append(env.share)
                out["obs"].append(obs[i])
                out["act"].append(act)
                out["rew"].append(r)
                out["fell"].append(fell)
                out["over"].append(over)
                out["next_obs"].append(nxt)
                returns[i] += r
                lengths[i] += 1
                if over:
                    finished.append({"clip": env.clip_name, "return": returns[i], "seconds": env.sim.time,
                                     "fell": fell})
                    returns[i], lengths[i] = 0.0, 0
                    nxt = env.reset()
                obs[i] = nxt
        # Time-major per env: reshape (horizon, envs, ...)
        batch = {k: np.asarray(v, dtype=np.float64).reshape(horizon, envs, -1) for k, v in out.items()}
        conn.send((batch, finished))


class Rollouts:
    """Persistent worker processes (spawned: no pybullet state is shared)."""

    def __init__(self, cfg: Config):
        ctx = mp.get_context("spawn")
        self.conns, self.procs = [], []
        for w in range(cfg.workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, cfg.clips, cfg.kind, cfg.envs_per_worker,
                                                     cfg.seed * 100 + w, cfg.augment, _gate(cfg.gate),
                                                     cfg.action_penalty), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def collect(self, mlp_: pol.Mlp, log_std: np.ndarray, horizon: int, seed: int):
        arrays = mlp_.arrays()
        for w, conn in enumerate(self.conns):
            conn.send((arrays, log_std, horizon, seed * 100 + w))
        results = [conn.recv() for conn in self.conns]
        batch = {k: np.concatenate([r[0][k] for r in results], axis=1) for k in results[0][0]}
        finished = [f for r in results for f in r[1]]
        return batch, finished

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def _gate(gate) -> tuple[float, float] | None:
    """A config's gate (a tuple, or a list read back from a checkpoint) as policy.fatigue_gate takes it."""
    return None if gate is None else (float(gate[0]), float(gate[1]))


# -- training -----------------------------------------------------------------------------------
def _gae(cfg: Config, values, next_values, rew, fell, over):
    """Advantages over a (T, N) batch; a fall is terminal, a time limit bootstraps."""
    T = rew.shape[0]
    adv = np.zeros_like(rew)
    last = np.zeros(rew.shape[1])
    for t in reversed(range(T)):
        alive = 1.0 - fell[t]
        delta = rew[t] + cfg.gamma * next_values[t] * alive - values[t]
        cont = 1.0 - over[t]
        last = delta + cfg.gamma * cfg.lam * cont * last
        adv[t] = last
    return adv, adv + values


def train(cfg: Config, out: Path, resume: bool = False, log=print, max_minutes: float | None = None) -> dict:
    """Train until ``cfg.steps`` control steps, or until ``max_minutes`` of this call have passed at the
    end of an iteration (at least one runs; its checkpoint is saved); returns the curve."""
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)
    obs_size = pol.observation_size(cfg.kind)
    if cfg.actions not in pol.ACTION_SIZES:
        raise ValueError(f"actions {cfg.actions}: use one of {pol.ACTION_SIZES}")
    net = ActorCritic(obs_size, cfg.actions, cfg.hidden, cfg.init_log_std)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    norm = Normaliser(obs_size)
    curve: list[dict] = []
    iteration, steps_done, wall_before = 0, 0, 0.0
    ckpt = out / "checkpoint.pt"
    if resume:
        if not ckpt.is_file():
            raise FileNotFoundError(f"--resume: no checkpoint in {out}")
        state = torch.load(ckpt, weights_only=False)
        if (state["config"]["clips"] != cfg.clips or state["config"]["kind"] != cfg.kind
                or state["config"].get("augment", False) != cfg.augment
                or state["config"].get("actions", pol.LANDING_VELOCITY) != cfg.actions
                or _gate(state["config"].get("gate")) != _gate(cfg.gate)):
            raise ValueError(f"--resume: the checkpoint in {out} was trained on {state['config']['clips']} "
                             f"({state['config']['kind']}, augment {state['config'].get('augment', False)}); "
                             f"give the same --clips, --kind, --augment, --no-tempo and --gate")
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        norm.load(state["norm"])
        curve, iteration, steps_done, wall_before = (state["curve"], state["iteration"], state["steps"],
                                                     state["wall_s"])
        log(f"resumed at iteration {iteration}, {steps_done} steps")
    rollouts = Rollouts(cfg)
    t0 = time.perf_counter()
    try:
        while steps_done < cfg.steps:
            with torch.no_grad():
                current = net.to_numpy(norm.mean, norm.std)
            batch, finished = rollouts.collect(current, net.log_std.detach().numpy().copy(), cfg.horizon,
                                               cfg.seed * 1_000_003 + iteration)
            T, N = batch["rew"].shape[:2]
            obs = batch["obs"].reshape(T * N, -1)
            stats = _update(cfg, net, opt, norm, batch, obs, iteration)
            norm.update(obs)
            steps_done += T * N
            iteration += 1
            wall = wall_before + time.perf_counter() - t0
            row = {"iteration": iteration, "steps": steps_done, "wall_s": round(wall, 1),
                   "episodes": len(finished),
                   "return_mean": float(np.mean([f["return"] for f in finished])) if finished else None,
                   "episode_s_mean": float(np.mean([f["seconds"] for f in finished])) if finished else None,
                   "fall_rate": float(np.mean([f["fell"] for f in finished])) if finished else None,
                   "reward_per_step": float(batch["rew"].mean()), **stats}
            curve.append(row)
            log(f"iter {iteration:4d} steps {steps_done:8d} wall {wall:7.0f}s reward/step "
                f"{row['reward_per_step']:.3f} falls {row['fall_rate'] if row['fall_rate'] is not None else '-'} "
                f"std {float(torch.exp(net.log_std.detach()).mean()):.3f}")
            torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "norm": norm.state(), "curve": curve,
                        "iteration": iteration, "steps": steps_done, "wall_s": wall, "config": asdict(cfg)},
                       out / "checkpoint.tmp")
            os.replace(out / "checkpoint.tmp", ckpt)
            # Checked after a checkpoint: every call makes progress, and stops on a saved iteration.
            if steps_done < cfg.steps and max_minutes is not None and time.perf_counter() - t0 > 60.0 * max_minutes:
                log("time limit of this call reached: stopping (continue with --resume)")
                break
    finally:
        rollouts.close()
    with torch.no_grad():
        final = net.to_numpy(norm.mean, norm.std)
    prepared = srb_env.prepare_all(cfg.clips, cfg.augment)
    familiar = srb_env.familiar_z2(final, cfg.kind, prepared, seed=cfg.seed, gate=_gate(cfg.gate))
    # The same episodes acted out by the rule alone and by the policy's mean action: did it learn?
    against_rule = {side: srb_env.mean_reward(m, cfg.kind, prepared, COMPARE_EPISODES, seed=cfg.seed + 1,
                                              gate=_gate(cfg.gate), action_penalty=cfg.action_penalty)
                    for side, m in (("rule", None), ("policy", final))}
    log("mean action over {episodes} training episodes: reward per step {r:.4f} (the rule alone {z:.4f}), "
        "falls {f} (the rule {g})".format(episodes=COMPARE_EPISODES, r=against_rule["policy"]["reward_per_step"],
                                          z=against_rule["rule"]["reward_per_step"],
                                          f=against_rule["policy"]["falls"], g=against_rule["rule"]["falls"]))
    export(cfg, net, norm, curve, out, familiar=familiar, against_rule=against_rule)
    return {"curve": curve, "steps": steps_done, "done": steps_done >= cfg.steps}


def _update(cfg: Config, net: ActorCritic, opt, norm: Normaliser, batch: dict, obs: np.ndarray,
            iteration: int) -> dict:
    """One PPO update.  The critic learns the return per step (return x (1 - gamma), about 1, not
    about 100), and actor and critic clip their gradients each on its own: with one clip over both,
    the critic's large early errors shrank the actor's steps to nothing.  Only steps where the
    policy acted (its fatigue gate open) teach the actor; elsewhere its action changed nothing.
    The mean action decays toward zero (``mean_decay``): where the advantages are noise (a small
    effect, a clipped or gated action) the corrections drifted to the range's ends and cost
    tracking (measured: mean actions of rms 0.4-2.0, reward per step 0.911 against the rule's 0.972)."""
    T, N = batch["rew"].shape[:2]
    mean, std = norm.mean, norm.std
    per_step = 1.0 - cfg.gamma

    def normed(x):
        return torch.from_numpy(np.clip((x - mean) / std, -10.0, 10.0))

    obs_t = normed(obs)
    with torch.no_grad():
        values = net.critic(obs_t).numpy().reshape(T, N) / per_step
        next_values = net.critic(normed(batch["next_obs"].reshape(T * N, -1))).numpy().reshape(T, N) / per_step
        act_t = torch.from_numpy(batch["act"].reshape(T * N, -1))
        dist = torch.distributions.Normal(net.actor(obs_t), net.log_std.exp())
        old_logp = dist.log_prob(act_t).sum(-1)
    adv, ret = _gae(cfg, values, next_values, batch["rew"][..., 0], batch["fell"][..., 0], batch["over"][..., 0])
    acted = (torch.from_numpy(batch["share"].reshape(-1) > 0.0) if "share" in batch
             else torch.ones(T * N, dtype=torch.bool))
    adv_t = torch.from_numpy(adv.reshape(-1))
    if bool(acted.any()):
        adv_t = (adv_t - adv_t[acted].mean()) / (adv_t[acted].std() + 1e-8)
    ret_t = torch.from_numpy(ret.reshape(-1) * per_step)
    actor_params = [*net.actor.parameters(), net.log_std]
    gen = torch.Generator().manual_seed(cfg.seed * 7919 + iteration)
    losses = []
    for _ in range(cfg.epochs):
        order = torch.randperm(len(obs), generator=gen)
        for start in range(0, len(obs), cfg.minibatch):
            idx = order[start:start + cfg.minibatch]
            value_loss = 0.5 * ((net.critic(obs_t[idx]).squeeze(-1) - ret_t[idx]) ** 2).mean()
            mean_action = net.actor(obs_t[idx])
            decay = cfg.mean_decay * (mean_action ** 2).mean()
            mine = idx[acted[idx]]
            if len(mine):
                dist = torch.distributions.Normal(mean_action[acted[idx]], net.log_std.exp())
                ratio = (dist.log_prob(act_t[mine]).sum(-1) - old_logp[mine]).exp()
                a = adv_t[mine]
                policy_loss = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip_ratio, 1 + cfg.clip_ratio) * a).mean()
            else:
                policy_loss = torch.zeros((), dtype=torch.float64)
            loss = policy_loss + 0.5 * value_loss + decay
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(actor_params, 0.5)
            nn.utils.clip_grad_norm_(net.critic.parameters(), 0.5)
            opt.step()
            losses.append((policy_loss.item(), value_loss.item()))
    return {"policy_loss": float(np.mean([l[0] for l in losses])), "value_loss": float(np.mean([l[1] for l in losses])),
            "acted_share": float(acted.double().mean())}


def export(cfg: Config, net: ActorCritic, norm: Normaliser, curve: list[dict], out: Path,
           name: str = "srb_policy", familiar: list[float] | None = None, against_rule: dict | None = None) -> Path:
    """Weights (.npz, numpy inference) and model card (.json) side by side, plus the curve PNG."""
    with torch.no_grad():
        mlp_ = net.to_numpy(norm.mean, norm.std)
    path = out / f"{name}.npz"
    np.savez(path, **mlp_.arrays())
    card = {
        "name": name,
        "kind": "srb",
        "observation": {"kind": cfg.kind, "size": pol.observation_size(cfg.kind),
                        "control_rate_hz": pol.POLICY_RATE, "reference_window_s": list(pol.REFERENCE_WINDOW),
                        "terms": "runtime/srb/policy.py: observe()", "normalisation": "obs_mean/obs_std in the .npz, "
                        "clipped to +-10 after normalising"},
        "action": {"size": cfg.actions, "layout": list(pol.ACTION_LAYOUT[:cfg.actions]),
                   "frame": "heading", "landing_scale_m": pol.LANDING_SCALE,
                   "velocity_scale_m_s": pol.VELOCITY_SCALE, "range": [-1, 1],
                   **({"tempo": f"keeps 1 + {pol.TEMPO_SCALE:g} min(a, 0) of the tempo rule's tempo"}
                      if cfg.actions > pol.LANDING_VELOCITY else {})},
        "network": {"hidden": list(cfg.hidden), "activation": "tanh", "output": "linear (mean action)"},
        "training": {"algorithm": "PPO", "clips": cfg.clips, "held_out": cfg.held_out,
                     "steps": curve[-1]["steps"] if curve else 0, "iterations": len(curve),
                     "wall_s": curve[-1]["wall_s"] if curve else 0.0, "seed": cfg.seed,
                     "hardware": f"{platform.machine()} {os.cpu_count()} cores, {cfg.workers} rollout workers",
                     "torch": torch.__version__,
                     "fatigue": {"fresh_share": srb_env.FRESH_SHARE, "time_scale": list(srb_env.TIME_SCALE_RANGE),
                                 "fitness": [0.0, 1.0], "initial_fatigue": [0.0, srb_env.INITIAL_FATIGUE_MAX]},
                     "reward": srb_env.REWARD_TERMS.replace("ACTION_PENALTY", f"{cfg.action_penalty:g}")
                     .replace("FALL_REWARD", f"{srb_env.FALL_REWARD:g}"),
                     "data": {"split": f"runtime/train/split.json ({cfg.split} side)" if cfg.split else "as given",
                              "bench": [c for c in cfg.clips if not c.endswith(".npz")],
                              "corpus": [Path(c).name.removesuffix(".fresh.npz") for c in cfg.clips if c.endswith(".npz")],
                              "augment": "mirrored, 0.8x and 1.25x" if cfg.augment else "none",
                              "long_takes": f"pieces of {srb_env.SEGMENT_SECONDS:g} s"},
                     "config": asdict(cfg),
                     **({"mean_action_against_rule": against_rule} if against_rule else {})},
        "evaluation": {},
    }
    if cfg.gate is not None:
        card["gate"] = {"fatigue_rc": list(_gate(cfg.gate)),
                        "about": "corrections fade in as the legs' weakest residual capacity falls from the first "
                                 "value to the second; a fresh body follows the rule (runtime/srb/policy.py)"}
    if familiar is not None:
        card["observation"]["familiar_z2"] = familiar
        card["observation"]["familiarity"] = pol.FAMILIARITY_NOTE
    (out / f"{name}.json").write_text(json.dumps(card, indent=1), encoding="utf-8")
    (out / "learning_curve.json").write_text(json.dumps(curve, indent=1), encoding="utf-8")
    _plot_curve(curve, out / "learning_curve.png")
    return path


def _plot_curve(curve: list[dict], path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    if not curve:
        return
    steps = np.array([c["steps"] for c in curve])
    width = max(1, len(curve) // 40)      # moving average over ~2.5 % of the run

    def smooth(values):
        values = np.asarray(values, dtype=np.float64)
        return np.convolve(values, np.ones(width) / width, mode="valid") if len(values) >= width else values

    fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
    reward = [c["reward_per_step"] for c in curve]
    ax[0].plot(steps, reward, color="0.8", lw=0.5)
    ax[0].plot(steps[width - 1:], smooth(reward), color="C0")
    ax[0].set_xlabel("control steps")
    ax[0].set_ylabel(f"reward per step (mean of {width} iterations)")
    falls = [(c["steps"], c["fall_rate"]) for c in curve if c["fall_rate"] is not None]
    if falls:
        x, y = (np.array(v) for v in zip(*falls))
        ax[1].plot(x[width - 1:] if len(y) >= width else x, smooth(y), color="C3")
    ax[1].set_xlabel("control steps")
    ax[1].set_ylabel("episodes ending in a fall")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
