"""The experiments of the Seq2Exp reproduction (spec §6, §9): per seed, a planted dataset, the untrained checks (the
generator-off mask's AUPRC and the MACS-style caller's precision against the motif-level truth) and the predictors
trained and tested; the caller check on long tracks with planted boxes (spec §9.5); on GeneExp (spec §6b) the
predictors of Tables 1-2. Plain metrics out.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from iclr25.seq2exp.config import Config, Seq2ExpConfig
from iclr25.seq2exp.training import model_config, train_and_test
from iclr25.shared.run import Run


def generator_off_mean(signals: np.ndarray, cfg: Seq2ExpConfig) -> np.ndarray:
    """E[m] of Seq2Exp with the generator off (logits 0): the signal Beta plus softplus(0) + beta_min."""
    import torch

    from iclr25.seq2exp.seq2exp import SignalBeta

    sb = SignalBeta(cfg.prior_scale, cfg.beta_min, cfg.signal_b, cfg.signal_w)
    with torch.no_grad():
        a2, b2 = sb(torch.from_numpy(np.asarray(signals, np.float32)))
    a1 = float(np.log(2.0)) + cfg.beta_min
    a, b = a1 + a2.numpy(), a1 + b2.numpy()
    return a / (a + b)


def macs_masks(dnase: np.ndarray, cfg: Config) -> np.ndarray:
    """MACS-style calls on each window's DNase track (lambda_bg = the window's mean)."""
    from iclr25.seq2exp.peaks import call_peaks_macs_style

    scale = cfg.count_scale or None
    return call_peaks_macs_style(dnase, d=cfg.peak_d, qvalue=cfg.qvalue, count_scale=scale)[0].astype(np.uint8)


def caller_check(cfg: Config, seed: int) -> dict[str, float]:
    """Spec §9.5: a track with Gamma(2, 0.5) background and 5 boxes of +4, width 300: boxes found (>= 50% called),
    fraction of background called, and whether a lower q gives a subset mask."""
    from iclr25.seq2exp.peaks import call_peaks_macs_style

    rng = np.random.default_rng(10_000 + seed)
    n = cfg.caller_track_len
    track = rng.gamma(2.0, 0.5, size=n)
    starts = np.linspace(0.1 * n, 0.9 * n, 5).astype(int)
    box = np.zeros(n, bool)
    for s in starts:
        box[s : s + 300] = True
    track[box] += 4.0
    scale = cfg.count_scale or None
    mask, _ = call_peaks_macs_style(track, d=cfg.peak_d, qvalue=cfg.qvalue, count_scale=scale)
    strict, _ = call_peaks_macs_style(track, d=cfg.peak_d, qvalue=cfg.qvalue / 10, count_scale=scale)
    found = sum(mask[s : s + 300].mean() >= 0.5 for s in starts)
    return {
        "boxes_found": int(found),
        "background_called": float(mask[~box].mean()),
        "lower_q_subset": bool(np.all(strict <= mask)),
    }


def _worker(job: tuple[str, Config, dict[str, np.ndarray], np.ndarray | None, int]) -> dict[str, Any]:
    """Train and test one model in a worker process (one thread); the model comes back as its state dict."""
    import torch

    torch.set_num_threads(1)
    name, cfg, data, fixed, seed = job
    res = train_and_test(name, cfg, data, fixed, seed, "cpu")
    res["_state"] = {k: v.detach().cpu() for k, v in res.pop("_model").state_dict().items()}
    return res


def _parallel(
    names: list[str], cfg: Config, data: dict[str, np.ndarray], macs: np.ndarray, seed: int, run: Run
) -> dict[str, dict[str, Any]]:
    """Train the models of one seed in `cfg.workers` spawned processes of one thread each (independent runs; CPU
    only): the results of the sequential loop, in its order, each model's curve logged as it is ready."""
    from iclr25.seq2exp.training import build_model
    from iclr25.shared.parallel import map_in_processes

    jobs = [(n, cfg, data, macs if n == "macs-mask" else None, seed) for n in names]

    def log(index: int, res: dict[str, Any]) -> None:
        for row in res.get("history", []):
            run.logger.log({f"seed{seed}/{names[index]}/{k}": v for k, v in _logged(row).items()}, step=row["epoch"])

    results = map_in_processes(_worker, jobs, cfg.workers, desc=f"seed {seed} models", unit="model", on_result=log)
    out: dict[str, dict[str, Any]] = {}
    for name, res in zip(names, results, strict=True):
        model = build_model(name, model_config(cfg, name))
        model.load_state_dict(res.pop("_state"))
        res["_model"] = model
        out[name] = res
    for res in out.values():
        if res is not out.get("seq2exp-soft"):
            res.pop("_model", None)
    return out


