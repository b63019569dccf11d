"""Image path of the Dist Loss experiments (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216, Sec. 4.1).

The paper's AgeDB-DIR / IMDB-WIKI-DIR setting follows the DIR benchmark (Yang et al. 2021): a ResNet-50
trained from scratch on 224x224 faces (random crop with 16-pixel padding, horizontal flip, normalisation
0.5 / 0.5) with a single-output regression head. Two stages (spec 5, official trainer): stage 1 trains
the whole network with plain L1 (Adam 1e-3, batch 512, 90 epochs, LR x0.1 at 60 and 80; best plain val
MAE); stage 2 (RRT) re-initialises the head, freezes the backbone and retrains the head with each loss
(best *balanced* val MAE). The ResNet is written in plain torch (no torchvision).
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr25.dist_loss.train import LossSetup, make_loss
from iclr25.shared.global_batch import to_global_batch_norm

__all__ = ["Bottleneck", "DirImages", "ResNet", "image_stage1_and_heads", "resnet50"]


class Bottleneck(nn.Module):
    """ResNet bottleneck block (1x1, 3x3 with stride, 1x1 with 4x expansion) with a projection shortcut."""

    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.body = nn.Sequential(
            nn.Conv2d(in_ch, width, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, out_ch, 1, bias=False),
            nn.BatchNorm2d(out_ch),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), nn.BatchNorm2d(out_ch)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual output relu(body(x) + shortcut(x))."""
        return torch.relu(self.body(x) + self.shortcut(x))


