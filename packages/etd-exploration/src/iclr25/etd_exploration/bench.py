"""Cost of ETD's intrinsic reward (arXiv 2501.15418, Sec. 4) as a fraction of one PPO iteration, by episode length.

One PPO iteration at the official sizes (16 envs x 512 steps, minibatch 512, 4 epochs) without a bonus is timed on a
real MiniGrid env; ETD's share is timed separately on the same sizes, with episodes of exactly `episode_len` steps
whose phases are staggered across envs, after a warm-up of `episode_len` steps so that the episodic memories hold
their steady-state sizes (uniform on 0..L-1). Reported per length (CPU seconds, one torch thread):

- `score_s`: scoring the rollout's 8,192 transitions against the memories (encoding s', one masked min per step);
- `refresh_s`: re-encoding every stored observation after the model update (`stale_features=False`);
- `train_s`: the critic's 64 contrastive steps (one per PPO minibatch, as in the official code);
- `ppo_s`: the no-bonus PPO iteration (env stepping, policy, GAE, PPO update);
- `reward_fraction = (score_s + refresh_s) / ppo_s` and `total_fraction = (score_s + refresh_s + train_s) / ppo_s`.

`ppo_s`, `score_s` and `refresh_s` are each the best of `repeats` (3) timings: on a shared machine other jobs only
ever add time, and more to the memory-bound scoring than to the compute-bound PPO iteration. `ppo_first_s` is the
process's first PPO iteration, timed before them (it carries one-time start-up costs; earlier tables used it).

`full_preset_profile` (the `profile` verb): CPU seconds by part of one official-size iteration (no bonus, ETD, DEIR),
env stepping on each task of the full preset, the ATen ops and FLOPs of every model part, and from them an estimate
of the full preset's time on one GPU under the stated per-op cost and FLOP rate (an estimate, not a measurement).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from iclr25.etd_exploration.config import PPOConfig
from iclr25.etd_exploration.etd import ETDReward
from iclr25.etd_exploration.ppo import train


def ppo_iteration_seconds(
    n_envs: int = 16, n_steps: int = 512, batch_size: int = 512, seed: int = 0, repeats: int = 1
) -> float:
    """CPU seconds of one no-bonus PPO iteration (rollout + update) on MiniGrid-FourRooms with the official policy;
    the best of `repeats` runs (other jobs on the machine only ever add time)."""
    cfg = PPOConfig(
        env_id="MiniGrid-FourRooms-v0",
        intrinsic="none",
        total_frames=n_envs * n_steps,
        n_envs=n_envs,
        n_steps=n_steps,
        batch_size=batch_size,
        seed=seed,
    )
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        train(cfg, visitation=False)
        best = min(best, time.process_time() - start)
    return best


def etd_seconds(
    episode_len: int,
    n_envs: int = 16,
    n_steps: int = 512,
    batch_size: int = 512,
    n_epochs: int = 4,
    seed: int = 0,
    repeats: int = 1,
    **etd_kwargs: Any,
) -> dict[str, float]:
    """CPU seconds ETD spends per PPO iteration with episodes of `episode_len` steps (scoring, refresh, training);
    scoring and refresh are the best of `repeats` (consecutive rollouts of the same steady-state stream)."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    shape = (3, 7, 7)
    etd = ETDReward(shape, n_envs, seed=seed, **etd_kwargs)
    offset = (np.arange(n_envs) * episode_len) // n_envs  # staggered episode phases

    def stream(t: int) -> tuple[np.ndarray, np.ndarray]:
        obs = rng.integers(0, 11, (n_envs, *shape), dtype=np.uint8)
        return obs, (t + offset) % episode_len == episode_len - 1

    obs = rng.integers(0, 11, (n_envs, *shape), dtype=np.uint8)
    for t in range(episode_len):  # warm-up: memories reach their steady-state sizes
        nxt, done = stream(t)
        etd.compute(obs, np.zeros(n_envs), nxt, done)
        obs = nxt
    score = refresh = float("inf")
    for k in range(repeats):
        t0 = episode_len + k * n_steps
        start = time.process_time()
        for t in range(t0, t0 + n_steps):
            nxt, done = stream(t)
            etd.compute(obs, np.zeros(n_envs), nxt, done)
            obs = nxt
        score = min(score, time.process_time() - start)
        start = time.process_time()
        etd.refresh()
        refresh = min(refresh, time.process_time() - start)
    anchors = torch.as_tensor(rng.integers(0, 11, (batch_size, *shape), dtype=np.uint8))
    positives = torch.as_tensor(rng.integers(0, 11, (batch_size, *shape), dtype=np.uint8))
    n_updates = n_epochs * -(-n_envs * n_steps // batch_size)
    start = time.process_time()
    for _ in range(n_updates):
        etd.update({"obs": anchors, "pos_obs": positives})
    return {"score_s": score, "refresh_s": refresh, "train_s": time.process_time() - start}


def overhead_table(
    episode_lens: tuple[int, ...] = (100, 640, 2560), seed: int = 0, repeats: int = 3
) -> dict[str, dict[str, float]]:
    """Per episode length: ETD's scoring and training seconds and their fractions of a no-bonus PPO iteration;
    the PPO iteration, the scoring and the refresh each the best of `repeats` timings."""
    first = ppo_iteration_seconds(seed=seed)  # the process's first PPO iteration: it carries one-time start-up costs
    ppo = ppo_iteration_seconds(seed=seed, repeats=repeats)
    out = {}
    for L in episode_lens:
        etd = etd_seconds(L, seed=seed, repeats=repeats)
        out[str(L)] = {
            "repeats": repeats,
            "ppo_first_s": first,
            **etd,
            "ppo_s": ppo,
            "reward_fraction": (etd["score_s"] + etd["refresh_s"]) / ppo,
            "total_fraction": (etd["score_s"] + etd["refresh_s"] + etd["train_s"]) / ppo,
        }
    return out


# --------------------------------------------------------------------------------------------------
# Where the time of the full preset goes, and what one GPU would change (an estimate, not a measurement)

GPU_NAME = "one NVIDIA H100 SXM (80 GB)"
GPU_OP_SECONDS = 10e-6  # assumed cost of one eager PyTorch op on tiny tensors: dispatch + kernel launch (~5-20 us)
GPU_FLOPS = 20e12  # assumed achieved FP32 rate (~30% of the H100 SXM's 67 TFLOP/s FP32 peak)


def env_seconds(env_id: str, n_envs: int = 16, n_steps: int = 512, seed: int = 0) -> float:
    """CPU seconds to step `n_envs` MiniGrid envs `n_steps` times with random actions (this package's VecEnv loop)."""
    from iclr25.etd_exploration.envs import VecEnv

    envs = VecEnv(env_id, n_envs, seed)
    rng = np.random.default_rng(seed)
    envs.reset()
    start = time.process_time()
    for _ in range(n_steps):
        envs.step(rng.integers(0, envs.n_actions, n_envs))
    return time.process_time() - start


def iteration_cpu_seconds(env_id: str, intrinsic: str, seed: int = 0) -> dict[str, float]:
    """CPU seconds by part of one PPO iteration at the official sizes (16 envs x 512 steps, minibatch 512, 4 epochs)."""
    sizes = PPOConfig()
    cfg = PPOConfig(env_id=env_id, intrinsic=intrinsic, seed=seed, total_frames=sizes.n_envs * sizes.n_steps)
    cpu = train(cfg, visitation=False)["cpu_seconds"]
    cpu["other"] = cpu["total"] - sum(v for k, v in cpu.items() if k != "total")  # buffers, GAE, advantages
    return cpu


class _OpCounter:
    """Counts the ATen operations that reach the dispatcher (each is one or a few kernel launches on a GPU)."""

    def __enter__(self) -> _OpCounter:
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counter.ops += 1
                return func(*args, **(kwargs or {}))

        self.ops, self._mode = 0, _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)


