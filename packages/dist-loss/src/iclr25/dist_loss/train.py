"""Training protocols of the Dist Loss experiments (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216, Sec. 4).

The paper's best numbers use two stages (official README / trainer): stage 1 trains the whole network
with plain L1; stage 2 ("RRT") re-initialises the last linear layer, freezes everything else and
retrains only the regressor with the loss under study, selecting the epoch with the best *balanced*
validation MAE. The end-to-end variant trains the whole network with the loss under study.

Losses by method name (`METHODS`): l1, mse, focal_l1, dist (unweighted Dist Loss), inverse (inverse
re-weighted L1), dist_inverse (Dist Loss + inverse weights, official weighting), sqinv_lds
(sqrt-inverse + LDS re-weighted L1), sqinv_lds_fds (+ FDS on the penultimate features), bmc (Balanced MSE).
A plain torch loop: the models are small and the loss has a custom backward. With a Lightning Fabric of several
processes (`--devices`), the model is set up by Fabric (DDP), each process computes the predictions of its share of
every batch, the predictions are gathered so that the loss (Dist Loss compares the whole batch's sorted predictions
with the batch's pseudo-labels) is the loss of the whole batch, and that loss times the number of processes is
backpropagated, so DDP's average of the shares' gradients is the whole batch's gradient: the same steps as one
process.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr25.dist_loss.baselines import FDS, BMCLoss, label_weights
from iclr25.dist_loss.labels import kde_label_density, pseudo_labels
from iclr25.dist_loss.loss import DistLoss, make_base_loss
from iclr25.dist_loss.metrics import balanced_mae, shot_metrics, wasserstein1
from iclr25.dist_loss.names import HEAD_INITS, METHODS

__all__ = ["HEAD_INITS", "METHODS", "MLP", "LossSetup", "TrainResult", "evaluate", "fit", "make_loss", "predict", "rrt"]


class MLP(nn.Module):
    """A ReLU MLP regressor split into `features` (the backbone) and a final `head` Linear(hidden, 1)."""

    def __init__(self, in_dim: int, hidden: int = 64, depth: int = 2, bias_init: float = 0.0) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        dim = in_dim
        for _ in range(depth):
            layers += [nn.Linear(dim, hidden), nn.ReLU()]
            dim = hidden
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(dim, 1)
        self.reset_head(bias_init)

    def reset_head(self, bias_init: float | None = 0.0, zero_weight: bool = False) -> None:
        """Re-initialise the last layer; its bias at `bias_init` (the train-label mean, spec 6a) unless None.

        `bias_init=None` keeps PyTorch's random bias too (the official RRT: a fresh `nn.Linear`).
        `zero_weight` starts from constant predictions: the distribution term of Dist Loss is blind to
        the sign of the prediction direction, so a random head that orders the samples backwards can
        have that order amplified instead of corrected (see the README).
        """
        self.head.reset_parameters()
        with torch.no_grad():
            if bias_init is not None:
                self.head.bias.fill_(bias_init)
            if zero_weight:
                self.head.weight.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions, shape (N,)."""
        return self.head(self.features(x)).reshape(-1)


@dataclass
class LossSetup:
    """What a method needs at training time: a loss callable and optional extras."""

    loss: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]  # (pred, target, weights)
    weights: torch.Tensor | None = None  # per training sample
    fds: FDS | None = None
    params: list[nn.Parameter] = field(default_factory=list)  # extra trainable parameters (BMC sigma)


