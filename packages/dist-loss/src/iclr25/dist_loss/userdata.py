"""A user's own regression data for `train` and `reproduce` (Dist Loss, arXiv 2411.15216, Sec. 4).

Accepted files (read as data: no pickles):
- tabular CSV: a header row, one numeric column per feature and the target column (`target`, default "target");
- NPZ: arrays `x` (N, D) and `y` (N,), or the six arrays `x_train, y_train, x_val, y_val, x_test, y_test`
  that `iclr25-dist-loss synth` writes (used as split and as written); an `x` of shape (N, leads, T) is
  ECG-shaped;
- ECG-shaped: signals `.npy` of shape (N, leads, T) plus a labels CSV (`labels=...`, column `target`,
  default "label"), as the private ECG-Ka-DIR is laid out.
ECG-shaped signals are flattened to leads * T features: the MLP of this package sees the raw samples (the
paper's ECG network is not built here). Files without splits are split at random (seeded) into train / val /
test, and every feature is standardised with the training split's mean and std.

The labels must lie on the label grid `min_label .. max_label` (step `step`) that the pseudo-labels, the
re-weighting bins and the shot regions use. DIR's shot thresholds (many-shot: more than 100 training samples
per bin, few-shot: fewer than 20) were set for AgeDB-DIR's 12,208 labels: they make 51 of its 100 occupied
one-year bins many-shot and 33 few-shot. `scaled_shots` rescales them to a user's data by keeping those
shares: the thresholds are the quantiles of the data's occupied-bin counts at 1 - 0.51 and 0.33 (on AgeDB-DIR
this gives 99.5 and 19.7, the DIR regions exactly), so a small data set still has all three regions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iclr25.dist_loss.data import AGEDB_TRAIN_COUNTS, RegressionData, load_ecg, load_tabular

__all__ = ["check_label_grid", "load_file_task", "load_user_data", "scaled_shots", "split_and_standardise"]
_SPLITS = ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")


def check_label_grid(y: np.ndarray, min_label: float, max_label: float, step: float, name: str = "labels") -> None:
    """ValueError unless every label is finite and lies on [min_label, max_label] (the grid the loss uses)."""
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} must be finite numbers; found NaN or infinity")
    lo, hi = float(y.min()), float(y.max())
    if lo < min_label - 1e-9 or hi > max_label + 1e-9:
        raise ValueError(
            f"{name} span [{lo:g}, {hi:g}], outside the label grid [{min_label:g}, {max_label:g}]; set min_label/"
            f"max_label (train: --min-label/--max-label) and a step that suits them (now {step:g})"
        )


def scaled_shots(
    y_train: np.ndarray, min_label: float, step: float, many: float = 100.0, few: float = 20.0
) -> tuple[float, float]:
    """(many, few) thresholds for `y_train` that give its occupied label bins the many- and few-shot shares that
    (`many`, `few`) give AgeDB-DIR's training histogram (DIR's 100, 20: 51 % and 33 % of the occupied bins)."""
    agedb = np.array([c for c in AGEDB_TRAIN_COUNTS if c > 0])
    many_share, few_share = float(np.mean(agedb > many)), float(np.mean(agedb < few))
    bins = np.floor((np.asarray(y_train, dtype=np.float64) - min_label) / step + 1e-9).astype(np.int64)
    counts = np.unique(bins, return_counts=True)[1]  # occupied bins only
    return round(float(np.quantile(counts, 1 - many_share)), 3), round(float(np.quantile(counts, few_share)), 3)


def split_and_standardise(
    x: np.ndarray, y: np.ndarray, seed: int = 0, val_fraction: float = 0.2, test_fraction: float = 0.2
) -> RegressionData:
    """A seeded random train / val / test split, features standardised with the training split's statistics."""
    n = y.size
    n_val, n_test = round(n * val_fraction), round(n * test_fraction)
    if min(n_val, n_test, n - n_val - n_test) < 2:
        raise ValueError(f"{n} samples are too few to split into train / val / test (need at least 2 in each)")
    perm = np.random.default_rng(seed).permutation(n)
    parts = {"val": perm[:n_val], "test": perm[n_val : n_val + n_test], "train": perm[n_val + n_test :]}
    return _standardised({f"{a}_{s}": (x if a == "x" else y)[idx] for s, idx in parts.items() for a in ("x", "y")})