def _ops_and_flops(fn: Any) -> dict[str, float]:
    """ATen ops and matmul/conv FLOPs of one call of `fn` (run twice: once per counter)."""
    from torch.utils.flop_counter import FlopCounterMode

    with _OpCounter() as oc:
        fn()
    flops = FlopCounterMode(display=False)
    with flops:
        fn()
    return {"ops": float(oc.ops), "flops": float(flops.get_total_flops())}


def model_costs(intrinsic: str, n_envs: int = 16, batch_size: int = 512, memory_len: int = 256, seed: int = 0):
    """Ops and FLOPs of the four model parts of the loop: a rollout step of the policy (batch n_envs), a PPO
    minibatch step (forward, backward, Adam), a rollout step of the intrinsic reward with `memory_len` stored states
    per env, and the intrinsic model's training step on one minibatch."""
    from iclr25.etd_exploration.baselines import make_intrinsic
    from iclr25.etd_exploration.ppo import make_policy, ppo_step

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    shape, n_actions = (3, 7, 7), 7
    cfg = PPOConfig(intrinsic=intrinsic, n_envs=n_envs, batch_size=batch_size)
    policy = make_policy(shape, n_actions, cfg)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, eps=1e-5)

    def obs(n: int) -> np.ndarray:
        return rng.integers(0, 11, (n, *shape), dtype=np.uint8)

    o16, state = torch.as_tensor(obs(n_envs)), policy.initial_state(n_envs)
    mb = {
        "obs": torch.as_tensor(obs(batch_size)),
        "state": torch.zeros(batch_size, policy.hidden_dim),
        "start": torch.zeros(batch_size),
        "actions": torch.as_tensor(rng.integers(0, n_actions, batch_size)),
        "logp": torch.full((batch_size,), -np.log(n_actions), dtype=torch.float32),
        "adv": torch.randn(batch_size),
        "ret": torch.randn(batch_size),
    }

    def policy_step() -> None:
        with torch.no_grad():
            policy.step(o16, state)[0].sample()

    out = {
        "policy_step": _ops_and_flops(policy_step),
        "ppo_minibatch": _ops_and_flops(lambda: ppo_step(policy, opt, mb, cfg)),
    }
    kw: dict[str, Any] = {"n_actions": n_actions, "seed": seed}
    intr = make_intrinsic(intrinsic, shape, n_envs, **kw)
    no_done = np.zeros(n_envs, bool)
    current = obs(n_envs)
    for _ in range(memory_len):  # fill the episodic memories
        nxt = obs(n_envs)
        intr.compute(current, np.zeros(n_envs, np.int64), nxt, no_done)
        current = nxt
    probe = obs(n_envs)
    out["intrinsic_step"] = _ops_and_flops(lambda: intr.compute(current, np.zeros(n_envs, np.int64), probe, no_done))
    batch = {"obs": mb["obs"], "next_obs": torch.as_tensor(obs(batch_size)), "actions": mb["actions"]}
    batch["pos_obs"] = batch["next_obs"]
    if hasattr(intr, "rollout_inputs"):
        intr.rollout_inputs()
        batch["deir_state"] = torch.zeros(batch_size, intr.model.feature_dim)
    out["intrinsic_train"] = _ops_and_flops(lambda: intr.update(batch))
    return out


