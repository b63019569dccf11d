"""The experiments of the reproduction: gradient fidelity, and BP / Highway-BP(k) / FPI(k) training runs of the
residual MLP, the GRU, the ResNets, the character-level language model and the GPT-2-style Transformer.

`measure` runs every part a `Config` asks for and returns plain metrics (what results.json stores) and step times;
the claims judged from them are in `claims`, the plan that runs them in `reproduce`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from iclr25.highway_bp.config import Config

__all__ = ["fidelity", "fidelity_ks", "measure", "resnet_data", "train_resnet"]


def _mean(xs: list[float]) -> float:
    return float(sum(xs) / len(xs))


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


def _train(
    model_fn,
    data,
    config: Config,
    algo: str,
    k: int,
    seed: int,
    part: str,
    device: str,
    desc: str = "train",
    scale: dict[str, Any] | None = None,
) -> dict[str, float]:
    import torch

    from iclr25.highway_bp.models import seeded
    from iclr25.highway_bp.train import train_classifier

    model = seeded(model_fn, seed)
    torch.manual_seed(seed)
    if part == "mlp":
        kw = dict(epochs=config.mlp_epochs, batch_size=config.mlp_batch, lr=config.mlp_lr)
    else:
        kw = dict(
            epochs=config.gru_epochs,
            batch_size=config.gru_batch,
            lr=config.gru_lr,
            schedule=config.gru_schedule,
            warmup=config.gru_warmup,
            max_steps=config.gru_steps,
        )
    res = train_classifier(model, data, algo=algo, k=k, seed=seed, device=device, desc=desc, **kw, **(scale or {}))
    return {"acc": res.test_acc, "step_ms": 1000 * res.step_time_s, "final_loss": res.train_loss[-1]}


def _gru_data(config: Config):
    from iclr25.highway_bp.data import cifar_pixel_sequences, load_cifar10, load_digits_split, pixel_sequences

    if config.gru_task == "cifar":
        if not config.data_dir:
            raise ValueError("gru_task='cifar' needs data_dir=<folder with the CIFAR-10 python pickles>")
        Xtr, ytr = load_cifar10(config.data_dir, "train")
        Xte, yte = load_cifar10(config.data_dir, "test")
        return (cifar_pixel_sequences(Xtr), ytr, cifar_pixel_sequences(Xte), yte), 3
    Xtr, ytr, Xte, yte = load_digits_split()
    return (pixel_sequences(Xtr), ytr, pixel_sequences(Xte), yte), 1


def _runs(results: dict[str, list[dict[str, float]]], key: str, metric: str = "acc") -> float:
    return _mean([r[metric] for r in results[key]])


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


def measure(config: Config, active: Any, seed: int = 0) -> tuple[dict[str, Any], dict[str, float]]:
    """Every part the config asks for: (metrics, throughput); runs go to the run's logger."""
    import torch

    from iclr25.highway_bp.models import SeqClassifier, resmlp
    from iclr25.shared.seed import seed_everything

    dev = active.device
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
        from iclr25.highway_bp.data import load_digits_split

        data = load_digits_split()
        runs: dict[str, list[dict[str, float]]] = {}

        def mlp_fn() -> torch.nn.Module:
            return resmlp(64, config.mlp_width, config.mlp_hidden, config.mlp_depth, 10)

        for s in seeds:
            for algo, k in [("bp", 0)] + [("hbp", k) for k in config.mlp_ks]:
                key = "bp" if algo == "bp" else f"hbp_k{k}"
                scale = _scale_out(active, config, f"mlp-{key}-seed{s}")
                r = _train(mlp_fn, data, config, algo, k, s, "mlp", dev, desc=f"mlp {key} seed {s}", scale=scale)
                runs.setdefault(key, []).append(r)
                logger.log({"part": "mlp", "run": key, "seed": s, **r})
        acc = {key: _runs(runs, key) for key in runs}
        metrics["mlp"] = {
            "acc": acc,
            "acc_per_seed": {key: [r["acc"] for r in runs[key]] for key in runs},
            "step_ms": {key: _runs(runs, key, "step_ms") for key in runs},
        }
        throughput["mlp_bp_ms_per_step"] = metrics["mlp"]["step_ms"]["bp"]
        for k in config.mlp_ks:
            throughput[f"mlp_hbp_k{k}_ms_per_step"] = metrics["mlp"]["step_ms"][f"hbp_k{k}"]
    if config.resnet:
        cifar = config.cifar_dir or config.data_dir
        if not cifar:
            msg = "ResNet-on-CIFAR-10 part skipped: pass cifar_dir=<folder with the CIFAR-10 python pickles>"
            print(msg, file=sys.stderr)
            metrics["resnet"] = {"skipped": msg}
        else:
            _resnet_part(config, cifar, seeds, dev, logger, metrics, throughput, active)
    if config.gru:
        data, d_in = _gru_data(config)
        runs = {}

        def gru_fn() -> torch.nn.Module:
            return SeqClassifier(d_in, config.gru_hidden, 10, "gru")

        plan = (
            [("bptt", 0)] * config.gru_bptt
            + [("hbp", k) for k in config.gru_hbp_ks]
            + [("fpi", k) for k in config.gru_fpi_ks]
        )
        for s in seeds:
            for algo, k in plan:
                key = "bptt" if algo == "bptt" else f"{algo}_k{k}"
                scale = _scale_out(active, config, f"gru-{key}-seed{s}")
                r = _train(gru_fn, data, config, algo, k, s, "gru", dev, desc=f"gru {key} seed {s}", scale=scale)
                runs.setdefault(key, []).append(r)
                logger.log({"part": "gru", "run": key, "seed": s, **r})
        acc = {key: _runs(runs, key) for key in runs}
        step_ms = {key: _runs(runs, key, "step_ms") for key in runs}
        metrics["gru"] = {
            "acc": acc,
            "acc_per_seed": {key: [r["acc"] for r in runs[key]] for key in runs},
            "step_ms": step_ms,
        }
        for key, ms in step_ms.items():
            throughput[f"gru_{key}_ms_per_step"] = ms
        if config.gru_bptt:
            g = config.gate_k
            throughput[f"gru_speedup_hbp_k{g}_over_bptt"] = step_ms["bptt"] / step_ms[f"hbp_k{g}"]
            gaps = [h["acc"] - b["acc"] for h, b in zip(runs[f"hbp_k{g}"], runs["bptt"], strict=True)]
            metrics["gru"][f"gap_hbp_k{g}_to_bptt"] = {"per_seed": gaps, "mean": _mean(gaps), "spread": _spread(gaps)}
    if config.lm and config.lm_needs_text and not config.text_dir:
        msg = "char-level LM part skipped: pass text_dir=<folder with wiki.train.raw and wiki.valid.raw>"
        print(msg, file=sys.stderr)
        metrics["lm"] = {"skipped": msg}
    elif config.lm:
        metrics["lm"] = _lm_part(config, seeds, dev, logger, throughput)
    if config.transformer:
        metrics["transformer"] = _transformer_part(config, seeds, dev, logger, throughput)
    return metrics, throughput


