"""Data: the paper's synthetic settings and loaders for its real formats (nothing is ever downloaded).

- `two_gaussians`: the 2-D linear setting of Table 1 (two isotropic Gaussians, 150/100/600), optional label noise.
- `two_moons`: the 2-D nonlinear setting of Table 2 (scikit-learn moons, noise 0.2, scaled to [0, 5] x [0, 4]).
- `digits_split`: scikit-learn's 8x8 digits / 16 for the quick active-learning run; `upsample_digits` makes
  28x28 MNIST-shaped images when no MNIST files are available.
- Loaders: InfDataSel `meta.json` + headerless CSVs, `.npy` feature sets, MNIST/EMNIST IDX, CIFAR-10 python
  batches (a restricted unpickler: numpy arrays and plain containers only).
"""

from __future__ import annotations

import csv
import gzip
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Split:
    """Train / validation / test arrays; `flipped` lists training indices whose label was flipped."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    flipped: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    feature_names: list[str] = field(default_factory=list)


def _balanced(rng: np.random.Generator, n: int, means: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(n) % 2
    rng.shuffle(y)
    return means[y] + sigma * rng.standard_normal((n, means.shape[1])), y


def two_gaussians(
    seed: int = 0,
    n_train: int = 150,
    n_val: int = 100,
    n_test: int = 600,
    mean0: tuple[float, float] = (3.5, 3.5),
    mean1: tuple[float, float] = (6.0, 6.0),
    sigma: float = 1.0,
    label_noise: float = 0.0,
) -> Split:
    """Two balanced isotropic Gaussians (paper Table 1 setting); `label_noise` flips that fraction of train labels.

    The flipped indices are drawn with rng.choice(n_train, k, replace=False) after the test set (spec 6a).
    """
    rng = np.random.default_rng(seed)
    means = np.array([mean0, mean1], float)
    Xtr, ytr = _balanced(rng, n_train, means, sigma)
    Xv, yv = _balanced(rng, n_val, means, sigma)
    Xte, yte = _balanced(rng, n_test, means, sigma)
    flipped = np.zeros(0, int)
    if label_noise > 0:
        flipped = np.sort(rng.choice(n_train, round(label_noise * n_train), replace=False))
        ytr = ytr.copy()
        ytr[flipped] = 1 - ytr[flipped]
    return Split(Xtr, ytr, Xv, yv, Xte, yte, flipped)


def two_moons(seed: int = 0, n_train: int = 500, n_val: int = 250, n_test: int = 250, noise: float = 0.2) -> Split:
    """Two crescents (make_moons, noise 0.2) scaled to the paper's [0, 5] x [0, 4] look; 500/250/250."""
    from sklearn.datasets import make_moons

    X, y = make_moons(n_train + n_val + n_test, noise=noise, random_state=seed)
    X = np.column_stack([(X[:, 0] + 1.0) * 5.0 / 3.0, (X[:, 1] + 0.5) * 4.0 / 1.5])
    a, b = n_train, n_train + n_val
    return Split(X[:a], y[:a], X[a:b], y[a:b], X[b:], y[b:])


@dataclass
class ALSplit:
    """Active-learning split: initial labelled set, pool, validation (IV only) and test."""

    X_init: np.ndarray
    y_init: np.ndarray
    X_pool: np.ndarray
    y_pool: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def split_al(X: np.ndarray, y: np.ndarray, seed: int, n_init: int, n_pool: int, n_val: int, n_test: int) -> ALSplit:
    """Random disjoint init / pool / validation / test subsets of (X, y)."""
    need = n_init + n_pool + n_val + n_test
    if need > len(X):
        raise ValueError(f"init + pool + val + test = {need} exceeds the {len(X)} available points")
    idx = np.random.default_rng(seed).permutation(len(X))
    cuts = np.cumsum([n_test, n_val, n_init, n_pool])
    te, va, ini, po = np.split(idx[: cuts[-1]], cuts[:-1])
    return ALSplit(X[ini], y[ini], X[po], y[po], X[va], y[va], X[te], y[te])