def _logged(row: dict[str, Any]) -> dict[str, Any]:
    """A history row of a model trained in a worker under the shared training names (`loss`, `epoch`), as the
    loop in this process logs it (the learning rate and throughput stay in the worker)."""
    from iclr25.shared.logging import training_row

    return {**training_row(row["train_loss"], epoch=row["epoch"]), "val_mse": row["val_mse"]}


def retrain_mask(model: Any, data: dict[str, np.ndarray], cfg: Config, device: str) -> np.ndarray:
    """Seq2Exp-retrain's fixed mask: the top `retrain_top` (10%) of the trained soft model's E[m] per window."""
    from iclr25.seq2exp.metrics import top_fraction_mask
    from iclr25.seq2exp.training import Arrays, predict, promoter_exclusion

    mean = predict(model, Arrays.from_numpy(data, np.arange(len(data["y"]))), device=device, keep_mask=True)["mean"]
    return top_fraction_mask(mean, cfg.retrain_top, promoter_exclusion(cfg.length, cfg.center_len))


def _train_eval(
    name: str, cfg: Config, data: dict[str, np.ndarray], fixed_mask: np.ndarray | None, seed: int, run: Run
) -> dict[str, Any]:
    return train_and_test(
        name,
        cfg,
        data,
        fixed_mask,
        seed,
        run.device,
        progress=lambda it: run.progress(it, total=cfg.epochs, desc=f"seed {seed} {name}", unit="epoch"),
        log=lambda row, step: run.logger.log({f"seed{seed}/{name}/{k}": v for k, v in row.items()}, step=step),
        **run.training_options(f"seed{seed}-{name}", cfg.checkpoint_every),
    )


def scaled_out(cfg: Config, run: Run) -> bool:
    """Whether the run trains through the scale-out layer (several processes, a precision, checkpoints or resume);
    such a run trains its models one after another in this process (refused with `workers` > 1)."""
    options = run.scale_out
    scaled = options.wants_fabric or bool(options.checkpoint_every or cfg.checkpoint_every) or bool(options.resume)
    if scaled and cfg.workers > 1:
        raise ValueError(
            "workers > 1 trains a seed's models in separate processes; with --devices, --precision, checkpoints or "
            "--resume use workers=1"
        )
    return scaled


