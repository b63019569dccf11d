"""Data for HD-Explain (arXiv 2403.15576, experiments): the paper's synthetic sets, digits, and real-format loaders.

- `rectangular`: 4 x 4 grid of cells on [-2, 2]^2, each cell a random class of C = 4, 500 uniform points
  (official dataloaders/synthetic.py, seed 42: the same legacy RandomState stream, so the same data).
- `moons`: sklearn make_moons, noise 0.1, seed 42.
- `digits`: sklearn's 8 x 8 digits (shipped with the wheel), standardised per pixel on the pool.
- Loaders (files are data: no plain pickle, np.load without pickles): CIFAR-10 python batches (a
  restricted unpickler), SVHN `.mat`, image folders `root/<class>/*.png|jpg`, and `.npz` with X, y;
  `load_named` reads a built-in set by name or a file, `load_mask` a boolean mask of known flips.
- `cifar10_or_synthetic`: the image section's training set (CIFAR-10, or random-label images without it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.safeload import load_npy, load_npz, reading_file, restricted_pickle_load

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)  # official normalisation constants
CIFAR10_STD = (0.2023, 0.1994, 0.2010)
SVHN_MEAN = (0.5, 0.5, 0.5)
SVHN_STD = (0.5, 0.5, 0.5)
IMAGENET_MEAN = (0.485, 0.456, 0.406)  # OCH / MRI
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
BUILTIN = ("rectangular", "moons", "digits", "digits-test")  # the sets `load_named` knows by name


def rectangular(
    n: int = 500, grid: tuple[int, int] = (4, 4), n_classes: int = 4, seed: int = 42
) -> tuple[np.ndarray, np.ndarray]:
    """Uniform points on [-2, 2]^2 labelled by the random class of their grid cell ((n, 2) float32, (n,) int64)."""
    if n < 1 or n_classes < 2 or min(grid) < 1:
        raise ValueError(f"need n >= 1, n_classes >= 2 and a positive grid, got {n}, {n_classes}, {grid}")
    rng = np.random.RandomState(seed)
    cell_labels = rng.choice(n_classes, grid[0] * grid[1])  # cell index = ix * grid[1] + iy
    x = rng.uniform(-2, 2, n)
    y = rng.uniform(-2, 2, n)
    ix = np.clip(((x + 2) / 4 * grid[0]).astype(int), 0, grid[0] - 1)
    iy = np.clip(((y + 2) / 4 * grid[1]).astype(int), 0, grid[1] - 1)
    return np.stack([x, y], 1).astype(np.float32), cell_labels[ix * grid[1] + iy].astype(np.int64)


def moons(n: int = 500, noise: float = 0.1, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """sklearn two moons (official: noise 0.1, seed 42)."""
    from sklearn.datasets import make_moons

    X, y = make_moons(n_samples=n, noise=noise, random_state=seed)
    return X.astype(np.float32), y.astype(np.int64)


def digits(pool: int = 1400, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random `pool`-image split of sklearn digits and the rest, standardised per pixel with pool statistics."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    if not 1 <= pool < len(X):
        raise ValueError(f"pool must lie in 1..{len(X) - 1}, got {pool}")
    perm = np.random.RandomState(seed).permutation(len(X))
    tr, te = perm[:pool], perm[pool:]
    mean, std = X[tr].mean(0), X[tr].std(0)
    std[std == 0] = 1.0
    Z = ((X - mean) / std).astype(np.float32)
    return Z[tr], y[tr].astype(np.int64), Z[te], y[te].astype(np.int64)


def flip_labels(y: Any, n_flip: int, n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Flip `n_flip` random labels y -> (y + 1) mod C (the official debug protocol); returns (labels, mask)."""
    y = np.asarray(y, dtype=np.int64)
    if not 1 <= n_flip <= len(y):
        raise ValueError(f"n_flip must lie in 1..{len(y)}, got {n_flip}")
    idx = np.random.RandomState(seed).choice(len(y), n_flip, replace=False)
    out = y.copy()
    out[idx] = (out[idx] + 1) % n_classes
    mask = np.zeros(len(y), dtype=bool)
    mask[idx] = True
    return out, mask


