"""The experiments of the reproduction: gradient fidelity, and BP / Highway-BP(k) / FPI(k) training runs of the
residual MLP, the GRU, the ResNets, the character-level language model and the GPT-2-style Transformer.

`measure` runs every part a `Config` asks for and returns plain metrics (what results.json stores) and step times;
the claims judged from them are in `claims`, the plan that runs them in `reproduce`. Every training part runs its
plan of runs on every seed (`_runs_per_seed`) and reports the means over seeds (`_summary`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from iclr25.highway_bp.config import Config

__all__ = ["fidelity", "fidelity_ks", "measure"]

Runs = dict[str, list[dict[str, Any]]]  # run name -> its metrics on each seed, in seed order


def _mean(xs: list[float]) -> float:
    return float(sum(xs) / len(xs))


def _spread(xs: list[float]) -> float:
    """max − min (the spread of a handful of seeds)."""
    return float(max(xs) - min(xs))


def fidelity_ks(L: int) -> list[int]:
    """The k at which gradient fidelity is measured: 0..4, then a few up to L."""
    return sorted({k for k in (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48) if k <= L} | {L})


def fidelity(config: Config, seed: int) -> dict[str, Any]:
    """Parameter-gradient cosine to exact BP at initialisation for HBP(k) and FPI(k), k = 0..L (float64)."""
    import torch

    from iclr25.highway_bp.data import load_digits_split
    from iclr25.highway_bp.highway import gradient_cosine
    from iclr25.highway_bp.models import resmlp, seeded

    Xtr, ytr, _, _ = load_digits_split()
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randperm(len(ytr), generator=gen)[: config.fidelity_batch]
    x = torch.as_tensor(Xtr)[idx].double()
    y = torch.as_tensor(ytr)[idx]
    L = config.mlp_depth
    model = seeded(lambda: resmlp(64, config.mlp_width, config.mlp_hidden, L, 10), seed).double()
    ks = fidelity_ks(L)
    ce = torch.nn.functional.cross_entropy
    out = {"hbp": gradient_cosine(model, ce, x, y, ks, algo="hbp")}
    if config.fidelity_fpi:
        out["fpi"] = gradient_cosine(model, ce, x, y, ks, algo="fpi")
    return out


def _plan(baseline: str, with_baseline: bool, hbp_ks: Sequence[int], fpi_ks: Sequence[int] = ()) -> list[tuple]:
    """The (run name, algorithm, k) of a part: the exact-gradient `baseline` ("bp"/"bptt"), then HBP(k), then FPI(k)."""
    plan = [(baseline, baseline, 0)] if with_baseline else []
    return plan + [(f"hbp_k{k}", "hbp", k) for k in hbp_ks] + [(f"fpi_k{k}", "fpi", k) for k in fpi_ks]


def _runs_per_seed(part: str, seeds: list[int], plan: list[tuple], train_one: Callable[..., dict], logger: Any) -> Runs:
    """`train_one(name, *args, seed=s)` for every seed s and every (name, *args) of `plan`, in that order; the scalar
    metrics of each run go to `logger` as it ends (the cosine curves of the Transformer only to results.json)."""
    runs: Runs = {}
    for s in seeds:
        for name, *args in plan:
            r = train_one(name, *args, seed=s)
            runs.setdefault(name, []).append(r)
            scalars = {m: v for m, v in r.items() if not isinstance(v, dict)}
            logger.log({"part": part, "run": name, "seed": s, **scalars})
    return runs


def _means(runs: Runs, metric: str) -> dict[str, float]:
    return {name: _mean([r[metric] for r in rs]) for name, rs in runs.items()}


def _step_ms(runs: Runs, part: str, throughput: dict[str, float]) -> dict[str, float]:
    """Mean ms per training step of each run, also entered in `throughput` as `<part>_<run>_ms_per_step`."""
    step_ms = _means(runs, "step_ms")
    throughput.update({f"{part}_{name}_ms_per_step": ms for name, ms in step_ms.items()})
    return step_ms


def _summary(runs: Runs, metric: str, part: str, throughput: dict[str, float]) -> dict[str, Any]:
    """`metric` of each run, its mean over seeds and per seed, and the mean step times (see `_step_ms`)."""
    per_seed = {name: [r[metric] for r in rs] for name, rs in runs.items()}
    return {metric: _means(runs, metric), f"{metric}_per_seed": per_seed, "step_ms": _step_ms(runs, part, throughput)}


def _scale_out(active: Any, config: Config, name: str) -> dict[str, Any]:
    """`train_classifier`'s fabric/checkpointer/resume for one training run (none unless asked for)."""
    options = getattr(active, "scale_out", None)
    kwargs: dict[str, Any] = {}
    if options is None:
        return kwargs
    if options.distributed:
        kwargs["fabric"] = active.fabric
    if options.checkpoint_every or config.checkpoint_every or options.resume:
        kwargs["checkpointer"] = active.checkpointer(every=config.checkpoint_every, name=name)
        kwargs["resume"] = options.resume
    return kwargs