class ResNet(nn.Module):
    """Bottleneck ResNet regressor: `features` (stem, 4 stages, global average pool) and a Linear(·, 1) `head`.

    `layers=(3, 4, 6, 3), width=64` is ResNet-50 (2048-d features), the DIR backbone; a smaller `width`
    or fewer blocks give a tiny network for tests.
    """

    def __init__(
        self, layers: tuple[int, ...] = (3, 4, 6, 3), width: int = 64, in_channels: int = 3, bias_init: float = 0.0
    ) -> None:
        super().__init__()
        if len(layers) < 1 or min(layers) < 1 or width < 1:
            raise ValueError(f"layers must be positive block counts and width >= 1; got {layers}, {width}")
        blocks: list[nn.Module] = [
            nn.Conv2d(in_channels, width, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        ]
        in_ch = width
        for stage, n in enumerate(layers):
            w = width * 2**stage
            for i in range(n):
                blocks.append(Bottleneck(in_ch, w, stride=2 if (i == 0 and stage > 0) else 1))
                in_ch = w * Bottleneck.expansion
        blocks += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.features = nn.Sequential(*blocks)
        self.feature_dim = in_ch
        self.head = nn.Linear(in_ch, 1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        self.reset_head(bias_init)

    def reset_head(self, bias_init: float | None = 0.0, zero_weight: bool = False) -> None:
        """Re-initialise the head; bias at `bias_init` unless None, weights at zero if `zero_weight` (see MLP)."""
        self.head.reset_parameters()
        with torch.no_grad():
            if bias_init is not None:
                self.head.bias.fill_(bias_init)
            if zero_weight:
                self.head.weight.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions, shape (N,)."""
        return self.head(self.features(x)).reshape(-1)


def resnet50(width: int = 64, bias_init: float = 0.0) -> ResNet:
    """ResNet-50 regressor (blocks 3, 4, 6, 3) as in the DIR benchmark."""
    return ResNet((3, 4, 6, 3), width, 3, bias_init)


class DirImages(torch.utils.data.Dataset):
    """Images of a DIR meta CSV split as (image, label, index); `train` adds pad-16 random crop + h-flip."""

    def __init__(self, paths: list[Path], labels: np.ndarray, size: int = 224, train: bool = False) -> None:
        if len(paths) != len(labels):
            raise ValueError(f"{len(paths)} paths but {len(labels)} labels")
        self.paths, self.labels, self.size, self.train = list(paths), np.asarray(labels, np.float32), size, train

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        from PIL import Image

        with Image.open(self.paths[i]) as im:
            arr = np.asarray(im.convert("RGB").resize((self.size, self.size)), dtype=np.float32) / 255.0
        x = torch.from_numpy(arr.transpose(2, 0, 1).copy())
        if self.train:
            pad = 16
            x = nn.functional.pad(x, (pad, pad, pad, pad))
            top, left = torch.randint(0, 2 * pad + 1, (2,)).tolist()  # DataLoader seeds torch per worker
            x = x[:, top : top + self.size, left : left + self.size]
            if float(torch.rand(())) < 0.5:
                x = x.flip(-1)
        return (x - 0.5) / 0.5, torch.tensor(self.labels[i]), i


def _loader(
    ds: DirImages, batch_size: int, shuffle: bool, workers: int, gen: torch.Generator | None = None, fabric: Any = None
) -> Any:
    if fabric is not None and fabric.world_size > 1 and shuffle:  # this process's share of every global batch
        sampler = _ShareSampler(len(ds), batch_size, fabric.global_rank, fabric.world_size, gen)
        return torch.utils.data.DataLoader(ds, batch_sampler=sampler, num_workers=workers, generator=gen)
    return torch.utils.data.DataLoader(
        ds, batch_size=batch_size, shuffle=shuffle, drop_last=shuffle, num_workers=workers, generator=gen
    )


class _ShareSampler(torch.utils.data.Sampler):
    """The batches of the one-process loader (`RandomSampler` and `BatchSampler` with drop_last on the same
    generator, so every process draws the same numbers as one process would); yields this process's share."""

    def __init__(self, n: int, batch_size: int, rank: int, world: int, gen: torch.Generator | None) -> None:
        if batch_size % world:
            raise ValueError(f"batch_size {batch_size} must be a multiple of the {world} processes")
        shuffled = torch.utils.data.RandomSampler(range(n), generator=gen)
        self.batches = torch.utils.data.BatchSampler(shuffled, batch_size, drop_last=True)
        self.share, self.rank = batch_size // world, rank

    def __iter__(self) -> Any:
        for batch in self.batches:
            yield batch[self.rank * self.share : (self.rank + 1) * self.share]

    def __len__(self) -> int:
        return len(self.batches)


def _predict(model: nn.Module, loader: Any, device: str) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        out = [model(x.to(device)).double().cpu() for x, _, _ in loader]
    return torch.cat(out).numpy()


def _fit(
    model: ResNet,
    params: list[nn.Parameter],
    train: Any,
    val: Any,
    y_val: np.ndarray,
    setup: LossSetup,
    config: Any,
    device: str,
    select: str,
    backbone_train: bool,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
    gen: torch.Generator | None = None,
) -> float:
    """Adam + MultiStepLR, keep the best val epoch (`select`: plain|balanced MAE); returns samples/s.

    With `fabric` (several processes; `train` yields this process's share of each batch) the model's BatchNorm
    layers normalise with the statistics of the whole global batch, the model is set up by Fabric (DDP), and the
    predictions, labels and indices are gathered so the loss is the whole batch's (`whole_batch_backward`): the
    steps of one process. With `checkpointer` (its `every` counts epochs) the fit is saved at epoch ends and
    `resume` continues it."""
    from iclr25.dist_loss.metrics import balanced_mae
    from iclr25.dist_loss.train import batch_predictions, whole_batch_backward

    world = fabric.world_size if fabric is not None else 1
    opt = torch.optim.Adam(params + setup.params, lr=config.lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=list(config.lr_steps), gamma=0.1)
    net = model  # what the training forward goes through: DDP's wrapper with several processes
    if world > 1:
        to_global_batch_norm(model)
        net, opt = fabric.setup(model, opt)
    state: dict[str, Any] = {"model": net, "optimizer": opt, "scheduler": sched, "step": 0}
    if checkpointer is not None:
        state.update(best=float("inf"), best_state={}, seen=0, seconds=0.0)
        if gen is not None:
            state["gen"] = gen.get_state()
        checkpointer.resume(resume, state, fabric)
        if gen is not None:
            gen.set_state(state["gen"])
    best, best_state = float(state.get("best", float("inf"))), state.get("best_state") or None
    seen, seconds = int(state.get("seen", 0)), float(state.get("seconds", 0.0))
    epochs = config.epochs_stage1 if backbone_train else config.epochs_stage2
    for epoch in range(int(state["step"]), epochs):
        net.train()
        if not backbone_train:
            model.features.eval()  # frozen backbone, BatchNorm statistics included
        start = time.perf_counter()
        for x, y, idx in train:
            x, y, idx = x.to(device), y.to(device), idx.to(device)
            pred = net(x)
            if world > 1:
                pred = batch_predictions(fabric, pred)
                y = fabric.all_gather(y).reshape(-1)
                idx = fabric.all_gather(idx).reshape(-1)
            w = None if setup.weights is None else setup.weights[idx]
            loss = setup.loss(pred, y, w)
            opt.zero_grad(set_to_none=True)
            if world > 1:
                whole_batch_backward(fabric, loss, setup.params)
            else:
                loss.backward()
            opt.step()
            seen += y.shape[0]
        sched.step()
        seconds += time.perf_counter() - start
        pred_val = _predict(model, val, device)
        score = float(np.mean(np.abs(pred_val - y_val))) if select == "plain" else balanced_mae(pred_val, y_val)
        if score < best:
            best, best_state = score, copy.deepcopy(model.state_dict())
        if checkpointer is not None:
            state.update(step=epoch + 1, best=best, best_state=best_state or {}, seen=seen, seconds=seconds)
            if gen is not None:
                state["gen"] = gen.get_state()
            if checkpointer.maybe_save(state, fabric) is None and epoch + 1 == epochs:
                checkpointer.save(state, fabric)
    if best_state is not None:
        model.load_state_dict(best_state)
    return seen / max(seconds, 1e-9)


def _metrics(pred: np.ndarray, y: np.ndarray, train_pred: np.ndarray, y_train: np.ndarray) -> dict[str, float]:
    from iclr25.dist_loss.metrics import balanced_mae, shot_metrics, wasserstein1

    shots = shot_metrics(pred, y, y_train, 100, 20)
    out = {f"{region}_{k}": v[k] for region, v in shots.items() for k in ("mae", "gm")}
    out["balanced_mae"] = balanced_mae(pred, y)
    out["train_pred_std"] = float(np.std(train_pred))
    out["train_w1"] = wasserstein1(train_pred, y_train)
    return out


def _meta_csv(data_dir: Path, meta_csv: str) -> Path:
    if meta_csv:
        path = Path(meta_csv)
        return path if path.is_absolute() else data_dir / path
    found = sorted(data_dir.glob("*.csv"))
    if len(found) != 1:
        raise ValueError(f"{data_dir} holds {len(found)} CSV files; pass meta_csv=... (e.g. agedb.csv)")
    return found[0]


def image_stage1_and_heads(
    config: Any, seed: int, device: str, scale: Any = None
) -> tuple[dict[str, dict[str, float]], dict[str, Any], dict[str, float]]:
    """One seed on a real DIR folder: stage 1 ResNet with plain L1, then an RRT head per method.

    Reads `config.data_dir` / `config.meta_csv` (`age, path, split`). Returns (test metrics per run,
    train/test predictions, training throughput), as `experiments.stage1_and_heads` does.
    """
    from iclr25.dist_loss.data import load_dir_csv
    from iclr25.shared.seed import seed_everything

    data_dir = Path(config.data_dir)
    if not data_dir.is_dir():
        raise ValueError(f"data_dir {data_dir} is not a folder (it must hold the DIR meta CSV and the images)")
    meta = _meta_csv(data_dir, config.meta_csv)
    split = {s: load_dir_csv(meta, data_dir, s) for s in ("train", "val", "test")}
    for s, d in split.items():
        if d["age"].size == 0:
            raise ValueError(f"{meta.name} has no {s} rows")
    y_train = split["train"]["age"]
    if y_train.size < config.batch_size:
        raise ValueError(f"batch_size {config.batch_size} exceeds the {y_train.size} training images")
    seed_everything(seed)
    gen = torch.Generator().manual_seed(seed)
    size, workers, b = config.image_size, config.num_workers, config.batch_size

    def kwargs(name: str) -> dict[str, Any]:
        return {"gen": gen, **(scale(f"seed{seed}-{name}") if scale is not None else {})}

    fabric = kwargs("stage1-l1").get("fabric")
    if fabric is not None:
        device = str(fabric.device)
    train = _loader(DirImages(split["train"]["path"], y_train, size, True), b, True, workers, gen, fabric)
    plain = {s: _loader(DirImages(d["path"], d["age"], size), b, False, workers) for s, d in split.items()}
    y_val, y_test = split["val"]["age"], split["test"]["age"]
    loss_kwargs = dict(
        lam=config.lam, eps=config.eps, bw=config.bw, min_label=config.min_label,
        max_label=config.max_label, step=config.step,
    )  # fmt: skip
    model = ResNet(tuple(config.resnet_layers), config.resnet_width, 3, float(y_train.mean())).to(device)
    speed: dict[str, float] = {}
    setup = make_loss("l1", y_train, b, device=device, **loss_kwargs)
    speed["stage1_l1_samples_per_s"] = _fit(
        model, list(model.parameters()), train, plain["val"], y_val, setup, config, device, "plain", True,
        **kwargs("stage1-l1"),
    )  # fmt: skip
    metrics: dict[str, dict[str, float]] = {}
    preds: dict[str, Any] = {"y_train": y_train, "y_test": y_test}
    train_pred = _predict(model, plain["train"], device)
    metrics["e2e_l1"] = _metrics(_predict(model, plain["test"], device), y_test, train_pred, y_train)
    preds["e2e_l1"] = train_pred
    for method in config.methods:
        if method == "sqinv_lds_fds":  # FDS needs per-epoch feature passes; not wired for images
            continue
        head_model = copy.deepcopy(model)
        for p in head_model.features.parameters():
            p.requires_grad_(False)
        bias = None if config.rrt_head_init == "official" else float(y_train.mean())
        head_model.reset_head(bias, zero_weight=config.rrt_head_init == "zero")
        setup = make_loss(method, y_train, b, feature_dim=model.feature_dim, device=device, **loss_kwargs)
        speed[f"rrt_{method}_samples_per_s"] = _fit(
            head_model, list(head_model.head.parameters()), train, plain["val"], y_val, setup, config, device,
            "balanced", False, **kwargs(f"rrt_{method}"),
        )  # fmt: skip
        test_pred = _predict(head_model, plain["test"], device)
        train_pred = _predict(head_model, plain["train"], device)
        metrics[f"rrt_{method}"] = _metrics(test_pred, y_test, train_pred, y_train)
        preds[f"rrt_{method}"], preds[f"rrt_{method}_test"] = train_pred, test_pred
    return metrics, preds, speed