def normalize_images(X: np.ndarray, mean: tuple[float, ...], std: tuple[float, ...]) -> np.ndarray:
    """(x - mean) / std per channel for images (n, C, H, W) in [0, 1]."""
    m = np.asarray(mean, dtype=np.float32)[None, :, None, None]
    s = np.asarray(std, dtype=np.float32)[None, :, None, None]
    return ((X - m) / s).astype(np.float32)


def _load_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    batch = restricted_pickle_load(path, encoding="bytes", what="CIFAR-10 python batch")
    if not isinstance(batch, dict):
        raise ValueError(f"{path} is not a CIFAR-10 batch (expected a dict)")
    data = batch.get(b"data", batch.get("data"))
    labels = batch.get(b"labels", batch.get("labels"))
    if data is None or labels is None:
        raise ValueError(f"{path} has no data/labels entries")
    X = np.asarray(data, dtype=np.uint8).reshape(-1, 3, 32, 32)
    return X.astype(np.float32) / 255.0, np.asarray(labels, dtype=np.int64)


def load_cifar10(root: str | Path, train: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 python batches in `root` (data_batch_1..5 or test_batch): images (n, 3, 32, 32) in [0, 1], labels."""
    root = Path(root)
    names = [f"data_batch_{i}" for i in range(1, 6)] if train else ["test_batch"]
    files = [root / n for n in names if (root / n).is_file()]
    if not files:
        raise FileNotFoundError(f"no CIFAR-10 batches ({', '.join(names)}) in {root}")
    parts = [_load_cifar_batch(f) for f in files]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def load_svhn(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """SVHN `.mat` (X: 32 x 32 x 3 x N uint8, y with 10 meaning 0): images (n, 3, 32, 32) in [0, 1], labels."""
    from scipy.io import loadmat

    with reading_file(path, "MATLAB .mat file (SVHN format)") as p:
        mat = loadmat(p)
    if "X" not in mat or "y" not in mat:
        raise ValueError(f"{path} needs variables X and y")
    X = np.transpose(mat["X"], (3, 2, 0, 1)).astype(np.float32) / 255.0
    y = mat["y"].reshape(-1).astype(np.int64)
    y[y == 10] = 0
    return X, y


def load_image_folder(root: str | Path, size: int | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """`root/<class>/*.png|jpg` as RGB images (n, 3, H, W) in [0, 1] (resized to size x size if given), labels, classes."""
    from PIL import Image

    root = Path(root)
    classes = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not classes:
        raise FileNotFoundError(f"no class folders in {root}")
    images, labels = [], []
    for c, name in enumerate(classes):
        for f in sorted((root / name).iterdir()):
            if f.suffix.lower() in IMAGE_SUFFIXES:
                with reading_file(f, "readable image"), Image.open(f) as im:
                    im = im.convert("RGB")
                    if size:
                        im = im.resize((size, size))
                    images.append(np.asarray(im, dtype=np.float32).transpose(2, 0, 1) / 255.0)
                labels.append(c)
    if not images:
        raise FileNotFoundError(f"no images ({', '.join(IMAGE_SUFFIXES)}) under {root}")
    shapes = {im.shape for im in images}
    if len(shapes) > 1:
        raise ValueError(f"images in {root} have different sizes {sorted(shapes)}; pass size=")
    return np.stack(images), np.asarray(labels, dtype=np.int64), classes


def cifar10_or_synthetic(
    dataset: str, data_dir: str | Path | None, n: int = 0, size: int = 32, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, str]:
    """The image section's training set and its source: the first `n` (0: all) CIFAR-10 training images, normalised,
    when `dataset` is "cifar10" and `data_dir` holds its python batches; else `n` (0: 5000) standard-normal images
    (3, size, size) with random labels from generator `seed`, "synthetic" (saying why when CIFAR-10 was asked for)."""
    if dataset == "cifar10" and data_dir and (Path(data_dir) / "data_batch_1").is_file():
        X, y = load_cifar10(data_dir, train=True)
        if n:
            X, y = X[:n], y[:n]
        return normalize_images(X, CIFAR10_MEAN, CIFAR10_STD), y, "cifar10"
    n = n or 5000
    rng = np.random.default_rng(seed)
    why = "synthetic" if dataset == "synthetic" else "synthetic (no CIFAR-10 batches in data_dir)"
    return (
        rng.standard_normal((n, 3, size, size)).astype(np.float32),
        rng.integers(0, 10, n).astype(np.int64),
        why,
    )


def load_named(spec: str) -> tuple[np.ndarray, np.ndarray]:
    """A built-in set by name (`BUILTIN`: rectangular, moons, digits = the 1400-point pool of seed 0, digits-test =
    its held-out rest) or a data file or folder (`load_dataset`, always read as data); errors are one line naming
    the file, and an empty set is refused."""
    if spec in BUILTIN:
        if spec == "rectangular":
            return rectangular()
        if spec == "moons":
            return moons()
        Xtr, ytr, Xte, yte = digits(1400, 0)
        return (Xtr, ytr) if spec == "digits" else (Xte, yte)
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {spec} (or use a built-in set: {', '.join(BUILTIN)})")
    try:
        X, y = load_dataset(path)
    except (ValueError, OSError) as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(message if str(path) in message else f"{path}: {message}") from None
    if len(X) == 0:
        raise ValueError(f"{path} holds no examples")
    return X, y


def load_mask(path: str | Path, n: int) -> np.ndarray:
    """A boolean mask over `n` points (e.g. the labels known to be flipped) from a `.npy` file or the first array of
    a `.npz` (read as data, no pickles); refuses one of another shape."""
    path = Path(path)
    if path.suffix == ".npz":
        arrays = list(load_npz(path).values())
        mask = np.asarray(arrays[0] if arrays else [], dtype=bool)
    else:
        mask = np.asarray(load_npy(path), dtype=bool)
    if mask.shape != (n,):
        raise ValueError(f"{path} must be a boolean mask of length {n}, got {mask.shape}")
    return mask


def load_dataset(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels from `.npz` (arrays X, y), `.csv` (label in the last column), SVHN `.mat`,
    a CIFAR-10 batch folder or file, or an image folder. Refuses X and y of different lengths."""
    X, y = _load_dataset(Path(path))
    if X.ndim < 2 or y.ndim != 1 or len(X) != len(y):
        raise ValueError(
            f"{path}: X must be (n, features...) and y (n,) with the same n; got X {X.shape} and y {y.shape}"
        )
    return X, y


def _load_dataset(path: Path) -> tuple[np.ndarray, np.ndarray]:
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    if path.is_dir():
        if any((path / n).is_file() for n in ("data_batch_1", "test_batch")):
            return load_cifar10(path, train=(path / "data_batch_1").is_file())
        X, y, _ = load_image_folder(path)
        return X, y
    if path.suffix == ".npz":
        z = load_npz(path, keys=("X", "y"), what="dataset .npz with arrays X and y")
        return z["X"].astype(np.float32), z["y"].astype(np.int64)
    if path.suffix == ".csv":
        with reading_file(path, "CSV file of numbers (label in the last column)") as p:
            data = np.loadtxt(p, delimiter=",", ndmin=2, dtype=np.float64)
        return data[:, :-1].astype(np.float32), data[:, -1].astype(np.int64)
    if path.suffix == ".mat":
        return load_svhn(path)
    if path.name.startswith(("data_batch", "test_batch")):
        return _load_cifar_batch(path)
    raise ValueError(f"unknown data format {path.name}: use .npz (X, y), .csv, .mat, a CIFAR-10 or an image folder")