def _classifier_runs(
    part: str,
    model_fn: Callable[[], Any],
    data: tuple[Any, ...],
    plan: list[tuple],
    hyper: dict[str, Any],
    config: Config,
    seeds: list[int],
    active: Any,
) -> Runs:
    """Part `part`'s `plan` on every seed: `train_classifier` with the hyperparameters `hyper` on `data` (train and
    test arrays), a new `model_fn()` per run."""
    import torch

    from iclr25.highway_bp.models import seeded
    from iclr25.highway_bp.train import train_classifier

    def train_one(name: str, algo: str, k: int, seed: int) -> dict[str, float]:
        model = seeded(model_fn, seed)
        torch.manual_seed(seed)
        scale = _scale_out(active, config, f"{part}-{name}-seed{seed}")
        desc = f"{part} {name} seed {seed}"
        res = train_classifier(
            model, data, algo=algo, k=k, seed=seed, device=active.device, desc=desc, **hyper, **scale
        )
        return res.summary()

    return _runs_per_seed(part, seeds, plan, train_one, active.logger)


def measure(config: Config, active: Any, seed: int = 0) -> tuple[dict[str, Any], dict[str, float]]:
    """Every part the config asks for: (metrics, throughput); runs go to the run's logger."""
    import torch

    from iclr25.shared.seed import seed_everything

    dev = active.device  # resolved (and torch configured) first: the threads below are the config's
    torch.set_num_threads(config.threads)
    seed_everything(seed)
    logger = active.logger
    seeds = [seed + i for i in range(config.seeds)]
    metrics: dict[str, Any] = {}
    throughput: dict[str, float] = {}
    if config.fidelity:
        fids = [fidelity(config, s) for s in seeds]
        L = config.mlp_depth
        cos = {algo: {str(k): _mean([f[algo][k] for f in fids]) for k in fidelity_ks(L)} for algo in fids[0]}
        metrics["fidelity"] = cos
        logger.log({"cos_hbp_k0": cos["hbp"]["0"], "cos_hbp_k4": cos["hbp"][str(min(4, L))]})
    if config.mlp:
        metrics["mlp"] = _mlp_part(config, seeds, active, throughput)
    if config.resnet:
        cifar = config.cifar_dir or config.data_dir
        if not cifar:
            msg = "ResNet-on-CIFAR-10 part skipped: pass cifar_dir=<folder with the CIFAR-10 python pickles>"
            print(msg, file=sys.stderr)
            metrics["resnet"] = {"skipped": msg}
        else:
            metrics["resnet"] = _resnet_part(config, cifar, seeds, active, throughput)
    if config.gru:
        metrics["gru"] = _gru_part(config, seeds, active, throughput)
    if config.lm and config.lm_needs_text and not config.text_dir:
        msg = "char-level LM part skipped: pass text_dir=<folder with wiki.train.raw and wiki.valid.raw>"
        print(msg, file=sys.stderr)
        metrics["lm"] = {"skipped": msg}
    elif config.lm:
        metrics["lm"] = _lm_part(config, seeds, dev, logger, throughput)
    if config.transformer:
        metrics["transformer"] = _transformer_part(config, seeds, dev, logger, throughput)
    return metrics, throughput


