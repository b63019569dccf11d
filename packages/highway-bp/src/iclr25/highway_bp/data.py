"""Data for the Highway-BP reproduction (Fagnou et al., ICLR 2025, arXiv 2501.17086; spec §6a, §6c).

- scikit-learn's bundled digits (8×8 → 64-d, pixels / 16; stratified 1437/360 split) and their
  pixel-sequence view (64 steps of one pixel), the quick-scale stand-ins for CIFAR-10 and pixel-CIFAR;
- loaders for the paper's real formats, used by the full preset (no downloads: point them at local files):
  CIFAR-10 python pickles, ImageNet32 pickles (1-based labels shifted to 0-based), WikiText-103 raw text
  with a character vocabulary (the 210 most frequent characters plus unk, Table 5) and MNLI (jsonl or tsv);
- `pixel_sequence_task`: the data of the GRU part, pixel-sequence digits or pixel-CIFAR-10.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import numpy as np

from iclr25.shared.safeload import read_jsonl

CIFAR_MEAN = np.array([0.4914, 0.4822, 0.4465], dtype=np.float32)  # standard CIFAR-10 channel statistics
CIFAR_STD = np.array([0.2470, 0.2435, 0.2616], dtype=np.float32)
MNLI_LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}
UNK = "\x00"


def load_digits_split(test_size: int = 360, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits as (X_train, y_train, X_test, y_test): X float32 in [0, 1] of shape (N, 64), stratified split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    X = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    if not 0 < test_size < len(y):
        raise ValueError(f"test_size must be in (0, {len(y)}), got {test_size}")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)
    return Xtr, ytr, Xte, yte


def pixel_sequences(X: np.ndarray, channels: int = 1) -> np.ndarray:
    """Flattened images (N, T·C) as sequences (N, T, C) in row-major pixel order."""
    if X.ndim != 2 or X.shape[1] % channels:
        raise ValueError(f"X must be (N, T*{channels}), got shape {X.shape}")
    return X.reshape(X.shape[0], -1, channels)


def _unpickle(path: Path) -> dict:
    """A CIFAR-10 / ImageNet32 python batch: a restricted unpickler admits only what those files hold (dicts,
    lists, strings, numbers and NumPy arrays), so a crafted batch is refused before anything in it runs."""
    from iclr25.shared.safeload import restricted_pickle_load

    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    batch = restricted_pickle_load(path, encoding="bytes", what="CIFAR-10/ImageNet32 python batch")
    if not isinstance(batch, dict):
        raise ValueError(f"{path} is not a CIFAR-10/ImageNet32 python batch (it holds a {type(batch).__name__})")
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in batch.items()}


def _get(d: dict, key: str, path: Path):
    if key not in d:
        raise ValueError(f"{path} is not a CIFAR-10/ImageNet32 python batch (no {key!r} entry)")
    return d[key]


def load_cifar10(root: str | Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 python pickles (`data_batch_1..5`, `test_batch`) as images (N, 3, 32, 32) uint8, labels int64."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = Path(root)
    names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    xs, ys = [], []
    for name in names:
        batch = _unpickle(root / name)
        xs.append(np.asarray(_get(batch, "data", root / name), dtype=np.uint8))
        ys.append(np.asarray(_get(batch, "labels", root / name), dtype=np.int64))
    X = np.concatenate(xs)
    if X.ndim != 2 or X.shape[1] != 3072:
        raise ValueError(f"CIFAR data must be (N, 3072), got {X.shape}")
    return X.reshape(-1, 3, 32, 32), np.concatenate(ys)


def cifar_pixel_sequences(images: np.ndarray) -> np.ndarray:
    """CIFAR images (N, 3, 32, 32) uint8 → (N, 1024, 3) float32, row-major, scaled to [0, 1] and normalised."""
    if images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"images must be (N, 3, H, W), got {images.shape}")
    seq = images.transpose(0, 2, 3, 1).reshape(images.shape[0], -1, 3).astype(np.float32) / 255.0
    return (seq - CIFAR_MEAN) / CIFAR_STD


def pixel_sequence_task(task: str, data_dir: str | Path = "") -> tuple[tuple[np.ndarray, ...], int]:
    """The GRU part's classification data (train sequences, labels, test sequences, labels) and its input width:
    `task` "digits" (64 steps of one pixel) or "cifar" (pixel-CIFAR-10 from the python pickles in `data_dir`: 1024
    steps of 3 channels, Fig. 4)."""
    if task == "cifar":
        if not data_dir:
            raise ValueError("gru_task='cifar' needs data_dir=<folder with the CIFAR-10 python pickles>")
        Xtr, ytr = load_cifar10(data_dir, "train")
        Xte, yte = load_cifar10(data_dir, "test")
        return (cifar_pixel_sequences(Xtr), ytr, cifar_pixel_sequences(Xte), yte), 3
    Xtr, ytr, Xte, yte = load_digits_split()
    return (pixel_sequences(Xtr), ytr, pixel_sequences(Xte), yte), 1


def load_imagenet32(root: str | Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """ImageNet32 pickles (`train_data_batch_1..10`, `val_data`) as (N, 3, 32, 32) uint8 and 0-based labels."""
    if split not in ("train", "val"):
        raise ValueError(f"split must be 'train' or 'val', got {split!r}")
    root = Path(root)
    if split == "train":
        names = sorted((p.name for p in root.glob("train_data_batch_*")), key=lambda n: int(n.rsplit("_", 1)[1]))
        if not names:
            raise FileNotFoundError(f"no train_data_batch_* files in {root}")
    else:
        names = ["val_data"]
    xs, ys = [], []
    for name in names:
        batch = _unpickle(root / name)
        xs.append(np.asarray(_get(batch, "data", root / name), dtype=np.uint8))
        labels = np.asarray(_get(batch, "labels", root / name), dtype=np.int64)
        if labels.size and (labels.min() < 1 or labels.max() > 1000):
            raise ValueError(f"{name}: ImageNet32 labels must be 1-based in 1..1000")
        ys.append(labels - 1)
    return np.concatenate(xs).reshape(-1, 3, 32, 32), np.concatenate(ys)


def build_char_vocab(text: str, size: int = 210) -> list[str]:
    """The `size` most frequent characters (ties by character), preceded by the unk symbol at index 0."""
    if size < 1:
        raise ValueError(f"vocabulary size must be >= 1, got {size}")
    counts = Counter(text)
    chars = sorted(counts, key=lambda c: (-counts[c], c))[:size]
    return [UNK, *chars]


def encode_chars(text: str, vocab: list[str]) -> np.ndarray:
    """Character ids (int64); characters outside `vocab` map to 0 (unk)."""
    index = {c: i for i, c in enumerate(vocab)}
    return np.fromiter((index.get(c, 0) for c in text), dtype=np.int64, count=len(text))


def load_wikitext_chars(
    root: str | Path, split: str = "train", vocab: list[str] | None = None, size: int = 210
) -> tuple[np.ndarray, list[str]]:
    """WikiText-103 raw (`wiki.{train,valid,test}.raw`) as character ids and the vocabulary used."""
    if split not in ("train", "valid", "test"):
        raise ValueError(f"split must be train, valid or test; got {split!r}")
    path = Path(root) / f"wiki.{split}.raw"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    text = path.read_text(encoding="utf-8")
    vocab = vocab or build_char_vocab(text, size)
    return encode_chars(text, vocab), vocab


def load_mnli(path: str | Path) -> list[tuple[str, str, int]]:
    """MNLI (`multinli_1.0_*.jsonl` or GLUE `.tsv`) as (sentence1, sentence2, label) with label ∈ {0, 1, 2}; '-' dropped."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    rows: list[dict] = []
    if path.suffix == ".jsonl":
        rows = [row for _, row in read_jsonl(path, "MNLI JSON-lines file")]
    elif path.suffix == ".tsv":
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    else:
        raise ValueError(f"MNLI file must end in .jsonl or .tsv, got {path.name}")
    out = []
    for row in rows:
        label = row.get("gold_label")
        if label not in MNLI_LABELS:  # "-" marks no annotator consensus
            continue
        out.append((row["sentence1"], row["sentence2"], MNLI_LABELS[label]))
    return out
