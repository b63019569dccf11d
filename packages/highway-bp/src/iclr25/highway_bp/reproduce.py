"""Reproduction of Highway-BP (Fagnou et al., ICLR 2025, arXiv 2501.17086): presets, experiment, claims.

Three parts (spec §6a, §9 checks 5–6):
1. gradient fidelity at initialisation of a 16-block residual MLP (float64, 256 training digits):
   cosine of the Highway-BP(k) parameter gradient to the exact one, k = 0..L (and FPI for comparison);
2. `digits-resmlp`: BP against Highway-BP(k) training of that MLP on scikit-learn's digits;
3. `digits-gru`: BPTT, Highway-BP(k) and FPI(k) on pixel-sequence digits (64 steps, loss at the end),
   the small-scale analogue of the paper's pixel-CIFAR GRU (Fig. 4), plus wall time per step (Table 3).
4. pre-act ResNet32 / ResNet110 on CIFAR-10 with the App. G downsampling (Table 4 settings), BP vs Highway-BP(k)
   (`full` only; the `full` GRU runs on pixel-CIFAR-10, L = 1024, Table 5 settings, from local pickles);
5. a character-level GRU/LSTM language model with a loss at every step (Table 2, Fig. 4): BPTT, Highway-BP(k)
   and FPI(k), bits per character and ms per step.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path
from typing import Any

from iclr25.highway_bp.config import PRESETS, Config
from iclr25.shared.results import Claim, Report
from iclr25.shared.run import Run, is_follower, reproduction

SLUG = "highway-bp"
__all__ = ["PRESETS", "SLUG", "Config", "claims", "fidelity", "fidelity_ks", "measure", "run", "train_resnet"]


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


def _check_data(scale: str, config: Config) -> None:
    """Refuse a config whose parts need data it does not name (checked before any work)."""
    if config.gru and config.gru_task == "cifar" and not config.data_dir:
        raise ValueError("gru_task='cifar' needs data_dir=<folder with the CIFAR-10 python pickles>")


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


def _figures(run_dir: Path, metrics: dict[str, Any], config: Config) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    names = []
    if "fidelity" in metrics:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for algo, style in (("hbp", "o-"), ("fpi", "s--")):
            if algo not in metrics["fidelity"]:
                continue
            cos = metrics["fidelity"][algo]
            ks = sorted(int(k) for k in cos)
            ax.plot(ks, [cos[str(k)] if str(k) in cos else cos[k] for k in ks], style, label=algo.upper(), ms=3)
        ax.set_xlabel("k (iterations)")
        ax.set_ylabel("cosine to exact gradient")
        ax.set_title(f"Residual MLP, L={config.mlp_depth}, at initialisation")
        ax.grid(alpha=0.3)
        ax.legend()
        save_figure(fig, run_dir / "fidelity_cosine.png")
        names.append("fidelity_cosine.png")
    if "gru" in metrics:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        acc = metrics["gru"]["acc"]
        for algo, style in (("hbp", "o-"), ("fpi", "s--")):
            ks = sorted(int(key.split("_k")[1]) for key in acc if key.startswith(algo))
            ax.plot(ks, [acc[f"{algo}_k{k}"] for k in ks], style, label=algo.upper())
        if "bptt" in acc:
            ax.axhline(acc["bptt"], color="k", ls=":", label="BPTT")
        ax.set_xlabel("k (iterations)")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"GRU on pixel-sequence {config.gru_task}")
        ax.grid(alpha=0.3)
        ax.legend()
        save_figure(fig, run_dir / "gru_accuracy_vs_k.png")
        names.append("gru_accuracy_vs_k.png")
    return names


@reproduction(SLUG, PRESETS, check=_check_data)
def run(active: Run) -> Report:
    """Run the reproduction at `scale` (or with `config`), write results.json/report.md/figures, return the Report.

    `scale_out` (`--devices`, `--resume auto`, ...): every training run (MLP, GRU/LSTM, ResNets) goes through
    Lightning Fabric with each batch split over the processes, and is checkpointed so that an interrupted run
    continues."""
    metrics, throughput, figures = measure(active.config, active, active.seed)
    notes = (
        "Accuracies are means over seeds; step times are mean wall-clock ms per training step "
        f"(forward + backward + Adam) on device {active.device} with {active.config.threads} threads."
    )
    return active.report(claims(metrics, active.config), metrics, throughput=throughput, figures=figures, notes=notes)


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


def measure(config: Config, active: Any, seed: int = 0) -> tuple[dict[str, Any], dict[str, float], list[str]]:
    """Every part the config asks for: (metrics, throughput, figure names); runs go to the run's logger, figures
    into its folder."""
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
    figures = _figures(active.dir, metrics, config) if config.figures and not is_follower() else []
    return metrics, throughput, figures


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


def claims(metrics: dict[str, Any], config: Config) -> list[Claim]:
    """The paper's claims judged on the measured `metrics`: every threshold is here."""
    out: list[Claim] = []
    if "fidelity" in metrics:
        cos = metrics["fidelity"]
        L = config.mlp_depth
        k4 = str(min(4, L))
        out += [
            Claim(
                "cosine_k0_below_0.9",
                "At init the k=0 Highway-BP gradient is a clear approximation (cosine to BP < 0.9)",
                None,
                cos["hbp"]["0"],
                "< 0.9 (spec pilot 0.70-0.74)",
                cos["hbp"]["0"] < 0.9,
                True,
            ),
            Claim(
                "cosine_k4_near_1",
                "Cosine to the exact gradient grows with k to near 1 at k=4 (16-block residual MLP, init)",
                None,
                cos["hbp"][k4],
                ">= 0.98 (spec pilot 0.997)",
                cos["hbp"][k4] >= 0.98,
                True,
            ),
            Claim(
                "cosine_kL_exact",
                "At k=L Highway-BP equals backprop (Theorem 2)",
                1.0,
                cos["hbp"][str(L)],
                "abs(ours - 1) <= 1e-10",
                abs(cos["hbp"][str(L)] - 1.0) <= 1e-10,
                True,
            ),
            Claim(
                "cosine_increases_with_k",
                "The cosine to the exact gradient increases monotonically with k (observed here; not a claim of the paper)",
                None,
                "monotone" if _monotone(cos["hbp"], L) else "not monotone",
                "non-decreasing in k",
                _monotone(cos["hbp"], L),
                False,
            ),
        ]
    if "mlp" in metrics:
        acc = metrics["mlp"]["acc"]
        if "hbp_k4" in acc:
            out.append(
                Claim(
                    "mlp_hbp_k4_matches_bp",
                    "Small k already matches backprop accuracy (digits, 16-block residual MLP, k=4)",
                    None,
                    acc["hbp_k4"] - acc["bp"],
                    "acc(HBP k=4) - acc(BP) >= -0.02",
                    acc["hbp_k4"] - acc["bp"] >= -0.02,
                    True,
                )
            )
        if "hbp_k0" in acc:
            out.append(
                Claim(
                    "mlp_hbp_k0_reasonable",
                    "k=0 is already 'very reasonable' (paper: ~85% on CIFAR-10; here digits accuracy)",
                    0.85,
                    acc["hbp_k0"],
                    ">= 0.85",
                    acc["hbp_k0"] >= 0.85,
                    True,
                )
            )
    for name, part in metrics.get("resnet", {}).items():
        if not isinstance(part, dict):  # {"skipped": why}
            continue
        acc, L = part["acc"], part["L"]
        if "hbp_k4" in acc:
            d = acc["hbp_k4"] - acc["bp"]
            out.append(
                Claim(
                    f"{name}_hbp_k4_matches_bp",
                    f"Highway-BP at k=4 matches BP test accuracy on CIFAR-10 ({name}, L={L}; paper: ResNet110, Fig. 2)",
                    None,
                    d,
                    "acc(HBP k=4) - acc(BP) >= -0.01",
                    d >= -0.01,
                    False,
                )
            )
        if "hbp_k0" in acc:
            out.append(
                Claim(
                    f"{name}_hbp_k0_reasonable",
                    f"k=0 is already 'very reasonable' on CIFAR-10 ({name}; paper: about 85%, Fig. 2)",
                    0.85,
                    acc["hbp_k0"],
                    ">= 0.80",
                    acc["hbp_k0"] >= 0.80,
                    False,
                )
            )
    if "gru" in metrics:
        acc, step_ms = metrics["gru"]["acc"], metrics["gru"]["step_ms"]
        g = config.gate_k
        hbp, fpi = acc[f"hbp_k{g}"], acc[f"fpi_k{g}"]
        out.append(
            Claim(
                f"gru_hbp_k{g}_beats_fpi",
                f"Highway-BP beats fixed-point iteration at the same k={g} (GRU, loss at the end; Fig. 4)",
                None,
                hbp - fpi,
                f"acc(HBP k={g}) - acc(FPI k={g}) >= 0.08",
                hbp - fpi >= 0.08,
                True,
            )
        )
        shared = [k for k in config.gru_fpi_ks if f"hbp_k{k}" in acc and k != g]
        if shared:
            worst = min(acc[f"hbp_k{k}"] - acc[f"fpi_k{k}"] for k in [*shared, g])
            out.append(
                Claim(
                    "gru_hbp_beats_fpi_every_k",
                    "Highway-BP beats FPI at every k (GRU, loss at the end; Fig. 4)",
                    None,
                    worst,
                    f"min over k in {sorted([*shared, g])} of acc(HBP k) - acc(FPI k) > 0",
                    worst > 0,
                    False,
                )
            )
        if "bptt" in acc:
            bptt = acc["bptt"]
            speedup = step_ms["bptt"] / step_ms[f"hbp_k{g}"]
            gaps = metrics["gru"].get(f"gap_hbp_k{g}_to_bptt", {}).get("per_seed", [hbp - bptt])
            out += [
                Claim(
                    f"gru_hbp_k{g}_near_bptt",
                    f"Highway-BP at k={g} reaches BPTT accuracy, mean over seeds (pixel-CIFAR GRU in the paper; Fig. 4)",
                    None,
                    hbp - bptt,
                    f"acc(HBP k={g}) - acc(BPTT) >= -0.05",
                    hbp - bptt >= -0.05,
                    False,  # reported: see the README's per-seed analysis
                ),
                Claim(
                    f"gru_hbp_k{g}_near_bptt_every_seed",
                    f"Highway-BP at k={g} reaches BPTT accuracy on every seed (worst seed shown)",
                    None,
                    min(gaps),
                    f"min over seeds of acc(HBP k={g}) - acc(BPTT) >= -0.05",
                    min(gaps) >= -0.05,
                    False,
                ),
                Claim(
                    f"gru_speedup_k{g}",
                    f"Per-step speed-up of HBP(k={g}) over BPTT (paper, one GPU, GRU L=1024: x2.9; Table 3)",
                    2.9,
                    speedup,
                    "> 1 (reported: the speed-up needs parallel hardware)",
                    speedup > 1.0,
                    False,
                ),
            ]
    for cell in config.lm_cells if "lm" in metrics and "skipped" not in metrics["lm"] else ():
        bpc = metrics["lm"][cell]["bpc"]
        for k in config.lm_hbp_ks:
            if f"fpi_k{k}" in bpc:
                d = bpc[f"fpi_k{k}"] - bpc[f"hbp_k{k}"]
                out.append(
                    Claim(
                        f"lm_{cell}_hbp_k{k}_beats_fpi",
                        f"Highway-BP beats FPI at the same k={k} with a loss at every step "
                        f"(char-level {cell.upper()} LM, bits per char; Fig. 4)",
                        None,
                        d,
                        f"bpc(FPI k={k}) - bpc(HBP k={k}) > 0",
                        d > 0,
                        False,
                    )
                )
    if "transformer" in metrics:
        out += _transformer_claims(metrics["transformer"], config)
    return out