def gpu_iteration_seconds(costs: dict[str, dict[str, float]], n_steps: int = 512, n_updates: int = 64) -> float:
    """Estimated GPU-side seconds of the model parts of one iteration: every op costs GPU_OP_SECONDS (launch-bound
    tiny batches) plus its FLOPs at GPU_FLOPS; rollout parts run n_steps times, training parts n_updates times."""

    def cost(part: str) -> float:
        return costs[part]["ops"] * GPU_OP_SECONDS + costs[part]["flops"] / GPU_FLOPS

    return n_steps * (cost("policy_step") + cost("intrinsic_step")) + n_updates * (
        cost("ppo_minibatch") + cost("intrinsic_train")
    )


def full_preset_profile(seed: int = 0, profile_env: str = "MiniGrid-DoorKey-8x8-v0") -> dict[str, Any]:
    """CPU breakdown of one official-size iteration (no bonus, ETD, DEIR), env stepping per task of the full preset,
    model ops/FLOPs per method, and the one-GPU estimate of the whole preset built from them."""
    from iclr25.etd_exploration.config import PRESETS

    full = PRESETS["full"]
    frames_per_iter = full.ppo_envs * full.ppo_steps
    n_updates = full.ppo_epochs * -(-frames_per_iter // full.ppo_batch)
    tasks = {full.ppo_env: full.ppo_frames, **dict.fromkeys(full.full_envs, full.full_frames)}
    env_s = {env: env_seconds(env, full.ppo_envs, full.ppo_steps, seed) for env in tasks}
    iterations = {m: iteration_cpu_seconds(profile_env, m, seed) for m in ("none", "etd", "deir")}
    costs = {m: model_costs(m, full.ppo_envs, full.ppo_batch, seed=seed) for m in full.ppo_methods}
    other_s = iterations["none"]["other"]  # buffers, GAE and advantages: CPU work that stays on the CPU
    gpu_model = {m: gpu_iteration_seconds(costs[m], full.ppo_steps, n_updates) for m in full.ppo_methods}
    per_run: dict[str, dict[str, float]] = {}
    gpu_hours: dict[str, float] = {}
    for m in full.ppo_methods:
        for env, frames in tasks.items():
            est = frames / frames_per_iter * (env_s[env] + other_s + gpu_model[m])  # serial loop: the parts add up
            per_run[f"{m}/{env}"] = {"hours": est / 3600, "frames_per_s": frames / est}
            gpu_hours[m] = gpu_hours.get(m, 0.0) + full.ppo_seeds * est / 3600
    cpu_hours = {  # measured CPU per iteration, with each task's own env-stepping cost, over every task and seed
        m: full.ppo_seeds
        * sum(frames / frames_per_iter * (it["total"] - it["env"] + env_s[env]) for env, frames in tasks.items())
        / 3600
        for m, it in iterations.items()
    }
    return {
        "assumptions": {
            "gpu": GPU_NAME,
            "op_seconds": GPU_OP_SECONDS,
            "achieved_flops": GPU_FLOPS,
            "note": "env stepping and the loop's CPU work stay on the CPU at the speeds measured here; only the "
            "model parts move to the GPU; the loop is serial (no overlap of env and GPU work)",
        },
        "frames_per_iteration": frames_per_iter,
        "updates_per_iteration": n_updates,
        "profile_env": profile_env,
        "iteration_cpu_s": iterations,
        "env_cpu_s_per_iteration": env_s,
        "model_costs": costs,
        "gpu_model_s_per_iteration": gpu_model,
        "per_run_estimate": per_run,
        "gpu_hours_by_method": gpu_hours,
        "gpu_hours_total": sum(gpu_hours.values()),
        "cpu_core_hours_by_method": cpu_hours,
        "runs": len(full.ppo_methods) * len(tasks) * full.ppo_seeds,
    }


def main(argv: list[str] | None = None, what: str = "overhead") -> int:
    """`python -m iclr25.etd_exploration.bench OUT.json`: write the overhead table (`what="profile"`: the full
    preset's CPU profile and one-GPU estimate), one torch thread."""
    import json
    import sys

    from iclr25.shared.files import check_writable, write_text

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].endswith(".json"):
        print("usage: python -m iclr25.etd_exploration.bench OUT.json", file=sys.stderr)
        return 2
    check_writable(args[0])  # a new file: refused before the measurement if it exists
    torch.set_num_threads(1)
    table = overhead_table() if what == "overhead" else full_preset_profile()
    write_text(args[0], json.dumps(table, indent=1) + "\n")
    print(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
