"""How often RRT + Dist Loss fails from each head initialisation, and why (arXiv 2411.15216, Sec. 3-4).

Stage 2 (RRT) re-initialises the last linear layer on frozen stage-1 features. Three initialisations
(`train.rrt`, `names.HEAD_INITS`): "zero" (weights 0, bias at the train-label mean: this package's default),
"default" (PyTorch's random weights, bias at the label mean: spec 6a) and "official" (PyTorch's random weights
and bias: the official trainer's fresh `nn.Linear`), each also with the official 90-epoch schedule (LR x0.1 at
60 and 80; `--long-inits`).
For every head seed the L1 head and the Dist head start from the same weights and see the same batches; the
per-seed ratio is few-shot MAE(Dist) / few-shot MAE(L1). The failure rule, fixed before the runs: a seed
fails when the ratio is >= 1 (Dist Loss does not lower the few-shot error); a ratio above 0.92 misses the
gate's margin.

Why random heads fail (`loss_along_line`): the distribution term sees only the *sorted* predictions, so it
cannot tell a head that orders the samples like the labels from one that orders them backwards. Along the
line p(t) = mean(y) + t * (g - mean(g)) through the mean predictor (t = 0) and a forward predictor g
(t = 1), the sample term rises for t < 0 at the rate the distribution term falls: with an L1 base and
lam = 1 both slopes are mean|g - mean(g)|-sized, so the total loss is nearly flat on the backward half-line
until the reversed spread matches the pseudo-labels'. A head that starts backwards gets almost no push
back through t = 0, and Adam's per-coordinate normalisation turns the remaining small, consistent gradient
(widen the spread) into full-size steps along the wrong ordering.

Run it: `python -m iclr25.dist_loss.headinit --out results/head_init` (see `main`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.dist_loss.config import Config
from iclr25.dist_loss.names import HEAD_INITS

__all__ = ["FAIL_RATIO", "GATE_RATIO", "head_init_study", "loss_along_line", "main", "summarise"]

FAIL_RATIO = 1.0  # a head seed fails when few-shot MAE(Dist) / few-shot MAE(L1) >= this (fixed before the runs)
GATE_RATIO = 0.92  # the gated claim's margin (claims.declared)
PROG = "python -m iclr25.dist_loss.headinit"


def loss_along_line(
    g: np.ndarray,
    y: np.ndarray,
    q: np.ndarray,
    ts: np.ndarray,
    lam: float = 1.0,
    eps: float = 0.1,
    seed: int = 0,
) -> dict[str, list[float]]:
    """Sample and distribution terms of Dist Loss (L1 base) along p(t) = mean(y) + t (g - mean(g)).

    `g`: a predictor's outputs on the training set (N,), `y`: the labels (N,), `q`: the B pseudo-labels.
    Each term is averaged over the drop_last batches of one seeded permutation: {"t", "sample", "dist"}.
    """
    import torch

    from iclr25.dist_loss.sorting import soft_sort

    g, y, q = (np.asarray(a, dtype=np.float64).reshape(-1) for a in (g, y, q))
    if g.shape != y.shape:
        raise ValueError(f"g and y must have the same length, got {g.size} and {y.size}")
    b = q.size
    if y.size < b:
        raise ValueError(f"{y.size} samples are fewer than the {b} pseudo-labels (one batch)")
    perm = np.random.default_rng(seed).permutation(y.size)[: (y.size // b) * b].reshape(-1, b)  # (nb, B)
    ts_t = torch.as_tensor(np.asarray(ts, dtype=np.float64)).reshape(-1, 1, 1)  # (T, 1, 1)
    centred = torch.as_tensor(g - g.mean())[perm]  # (nb, B)
    pred = float(y.mean()) + ts_t * centred  # (T, nb, B)
    target = torch.as_tensor(y)[perm]  # (nb, B)
    sample = (pred - target).abs().mean(dim=(1, 2))  # (T,)
    dist = (soft_sort(pred, eps=eps) - torch.as_tensor(q)).abs().mean(dim=(1, 2))  # (T,)
    return {"t": ts_t.reshape(-1).tolist(), "sample": sample.tolist(), "dist": (lam * dist).tolist()}


def _row(metrics: dict[str, float], **keys: Any) -> dict[str, Any]:
    out = dict(keys)
    out.update({k: round(float(v), 5) for k, v in metrics.items()})
    return out


def head_init_study(
    config: Config,
    data_seeds: tuple[int, ...] = (0,),
    head_seeds: tuple[int, ...] = tuple(range(10)),
    inits: tuple[str, ...] = HEAD_INITS,
    long_epochs: int = 90,
    long_lr_steps: tuple[int, ...] = (60, 80),
    long_inits: tuple[str, ...] = ("official",),
    device: str = "cpu",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Train RRT L1 and Dist heads from every init and head seed on the stage-1 backbone of each data seed.

    Returns (rows, line): one row per head (test metrics, best epoch, the initial head's correlation with
    the labels, the trained head's) and `loss_along_line` on the first backbone, forward direction = its zero-init L1 head.
    The `long_inits` (default: the official one) also run the official trainer's schedule: `long_epochs` (0: skip)
    with LR drops at `long_lr_steps`.
    """
    import copy

    import torch

    from iclr25.dist_loss.data import make_tabular
    from iclr25.dist_loss.labels import kde_label_density, pseudo_labels
    from iclr25.dist_loss.train import MLP, evaluate, fit, make_loss, predict, rrt
    from iclr25.shared.progress import progress
    from iclr25.shared.seed import seed_everything

    unknown = [i for i in (*inits, *long_inits) if i not in HEAD_INITS]
    if unknown or not inits:
        raise ValueError(f"inits must be some of {', '.join(HEAD_INITS)}, got {list(inits)}")
    if not data_seeds or not head_seeds:
        raise ValueError("need at least one data seed and one head seed")
    schedules = [(i, config.epochs_stage2, config.lr_steps) for i in inits]
    if long_epochs:
        schedules += [(i, long_epochs, long_lr_steps) for i in long_inits]
    loss_kwargs = dict(
        lam=config.lam, eps=config.eps, bw=config.bw, min_label=config.min_label,
        max_label=config.max_label, step=config.step,
    )  # fmt: skip
    rows: list[dict[str, Any]] = []
    line: dict[str, Any] = {}
    total = len(data_seeds) * (1 + len(head_seeds) * len(schedules) * 2)
    bar = progress(total=total, desc="head-init study", unit="fit")
    for ds in data_seeds:
        seed_everything(ds)
        data = make_tabular(ds, config.data_scale, config.dim, config.label_noise, config.feature_noise)

        def t(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a, dtype=torch.float32, device=device)

        x_tr, x_val, x_te = t(data.x_train), t(data.x_val), t(data.x_test)
        backbone = MLP(config.dim, config.hidden, config.depth, float(data.y_train.mean())).to(device)
        setup = make_loss("l1", data.y_train, config.batch_size, device=device)
        fit(backbone, list(backbone.parameters()), x_tr, t(data.y_train), setup, x_val, data.y_val,
            config.epochs_stage1, config.batch_size, config.lr, "plain", torch.Generator().manual_seed(ds),
            config.lr_steps)  # fmt: skip  # stage 1 exactly as `reproduce` trains it
        bar.update()
        with torch.no_grad():
            f_train = backbone.features(x_tr)
        y_mean = float(data.y_train.mean())
        for hs in head_seeds:
            for init, epochs, lr_steps in schedules:
                probe = copy.deepcopy(backbone)  # the initial head: same RNG draws as `rrt` makes below
                torch.manual_seed(10_000 + hs)
                probe.reset_head(None if init == "official" else y_mean, zero_weight=init == "zero")
                with torch.no_grad():
                    start = probe.head(f_train).reshape(-1).double().cpu().numpy()
                corr = 0.0 if start.std() == 0 else float(np.corrcoef(start, data.y_train)[0, 1])
                for method in ("l1", "dist"):
                    torch.manual_seed(10_000 + hs)
                    model, res = rrt(
                        backbone, method, x_tr, data.y_train, x_val, data.y_val, epochs, config.batch_size,
                        config.lr, torch.Generator().manual_seed(hs), lr_steps, init, **loss_kwargs,
                    )  # fmt: skip
                    metrics = evaluate(model, x_te, data.y_test, x_tr, data.y_train)
                    final = predict(model, x_tr)
                    metrics["final_corr"] = 0.0 if final.std() == 0 else np.corrcoef(final, data.y_train)[0, 1]
                    rows.append(
                        _row(
                            metrics, data_seed=ds, head_seed=hs, init=init, epochs=epochs, method=method,
                            best_epoch=res.best_epoch, init_corr=corr, init_mean=float(start.mean()),
                        )
                    )  # fmt: skip
                    if not line and init == "zero" and method == "l1":
                        density = kde_label_density(
                            data.y_train, config.bw, config.min_label, config.max_label, config.step
                        )
                        q = pseudo_labels(density, config.batch_size, config.min_label, config.step)
                        ts = np.round(np.linspace(-1.5, 1.5, 61), 4)
                        g = predict(model, x_tr)
                        line = {"data_seed": ds, **loss_along_line(g, data.y_train, q, ts, config.lam, config.eps)}
                    bar.update()
    bar.close()
    return rows, line


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per (init, epochs): the few-shot MAE ratio Dist/L1 of every (data seed, head seed), its mean, the failure
    rate (ratio >= FAIL_RATIO) and the share missing the gate margin (ratio > GATE_RATIO)."""
    by_key: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_key.setdefault((r["init"], r["epochs"], r["data_seed"], r["head_seed"]), {})[r["method"]] = r
    out: dict[str, Any] = {}
    for (init, epochs, ds, hs), pair in sorted(by_key.items()):
        if set(pair) != {"l1", "dist"}:
            continue
        entry = out.setdefault(f"{init}@{epochs}", {"init": init, "epochs": epochs, "runs": []})
        entry["runs"].append(
            {
                "data_seed": ds,
                "head_seed": hs,
                "ratio": round(pair["dist"]["few_mae"] / pair["l1"]["few_mae"], 4),
                "few_mae_l1": pair["l1"]["few_mae"],
                "few_mae_dist": pair["dist"]["few_mae"],
                "init_corr": round(pair["dist"]["init_corr"], 4),
                "dist_train_pred_std": pair["dist"]["train_pred_std"],
                "dist_final_corr": pair["dist"]["final_corr"],
            }
        )
    for entry in out.values():
        ratios = np.array([r["ratio"] for r in entry["runs"]])
        entry["n"] = int(ratios.size)
        entry["ratio_mean"] = round(float(ratios.mean()), 4)
        entry["ratio_median"] = round(float(np.median(ratios)), 4)
        entry["failures"] = int((ratios >= FAIL_RATIO).sum())
        entry["failure_rate"] = round(float((ratios >= FAIL_RATIO).mean()), 4)
        entry["above_gate_margin"] = int((ratios > GATE_RATIO).sum())
    return out


def _figure(summary: dict[str, Any], line: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    keys = list(summary)
    for i, key in enumerate(keys):
        runs = summary[key]["runs"]
        ratios = np.array([r["ratio"] for r in runs])
        corr = np.array([r["init_corr"] for r in runs])
        jitter = np.linspace(-0.18, 0.18, ratios.size)
        colours = np.where(corr < 0, "tab:red", np.where(corr > 0, "tab:blue", "0.3"))
        ax.scatter(i + jitter, ratios, c=colours, s=16)
    ax.axhline(FAIL_RATIO, color="k", lw=0.8)
    ax.axhline(GATE_RATIO, color="k", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(range(len(keys)), [k.replace("@", "\n") + " ep" for k in keys])
    ax.set_ylabel("few-shot MAE ratio Dist / L1 (log)")
    ax.set_title("per head seed (red: initial head anti-correlated)", fontsize=9)
    t = np.array(line["t"])
    sample, dist = np.array(line["sample"]), np.array(line["dist"])
    bx.plot(t, sample, label="sample term |p - y|")
    bx.plot(t, dist, label="distribution term |sort(p) - q|")
    bx.plot(t, sample + dist, "k", lw=2, label="total (lam = 1)")
    bx.axvline(0, color="0.6", lw=0.8)
    bx.set_xlabel("t in p = mean(y) + t (g - mean g); g: trained L1 head")
    bx.set_ylabel("loss (train batches)")
    bx.set_title("loss along the line through the mean predictor", fontsize=9)
    bx.legend(frameon=False, fontsize=8)
    save_figure(fig, path)


def _ints(text: str, name: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ValueError(f"--{name} takes comma-separated integers, got {text!r}") from None
    if not values or min(values) < 0:
        raise ValueError(f"--{name} takes non-negative integers, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    """Run the study and write runs.jsonl, summary.json and head_init.png into --out."""
    from iclr25.shared.cli import guarded

    return guarded(PROG)(_main)(argv)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for runs.jsonl, summary.json, head_init.png")
    parser.add_argument("--data-seeds", default="0", help="stage-1 backbones (data seeds), e.g. 0,1")
    parser.add_argument("--head-seeds", type=int, default=10, help="head seeds 0..N-1 (default: 10)")
    parser.add_argument("--long-epochs", type=int, default=90, help="the official schedule's epochs (0: skip)")
    parser.add_argument(
        "--long-inits", default="official", help="inits also run with --long-epochs, e.g. zero,official"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an earlier study's run folder --out (a user's files stay)"
    )
    parser.add_argument("overrides", nargs="*", help="Config fields key=value (default: the quick preset)")
    args = parser.parse_args(argv)
    data_seeds = _ints(args.data_seeds, "data-seeds")
    if args.head_seeds < 1 or args.long_epochs < 0:
        raise ValueError("--head-seeds must be >= 1 and --long-epochs >= 0")
    long_inits = tuple(i for i in args.long_inits.split(",") if i)
    if not set(long_inits) <= set(HEAD_INITS):
        raise ValueError(f"--long-inits takes some of {','.join(HEAD_INITS)}, got {args.long_inits!r}")
    from iclr25.dist_loss.config import PRESETS
    from iclr25.shared.cli import build_config
    from iclr25.shared.files import write_text
    from iclr25.shared.run import check_run_folder, open_run_folder

    config = build_config(PRESETS["quick"], overrides=args.overrides)
    check_run_folder(args.out, args.overwrite)  # before the study: a new folder, or an earlier study's
    import os

    import torch

    torch.set_num_threads(max(config.threads, 1))
    steps = tuple(s for s in (60, 80) if s < args.long_epochs)
    wall, cpu = time.perf_counter(), os.times()
    rows, line = head_init_study(config, data_seeds, tuple(range(args.head_seeds)), HEAD_INITS,
                                 args.long_epochs, steps, long_inits)  # fmt: skip
    end = os.times()
    summary = summarise(rows)
    command = " ".join([PROG, *(argv if argv is not None else sys.argv[1:])])
    meta = {
        "command": command,
        "wall_s": round(time.perf_counter() - wall, 1),
        "cpu_s": round((end.user + end.system) - (cpu.user + cpu.system), 1),
        "torch_threads": torch.get_num_threads(),
        "fail_rule": f"ratio few-shot MAE Dist/L1 >= {FAIL_RATIO}; gate margin {GATE_RATIO}",
        "config": {k: getattr(config, k) for k in ("epochs_stage1", "epochs_stage2", "lam", "eps", "bw", "batch_size")},
    }
    with open_run_folder(args.out, args.overwrite, paper="dist-loss", command="head-init") as folder:
        write_text(folder / "runs.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        write_text(folder / "summary.json", json.dumps({"meta": meta, "summary": summary, "line": line}, indent=1))
        _figure(summary, line, folder / "head_init.png")
    for key, entry in summary.items():
        print(f"{key}: ratio mean {entry['ratio_mean']}, failures {entry['failures']}/{entry['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