def _standardised(arrays: dict[str, np.ndarray]) -> RegressionData:
    mean = arrays["x_train"].mean(axis=0)
    std = arrays["x_train"].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    out = {k: ((v - mean) / std).astype(np.float32) if k.startswith("x") else v for k, v in arrays.items()}
    return RegressionData(*(out[k] for k in _SPLITS))


def _flat(x: np.ndarray, path: Path) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim not in (2, 3):
        raise ValueError(f"{path.name}: features must be (N, D) or ECG-shaped (N, leads, T), got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.number) or not np.all(np.isfinite(x)):
        raise ValueError(f"{path.name}: features must be finite numbers")
    return x.reshape(x.shape[0], -1).astype(np.float32)


def load_user_data(
    path: str | Path,
    labels: str | Path | None = None,
    target: str = "",
    seed: int = 0,
    val_fraction: float = 0.2,
    test_fraction: float = 0.2,
) -> RegressionData:
    """Read a user's file (see the module docstring) into standardised train / val / test splits.

    `labels`: the labels CSV of ECG signals in a `.npy`; `target`: the label column (CSV; default "target",
    "label" for an ECG labels CSV); `seed`: the random split's seed. ValueError names the file and the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file {path} does not exist")
    suffix = path.suffix.lower()
    if labels is not None and suffix != ".npy":
        raise ValueError(f"a labels CSV goes with ECG signals in a .npy file, not with {path.name}")
    if suffix == ".npy":
        if labels is None:
            raise ValueError(f"{path.name} holds signals only: give their labels CSV too (labels=..., --labels)")
        x, y = load_ecg(path, labels, label_column=target or "label")
    elif suffix == ".npz":
        from iclr25.shared.safeload import load_npz

        arrays = load_npz(path, what=".npz with arrays x and y (or the six split arrays)")
        if all(k in arrays for k in _SPLITS):
            out = {k: (_flat(v, path) if k.startswith("x") else _labels(v, path)) for k in _SPLITS for v in [arrays[k]]}
            dims = {out[k].shape[1] for k in _SPLITS if k.startswith("x")}
            if len(dims) != 1 or any(out[f"x_{s}"].shape[0] != out[f"y_{s}"].size for s in ("train", "val", "test")):
                raise ValueError(f"{path.name}: the split arrays disagree in their shapes")
            return RegressionData(*(out[k] for k in _SPLITS))  # as written (the synthetic task's features)
        if "x" not in arrays or "y" not in arrays:
            raise ValueError(
                f"{path.name} must hold arrays 'x' and 'y' (or {', '.join(_SPLITS)}), has {sorted(arrays)}"
            )
        x, y = arrays["x"], arrays["y"]
    elif suffix == ".csv":
        x, y = load_tabular(path, target or "target")
    else:
        raise ValueError(f"{path.name}: data must be a .csv or .npz table, or ECG signals in a .npy with a labels CSV")
    x, y = _flat(x, path), _labels(y, path)
    if x.shape[0] != y.size:
        raise ValueError(f"{path.name}: {x.shape[0]} feature rows for {y.size} labels")
    return split_and_standardise(x, y, seed, val_fraction, test_fraction)


def _labels(y: np.ndarray, path: Path) -> np.ndarray:
    y = np.asarray(y)
    if not np.issubdtype(y.dtype, np.number):
        raise ValueError(f"{path.name}: labels must be numbers, got dtype {y.dtype}")
    y = y.astype(np.float64).reshape(-1)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{path.name}: labels must be finite numbers")
    return y


def load_file_task(
    path: str | Path, labels: str | Path | None, config: Any, seed: int
) -> tuple[RegressionData, tuple[float, float]]:
    """A user's file as the task of `config` (a `Config` or `TrainConfig`: label grid, `target`, split fractions,
    shot thresholds, batch size): the splits of `seed` and the (many, few) thresholds. ValueError when the labels
    leave the grid or the training split is smaller than one batch."""
    data = load_user_data(path, labels, config.target, seed, config.val_fraction, config.test_fraction)
    for split in ("train", "val", "test"):
        check_label_grid(
            getattr(data, f"y_{split}"), config.min_label, config.max_label, config.step, f"{split} labels"
        )
    if data.y_train.size < config.batch_size:
        raise ValueError(
            f"batch_size {config.batch_size} exceeds the {data.y_train.size} training samples of {Path(path).name}; "
            "set batch_size (train: --batch-size) to at most that"
        )
    if config.scale_shots:
        return data, scaled_shots(data.y_train, config.min_label, config.step, config.many_shot, config.few_shot)
    return data, (config.many_shot, config.few_shot)
