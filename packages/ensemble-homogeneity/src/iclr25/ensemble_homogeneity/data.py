"""Data for the ensemble-homogeneity reproduction (spec §6): bundled scikit-learn tasks, a generated
image task, loaders for CIFAR-10/100 python pickles and the Tiny-ImageNet tree, and `.npz` ensemble outputs.

Nothing is ever downloaded. CIFAR pickles are read with the shared restricted unpickler (plain containers
and numpy arrays only); `.npz` files without pickles.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.files import save_arrays
from iclr25.shared.safeload import load_npz, restricted_pickle_load

SKLEARN_TASKS = ("digits", "synthetic", "wine", "breast_cancer")


@dataclass
class Dataset:
    """A train/test split: inputs float32 (N, ...) and integer labels (N,)."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input."""
        return tuple(self.x_train.shape[1:])


def load_sklearn(name: str, split_seed: int = 0) -> Dataset:
    """A task bundled with scikit-learn, split as in spec §6a.

    digits: pixels / 16, stratified 1000 train / 797 test; synthetic: `make_classification(n_samples=4000,
    n_features=20, n_informative=10, n_classes=5, n_clusters_per_class=2, class_sep=1.0, flip_y=0.05,
    random_state=0)`, standardised with training statistics, stratified 2000 / 2000; wine and breast_cancer:
    standardised, stratified halves.
    """
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    if name not in SKLEARN_TASKS:
        raise ValueError(f"unknown dataset {name!r}: dataset must be one of {', '.join(SKLEARN_TASKS)}")
    standardise = True
    if name == "digits":
        X, y = datasets.load_digits(return_X_y=True)
        X, train_size, standardise = X / 16.0, 1000, False
    elif name == "synthetic":
        X, y = datasets.make_classification(
            n_samples=4000,
            n_features=20,
            n_informative=10,
            n_classes=5,
            n_clusters_per_class=2,
            class_sep=1.0,
            flip_y=0.05,
            random_state=0,
        )
        train_size = 2000
    else:
        loader = datasets.load_wine if name == "wine" else datasets.load_breast_cancer
        X, y = loader(return_X_y=True)
        train_size = len(y) // 2
    xtr, xte, ytr, yte = train_test_split(X, y, train_size=train_size, stratify=y, random_state=split_seed)
    if standardise:
        mu, sd = xtr.mean(0), xtr.std(0)
        sd[sd == 0] = 1.0
        xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    return Dataset(
        name,
        xtr.astype(np.float32),
        ytr.astype(np.int64),
        xte.astype(np.float32),
        yte.astype(np.int64),
        int(y.max() + 1),
    )