def digits_split(seed: int = 0, n_init: int = 60, n_pool: int = 1000, n_val: int = 300, n_test: int = 400) -> ALSplit:
    """scikit-learn digits (1,797 8x8 images, pixels / 16) split for active learning (spec 6a.3)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return split_al(d.data / 16.0, d.target.astype(int), seed, n_init, n_pool, n_val, n_test)


def upsample_digits(images: np.ndarray, size: int = 28) -> np.ndarray:
    """8x8 digit images (n, 64) -> (n, size, size) by bilinear zoom (MNIST-shaped stand-in)."""
    from scipy.ndimage import zoom

    imgs = np.asarray(images, float).reshape(-1, 8, 8)
    return np.stack([zoom(im, size / 8.0, order=1) for im in imgs]).clip(0, None)


# ---------------------------------------------------------------------------------------------------------
# Loaders
# ---------------------------------------------------------------------------------------------------------
def _csv_list(value: str | list | None) -> list[str]:
    if not value:
        return []
    return [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)


def _read_rows(path: Path, columns: list[str], na: set[str]) -> list[dict[str, str]]:
    rows = []
    with open(path, newline="") as f:
        for rec in csv.reader(f, skipinitialspace=True):
            if not rec or all(not r.strip() for r in rec) or rec[0].startswith("|"):
                continue
            if len(rec) != len(columns):
                raise ValueError(f"{path}: a row has {len(rec)} fields, meta.json names {len(columns)} columns")
            vals = [r.strip() for r in rec]
            if any(v in na for v in vals):  # rows with a missing value are dropped (InfDataSel's na_values)
                continue
            rows.append(dict(zip(columns, vals, strict=True)))
    return rows


def load_tabular_meta(meta_path: str | Path, val_p: float = 0.25, seed: int = 0) -> Split:
    """InfDataSel-style tabular data: meta.json + headerless CSVs -> standardised one-hot features.

    Labels mapped by `label_mapping` (a trailing '.' as in Adult's test file is ignored), `drop_feat` dropped,
    categoricals one-hot over the categories seen in train and test, every feature standardised with the train
    statistics, and a validation split of `val_p` drawn from train (InfDataSel default 0.25).
    """
    meta_path = Path(meta_path)
    meta = json.loads(meta_path.read_text())
    for key in ("train_path", "test_path", "column_names", "target_feat"):
        if key not in meta:
            raise ValueError(f"{meta_path}: missing key {key!r}")
    if not 0 < val_p < 1:
        raise ValueError(f"val_p must lie in (0, 1), got {val_p}")
    columns = _csv_list(meta["column_names"])
    target = meta["target_feat"]
    cats = set(_csv_list(meta.get("categorical_feat")))
    drop = set(_csv_list(meta.get("drop_feat")))
    na = set(_csv_list(meta.get("na_values"))) or {"?"}
    mapping = meta.get("label_mapping", {})

    def resolve(p: str) -> Path:
        q = Path(p)
        return q if q.is_absolute() else meta_path.parent / q.name

    train = _read_rows(resolve(meta["train_path"]), columns, na)
    test = _read_rows(resolve(meta["test_path"]), columns, na)

    def label(v: str) -> int:
        tm = mapping.get(target, {})
        for cand in (v, v.rstrip(".")):
            if cand in tm:
                return int(tm[cand])
        try:
            return int(float(v))
        except ValueError:
            raise ValueError(f"label {v!r} of {target!r} is not in label_mapping") from None

    feats = [c for c in columns if c != target and c not in drop]
    names: list[str] = []
    blocks_tr, blocks_te = [], []
    for c in feats:
        col_tr = [r[c] for r in train]
        col_te = [r[c] for r in test]
        if c in mapping:  # binary attributes mapped to numbers (e.g. the sensitive attribute)
            blocks_tr.append(np.array([[float(mapping[c].get(v, 0.0))] for v in col_tr]))
            blocks_te.append(np.array([[float(mapping[c].get(v, 0.0))] for v in col_te]))
            names.append(c)
        elif c in cats:
            levels = sorted(set(col_tr) | set(col_te))
            pos = {v: i for i, v in enumerate(levels)}
            for col, out in ((col_tr, blocks_tr), (col_te, blocks_te)):
                oh = np.zeros((len(col), len(levels)))
                oh[np.arange(len(col)), [pos[v] for v in col]] = 1.0
                out.append(oh)
            names += [f"{c}={v}" for v in levels]
        else:
            blocks_tr.append(np.array(col_tr, float)[:, None])
            blocks_te.append(np.array(col_te, float)[:, None])
            names.append(c)
    Xtr, Xte = np.hstack(blocks_tr), np.hstack(blocks_te)
    ytr = np.array([label(r[target]) for r in train])
    yte = np.array([label(r[target]) for r in test])
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    perm = np.random.default_rng(seed).permutation(len(Xtr))
    nv = round(val_p * len(Xtr))
    va, tr = perm[:nv], perm[nv:]
    return Split(Xtr[tr], ytr[tr], Xtr[va], ytr[va], Xte, yte, feature_names=names)


def load_npy_features(folder: str | Path, suffix: str = "") -> dict[str, np.ndarray]:
    """Precomputed feature sets as in InfDataSel's data/al-data: X_<part><suffix>.npy and y_<part><suffix>.npy."""
    from iclr25.shared.safeload import load_npy

    folder = Path(folder)
    out: dict[str, np.ndarray] = {}
    for f in sorted(folder.glob(f"[Xy]_*{suffix}.npy")):
        out[f.stem] = load_npy(f)
    if not out:
        raise ValueError(f"no X_*{suffix}.npy / y_*{suffix}.npy files in {folder}")
    for key, arr in out.items():
        if key.startswith("X_"):
            other = "y_" + key[2:]
            if other in out and len(out[other]) != len(arr):
                raise ValueError(f"{key} has {len(arr)} rows but {other} has {len(out[other])}")
    return out


def load_idx(path: str | Path) -> np.ndarray:
    """MNIST/EMNIST IDX file (optionally .gz): images (n, rows, cols) uint8 (magic 2051) or labels (n,) (2049)."""
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path) as f:
            raw = f.read()
    else:
        raw = path.read_bytes()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for an IDX file")
    magic, n = struct.unpack(">II", raw[:8])
    if magic == 2049:
        data = np.frombuffer(raw, np.uint8, offset=8)
        if len(data) != n:
            raise ValueError(f"{path}: header says {n} labels, file holds {len(data)}")
        return data.copy()
    if magic == 2051:
        rows, cols = struct.unpack(">II", raw[8:16])
        data = np.frombuffer(raw, np.uint8, offset=16)
        if len(data) != n * rows * cols:
            raise ValueError(f"{path}: header says {n}x{rows}x{cols}, file holds {len(data)} bytes")
        return data.reshape(n, rows, cols).copy()
    raise ValueError(f"{path}: IDX magic {magic} is neither 2051 (images) nor 2049 (labels)")


def load_cifar10_batch(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 python batch: images (n, 32, 32, 3) uint8 and labels (n,)."""
    from iclr25.shared.safeload import restricted_pickle_load

    d = restricted_pickle_load(path, encoding="bytes", what="CIFAR-10 python batch")
    if not isinstance(d, dict) or b"data" not in d:
        raise ValueError(f"{path}: not a CIFAR-10 python batch (no b'data' key)")
    data = np.asarray(d[b"data"], np.uint8)
    labels = np.asarray(d.get(b"labels", d.get(b"fine_labels")), int)
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels
