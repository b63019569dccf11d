"""Image active learning with the paper's MNIST CNN (Table 6; Table 5 settings), FI on the last layer.

CNN: Conv(1->32, 3x3) ReLU, Conv(32->64, 3x3) ReLU, MaxPool 2, Dropout 0.25, FC 256 ReLU, Dropout 0.5, FC K.
Each round the whole network is retrained from scratch on the labelled set (Adam, lr 1e-3, batch 64). FI uses
theta = the last layer and x = the 256 penultimate features (the paper's image setting), i.e. the closed-form
multinomial-LR derivatives on the features; H gets an L2 term `head_l2` so that it is invertible (p > n; ours).
BALD uses 20 MC-dropout passes; IV regresses the labelled points' last-layer IV on the features with a tree.

Scale-out (`iclr25.shared.fabric`, passed in duck-typed): with a `fabric`, every process draws the same permutation
and trains on its contiguous share of each batch, its loss weighted by the share's size, and the dropout masks are
drawn for the whole batch on every process (`iclr25.shared.global_batch.GlobalBatchDropout`), so several processes take the steps of one; with a
`checkpointer`, the network, Adam, the step and the permutation generator's state are saved every
`checkpointer.every` steps, and `resume` continues exactly, mid-epoch too.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr25.shared.global_batch import batch_share, set_batch_rows, to_global_batch_dropout

HEAD_L2 = 1e-2  # L2 on the last layer inside H (ours: the paper's H must be invertible, p = 2570 > n)
LR, BATCH = 1e-3, 64  # Adam's learning rate and the batch (Table 5)


def make_cnn(n_classes: int = 10) -> nn.Sequential:
    """The paper's MNIST CNN (Table 6)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.25),
        nn.Flatten(),
        nn.Linear(64 * 12 * 12, 256),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(256, n_classes),
    )


