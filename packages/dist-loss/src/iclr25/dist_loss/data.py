"""Data for Dist Loss experiments (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216, Sec. 4.1).

- `agedb_labels`: integer labels with the AgeDB-DIR training and balanced test histograms (DIR split).
- `make_tabular`: an imbalanced regression task with noisy features of the label (the quick setting).
- `make_disk_images`: small images whose disk radius encodes the label (a BatchNorm/CNN variant).
- Loaders for the real formats: the DIR meta CSV (`age, path, split`) + images of IMDB-WIKI-DIR and
  AgeDB-DIR, AgeDB raw file names (`{id}_{Name}_{age}_{gender}.jpg`) with the balanced split builder,
  a generic tabular CSV/NPZ loader, and the ECG-KDIR-style `.npy` signals + CSV labels.
Nothing here downloads anything.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "AGEDB_TEST_COUNTS",
    "AGEDB_TRAIN_COUNTS",
    "RegressionData",
    "agedb_labels",
    "balanced_split",
    "load_dir_csv",
    "load_ecg",
    "load_tabular",
    "make_disk_images",
    "make_tabular",
    "parse_agedb_filenames",
]

# AgeDB-DIR label histograms, ages 0..101 (DIR split: 12,208 train; balanced 2,140 val / test).
_TRAIN_TEXT = (
    "0 1 0 4 2 2 4 5 4 2 5 8 6 8 9 15 18 28 60 50 101 103 123 152 199 224 215 244 287 253 325 256 318 278 "
    "302 353 287 310 322 261 326 260 296 265 221 282 227 229 251 207 257 227 250 190 198 234 167 183 186 "
    "153 185 147 178 158 133 171 117 117 155 90 156 85 115 96 78 98 49 44 46 26 31 26 24 19 15 20 13 10 7 "
    "7 7 7 5 5 3 3 2 1 2 1 2 1"
)
_TEST_HEAD, _TEST_TAIL = (
    "0 0 0 2 0 1 2 3 2 2 4 6 4 7 7 14 17 27",
    "25 30 25 22 19 14 19 11 10 7 6 6 5 3 5 2 3 0 0 0 0 0 0",
)
AGEDB_TRAIN_COUNTS: tuple[int, ...] = tuple(int(c) for c in _TRAIN_TEXT.split())
AGEDB_TEST_COUNTS: tuple[int, ...] = (
    tuple(int(c) for c in _TEST_HEAD.split()) + (30,) * 61 + tuple(int(c) for c in _TEST_TAIL.split())
)  # ages 18..78 hold 30 each


@dataclass
class RegressionData:
    """Features and labels of the train / val / test splits (numpy, float32 features, float64 labels)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def agedb_labels(split: str = "train", scale: int = 1) -> np.ndarray:
    """Integer ages following the AgeDB-DIR histogram of `split` ("train" | "val" | "test"), counts x `scale`."""
    if split not in ("train", "val", "test"):
        raise ValueError(f"split must be train, val or test; got {split!r}")
    if scale < 1:
        raise ValueError(f"scale must be a positive integer, got {scale!r}")
    counts = np.asarray(AGEDB_TRAIN_COUNTS if split == "train" else AGEDB_TEST_COUNTS) * scale
    return np.repeat(np.arange(len(counts)), counts).astype(np.float64)


def _mixing_matrix(dim: int, seed: int = 1234) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(dim, 3))  # fixed, independent of the run seed


def tabular_features(
    labels: np.ndarray,
    rng: np.random.Generator,
    dim: int = 16,
    label_noise: float = 8.0,
    feature_noise: float = 0.05,
) -> np.ndarray:
    """x = tanh(A z) + noise, z = (u, u^2, sin 3u), u = (y + N(0, label_noise^2)) / 50 (spec quick setting)."""
    u = (labels + rng.normal(0.0, label_noise, size=labels.shape)) / 50.0
    z = np.stack([u, u**2, np.sin(3 * u)], axis=1)  # (N, 3)
    x = np.tanh(z @ _mixing_matrix(dim).T) + feature_noise * rng.normal(size=(labels.size, dim))  # (N, dim)
    return x.astype(np.float32)