def _mlp_part(config: Config, seeds: list[int], active: Any, throughput: dict[str, float]) -> dict[str, Any]:
    """Part 2: BP against Highway-BP(k) training of the residual MLP on the digits."""
    from iclr25.highway_bp.data import load_digits_split
    from iclr25.highway_bp.models import resmlp

    def mlp_fn():
        return resmlp(64, config.mlp_width, config.mlp_hidden, config.mlp_depth, 10)

    hyper = {"epochs": config.mlp_epochs, "batch_size": config.mlp_batch, "lr": config.mlp_lr}
    plan = _plan("bp", True, config.mlp_ks)
    runs = _classifier_runs("mlp", mlp_fn, load_digits_split(), plan, hyper, config, seeds, active)
    return _summary(runs, "acc", "mlp", throughput)


def _gru_part(config: Config, seeds: list[int], active: Any, throughput: dict[str, float]) -> dict[str, Any]:
    """Part 3: BPTT, Highway-BP(k) and FPI(k) training of the GRU on pixel sequences, and HBP's gap to BPTT."""
    from iclr25.highway_bp.data import pixel_sequence_task
    from iclr25.highway_bp.models import SeqClassifier

    data, d_in = pixel_sequence_task(config.gru_task, config.data_dir)

    def gru_fn():
        return SeqClassifier(d_in, config.gru_hidden, 10, "gru")

    hyper = {
        "epochs": config.gru_epochs,
        "batch_size": config.gru_batch,
        "lr": config.gru_lr,
        "schedule": config.gru_schedule,
        "warmup": config.gru_warmup,
        "max_steps": config.gru_steps,
    }
    plan = _plan("bptt", config.gru_bptt, config.gru_hbp_ks, config.gru_fpi_ks)
    runs = _classifier_runs("gru", gru_fn, data, plan, hyper, config, seeds, active)
    out = _summary(runs, "acc", "gru", throughput)
    if config.gru_bptt:
        g, step_ms = config.gate_k, out["step_ms"]
        throughput[f"gru_speedup_hbp_k{g}_over_bptt"] = step_ms["bptt"] / step_ms[f"hbp_k{g}"]
        gaps = [h["acc"] - b["acc"] for h, b in zip(runs[f"hbp_k{g}"], runs["bptt"], strict=True)]
        out[f"gap_hbp_k{g}_to_bptt"] = {"per_seed": gaps, "mean": _mean(gaps), "spread": _spread(gaps)}
    return out


def _resnet_part(
    config: Config, root: str, seeds: list[int], active: Any, throughput: dict[str, float]
) -> dict[str, Any]:
    """Part 4: BP and Highway-BP(k) ResNets on CIFAR-10, per depth: L, accuracy and step time."""
    from iclr25.highway_bp.resnet import resnet_data, train_resnet

    data = resnet_data(root)
    out: dict[str, Any] = {}
    for n in config.resnet_blocks:
        name = f"resnet{6 * n + 2}"

        def train_one(run: str, algo: str, k: int, seed: int, n: int = n, name: str = name) -> dict[str, float]:
            scale = _scale_out(active, config, f"{name}-{run}-seed{seed}")
            return train_resnet(config, data, n, algo, k, seed, active.device, f"{name} {run} seed {seed}", scale)

        runs = _runs_per_seed(name, seeds, _plan("bp", True, config.resnet_ks), train_one, active.logger)
        out[name] = {"L": 3 * n, "acc": _means(runs, "acc"), "step_ms": _step_ms(runs, name, throughput)}
    return out