def make_loss(
    method: str,
    y_train: np.ndarray,
    batch_size: int,
    lam: float = 1.0,
    eps: float = 0.1,
    bw: float = 0.5,
    min_label: float = 0.0,
    max_label: float = 120.0,
    step: float = 1.0,
    bmc_sigma: float = 8.0,
    feature_dim: int = 64,
    device: str = "cpu",
) -> LossSetup:
    """Build the loss of `method` (see module docstring) for training labels `y_train` and batch size B."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    weights = None
    if method in ("inverse", "dist_inverse"):
        weights = label_weights(y_train, "inverse", min_label=min_label, max_label=max_label, step=step)
    elif method.startswith("sqinv_lds"):
        weights = label_weights(y_train, "sqrt_inv", lds=True, min_label=min_label, max_label=max_label, step=step)
    w_t = None if weights is None else torch.as_tensor(weights, dtype=torch.float32, device=device)
    fds = None
    if method == "sqinv_lds_fds":
        n_bins = round((max_label - min_label) / step) + 1
        dir_grid = (min_label, max_label, step) == (0.0, 120.0, 1.0)  # DIR's buckets (ages 3..99) on the age grid
        fds = FDS(feature_dim) if dir_grid else FDS(feature_dim, n_bins, 0, label_min=min_label, label_step=step)
        fds = fds.to(device)
    if method in ("dist", "dist_inverse"):
        density = kde_label_density(y_train, bw, min_label, max_label, step)
        q = torch.as_tensor(pseudo_labels(density, batch_size, min_label, step), dtype=torch.float32, device=device)
        dist = DistLoss("l1", lam=lam, eps=eps, dist_weighting="official")

        def dist_loss(pred: torch.Tensor, target: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
            return dist(pred, target, q, weights=w)

        return LossSetup(dist_loss, w_t, fds)
    if method == "bmc":
        bmc = BMCLoss(bmc_sigma).to(device)
        return LossSetup(lambda p, t, w: bmc(p, t), None, None, list(bmc.parameters()))
    base = make_base_loss({"mse": "l2", "focal_l1": "focal_l1"}.get(method, "l1"))

    def plain(pred: torch.Tensor, target: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
        per = base(pred, target)
        return (per * w).mean() if w is not None else per.mean()

    return LossSetup(plain, w_t, fds)


@dataclass
class TrainResult:
    """A trained model plus its selection epoch, history and training throughput."""

    model: nn.Module
    best_epoch: int
    history: list[dict[str, float]]
    samples_per_s: float


def predict(model: nn.Module, x: torch.Tensor, chunk: int = 8192) -> np.ndarray:
    """Predictions of `model` on `x` in eval mode, as a float64 numpy array."""
    model.eval()
    with torch.no_grad():
        out = torch.cat([model(x[i : i + chunk]) for i in range(0, x.shape[0], chunk)])
    return out.double().cpu().numpy()


def fit(
    model: nn.Module,
    params: list[nn.Parameter],
    x: torch.Tensor,
    y: torch.Tensor,
    setup: LossSetup,
    x_val: torch.Tensor,
    y_val: np.ndarray,
    epochs: int,
    batch_size: int,
    lr: float,
    select: str,
    generator: torch.Generator,
    lr_steps: tuple[int, ...] = (),
    features_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
    min_label: float = 0.0,
    step: float = 1.0,
) -> TrainResult:
    """Adam, shuffled mini-batches with drop_last, keep the epoch with the best val MAE (`select`: plain|balanced).

    With FDS, `features_fn` maps a batch of inputs to the features that `model` takes (RRT: the identity on the
    frozen backbone's features, `model` the head); they are calibrated before `model` from epoch 1 on, and the FDS
    statistics are updated at every epoch end. With `fabric` (several processes) the model is set up by it (DDP),
    each process predicts its share of every batch and the loss is the whole batch's (see the module docstring).
    With `checkpointer` (its `every` counts epochs), the model, optimiser, scheduler, generator, selection state and
    history are saved at epoch ends; `resume` ("auto" or a file) continues from one with the same result as an
    uninterrupted fit. The balanced val MAE bins the labels on the grid `min_label + k * step`.
    """
    if select not in ("plain", "balanced"):
        raise ValueError(f"select must be plain or balanced, got {select!r}")
    n = x.shape[0]
    if n < batch_size:
        raise ValueError(f"batch size {batch_size} exceeds the {n} training samples (drop_last would skip all)")
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if batch_size % world:
        raise ValueError(f"batch_size {batch_size} must be a multiple of the {world} processes")
    share = batch_size // world
    opt = torch.optim.Adam(params + setup.params, lr=lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=list(lr_steps), gamma=0.1)
    net = model  # what the training forward goes through: DDP's wrapper with several processes
    if world > 1:
        net, opt = fabric.setup(model, opt)
    state: dict[str, Any] = {"model": net, "optimizer": opt, "scheduler": sched, "step": 0}
    if checkpointer is not None:
        state.update(best=float("inf"), best_epoch=-1, best_state={}, history=[], seconds=0.0, seen=0)
        state.update(gen=generator.get_state(), extra=[p.detach().clone() for p in setup.params])
        if setup.fds is not None:
            state["fds"] = setup.fds
        checkpointer.resume(resume, state, fabric)
        generator.set_state(state["gen"])
        with torch.no_grad():
            for p, saved in zip(setup.params, state["extra"], strict=True):
                p.copy_(saved)
    best, best_epoch, history = float(state.get("best", float("inf"))), int(state.get("best_epoch", -1)), []
    best_state = state.get("best_state") or None
    history = list(state.get("history", []))
    seconds, seen = float(state.get("seconds", 0.0)), int(state.get("seen", 0))
    for epoch in range(int(state["step"]), epochs):
        net.train()
        perm = torch.randperm(n, generator=generator).to(x.device)
        start = time.perf_counter()
        for i in range(0, n - batch_size + 1, batch_size):  # drop_last
            idx = perm[i : i + batch_size]
            mine = idx[rank * share : (rank + 1) * share]
            if setup.fds is not None and features_fn is not None:
                pred = net(setup.fds(features_fn(x[mine]), y[mine], epoch))
            else:
                pred = net(x[mine])
            if world > 1:
                pred = batch_predictions(fabric, pred)
            w = None if setup.weights is None else setup.weights[idx]
            loss = setup.loss(pred, y[idx], w)
            opt.zero_grad(set_to_none=True)
            if world > 1:
                whole_batch_backward(fabric, loss, setup.params)
            else:
                loss.backward()
            opt.step()
            seen += batch_size
        sched.step()
        seconds += time.perf_counter() - start
        if setup.fds is not None and features_fn is not None:
            with torch.no_grad():
                setup.fds.update_running_stats(features_fn(x), y, epoch)
                setup.fds.update_last_epoch_stats(epoch + 1)
        pred_val = predict(model, x_val)
        mae = float(np.mean(np.abs(pred_val - y_val)))
        bal = balanced_mae(pred_val, y_val, min_label, step)
        history.append({"epoch": epoch, "loss": float(loss.detach()), "val_mae": mae, "val_balanced_mae": bal})
        score = mae if select == "plain" else bal
        if score < best:
            best, best_epoch, best_state = score, epoch, copy.deepcopy(model.state_dict())
        if checkpointer is not None:
            state.update(step=epoch + 1, best=best, best_epoch=best_epoch, best_state=best_state or {})
            state.update(history=history, seconds=seconds, seen=seen, gen=generator.get_state())
            state["extra"] = [p.detach().clone() for p in setup.params]
            if checkpointer.maybe_save(state, fabric) is None and epoch + 1 == epochs:
                checkpointer.save(state, fabric)  # the end, so a resumed run goes straight on
    if best_state is not None:
        model.load_state_dict(best_state)
    return TrainResult(model, best_epoch, history, seen / max(seconds, 1e-9))


def batch_predictions(fabric: Any, pred: torch.Tensor) -> torch.Tensor:
    """The whole batch's predictions from every process's equal share, in rank order; only this process's share
    carries its gradient (`whole_batch_backward` then gives the model the whole batch's gradient)."""
    parts = list(fabric.all_gather(pred.detach()).reshape(fabric.world_size, -1).unbind(0))
    parts[fabric.global_rank] = pred
    return torch.cat(parts)


def whole_batch_backward(fabric: Any, loss: torch.Tensor, loss_params: list[nn.Parameter]) -> None:
    """The one backward of a step on several processes: `loss` is the whole batch's (through `batch_predictions`)
    and the model was set up by `fabric` (DDP); every parameter gets the whole batch's gradient, as on one process."""
    world = fabric.world_size
    # Each process's share carries its part of the whole batch's gradient and DDP averages the model's gradients
    # over the processes: scaling the loss by `world` turns that average into the sum of the shares, the whole
    # batch's gradient.
    fabric.backward(loss * world)
    # The loss's own parameters (e.g. Balanced MSE's noise scale) are outside the model, so DDP leaves them alone:
    # the loss value is the same on every process, so each already holds their whole gradient, times `world` from
    # the scaling above. Undo that here; no communication is needed.
    for p in loss_params:
        if p.grad is not None:
            p.grad.div_(world)


class _Head(nn.Module):
    def __init__(self, head: nn.Linear) -> None:
        super().__init__()
        self.head = head

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        return self.head(f).reshape(-1)


def rrt(
    backbone: MLP,
    method: str,
    x_train: torch.Tensor,
    y_train: np.ndarray,
    x_val: torch.Tensor,
    y_val: np.ndarray,
    epochs: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    lr_steps: tuple[int, ...] = (),
    head_init: str = "zero",
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
    **loss_kwargs: float,
) -> tuple[MLP, TrainResult]:
    """Stage 2 (RRT): a fresh last layer trained with `method` on the frozen features of `backbone`.

    `head_init` (`HEAD_INITS`): "zero" (weights 0, bias = train-label mean), "default" (PyTorch's random
    weights, bias = train-label mean, spec 6a) or "official" (PyTorch's random weights and bias, as the
    official trainer's fresh `nn.Linear`).

    Warning for a head of your own: start it at zero weights (or with its predictions ordered like the labels).
    The distribution term of Dist Loss sees only the sorted predictions, so it rewards spread in whichever
    order the head puts the samples. On the line p(t) = mean(y) + t (g - mean g) through the mean predictor
    (t = 0) and a forward predictor g (t = 1), the sample term rises for t < 0 as fast as the distribution term
    falls: with an L1 base and lam = 1 the total loss is exactly flat from the reversed predictor (t = -1) to the
    mean predictor for symmetric, perfectly ranked labels, and nearly flat otherwise (`headinit.loss_along_line`).
    A random head that starts anti-correlated with the labels thus gets almost no push back through t = 0 and
    can be driven further backwards. On the synthetic task, "default" heads made RRT + Dist lose to RRT + L1 in
    12 of 30 head seeds (few-shot MAE 2.7-3.0x), "zero" heads in none (README: head-initialisation study,
    `python -m iclr25.dist_loss.headinit`).
    """
    if head_init not in HEAD_INITS:
        raise ValueError(f"head_init must be one of {', '.join(HEAD_INITS)}; got {head_init!r}")
    device = x_train.device
    with torch.no_grad():  # features are frozen: compute them once (the MLP has no BatchNorm)
        backbone.eval()
        f_train, f_val = backbone.features(x_train), backbone.features(x_val)
    model = copy.deepcopy(backbone)
    for p in model.features.parameters():
        p.requires_grad_(False)
    bias = None if head_init == "official" else float(np.mean(y_train))
    model.reset_head(bias, zero_weight=head_init == "zero")
    head = _Head(model.head)
    y_t = torch.as_tensor(y_train, dtype=torch.float32, device=device)
    setup = make_loss(method, y_train, batch_size, feature_dim=f_train.shape[1], device=str(device), **loss_kwargs)
    result = fit(
        head,
        list(head.parameters()),
        f_train,
        y_t,
        setup,
        f_val,
        y_val,
        epochs,
        batch_size,
        lr,
        "balanced",
        generator,
        lr_steps,
        features_fn=(lambda f: f) if setup.fds is not None else None,
        fabric=fabric,
        checkpointer=checkpointer,
        resume=resume,
        min_label=float(loss_kwargs.get("min_label", 0.0)),
        step=float(loss_kwargs.get("step", 1.0)),
    )
    return model, result


def evaluate(
    model: nn.Module,
    x_test: torch.Tensor,
    y_test: np.ndarray,
    x_train: torch.Tensor,
    y_train: np.ndarray,
    many: float = 100,
    few: float = 20,
    min_label: float = 0.0,
    step: float = 1.0,
) -> dict[str, float]:
    """Test MAE/GM overall and per shot region, balanced MAE, and train-prediction spread and W1.

    Shot regions: label bins (grid `min_label + k * step`) with more than `many` training samples are many-shot,
    fewer than `few` few-shot (DIR: 100, 20 on one-year bins)."""
    pred = predict(model, x_test)
    shots = shot_metrics(pred, y_test, y_train, many, few, min_label, step)
    train_pred = predict(model, x_train)
    out = {f"{region}_{k}": v[k] for region, v in shots.items() for k in ("mae", "gm")}
    out.update({f"{region}_n": float(v["n"]) for region, v in shots.items()})
    out["balanced_mae"] = balanced_mae(pred, y_test, min_label, step)
    out["train_pred_std"] = float(np.std(train_pred))
    out["train_w1"] = wasserstein1(train_pred, y_train)
    return out