def _spread(xs: list[float]) -> float:
    """max − min (the spread of a handful of seeds)."""
    return float(max(xs) - min(xs))


def _lm_part(config: Config, seeds: list[int], dev: str, logger: Any, throughput: dict[str, float]) -> dict[str, Any]:
    """Part 5: the character-level RNN language model, BPTT vs Highway-BP(k) vs FPI(k) (intermediate losses)."""
    from iclr25.highway_bp.charlm import load_char_corpus, train_char_lm

    train_ids, valid_ids, vocab = load_char_corpus(config.text_dir)
    plan = (
        [("bptt", 0)] * config.lm_bptt + [("hbp", k) for k in config.lm_hbp_ks] + [("fpi", k) for k in config.lm_fpi_ks]
    )
    out: dict[str, Any] = {
        "corpus": config.text_dir or "python-docs",
        "train_chars": len(train_ids),
        "valid_chars": len(valid_ids),
        "vocab": len(vocab),
    }
    for cell in config.lm_cells:
        runs: dict[str, list[dict[str, float]]] = {}
        for s in seeds:
            for algo, k in plan:
                key = "bptt" if algo == "bptt" else f"{algo}_k{k}"
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
                    seed=s,
                    device=dev,
                    valid_windows=config.lm_valid_windows,
                    desc=f"lm {cell} {key} seed {s}",
                )
                r = {"bpc": res.valid_bpc, "train_bpc": res.train_bpc, "step_ms": res.step_ms}
                runs.setdefault(key, []).append(r)
                logger.log({"part": f"lm_{cell}", "run": key, "seed": s, **r})
        out[cell] = {
            "bpc": {key: _runs(runs, key, "bpc") for key in runs},
            "bpc_per_seed": {key: [r["bpc"] for r in runs[key]] for key in runs},
            "step_ms": {key: _runs(runs, key, "step_ms") for key in runs},
        }
        for key, ms in out[cell]["step_ms"].items():
            throughput[f"lm_{cell}_{key}_ms_per_step"] = ms
    return out