def make_tabular(
    seed: int = 0,
    scale: int = 1,
    dim: int = 16,
    label_noise: float = 8.0,
    feature_noise: float = 0.05,
) -> RegressionData:
    """The AgeDB-DIR-shaped tabular task: histogram labels, fresh feature noise per split."""
    if label_noise < 0 or feature_noise < 0:
        raise ValueError("label_noise and feature_noise must be >= 0")
    rng = np.random.default_rng(seed)
    splits = {s: agedb_labels(s, scale) for s in ("train", "val", "test")}
    feats = {s: tabular_features(y, rng, dim, label_noise, feature_noise) for s, y in splits.items()}
    return RegressionData(feats["train"], splits["train"], feats["val"], splits["val"], feats["test"], splits["test"])


def make_disk_images(labels: np.ndarray, seed: int = 0, size: int = 32, noise: float = 0.1) -> np.ndarray:
    """(N, 1, size, size) float32 images of a disk whose radius grows with the label (max label -> size/2)."""
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    rng = np.random.default_rng(seed)
    hi = max(float(labels.max()), 1.0)
    radius = 1.0 + (size / 2 - 2) * labels / hi  # (N,)
    centre = size / 2 + rng.uniform(-2, 2, size=(labels.size, 2))  # (N, 2)
    yy, xx = np.mgrid[0:size, 0:size]
    dist = np.sqrt((yy[None] - centre[:, 0, None, None]) ** 2 + (xx[None] - centre[:, 1, None, None]) ** 2)
    img = (dist <= radius[:, None, None]).astype(np.float32)
    img += noise * rng.normal(size=img.shape).astype(np.float32)
    return img[:, None]


# --------------------------------------------------------------------------------------------------
# Real-data formats.


def load_dir_csv(csv_path: str | Path, data_dir: str | Path | None = None, split: str | None = None) -> dict:
    """Read a DIR meta CSV (`age, path, split`) as {"age": float array, "path": [Path], "split": [str]}.

    `data_dir` (default: the CSV's folder) is prepended to relative image paths; `split` filters rows.
    """
    csv_path = Path(csv_path)
    if not csv_path.is_file():
        raise FileNotFoundError(f"meta CSV {csv_path} does not exist")
    root = Path(data_dir) if data_dir is not None else csv_path.parent
    with csv_path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = {"age", "path", "split"} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{csv_path.name} lacks columns {sorted(missing)}; a DIR meta CSV has age, path, split")
        rows = [r for r in reader if split is None or r["split"] == split]
    if split is not None and split not in ("train", "val", "test"):
        raise ValueError(f"split must be train, val or test; got {split!r}")
    return {
        "age": np.array([float(r["age"]) for r in rows]),
        "path": [root / r["path"] for r in rows],
        "split": [r["split"] for r in rows],
    }


def load_images(paths: list[Path], size: int = 224) -> np.ndarray:
    """Load RGB images resized to size x size as a (N, 3, size, size) float32 array in [0, 1]."""
    from PIL import Image

    out = np.empty((len(paths), 3, size, size), dtype=np.float32)
    for i, p in enumerate(paths):
        with Image.open(p) as im:
            arr = np.asarray(im.convert("RGB").resize((size, size)), dtype=np.float32) / 255.0
        out[i] = arr.transpose(2, 0, 1)
    return out


_AGEDB_NAME = re.compile(r"^(?P<id>\d+)_(?P<name>.+)_(?P<age>\d+)_(?P<gender>[mf])\.jpg$", re.IGNORECASE)


def parse_agedb_filenames(names: list[str]) -> list[dict]:
    """Parse AgeDB raw names `{id}_{Name}_{age}_{gender}.jpg` into dicts (id, name, age, gender, path)."""
    out = []
    for name in names:
        m = _AGEDB_NAME.match(Path(name).name)
        if m is None:
            raise ValueError(f"{name!r} does not match the AgeDB pattern '{{id}}_{{Name}}_{{age}}_{{gender}}.jpg'")
        out.append(
            {"id": int(m["id"]), "name": m["name"], "age": int(m["age"]), "gender": m["gender"].lower(), "path": name}
        )
    return out


