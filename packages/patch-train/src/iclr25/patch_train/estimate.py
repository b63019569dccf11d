"""How a preset splits over GPUs and how long it should take: micro-batches per process, FLOPs, hours.

Several processes (DDP through the shared Lightning Trainer, `--devices/--num-nodes`) split each optimizer step's
micro-batches, so a stage's micro-batches per step must divide by the process count; `scale_plan` says which
counts work for every stage of every run. The time is analytic: positions run x (6 N + 6 L T d) FLOPs per
position (`patch.flops_per_position_dims`), over an assumed achieved FLOP/s per GPU (not measured here).
"""

from __future__ import annotations

from typing import Any

from iclr25.patch_train.config import MODEL_SIZES, Config

ACHIEVED_FLOPS = 150e12  # per GPU: ~40% of an H100's bf16 dense peak (989 TFLOP/s), typical for a 125M-370M model


def scale_plan(config: Config, vocab: int = 32_000, devices: tuple[int, ...] = (1, 2, 4, 8, 16)) -> dict[str, Any]:
    """Per run: FLOPs, hours on one GPU at `ACHIEVED_FLOPS`, and the process counts every stage's micro-batches
    split over; per stage: sequences and micro-batches per step."""
    from iclr25.patch_train.baselines import comparison_plans
    from iclr25.patch_train.patch import flops_per_position_dims, llama_params

    dims = {**MODEL_SIZES[config.model], **config.extra}
    fpp = flops_per_position_dims(llama_params(config.model, vocab), dims["n_layers"], dims["d_model"], config.T)
    plans = comparison_plans(config.K, config.lam, config.T, config.tokens_per_step, config.token_steps, config.lr,
                             config.warmup)  # fmt: skip
    runs = {}
    for name in config.runs:
        stages, ok = [], set(devices)
        for p in plans[name]:
            mb = config.micro_batch or p.seqs_per_step
            micro = p.seqs_per_step // mb if p.seqs_per_step % mb == 0 else 0
            ok &= {n for n in devices if micro and micro % n == 0}
            stages.append({"stage": p.stage, "steps": p.steps, "seqs_per_step": p.seqs_per_step,
                           "micro_batches_per_step": micro})  # fmt: skip
        flops = sum(p.positions for p in plans[name]) * fpp
        runs[name] = {"stages": stages, "flops": flops, "gpu_hours": flops / ACHIEVED_FLOPS / 3600,
                      "devices_ok": sorted(ok)}  # fmt: skip
    return {"flops_per_position": fpp, "achieved_flops_per_gpu": ACHIEVED_FLOPS, "runs": runs}