def measure(cfg: Config, run: Run) -> dict[str, Any]:
    """Every number of the reproduction (see module docstring)."""
    import torch

    from iclr25.seq2exp.data import generate_planted_dataset
    from iclr25.seq2exp.metrics import mask_metrics
    from iclr25.seq2exp.training import promoter_exclusion

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    scaled_out(cfg, run)
    if cfg.real_data:
        return measure_geneexp(cfg, run)
    metrics: dict[str, Any] = {"caller": [caller_check(cfg, s) for s in range(cfg.caller_seeds)], "seeds": []}
    excl = promoter_exclusion(cfg.length, cfg.center_len)
    off_cfg = model_config(cfg, "generator-off")
    for seed in range(run.seed, run.seed + cfg.seeds):
        data = generate_planted_dataset(cfg.n_genes, cfg.length, cfg.n_motifs, seed, center_len=cfg.center_len)
        test = data["split"] == 2
        truth = data["true_mask"] if cfg.truth == "motif" else data["bump_mask"]
        ex = np.broadcast_to(excl, truth[test].shape)
        off = mask_metrics(generator_off_mean(data["signals"][test], off_cfg), truth[test], ex)
        macs = macs_masks(data["signals"][..., 1], cfg)
        macs_m = mask_metrics(macs[test], truth[test], ex)
        row: dict[str, Any] = {
            "seed": seed,
            "var_y_test": float(np.var(data["y"][test])),
            "truth_fraction": float(truth[:, ~excl].mean()),
            "generator_off_auprc": off["auprc"],
            "macs_precision": macs_m["precision"],
            "macs_recall": macs_m["recall"],
            "macs_ratio": macs_m["ratio"],
            "models": {},
        }
        soft_model = None
        learn = seed < run.seed + cfg.learn_seeds
        if cfg.learn_genes:
            data = {
                k: v[: cfg.learn_genes] if getattr(v, "shape", ())[:1] == (cfg.n_genes,) else v for k, v in data.items()
            }
            macs = macs[: cfg.learn_genes]
        names = [m for m in cfg.models if m != "seq2exp-retrain" and learn]
        if cfg.workers > 1 and len(names) > 1:
            row["models"].update(_parallel(names, cfg, data, macs, seed, run))
            soft_model = row["models"].get("seq2exp-soft", {}).pop("_model", None)
        else:
            for name in names:
                fixed = macs if name == "macs-mask" else None
                res = _train_eval(name, cfg, data, fixed, seed, run)
                model = res.pop("_model")
                soft_model = model if name == "seq2exp-soft" else soft_model
                row["models"][name] = res
        for name in ("seq2exp-soft", "seq2exp-hard"):
            if name in row["models"]:
                # like with like: the generator-off mask on the very test windows the trained model was scored on
                split = data["split"] == 2
                same_truth = data["true_mask"][split] if cfg.truth == "motif" else data["bump_mask"][split]
                same_off = mask_metrics(
                    generator_off_mean(data["signals"][split], model_config(cfg, "generator-off")),
                    same_truth,
                    np.broadcast_to(excl, same_truth.shape),
                )["auprc"]
                res = row["models"][name]
                res["generator_off_auprc"] = same_off
                res["mask_auprc_gain"] = res["mask_auprc"] - same_off
        if "seq2exp-retrain" in cfg.models and learn:
            if soft_model is None:
                raise ValueError("seq2exp-retrain needs seq2exp-soft in models (it keeps the top of its E[m])")
            top = retrain_mask(soft_model, data, cfg, run.device)
            row["models"]["seq2exp-retrain"] = _train_eval("seq2exp-retrain", cfg, data, top, seed, run)
            row["models"]["seq2exp-retrain"].pop("_model")
        metrics["seeds"].append(row)
        run.logger.log({"seed": seed, "generator_off_auprc": off["auprc"], "macs_precision": macs_m["precision"]})
    return _summarise(metrics)


def geneexp_files(cfg: Config) -> dict[str, str]:
    """The GeneExp file paths a config gives (the others: official names under data_root)."""
    from iclr25.seq2exp.config import GENEEXP_FILES

    return {k: getattr(cfg, k) for k in GENEEXP_FILES if getattr(cfg, k)}


