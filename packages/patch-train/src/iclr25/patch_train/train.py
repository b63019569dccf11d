"""Two-stage training of arXiv 2407.12665 (Section 2.2) through the shared Lightning trainer.

`train_two_stage` runs a list of `StagePlan`s on one model: each stage takes the next unread tokens of
the stream (stages read disjoint data, in order), is its own `fit` with a fresh AdamW and schedule,
and hands the same weights to the next stage. `train_stage` runs (or resumes) one stage. `seed_runs` trains the
configured runs of one seed (token, patch, ...) from the same initial weights, for the reproduction and the sweep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.patch_train.config import Config
from iclr25.patch_train.data import TokenStream, pack_blocks
from iclr25.patch_train.lit import StageModule, StageProgress, StepTimer, weights_fingerprint
from iclr25.patch_train.patch import flops_per_position
from iclr25.patch_train.plan import StagePlan
from iclr25.patch_train.stage import OptimConfig, StageLoop

ENGINES = ("torch", "lightning")
__all__ = [
    "ENGINES", "OptimConfig", "StageResult", "TwoStageLoop", "make_model", "run_interleaved", "seed_runs",
    "step_throughput", "train_stage", "train_two_stage",
]  # fmt: skip


@dataclass
class StageResult:
    """What one stage did: its plan, losses, timing, where it read the stream and how it started."""

    plan: StagePlan
    losses: list[float]
    wall_s: float
    step_s: float  # mean wall time of a timed optimizer step
    tokens_per_s: float
    stream_start: int
    stream_end: int
    start_info: dict[str, Any] = field(default_factory=dict)
    end_fingerprint: float = 0.0
    eval: dict[str, float] = field(default_factory=dict)
    probe: dict[str, Any] = field(default_factory=dict)  # `stage.StageProbe` record: lrs, moments, first ids, counts
    cpu_s: float = 0.0  # CPU seconds (user + system) of this process during the stage

    @property
    def positions_per_s(self) -> float:
        """Sequence positions per second (tokens per second / K)."""
        return self.tokens_per_s / self.plan.K


def train_stage(
    model: Any,
    plan: StagePlan,
    blocks: np.ndarray,
    run_dir: str | Path,
    *,
    optim: OptimConfig | None = None,
    device: str = "auto",
    wandb: str = "off",
    seed: int = 0,
    checkpoint: bool = False,
    ckpt_path: str | Path | None = None,
    max_steps: int | None = None,
    timer_warmup: int = 5,
    threads: int | None = None,
    scale_out: Any = None,
) -> tuple[StageModule, StepTimer, float]:
    """Fit one stage on `blocks` (steps x seqs_per_step rows); returns (module, timer, wall seconds).

    `max_steps` stops early (the schedule still spans `plan.steps`); `ckpt_path` resumes a checkpoint.
    `threads` sets torch's CPU threads after the trainer is built (one thread is fastest for tiny models
    on a busy machine). `scale_out` (`iclr25.shared.fabric.ScaleOut`): devices, nodes, strategy and precision of
    the Trainer (several processes split each step's micro-batches, so a step sees the same sequences), and
    `checkpoint_every` steps between checkpoints.
    """
    import torch

    from iclr25.shared.trainer import fit, make_trainer

    optim = optim or OptimConfig()
    mb = optim.micro_batch or plan.seqs_per_step
    if plan.seqs_per_step % mb:
        raise ValueError(f"micro_batch={mb} must divide the stage's {plan.seqs_per_step} sequences per step")
    context = plan.block_tokens // plan.K
    module = StageModule(
        model,
        plan,
        blocks,
        accumulate=plan.seqs_per_step // mb,
        betas=optim.betas,
        eps=optim.eps,
        weight_decay=optim.weight_decay,
        flops_per_position=flops_per_position(model, context),
    )
    timer = StepTimer(warmup=timer_warmup)
    scale: dict[str, Any] = {}
    if scale_out is not None:
        scale = dict(devices=scale_out.devices, num_nodes=scale_out.num_nodes, strategy=scale_out.strategy)
        scale.update(precision=scale_out.precision, checkpoint_every=scale_out.checkpoint_every)
        if scale_out.distributed:
            scale["use_distributed_sampler"] = False  # `_ResumeSampler` splits the micro-batches itself
    trainer = make_trainer(
        run_dir,
        max_steps=max_steps or plan.steps,
        device=device,
        wandb=wandb,
        run_name=f"{plan.stage}-K{plan.K}",
        config=plan.to_dict(),
        seed=seed,
        checkpoint=checkpoint,
        callbacks=[timer, StageProgress(f"{plan.stage} stage (K={plan.K})", max_steps or plan.steps)],
        progress_bar=False,  # StageProgress: the shared progress output (quiet with --quiet)
        accumulate_grad_batches=plan.seqs_per_step // mb,
        gradient_clip_val=optim.clip,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        log_every_n_steps=max(1, min(50, plan.steps // 10)),
        **scale,
    )
    if module.accumulate % trainer.world_size:
        raise ValueError(
            f"the {module.accumulate} micro-batches of a step must split evenly over {trainer.world_size} processes"
            " (set micro_batch smaller)"
        )
    trainer.accumulate_grad_batches = module.accumulate // trainer.world_size
    if threads:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    # weights_only: a resumed checkpoint is read as data (tensors, numbers, containers); nothing in it runs
    fit(trainer, module, ckpt_path=str(ckpt_path) if ckpt_path else None, weights_only=True)
    return module, timer, time.perf_counter() - start


def train_two_stage(
    model: Any,
    stream: TokenStream,
    plans: list[StagePlan],
    run_dir: str | Path,
    *,
    optim: OptimConfig | None = None,
    device: str = "auto",
    wandb: str = "off",
    seed: int = 0,
    checkpoint: bool = False,
    threads: int | None = None,
    eval_fn: Callable[[Any], dict[str, float]] | None = None,
    scale_out: Any = None,
    engine: str = "lightning",
) -> list[StageResult]:
    """Run the stages in order on one model; each reads the next unread part of `stream`.

    `eval_fn(model)` runs after every stage (e.g. token-level validation NLL) and lands in `StageResult.eval`.
    `scale_out`: the Trainer's devices/nodes/strategy/precision; with `--checkpoint-every` or `--resume` every
    stage saves `<stage folder>/checkpoints/last.ckpt`, and `resume` ("auto": each stage's own last.ckpt, a stage
    already finished trains nothing; a path: the checkpoint of the first stage) continues through Lightning's
    `ckpt_path`. `engine="torch"` trains each stage in the plain loop of `stage.train_stage_torch` (one process,
    no checkpoints, no logger; the same optimizer, schedule and probe), `"lightning"` on the shared Trainer.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    if engine == "torch" and _needs_trainer(scale_out, checkpoint, wandb):
        raise ValueError(
            "engine 'torch' trains on one process without checkpoints or wandb; use engine=lightning for "
            "--devices/--num-nodes/--strategy/--precision/--checkpoint-every/--resume/--wandb"
        )
    if engine == "torch":
        if threads:
            import torch

            torch.set_num_threads(threads)
        loop = TwoStageLoop(model, stream, plans, optim=optim, device=device, seed=seed, eval_fn=eval_fn)
        loop.run()
        return loop.results
    results = []
    for i, plan in enumerate(plans):
        begin = stream.offset
        blocks = pack_blocks(stream.take(plan.tokens), plan.block_tokens)  # (steps * seqs, K*T)
        folder = Path(run_dir) / f"stage{i + 1}-{plan.stage}"
        resume = getattr(scale_out, "resume", None)
        ckpt_path = None
        if resume == "auto" and (folder / "checkpoints" / "last.ckpt").is_file():
            ckpt_path = folder / "checkpoints" / "last.ckpt"
        elif resume not in (None, "auto") and i == 0:
            ckpt_path = Path(resume)
        saving = checkpoint or bool(resume) or bool(getattr(scale_out, "checkpoint_every", 0))
        cpu0 = time.process_time()
        module, timer, wall = train_stage(
            model,
            plan,
            blocks,
            folder,
            optim=optim,
            device=device,
            wandb=wandb,
            seed=seed + i,
            checkpoint=saving,
            ckpt_path=ckpt_path,
            threads=threads,
            scale_out=scale_out,
        )
        results.append(
            StageResult(
                plan=plan,
                losses=module.restored_losses + module.losses,
                wall_s=wall,
                step_s=timer.seconds / max(1, timer.steps) * (module.accumulate if timer.steps else 1),
                tokens_per_s=timer.tokens_per_s,
                stream_start=begin,
                stream_end=stream.offset,
                start_info=module.start_info,
                end_fingerprint=weights_fingerprint(model),
                eval=eval_fn(model) if eval_fn else {},
                probe=module.probe_record(),
                cpu_s=time.process_time() - cpu0,
            )
        )
    return results


class TwoStageLoop:
    """The stages of one run in plain loops (`stage.StageLoop`), one optimizer step per `step()`.

    Each stage takes the next unread tokens of `stream` when it starts; `eval_fn(model)` runs after each stage.
    `positions_done / positions_total` is the fraction of the run's compute done (sequence positions run), which
    `run_interleaved` uses to keep several runs at the same fraction. `results` holds the finished stages.
    """

    def __init__(
        self, model: Any, stream: TokenStream, plans: list[StagePlan], *, optim: OptimConfig | None = None,
        device: str = "cpu", seed: int = 0, eval_fn: Callable[[Any], dict[str, float]] | None = None,
        desc: str = "",
    ) -> None:  # fmt: skip
        from iclr25.shared.device import pick_device

        self.model, self.stream, self.plans, self.optim = model, stream, plans, optim
        self.device, self.seed, self.eval_fn, self.desc = pick_device(device), seed, eval_fn, desc
        self.results: list[StageResult] = []
        self.positions_total = sum(p.positions for p in plans)
        self.positions_done = 0
        self.wall_s = self.cpu_s = 0.0  # training steps only (evaluation and data packing excluded)
        self._loop: StageLoop | None = None
        self._bar: Any = None

    @property
    def done(self) -> bool:
        """Every stage has finished."""
        return len(self.results) == len(self.plans)

    def step(self) -> None:
        """Train the next optimizer step (starting, or finishing, a stage as needed)."""
        if self.done:
            return
        if self._loop is None:
            self._start()
        loop = self._loop
        wall, cpu = loop.step()
        self.wall_s, self.cpu_s = self.wall_s + wall, self.cpu_s + cpu
        self._stage_wall += wall
        self._stage_cpu += cpu
        if loop.steps_done > 5:  # tokens/s over all but the first 5 steps
            self._timed_wall += wall
            self._timed_steps += 1
        self.positions_done += loop.plan.positions_per_step
        self._bar.update(1)
        if loop.done:
            self._finish()

    def run(self) -> list[StageResult]:
        """Train every remaining step; returns the stage results."""
        while not self.done:
            self.step()
        return self.results

    def _start(self) -> None:
        from iclr25.shared.progress import progress

        plan = self.plans[len(self.results)]
        self._begin = self.stream.offset
        blocks = pack_blocks(self.stream.take(plan.tokens), plan.block_tokens)
        self._start_fp = weights_fingerprint(self.model)  # the weights the stage starts from
        i = len(self.results)
        self._loop = StageLoop(self.model, plan, blocks, optim=self.optim, device=self.device, seed=self.seed + i)
        self._stage_wall = self._stage_cpu = self._timed_wall = 0.0
        self._timed_steps = 0
        self._bar = progress(total=plan.steps, desc=f"{self.desc}{plan.stage} stage (K={plan.K})", unit="step")

    def _finish(self) -> None:
        loop, plan = self._loop, self._loop.plan
        self._bar.close()
        n, timed = self._timed_steps, self._timed_wall
        self.results.append(
            StageResult(
                plan=plan,
                losses=loop.losses,
                wall_s=self._stage_wall,
                step_s=timed / max(1, n),
                tokens_per_s=n * plan.tokens_per_step / timed if timed > 0 else 0.0,
                stream_start=self._begin,
                stream_end=self.stream.offset,
                start_info={"weights_fingerprint": self._start_fp},
                end_fingerprint=weights_fingerprint(self.model),
                eval=self.eval_fn(self.model) if self.eval_fn else {},
                probe=loop.probe.to_dict(),
                cpu_s=self._stage_cpu,
            )
        )
        self._loop = None


def run_interleaved(loops: dict[str, TwoStageLoop]) -> None:
    """Train several runs step by step, always advancing the one with the smallest fraction of its compute done,
    so that a changing machine load falls on all of them alike (their wall and CPU times stay comparable)."""
    active = dict(loops)
    while active:
        name = min(active, key=lambda n: active[n].positions_done / max(1, active[n].positions_total))
        active[name].step()
        if active[name].done:
            del active[name]


def make_model(config: Config, vocab: int) -> Any:
    """The configured LLaMA: the Hugging Face class (`impl="hf"`) or the same weights in `llama.FastLlama`."""
    from iclr25.patch_train.llama import from_hf
    from iclr25.patch_train.patch import make_llama

    model = make_llama(config.model, vocab, config.max_len or config.T, **config.extra)
    return from_hf(model) if config.impl == "torch" else model


def seed_runs(
    plans: dict[str, list[Any]], config: Config, seed: int, stream: Any, valid_ids: Any, run_dir: Path, device: str,
    wandb: str, scale_out: Any = None,
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Train the configured runs of one seed from the same initial weights. With `engine="torch"` they train
    interleaved step by step at equal fractions of their compute (`run_interleaved`), so the machine's load
    falls on all alike and their wall and CPU times compare; with `"lightning"` one after the other."""
    import torch

    from iclr25.patch_train.data import HFTokenizer
    from iclr25.patch_train.evaluate import evaluate_nll

    vocab = 256 if config.tokenizer == "byte" else HFTokenizer.from_file(config.tokenizer).vocab_size
    optim = OptimConfig(micro_batch=config.micro_batch or None)

    def eval_fn(m: Any) -> dict[str, float]:
        nll, ppl = evaluate_nll(m, valid_ids, config.T, config.eval_windows, seed=1234)
        return {"nll": nll, "ppl": ppl}

    def data(name: str) -> Any:  # "scratch" trains on the patch run's remainder: the tokens after its patch stage
        return TokenStream(stream[plans["patch"][0].tokens :] if name == "scratch" else stream)

    stages: dict[str, list[Any]] = {}
    if config.engine == "torch":
        if config.threads:
            torch.set_num_threads(config.threads)
        loops = {}
        for name in config.runs:
            torch.manual_seed(seed)
            model = make_model(config, vocab).to(device)
            loops[name] = TwoStageLoop(model, data(name), plans[name], optim=optim, device=device, seed=seed,
                                       eval_fn=eval_fn, desc=f"seed {seed} {name}: ")  # fmt: skip
        run_interleaved(loops)
        stages = {name: loop.results for name, loop in loops.items()}
    else:
        for name in config.runs:
            torch.manual_seed(seed)
            model = make_model(config, vocab).to(device)
            stages[name] = train_two_stage(
                model, data(name), plans[name], run_dir / f"seed{seed}" / name, optim=optim, device=device,
                wandb=wandb, seed=seed, threads=config.threads or None, eval_fn=eval_fn, scale_out=scale_out,
                engine="lightning",
            )  # fmt: skip
    return {
        name: {
            "stages": st,
            "nll": st[-1].eval["nll"],
            "train_s": sum(s.wall_s for s in st),
            "train_cpu_s": sum(s.cpu_s for s in st),
        }
        for name, st in stages.items()
    }


def _needs_trainer(scale_out: Any, checkpoint: bool, wandb: str | None) -> bool:
    """Whether the asked-for options need the Lightning Trainer (several processes, checkpoints, precision, wandb)."""
    if checkpoint or wandb not in ("off", None):
        return True
    options = ("checkpoint_every", "resume", "precision")
    return scale_out is not None and (scale_out.distributed or any(getattr(scale_out, o) for o in options))


def step_throughput(
    model: Any, K: int, T: int, tokens_per_step: int, steps: int = 10, warmup: int = 3, device: str = "cpu"
) -> dict[str, float]:
    """Median wall time and tokens/s of one token-level and one patch-level training step on a copy of `model`.

    Steps alternate (token, patch, token, ...) on random ids so that a changing machine load hits both
    alike. Each step is forward, backward, clipping and an AdamW update (bf16 autocast on CUDA).
    """
    import copy

    import torch

    from iclr25.patch_train.patch import patch_forward

    if tokens_per_step % (K * T):
        raise ValueError(f"tokens_per_step={tokens_per_step} must be a multiple of K*T={K * T}")
    net = copy.deepcopy(model).to(device).train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    vocab = net.get_input_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(0)
    shapes = {1: (tokens_per_step // T, T), K: (tokens_per_step // (K * T), K * T)}
    times: dict[int, list[float]] = {1: [], K: []}
    for i in range(warmup + steps):
        for k in (1, K):
            ids = torch.randint(0, vocab, shapes[k], generator=g).to(device)
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
                _, loss = patch_forward(net, ids, k, labels=ids)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            if device == "cuda":
                torch.cuda.synchronize()
            if i >= warmup:
                times[k].append(time.perf_counter() - t0)
    token_s, patch_s = float(np.median(times[1])), float(np.median(times[K]))
    return {
        "bench_tokens_per_step": float(tokens_per_step),
        "token_step_ms": token_s * 1e3,
        "patch_step_ms": patch_s * 1e3,
        "token_step_tokens_per_s": tokens_per_step / token_s,
        "patch_step_tokens_per_s": tokens_per_step / patch_s,
        "patch_over_token_tokens_per_s": token_s / patch_s,
    }


def step_breakdown(
    model: Any, K: int, T: int, tokens_per_step: int, steps: int = 30, warmup: int = 5, flat: bool = False
) -> dict[str, dict[str, float]]:
    """Median CPU milliseconds of the parts of one token-level and one patch-level training step (forward,
    backward, clipping, AdamW + zero_grad) on a copy of `model`, steps alternating so that load hits both alike.
    `flat`: AdamW and clipping on one buffer per parameter group (`stage.flatten_group`), as the plain loop does."""
    import copy

    import torch

    from iclr25.patch_train.patch import patch_forward
    from iclr25.patch_train.plan import StagePlan
    from iclr25.patch_train.stage import clip_grad_norm_buffers_, make_optimizer

    net = copy.deepcopy(model).train()
    opt, _ = make_optimizer(net, StagePlan("token", 1, T, 1, 1, 0, 1e-4), OptimConfig(), flat=flat)
    params = [p for group in opt.param_groups for p in group["params"]]
    vocab = net.get_input_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(0)
    shapes = {"token": (1, (tokens_per_step // T, T)), "patch": (K, (tokens_per_step // (K * T), K * T))}
    parts: dict[str, dict[str, list[float]]] = {k: {"forward": [], "backward": [], "clip": [], "optimizer": []}
                                                 for k in shapes}  # fmt: skip
    for i in range(warmup + steps):
        for name, (k, shape) in shapes.items():
            ids = torch.randint(0, vocab, shape, generator=g)
            c0 = time.process_time()
            _, loss = patch_forward(net, ids, k, labels=ids)
            c1 = time.process_time()
            loss.backward()
            c2 = time.process_time()
            if flat:
                clip_grad_norm_buffers_([p.grad for p in params], 1.0)
            else:
                torch.nn.utils.clip_grad_norm_(params, 1.0)
            c3 = time.process_time()
            opt.step()
            opt.zero_grad(set_to_none=not flat)
            c4 = time.process_time()
            if i >= warmup:
                for part, v in zip(parts[name], (c1 - c0, c2 - c1, c3 - c2, c4 - c3), strict=True):
                    parts[name][part].append(v * 1e3)
    out = {name: {part: float(np.median(v)) for part, v in d.items()} for name, d in parts.items()}
    for d in out.values():
        d["total"] = sum(d.values())
    return out


def overhead_study(out: str | Path, steps: int = 40, T: int = 64, K: int = 4, tokens_per_step: int = 1024) -> dict:
    """Where a training step's time goes at the quick preset's shapes (1,024 tokens per step, the tiny model), for
    the Hugging Face and the plain-torch LLaMA (AdamW and clipping per parameter, and on flat buffers as the plain
    loop runs them), and what a whole step costs in the plain loop (whole-step forward passes, and passes of 4
    sequences in both stages as the official scripts run them) and in Lightning;
    each with the equal-compute wall-time ratio it implies, 2/3 + (4/3) t_patch / t_token (K=4, lam=2/3: 1,600
    patch + 800 token steps against 1,200 token steps). Writes overhead.json into `out` (a run folder this process
    holds, or a new file)."""
    import json
    import tempfile

    import torch

    from iclr25.patch_train.llama import from_hf
    from iclr25.patch_train.patch import make_llama
    from iclr25.shared.files import write_text

    torch.set_num_threads(1)
    torch.manual_seed(0)
    hf = make_llama("tiny", 256, T)
    result: dict[str, Any] = {"tokens_per_step": tokens_per_step, "T": T, "K": K, "steps": steps, "parts_ms": {}}

    def ratio(t_token: float, t_patch: float) -> float:
        return 2 / 3 + 4 / 3 * t_patch / t_token

    for impl, model, flat in (("hf", hf, False), ("torch", from_hf(hf), False), ("torch_flat", from_hf(hf), True)):
        parts = step_breakdown(model, K, T, tokens_per_step, steps=steps, flat=flat)
        result["parts_ms"][impl] = parts
        result[f"implied_ratio_{impl}"] = ratio(parts["token"]["total"], parts["patch"]["total"])
    # whole steps inside the two loops (CPU ms per step, the first 5 steps left out)
    plans = {"token": StagePlan("token", 1, T, tokens_per_step // T, steps + 5, 1, 1e-3),
             "patch": StagePlan("patch", K, K * T, tokens_per_step // (K * T), steps + 5, 1, 1e-3)}  # fmt: skip
    ids = np.random.default_rng(0).integers(0, 256, (steps + 5) * tokens_per_step)
    loop_ms: dict[str, dict[str, float]] = {"torch": {}, "torch_micro_batch_4": {}, "lightning": {}}
    scratch = tempfile.TemporaryDirectory()  # the Trainer's logs are not kept
    for name, plan in plans.items():
        blocks = pack_blocks(ids, plan.block_tokens)
        for engine, optim in (("torch", None), ("torch_micro_batch_4", OptimConfig(micro_batch=4))):
            loop = StageLoop(from_hf(hf), plan, blocks, optim=optim)  # micro_batch 4: the official 4 sequences/pass
            cpu = [loop.step()[1] for _ in range(plan.steps)]
            loop_ms[engine][name] = float(np.median(cpu[5:]) * 1e3)
        cpu0 = time.process_time()
        train_stage(from_hf(hf), plan, blocks, Path(scratch.name) / f"{name}5", device="cpu", threads=1,
                    max_steps=5)  # fmt: skip
        setup_and_5 = time.process_time() - cpu0
        cpu0 = time.process_time()
        train_stage(from_hf(hf), plan, blocks, Path(scratch.name) / name, device="cpu", threads=1)
        loop_ms["lightning"][name] = (time.process_time() - cpu0 - setup_and_5) / steps * 1e3
    scratch.cleanup()
    result["loop_step_cpu_ms"] = loop_ms
    for engine, d in loop_ms.items():
        result[f"implied_ratio_{engine}_loop"] = ratio(d["token"], d["patch"])
    write_text(Path(out) / "overhead.json", json.dumps(result, indent=1) + "\n")
    return result