def train_cnn(
    X: np.ndarray,
    y: np.ndarray,
    *,
    epochs: int,
    device: str,
    seed: int,
    n_classes: int = 10,
    batch_size: int = BATCH,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
    logger: Any = None,
    prefix: str = "",
) -> nn.Sequential:
    """Train a fresh CNN on (X (n, 28, 28), y) with Adam (lr 1e-3, batch 64); returns it, in eval mode.

    `fabric` (several processes, or a `--precision`): the same permutation on every process, each trains on its
    share of each batch with its summed loss times processes / batch, so DDP's mean gradient is the whole batch's;
    the dropout layers become `GlobalBatchDropout` (the whole batch's masks). `checkpointer`: model, Adam, step and the
    permutation generator's state (at the epoch's start) every `checkpointer.every` steps, and at the end the
    network alone; `resume` ("auto" or a file) continues from one exactly, a finished training is loaded, not run.
    `logger` (`.log(row, step)`) gets the epoch's mean loss, lr, samples/s and epoch behind `prefix`.
    """
    from iclr25.shared.logging import training_row

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    device = fabric.device if fabric is not None else device
    torch.manual_seed(seed)
    net = make_cnn(n_classes).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    model, optimizer = net, opt
    if fabric is not None:
        to_global_batch_dropout(net)
        model, optimizer = fabric.setup(net, opt)
    Xt = torch.as_tensor(X, dtype=torch.float32, device=device)[:, None]
    yt = torch.as_tensor(y, dtype=torch.long, device=device)
    n = len(yt)
    per_epoch = -(-n // batch_size)
    gen = torch.Generator().manual_seed(seed)
    state: dict[str, Any] = {"model": model, "optimizer": optimizer, "step": 0, "data_rng": gen.get_state()}
    if checkpointer is not None:
        _resume(checkpointer, resume, state, epochs * per_epoch, fabric)
    gen.set_state(state["data_rng"])
    first = state["step"]
    net.train()
    for epoch in range(first // per_epoch, epochs):
        epoch_rng = gen.get_state()
        perm = torch.randperm(n, generator=gen).to(device)
        t0, seen, loss_sum = time.perf_counter(), 0, torch.zeros((), device=device)
        for s in range(state["step"] % per_epoch * batch_size, n, batch_size):
            idx = perm[s : s + batch_size]
            optimizer.zero_grad()
            if fabric is None:
                loss = torch.nn.functional.cross_entropy(net(Xt[idx]), yt[idx])
                loss.backward()
                loss_sum += loss.detach() * len(idx)
            else:
                start, stop = batch_share(len(idx), rank, world)
                set_batch_rows(net, (start, stop), len(idx))
                mine = idx[start:stop]
                ce = torch.nn.functional.cross_entropy(model(Xt[mine]), yt[mine], reduction="sum")
                fabric.backward(ce * world / len(idx))  # the processes' mean gradient is the whole batch's
                loss_sum += ce.detach()
            optimizer.step()
            seen += len(idx)
            state["step"] += 1
            state["data_rng"] = gen.get_state() if s + batch_size >= n else epoch_rng
            if checkpointer is not None and state["step"] < epochs * per_epoch:
                checkpointer.maybe_save(state, fabric)
        if logger is not None:
            total = fabric.all_reduce(loss_sum, reduce_op="sum") if world > 1 else loss_sum
            speed = seen / max(time.perf_counter() - t0, 1e-9)
            row = training_row(float(total) / seen, lr=LR, throughput=speed, epoch=epoch + 1, prefix=prefix)
            logger.log(row, step=state["step"])
    if checkpointer is not None and first < epochs * per_epoch:
        checkpointer.save({k: v for k, v in state.items() if k != "optimizer"}, fabric)
    set_batch_rows(net, None)
    net.eval()
    return net


def _resume(checkpointer: Any, resume: str | None, state: dict[str, Any], steps: int, fabric: Any) -> None:
    """Load `resume` into `state`; the checkpoint of a finished training (step `steps`) holds no Adam state."""
    if resume is None:
        return
    path = (checkpointer.checkpoints() or [None])[-1] if str(resume) == "auto" else Path(resume)
    finished = path is not None and path.name == f"step-{steps}.ckpt"
    part = {k: v for k, v in state.items() if not (finished and k == "optimizer")}
    checkpointer.resume(resume, part, fabric)
    state.update(part)


def features(net: Any, X: np.ndarray, device: str, batch: int = 1024) -> np.ndarray:
    """Penultimate (256-d, post-ReLU) features, dropout off (inputs in the weights' dtype)."""
    body = net[:-2]  # everything up to the last Dropout + Linear
    dtype = next(net.parameters()).dtype  # float32 unless a --precision changed the weights
    out = []
    with torch.no_grad():
        for s in range(0, len(X), batch):
            xb = torch.as_tensor(X[s : s + batch], dtype=dtype, device=device)[:, None]
            out.append(body(xb).double().cpu().numpy())
    return np.concatenate(out)


def head_model(net: Any, n_classes: int = 10, l2: float = HEAD_L2) -> Any:
    """The last layer as a multinomial `LogisticModel` on the penultimate features."""
    from iclr25.influence_selection.models import LogisticModel

    last = net[-1]
    W = last.weight.detach().double().cpu().numpy()
    b = last.bias.detach().double().cpu().numpy()
    m = LogisticModel(l2=l2, n_classes=n_classes)
    m.d = W.shape[1]
    m.theta = np.hstack([W, b[:, None]]).ravel()
    return m


def mc_dropout_proba(net: Any, X: np.ndarray, device: str) -> np.ndarray:
    """One forward pass with dropout on: (m, K) float32 probabilities (inputs in the weights' dtype)."""
    dtype = next(net.parameters()).dtype
    net.train()
    with torch.no_grad():
        out = []
        for s in range(0, len(X), 1024):
            xb = torch.as_tensor(X[s : s + 1024], dtype=dtype, device=device)[:, None]
            out.append(torch.softmax(net(xb), -1).float().cpu().numpy())
    net.eval()
    return np.concatenate(out)


def load_image_data(config: Any, seed: int) -> tuple[dict[str, np.ndarray], str]:
    """MNIST from IDX files in config.image_dir, else scikit-learn digits upsampled to 28x28 (pixels in [0, 1])."""
    from iclr25.influence_selection.data import load_idx, split_al, upsample_digits

    n_val = 300
    if config.image_dir:
        folder = Path(config.image_dir)

        def find(stem: str) -> Path:
            for cand in (folder / stem, folder / f"{stem}.gz"):
                if cand.exists():
                    return cand
            raise ValueError(f"{folder} lacks {stem} (or {stem}.gz)")

        X = load_idx(find("train-images-idx3-ubyte")).astype(float) / 255.0
        y = load_idx(find("train-labels-idx1-ubyte")).astype(int)
        Xte = load_idx(find("t10k-images-idx3-ubyte")).astype(float) / 255.0
        yte = load_idx(find("t10k-labels-idx1-ubyte")).astype(int)
        sp = split_al(X, y, seed, config.image_init, config.image_pool, n_val, 0)
        return {**sp.__dict__, "X_test": Xte, "y_test": yte}, "MNIST"
    from sklearn.datasets import load_digits

    d = load_digits()
    X = upsample_digits(d.data / 16.0)
    n_test = len(X) - config.image_init - config.image_pool - n_val
    sp = split_al(X, d.target.astype(int), seed, config.image_init, config.image_pool, n_val, n_test)
    return dict(sp.__dict__), "digits upsampled to 28x28"


def _checkpoints(run: Any, config: Any, name: str) -> dict[str, Any]:
    """`train_cnn`'s checkpointer (in `checkpoints/<name>`, the newest kept) and resume, when an interval
    (`image_checkpoint_every`, `--checkpoint-every`) or `--resume` was asked for; nothing otherwise."""
    if not (config.image_checkpoint_every or run.scale_out.checkpoint_every or run.scale_out.resume):
        return {}
    checkpointer = run.checkpointer(config.image_checkpoint_every, keep=1, name=name)
    return {"checkpointer": checkpointer, "resume": run.scale_out.resume}


def image_active_learning(config: Any, run: Any) -> dict[str, Any]:
    """Table 5-style active learning with the CNN; returns mean curves, AUCs and scoring times per strategy.

    Every training runs on `run.fabric` when several processes or a precision were asked for (each process then
    scores the pool itself, with the same network), logs its epochs as `image/r<run>/<strategy>/...` and checkpoints
    as `_checkpoints` says."""
    from iclr25.influence_selection import baselines as bl
    from iclr25.influence_selection.approx import subsample_rank_forest
    from iclr25.influence_selection.fi import fi_active
    from iclr25.influence_selection.selection import curve_auc

    scaled = {"fabric": run.fabric} if run.scale_out.wants_fabric else {}
    device = str(scaled["fabric"].device) if scaled else run.device
    results: dict[str, Any] = {"strategies": list(config.image_strategies)}
    per: dict[str, list[dict[str, Any]]] = {s: [] for s in config.image_strategies}
    data_name = ""
    total = config.image_runs * len(config.image_strategies)
    with run.progress(total=total, desc="image active learning", unit="run") as bar:
        for r in range(config.image_runs):
            d, data_name = load_image_data(config, run.seed + r)
            for name in config.image_strategies:
                rng = np.random.default_rng(100 * r + 1)
                X_lab, y_lab = d["X_init"], d["y_init"]
                left = np.arange(len(d["X_pool"]))
                curve, score_s = [], 0.0
                for rnd in range(config.image_rounds + 1):
                    net = train_cnn(
                        X_lab,
                        y_lab,
                        epochs=config.image_epochs,
                        device=device,
                        seed=1000 * r + rnd,
                        logger=run.logger,
                        prefix=f"image/r{r}/{name}/",
                        **scaled,
                        **_checkpoints(run, config, f"r{r}-{name}-round{rnd}"),
                    )
                    Fte = features(net, d["X_test"], device)
                    head = head_model(net)
                    curve.append(float(np.mean(head.predict(Fte) == d["y_test"])))
                    if rnd == config.image_rounds:
                        break
                    t = time.perf_counter()
                    Xp = d["X_pool"][left]
                    F_lab, F_pool = features(net, X_lab, device), features(net, Xp, device)
                    if name in ("fi", "fi_bottom", "fi_drop_n"):
                        form = "drop_n" if name == "fi_drop_n" else "appendix"
                        sc = fi_active(head, F_lab, y_lab, F_pool, sub=config.al_sub, rng=rng, metric_form=form)
                        sc = -sc if name == "fi_bottom" else sc
                    elif name == "fi_subsample":
                        k = max(2, round(0.2 * len(Xp)))
                        idx = rng.choice(len(Xp), k, replace=False)
                        s_sub = fi_active(head, F_lab, y_lab, F_pool[idx], sub=config.al_sub, rng=rng)
                        sc = subsample_rank_forest(s_sub, F_pool[idx], F_pool, seed=r)
                    elif name == "iv":
                        F_val = features(net, d["X_val"], device)
                        sc = bl.iv_active_scores(head, F_lab, y_lab, F_pool, F_val, d["y_val"], seed=r)
                    elif name == "bald":
                        sc = bl.bald_mc_dropout_scores(lambda X, net=net: mc_dropout_proba(net, X, device), Xp)
                    elif name == "entropy":
                        sc = bl.entropy_scores(head, F_pool)
                    else:
                        sc = rng.random(len(Xp))
                    score_s += time.perf_counter() - t
                    pick = np.argsort(-sc, kind="stable")[: config.image_acquire]
                    X_lab = np.concatenate([X_lab, Xp[pick]])
                    y_lab = np.concatenate([y_lab, d["y_pool"][left[pick]]])
                    left = np.delete(left, pick)
                per[name].append({"curve": curve, "auc": curve_auc(np.array(curve)), "score_s": score_s})
                bar.update()
    for name, rs in per.items():
        results[name] = {
            "auc": float(np.mean([r["auc"] for r in rs])),
            "final": float(np.mean([r["curve"][-1] for r in rs])),
            "curve": np.mean([r["curve"] for r in rs], axis=0).round(5).tolist(),
            "score_s": float(np.mean([r["score_s"] for r in rs])),
        }
    results["data"] = data_name
    results["device"] = device
    return results