def make_image_task(
    n_train: int = 5000,
    n_test: int = 2000,
    n_classes: int = 10,
    image_size: int = 32,
    noise: float = 1.0,
    label_noise: float = 0.05,
    seed: int = 0,
) -> Dataset:
    """A generated stand-in for CIFAR: class-conditional Gaussian-mixture images (3, S, S).

    Each class has two smooth prototypes (random low-frequency patterns); an image is a prototype plus white
    noise of sd `noise`; a fraction `label_noise` of labels is resampled uniformly (train and test).
    """
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    low = rng.standard_normal((n_classes, 2, 3, 4, 4))
    protos = low.repeat(image_size // 4, axis=-1).repeat(image_size // 4, axis=-2)  # (C, 2, 3, S, S)
    y = rng.integers(0, n_classes, n)
    mode = rng.integers(0, 2, n)
    x = protos[y, mode] + noise * rng.standard_normal((n, 3, image_size, image_size))
    flip = rng.random(n) < label_noise
    y = np.where(flip, rng.integers(0, n_classes, n), y)
    x = x.astype(np.float32)
    return Dataset("image", x[:n_train], y[:n_train], x[n_train:], y[n_train:], n_classes)


# --------------------------------------------------------------------------------------------------
# CIFAR-10/100 python pickles


def _load_pickle(path: Path) -> dict:
    data = restricted_pickle_load(path, encoding="bytes", what="CIFAR python batch")
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a CIFAR batch dictionary")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in data.items()}


def _images(raw: Any, path: Path) -> np.ndarray:
    arr = np.asarray(raw, dtype=np.uint8)
    if arr.ndim != 2 or arr.shape[1] != 3072:
        raise ValueError(f"{path}: 'data' must be uint8 (n, 3072), got {arr.shape}")
    return arr.reshape(-1, 3, 32, 32)  # 1024 R, 1024 G, 1024 B, each row-major 32x32


def load_cifar(root: str | Path, which: int = 10, label: str = "fine") -> Dataset:
    """CIFAR-10 (`cifar-10-batches-py/`) or CIFAR-100 (`cifar-100-python/`, fine or coarse labels).

    `root` is the extracted folder itself or its parent. Images are returned as float32 in [0, 1], (N, 3, 32, 32).
    """
    root = Path(root)
    if which not in (10, 100):
        raise ValueError(f"which must be 10 or 100, got {which}")
    if label not in ("fine", "coarse"):
        raise ValueError(f"label must be 'fine' or 'coarse', got {label!r}")
    sub = "cifar-10-batches-py" if which == 10 else "cifar-100-python"
    folder = root / sub if (root / sub).is_dir() else root
    if not folder.is_dir():
        raise FileNotFoundError(f"CIFAR-{which} folder {folder} not found")
    if which == 10:
        train_files = [folder / f"data_batch_{i}" for i in range(1, 6)]
        test_files = [folder / "test_batch"]
        key, n_classes = "labels", 10
    else:
        train_files, test_files = [folder / "train"], [folder / "test"]
        key, n_classes = f"{label}_labels", (100 if label == "fine" else 20)

    def read(files: list[Path]) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for p in files:
            d = _load_pickle(p)
            if "data" not in d or key not in d:
                raise ValueError(f"{p} lacks 'data' or '{key}'")
            xs.append(_images(d["data"], p))
            ys.append(np.asarray(d[key], dtype=np.int64))
        x, y = np.concatenate(xs), np.concatenate(ys)
        if len(x) != len(y) or (len(y) and (y.min() < 0 or y.max() >= n_classes)):
            raise ValueError(f"CIFAR-{which}: labels do not match the images or lie outside [0, {n_classes})")
        return (x.astype(np.float32) / 255.0), y

    xtr, ytr = read(train_files)
    xte, yte = read(test_files)
    return Dataset(f"cifar{which}", xtr, ytr, xte, yte, n_classes)


def standardise_images(data: Dataset) -> Dataset:
    """Per-channel standardisation with training statistics (no augmentation, spec §3.6)."""
    mu = data.x_train.mean(axis=(0, 2, 3), keepdims=True)
    sd = data.x_train.std(axis=(0, 2, 3), keepdims=True) + 1e-8
    return Dataset(
        data.name,
        ((data.x_train - mu) / sd).astype(np.float32),
        data.y_train,
        ((data.x_test - mu) / sd).astype(np.float32),
        data.y_test,
        data.n_classes,
    )


# --------------------------------------------------------------------------------------------------
# Tiny ImageNet


def load_tiny_imagenet(root: str | Path, split: str = "train") -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Tiny-ImageNet-200 images (N, 3, 64, 64) uint8, label ids (N,) and the wnid list (ids index it).

    `root` is `tiny-imagenet-200/` or its parent; split "train" reads `train/<wnid>/images/*.JPEG`, "val"
    reads `val/images/*.JPEG` labelled by `val/val_annotations.txt`.
    """
    from PIL import Image

    root = Path(root)
    folder = root / "tiny-imagenet-200" if (root / "tiny-imagenet-200").is_dir() else root
    wnids_file = folder / "wnids.txt"
    if not wnids_file.is_file():
        raise FileNotFoundError(f"{wnids_file} not found")
    wnids = [w.strip() for w in wnids_file.read_text().splitlines() if w.strip()]
    index = {w: i for i, w in enumerate(wnids)}
    files: list[tuple[Path, int]] = []
    if split == "train":
        for w in wnids:
            files += [(p, index[w]) for p in sorted((folder / "train" / w / "images").glob("*.JPEG"))]
    elif split == "val":
        ann = folder / "val" / "val_annotations.txt"
        if not ann.is_file():
            raise FileNotFoundError(f"{ann} not found")
        for line in ann.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) < 2:
                continue
            if parts[1] not in index:
                raise ValueError(f"{ann}: unknown wnid {parts[1]!r}")
            files.append((folder / "val" / "images" / parts[0], index[parts[1]]))
    else:
        raise ValueError(f"split must be 'train' or 'val', got {split!r}")
    if not files:
        raise ValueError(f"no Tiny-ImageNet images found for split {split!r} under {folder}")
    images = []
    for p, _ in files:
        with Image.open(p) as im:
            arr = np.asarray(im.convert("RGB").resize((64, 64)), dtype=np.uint8)
        images.append(arr.transpose(2, 0, 1))
    return np.stack(images), np.array([c for _, c in files], dtype=np.int64), wnids


def load_tiny_imagenet_dataset(root: str | Path) -> Dataset:
    """Tiny-ImageNet as a train (train tree) / test (val tree) `Dataset`, float32 in [0, 1], (N, 3, 64, 64)."""
    xtr, ytr, wnids = load_tiny_imagenet(root, "train")
    xte, yte, _ = load_tiny_imagenet(root, "val")
    return Dataset("tinyimagenet", xtr.astype(np.float32) / 255, ytr, xte.astype(np.float32) / 255, yte, len(wnids))


def load_image_dataset(name: str, root: str | Path) -> Dataset:
    """A real image dataset by name ("cifar10", "cifar100", "tinyimagenet") from user files, standardised."""
    if name in ("cifar10", "cifar100"):
        return standardise_images(load_cifar(root, which=10 if name == "cifar10" else 100))
    if name == "tinyimagenet":
        return standardise_images(load_tiny_imagenet_dataset(root))
    raise ValueError(f"unknown image dataset {name!r}: use cifar10, cifar100 or tinyimagenet")


# --------------------------------------------------------------------------------------------------
# Ensemble outputs


@dataclass
class EnsemblePredictions:
    """Member probabilities (M, N, C) on one test set, its labels (N,) and optional per-member metadata."""

    probs: np.ndarray
    labels: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        from iclr25.ensemble_homogeneity.metrics import check_probs

        self.probs, self.labels = check_probs(self.probs, self.labels)
        if not isinstance(self.meta, dict):
            raise ValueError(f"meta must be a dict (JSON object), got {type(self.meta).__name__}")

    @property
    def n_members(self) -> int:
        """M."""
        return self.probs.shape[0]

    @classmethod
    def from_npz(cls, path: str | Path) -> EnsemblePredictions:
        """Read `probs` (or `logits`) float (M, N, C), `labels` int (N,), optional `member_meta` JSON string."""
        arrays = load_npz(path, what="ensemble predictions .npz")
        if "labels" not in arrays or not ("probs" in arrays or "logits" in arrays):
            raise ValueError(f"{path} must hold 'labels' and 'probs' (or 'logits'); it has {sorted(arrays)}")
        if "probs" in arrays:
            probs = arrays["probs"].astype(np.float64)
        else:
            z = arrays["logits"].astype(np.float64)
            z = np.exp(z - z.max(-1, keepdims=True))
            probs = z / z.sum(-1, keepdims=True)
        meta = _read_member_meta(arrays["member_meta"], path) if "member_meta" in arrays else {}
        return cls(probs, arrays["labels"], meta)

    def to_npz(self, path: str | Path) -> Path:
        """Write `probs`, `labels` and `member_meta` (JSON) to a compressed .npz."""
        arrays = {"probs": self.probs, "labels": self.labels, "member_meta": np.array(json.dumps(self.meta))}
        return save_arrays(path, arrays, compressed=True)


def _read_member_meta(raw: np.ndarray, path: str | Path) -> dict:
    """`member_meta` of a predictions .npz: one JSON text (a 0-d string array) holding an object."""
    if raw.ndim != 0 or raw.dtype.kind not in "US":
        raise ValueError(
            f"{path}: member_meta must be one JSON text (a 0-d string array, as np.array(json.dumps(dict))); "
            f"got dtype {raw.dtype}, shape {raw.shape}"
        )
    text = raw.item()
    try:
        meta = json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: member_meta is not valid JSON ({str(e).splitlines()[0]})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: member_meta must be a JSON object (a mapping), got a JSON {type(meta).__name__}")
    return meta