def balanced_split(ages: np.ndarray, per_age: int = 30, seed: int = 666) -> np.ndarray:
    """DIR balanced split: per age, shuffle; val = test = min(n // 3, per_age) samples, the rest train.

    Returns an array of "train" / "val" / "test" (per_age 30 for AgeDB-DIR, 150 for IMDB-WIKI-DIR).
    """
    ages = np.asarray(ages).reshape(-1)
    rng = np.random.default_rng(seed)
    split = np.full(ages.shape, "train", dtype=object)
    for age in np.unique(ages):
        idx = rng.permutation(np.flatnonzero(ages == age))
        k = min(idx.size // 3, per_age)
        split[idx[:k]] = "val"
        split[idx[k : 2 * k]] = "test"
    return split.astype(str)


def load_tabular(path: str | Path, target: str = "target") -> tuple[np.ndarray, np.ndarray]:
    """Features and target from a CSV (header; `target` column) or an NPZ (arrays `x` and `y`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    if path.suffix == ".npz":
        from iclr25.shared.safeload import load_npz

        data = load_npz(path)  # allow_pickle=False: nothing in the file runs
        if "x" not in data or "y" not in data:
            raise ValueError(f"{path.name} must hold arrays 'x' and 'y', has {sorted(data)}")
        return data["x"].astype(np.float32), data["y"].astype(np.float64).reshape(-1)
    if path.suffix != ".csv":
        raise ValueError(f"tabular data must be .csv or .npz, got {path.suffix!r}")
    try:
        with path.open(newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = [r for r in reader if r]
    except (UnicodeDecodeError, csv.Error) as e:
        raise ValueError(f"{path.name} is not a readable CSV text file ({e})") from None
    if not header:
        raise ValueError(f"{path.name} is empty; a CSV needs a header row and one row per sample")
    if target not in header:
        raise ValueError(f"{path.name} has no column {target!r}; columns: {header}")
    if not rows:
        raise ValueError(f"{path.name} has a header but no data rows")
    bad = next((i for i, r in enumerate(rows, start=2) if len(r) != len(header)), None)
    if bad is not None:
        raise ValueError(f"{path.name} line {bad} has {len(rows[bad - 2])} cells, the header {len(header)}")
    try:
        table = np.array(rows, dtype=np.float64)
    except ValueError as e:
        raise ValueError(f"{path.name}: every cell must be a number ({e})") from None
    t = header.index(target)
    return np.delete(table, t, axis=1).astype(np.float32), table[:, t]


def load_ecg(signals: str | Path, labels_csv: str | Path, label_column: str = "label") -> tuple[np.ndarray, np.ndarray]:
    """ECG-KDIR-style data: (N, leads, T) signals from `.npy` and one label per row of a CSV."""
    signals, labels_csv = Path(signals), Path(labels_csv)
    for p in (signals, labels_csv):
        if not p.is_file():
            raise FileNotFoundError(f"{p} does not exist")
    from iclr25.shared.safeload import load_npy

    x = load_npy(signals)  # allow_pickle=False: nothing in the file runs
    if x.ndim != 3:
        raise ValueError(f"{signals.name}: ECG signals must be (N, leads, T), got shape {x.shape}")
    try:
        with labels_csv.open(newline="") as f:
            reader = csv.DictReader(f)
            if label_column not in (reader.fieldnames or []):
                raise ValueError(f"{labels_csv.name} has no column {label_column!r}")
            y = np.array([float(r[label_column]) for r in reader])
    except (UnicodeDecodeError, csv.Error, TypeError) as e:
        raise ValueError(f"{labels_csv.name} is not a readable labels CSV ({e})") from None
    except ValueError as e:
        if "has no column" in str(e):
            raise
        raise ValueError(f"{labels_csv.name}: every {label_column!r} cell must be a number ({e})") from None
    if y.size != x.shape[0]:
        raise ValueError(f"{labels_csv.name} has {y.size} labels for the {x.shape[0]} signals of {signals.name}")
    return x.astype(np.float32), y