def measure_geneexp(cfg: Config, run: Run) -> dict[str, Any]:
    """Spec §6b: the predictors of Tables 1-2 trained on the GeneExp fold (train/valid/test of `fold`), windows read
    from the files batch by batch; test MSE/MAE/Pearson, Seq2Exp's mask ratio (promoter excluded), throughput."""
    import torch

    from iclr25.seq2exp.data import SPLITS, GeneratedWindowDataset, GeneWindowDataset
    from iclr25.seq2exp.metrics import regression_metrics, top_fraction_mask
    from iclr25.seq2exp.peaks import call_peaks_macs_style
    from iclr25.seq2exp.training import WindowArrays, build_model, fit, predict, promoter_exclusion

    if cfg.files_given:
        files = geneexp_files(cfg)
        sets = [GeneWindowDataset(cfg.data_root, cfg.cell_type, cfg.fold, cfg.length, s, files) for s in SPLITS]
    else:  # no GeneExp files: windows of its sizes from the planted generator, one at a time
        sets = [
            GeneratedWindowDataset(
                cfg.n_genes, cfg.length, s, seed=run.seed, center_len=cfg.center_len, n_rna=cfg.n_rna
            )
            for s in SPLITS
        ]
    excl = promoter_exclusion(cfg.length, cfg.center_len)
    scale = cfg.count_scale or None

    def macs_mask(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if sets[0].peaks is not None:  # the official MACS3 peaks
            return batch["peak_mask"]
        dnase = batch["signals"][..., 1].numpy()
        return torch.from_numpy(call_peaks_macs_style(dnase, d=cfg.peak_d, qvalue=cfg.qvalue, count_scale=scale)[0])

    source = "GeneExp" if cfg.files_given else "generated"
    models: dict[str, dict[str, Any]] = {}
    soft_model = None
    names = [m for m in cfg.models if m != "seq2exp-retrain"] + [m for m in cfg.models if m == "seq2exp-retrain"]
    for name in names:
        mask_fn = None
        if name == "macs-mask":
            mask_fn = macs_mask
        elif name == "seq2exp-retrain":
            if soft_model is None:
                raise ValueError("seq2exp-retrain needs seq2exp-soft in models (it keeps the top of its E[m])")
            frozen = soft_model.eval()

            def mask_fn(batch: dict[str, torch.Tensor], frozen: Any = frozen) -> torch.Tensor:
                with torch.no_grad():
                    dev = next(frozen.parameters()).device
                    args = (batch["seq"].to(dev), batch["signals"].to(dev), batch["rna_feat"].to(dev))
                    mean = frozen(*args, batch["blacklist"].to(dev))[1]["mean"].float().cpu().numpy()
                return torch.from_numpy(top_fraction_mask(mean, cfg.retrain_top, excl))

        parts = [WindowArrays(ds, cfg.max_genes, mask_fn) for ds in sets]
        torch.manual_seed(run.seed)
        model = build_model(name, model_config(cfg, name))
        options = run.training_options(name, cfg.checkpoint_every)
        t0 = time.perf_counter()
        fitted = fit(
            model,
            parts[0],
            parts[1],
            epochs=cfg.epochs,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            lam=cfg.lam,
            seed=run.seed,
            device=run.device,
            official_schedule=cfg.official_schedule,
            progress=lambda it, name=name: run.progress(it, total=cfg.epochs, desc=f"{source} {name}", unit="epoch"),
            log=lambda row, step, name=name: run.logger.log({f"{name}/{k}": v for k, v in row.items()}, step=step),
            **options,
        )
        device = options["fabric"].device if "fabric" in options else run.device
        out = predict(model, parts[2], batch_size=cfg.batch_size, device=device, ratio_outside=excl)
        res: dict[str, Any] = regression_metrics(out["y_hat"], parts[2].y.numpy())
        res.update(
            train_s=time.perf_counter() - t0,
            bases_per_s=fitted["bases_per_s"],
            best_val_mse=fitted["best_val_mse"],
            history=fitted["history"],
            n_test=len(parts[2]),
        )
        if "mask_ratio" in out:
            res["mask_ratio"] = float(out["mask_ratio"])
        if name == "seq2exp-soft":
            soft_model = model
        models[name] = res
    summary: dict[str, Any] = {"n_genes": {s: len(ds) for s, ds in zip(SPLITS, sets, strict=True)}}
    for name, res in models.items():
        for key in ("mse", "mae", "pearson", "bases_per_s", "train_s", "mask_ratio"):
            if key in res:
                summary[f"{name}/{key}"] = res[key]
    data = "GeneExp" if cfg.files_given else "generated (no GeneExp files given)"
    return {"summary": summary, "data": data, "cell_type": cfg.cell_type, "fold": cfg.fold, "models": models}


def _mean(rows: list[dict[str, Any]], key: str, model: str | None = None) -> float:
    vals = [(r["models"][model][key] if model else r[key]) for r in rows if model is None or model in r["models"]]
    return float(np.mean(vals)) if vals else float("nan")


def _summarise(metrics: dict[str, Any]) -> dict[str, Any]:
    rows = metrics["seeds"]
    summary: dict[str, Any] = {
        "generator_off_auprc": _mean(rows, "generator_off_auprc"),
        "generator_off_auprc_max": float(max(r["generator_off_auprc"] for r in rows)),
        "macs_precision": _mean(rows, "macs_precision"),
        "macs_precision_max": float(max(r["macs_precision"] for r in rows)),
        "macs_ratio": _mean(rows, "macs_ratio"),
        "macs_recall": _mean(rows, "macs_recall"),
        "var_y_test": _mean(rows, "var_y_test"),
        "truth_fraction": _mean(rows, "truth_fraction"),
        "caller_boxes_found_min": int(min(c["boxes_found"] for c in metrics["caller"])),
        "caller_background_called_max": float(max(c["background_called"] for c in metrics["caller"])),
        "caller_lower_q_subset": bool(all(c["lower_q_subset"] for c in metrics["caller"])),
    }
    names = sorted({m for r in rows for m in r["models"]})
    for name in names:
        keys = ("mse", "mae", "pearson", "bases_per_s", "train_s", "mask_auprc", "mask_ratio")
        for key in (*keys, "generator_off_auprc", "mask_auprc_gain"):
            if all(key in r["models"][name] for r in rows if name in r["models"]):
                summary[f"{name}/{key}"] = _mean(rows, key, name)
    return {"summary": summary, **metrics}