def _lm_part(config: Config, seeds: list[int], dev: str, logger: Any, throughput: dict[str, float]) -> dict[str, Any]:
    """Part 5: the character-level RNN language model, BPTT vs Highway-BP(k) vs FPI(k) (intermediate losses)."""
    from iclr25.highway_bp.charlm import load_char_corpus, train_char_lm

    train_ids, valid_ids, vocab = load_char_corpus(config.text_dir)
    plan = _plan("bptt", config.lm_bptt, config.lm_hbp_ks, config.lm_fpi_ks)
    out: dict[str, Any] = {
        "corpus": config.text_dir or "python-docs",
        "train_chars": len(train_ids),
        "valid_chars": len(valid_ids),
        "vocab": len(vocab),
    }
    for cell in config.lm_cells:

        def train_one(name: str, algo: str, k: int, seed: int, cell: str = cell) -> dict[str, float]:
            res = train_char_lm(
                train_ids,
                valid_ids,
                len(vocab),
                cell=cell,
                algo=algo,
                k=k,
                hidden=config.lm_hidden,
                length=config.lm_length,
                batch=config.lm_batch,
                steps=config.lm_steps,
                lr=config.lm_lr,
                warmup=config.lm_warmup,
                seed=seed,
                device=dev,
                valid_windows=config.lm_valid_windows,
                desc=f"lm {cell} {name} seed {seed}",
            )
            return {"bpc": res.valid_bpc, "train_bpc": res.train_bpc, "step_ms": res.step_ms}

        runs = _runs_per_seed(f"lm_{cell}", seeds, plan, train_one, logger)
        out[cell] = _summary(runs, "bpc", f"lm_{cell}", throughput)
    return out


def _transformer_part(
    config: Config, seeds: list[int], dev: str, logger: Any, throughput: dict[str, float]
) -> dict[str, Any]:
    """Part 6: GPT-2-style LM (γ trick), BP vs Highway-BP at a constant k vs Highway-BP with a growing k."""
    from iclr25.highway_bp.charlm import load_char_corpus
    from iclr25.highway_bp.transformer import train_transformer

    train_ids, valid_ids, vocab = load_char_corpus(config.text_dir)
    plan = [
        ("bp", "bp", 0, 0),
        (f"hbp_k{config.tf_k_fixed}", "hbp", config.tf_k_fixed, config.tf_k_fixed),
        (f"hbp_k{config.tf_k_start}to{config.tf_k_end}", "hbp", config.tf_k_start, config.tf_k_end),
    ]

    def train_one(name: str, algo: str, k_start: int, k_end: int, seed: int) -> dict[str, Any]:
        res = train_transformer(
            train_ids,
            valid_ids,
            len(vocab),
            algo=algo,
            k_start=k_start,
            k_end=k_end,
            d=config.tf_d,
            blocks=config.tf_blocks,
            heads=config.tf_heads,
            length=config.tf_length,
            batch=config.tf_batch,
            steps=config.tf_steps,
            lr=config.tf_lr,
            warmup=config.tf_warmup,
            gamma=config.tf_gamma,
            cosine_ks=(*config.tf_cosine_ks, 2 * config.tf_blocks),
            seed=seed,
            device=dev,
            valid_windows=config.lm_valid_windows,
            desc=f"transformer {name} seed {seed}",
        )
        cosines = {"cos_init": res.cosine_init, "cos_end": res.cosine_end, "cos_gamma0_init": res.cosine_gamma0_init}
        return {"bpc": res.valid_bpc, "step_ms": res.step_ms, **cosines}

    runs = _runs_per_seed("transformer", seeds, plan, train_one, logger)

    def mean_cos(name: str, which: str) -> dict[str, float]:
        return {str(k): _mean([r[which][k] for r in runs[name]]) for k in runs[name][0][which]}

    out: dict[str, Any] = {"L": 2 * config.tf_blocks, **_summary(runs, "bpc", "transformer", throughput)}
    out.update(cosine_init=mean_cos("bp", "cos_init"), cosine_init_gamma0=mean_cos("bp", "cos_gamma0_init"))
    out["cosine_end"] = {name: mean_cos(name, "cos_end") for name in runs}
    return out