def _transformer_part(
    config: Config, seeds: list[int], dev: str, logger: Any, throughput: dict[str, float]
) -> dict[str, Any]:
    """Part 6: GPT-2-style LM (γ trick), BP vs Highway-BP at a constant k vs Highway-BP with a growing k."""
    from iclr25.highway_bp.charlm import load_char_corpus
    from iclr25.highway_bp.transformer import train_transformer

    train_ids, valid_ids, vocab = load_char_corpus(config.text_dir)
    plan = {
        "bp": ("bp", 0, 0),
        f"hbp_k{config.tf_k_fixed}": ("hbp", config.tf_k_fixed, config.tf_k_fixed),
        f"hbp_k{config.tf_k_start}to{config.tf_k_end}": ("hbp", config.tf_k_start, config.tf_k_end),
    }
    runs: dict[str, list[dict[str, Any]]] = {}
    for s in seeds:
        for key, (algo, k0, k1) in plan.items():
            res = train_transformer(
                train_ids,
                valid_ids,
                len(vocab),
                algo=algo,
                k_start=k0,
                k_end=k1,
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
                seed=s,
                device=dev,
                valid_windows=config.lm_valid_windows,
                desc=f"transformer {key} seed {s}",
            )
            r = {"bpc": res.valid_bpc, "step_ms": res.step_ms}
            logger.log({"part": "transformer", "run": key, "seed": s, **r})
            r.update(cos_init=res.cosine_init, cos_end=res.cosine_end, cos_gamma0_init=res.cosine_gamma0_init)
            runs.setdefault(key, []).append(r)

    def mean_cos(key: str, which: str) -> dict[str, float]:
        ks = runs[key][0][which]
        return {str(k): _mean([r[which][k] for r in runs[key]]) for k in ks}

    out: dict[str, Any] = {
        "L": 2 * config.tf_blocks,
        "bpc": {key: _runs(runs, key, "bpc") for key in runs},
        "bpc_per_seed": {key: [r["bpc"] for r in runs[key]] for key in runs},
        "step_ms": {key: _runs(runs, key, "step_ms") for key in runs},
        "cosine_init": mean_cos("bp", "cos_init"),
        "cosine_init_gamma0": mean_cos("bp", "cos_gamma0_init"),
        "cosine_end": {key: mean_cos(key, "cos_end") for key in runs},
    }
    for key, ms in out["step_ms"].items():
        throughput[f"transformer_{key}_ms_per_step"] = ms
    return out


def resnet_data(root: str | Path):
    """CIFAR-10 train/test images (N, 3, 32, 32) float32, normalised, and int64 labels from python pickles."""
    from iclr25.highway_bp.data import load_cifar10
    from iclr25.highway_bp.resnet import cifar_images

    Xtr, ytr = load_cifar10(root, "train")
    Xte, yte = load_cifar10(root, "test")
    return cifar_images(Xtr), ytr, cifar_images(Xte), yte


def train_resnet(
    config: Config,
    data,
    blocks: int,
    algo: str,
    k: int,
    seed: int,
    device: str,
    desc: str = "train",
    scale: dict[str, Any] | None = None,
) -> dict[str, float]:
    """One ResNet(6n+2) run with App. G downsampling: SGD (Table 4), BP or Highway-BP(k), flip + crop augmentation."""
    import torch

    from iclr25.highway_bp.models import seeded
    from iclr25.highway_bp.resnet import augment_cifar, resnet_cifar
    from iclr25.highway_bp.train import train_classifier

    preact = blocks != 18  # ResNet110 is the original post-ReLU network (K = diag(1[x+z>0])), the others pre-act
    model = seeded(lambda: resnet_cifar(blocks, config.resnet_width, 10, preact=preact), seed)
    torch.manual_seed(seed)
    res = train_classifier(
        model,
        data,
        algo=algo,
        k=k,
        epochs=config.resnet_epochs,
        batch_size=config.resnet_batch,
        lr=config.resnet_lr,
        seed=seed,
        device=device,
        schedule="step",
        max_steps=config.resnet_steps,
        optimizer="sgd",
        momentum=0.9,
        weight_decay=config.resnet_wd,
        augment=augment_cifar,
        desc=desc,
        **(scale or {}),
    )
    return {"acc": res.test_acc, "step_ms": 1000 * res.step_time_s, "final_loss": res.train_loss[-1]}


def _resnet_part(config: Config, root: str, seeds, dev, logger, metrics, throughput, active: Any = None) -> None:
    """Part 4: BP and Highway-BP(k) ResNets on CIFAR-10; fills metrics["resnet"] and the step times."""
    data = resnet_data(root)
    metrics["resnet"] = {}
    for n in config.resnet_blocks:
        name = f"resnet{6 * n + 2}"
        runs: dict[str, list[dict[str, float]]] = {}
        for s in seeds:
            for algo, k in [("bp", 0)] + [("hbp", k) for k in config.resnet_ks]:
                key = "bp" if algo == "bp" else f"hbp_k{k}"
                scale = _scale_out(active, config, f"{name}-{key}-seed{s}")
                r = train_resnet(config, data, n, algo, k, s, dev, desc=f"{name} {key} seed {s}", scale=scale)
                runs.setdefault(key, []).append(r)
                logger.log({"part": name, "run": key, "seed": s, **r})
        acc = {key: _runs(runs, key) for key in runs}
        step_ms = {key: _runs(runs, key, "step_ms") for key in runs}
        metrics["resnet"][name] = {"L": 3 * n, "acc": acc, "step_ms": step_ms}
        for key, ms in step_ms.items():
            throughput[f"{name}_{key}_ms_per_step"] = ms