def _transformer_claims(tf: dict[str, Any], config: Config) -> list[Claim]:
    """Reported claims of the GPT-2-style part (§5.2, Fig. 3, Fig. 6)."""
    L, bpc = tf["L"], tf["bpc"]
    fixed, grown = f"hbp_k{config.tf_k_fixed}", f"hbp_k{config.tf_k_start}to{config.tf_k_end}"
    cos_L = tf["cosine_init"][str(L)]
    k0_init, k0_end = tf["cosine_init"]["0"], tf["cosine_end"]["bp"]["0"]
    return [
        Claim(
            "transformer_cosine_kL_exact",
            f"GPT-2-style stack with the γ trick: Highway-BP at k=L={L} equals backprop (Theorem 2)",
            1.0,
            cos_L,
            "abs(ours - 1) <= 1e-5 (float32)",
            abs(cos_L - 1.0) <= 1e-5,
            False,
        ),
        Claim(
            "transformer_low_k_higher_loss",
            f"With a low k the Transformer converges to a higher loss than BP (k={config.tf_k_fixed}; Fig. 3)",
            None,
            bpc[fixed] - bpc["bp"],
            f"bpc(HBP k={config.tf_k_fixed}) - bpc(BP) > 0",
            bpc[fixed] - bpc["bp"] > 0,
            False,
        ),
        Claim(
            "transformer_growing_k_closes_gap",
            f"Growing k ({config.tf_k_start} to {config.tf_k_end}) lands closer to BP than a constant k={config.tf_k_fixed}",
            None,
            bpc[grown] - bpc["bp"],
            f"bpc(HBP k {config.tf_k_start}->{config.tf_k_end}) - bpc(BP) < bpc(HBP k={config.tf_k_fixed}) - bpc(BP)",
            bpc[grown] < bpc[fixed],
            False,
        ),
        Claim(
            "transformer_cosine_k0_falls_in_training",
            "The k=0 cosine to the true gradient is lower after training than at init (BP-trained weights; Fig. 6)",
            None,
            k0_end - k0_init,
            "cos_end(k=0) - cos_init(k=0) < 0",
            k0_end < k0_init,
            False,
        ),
    ]


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


def _monotone(cos: dict[str, float], L: int) -> bool:
    vals = [cos[str(k)] for k in fidelity_ks(L)]
    return all(b >= a - 1e-9 for a, b in itertools.pairwise(vals)) and not math.isnan(vals[0])
