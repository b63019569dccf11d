"""Data: the synthetic classifier of the quick reproduction, a digits smoke set, and loaders for real formats.

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
`synthetic` is our generator (spec §6a): K = 10 labels, two groups, logits z = N(0, I_K) + b_g e_y with
b = (3.5, 2.0). Loaders read the formats of the official code's tasks (BiosBias pickles, RAVDESS file names,
FACET annotations) and the generic `.npz` of model outputs that the CLI takes. Files a user gives are data:
`.npz` is read with allow_pickle=False and the BiosBias pickles with a restricted unpickler.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr25.fair_conformal_sets.scores import softmax

BIOS_DROPPED = (1, 2, 13)  # architect, attorney, nurse (near-duplicate bios), official `filter_bios`
BIOS_ID2LABEL = {
    0: "Accountant", 1: "Architect", 2: "Attorney", 3: "Chiropractor", 4: "Comedian", 5: "Composer", 6: "Dentist",
    7: "Dietitian", 8: "DJ", 9: "Filmmaker", 10: "Interior Designer", 11: "Journalist", 12: "Model", 13: "Nurse",
    14: "Painter", 15: "Paralegal", 16: "Pastor", 17: "Personal Trainer", 18: "Photographer", 19: "Physician",
    20: "Poet", 21: "Professor", 22: "Psychologist", 23: "Rapper", 24: "Software Engineer", 25: "Surgeon",
    26: "Teacher", 27: "Yoga Teacher",
}  # fmt: skip
BIOS_GROUPS = ("Female", "Male")
RAVDESS_EMOTIONS = ("Neutral", "Calm", "Happy", "Sad", "Angry", "Fearful", "Disgust", "Surprised")  # codes 01..08
RAVDESS_GROUPS = ("Male", "Female")  # odd actor id = male
FACET_AGE_COLUMNS = (
    "age_presentation_young",
    "age_presentation_middle",
    "age_presentation_older",
    "age_presentation_na",
)
FACET_GROUPS = ("Younger", "Middle", "Older", "Unknown")


@dataclass
class ModelOutputs:
    """A classifier's outputs on labelled items: logits (n, K), labels (n,), protected groups (n,)."""

    logits: np.ndarray
    labels: np.ndarray
    groups: np.ndarray

    def __post_init__(self) -> None:
        self.logits = np.asarray(self.logits, dtype=np.float64)
        self.labels = np.asarray(self.labels).astype(np.int64)
        self.groups = np.asarray(self.groups)
        n = len(self.labels)
        if self.logits.ndim != 2 or len(self.logits) != n or len(self.groups) != n or self.groups.ndim != 1:
            raise ValueError(
                f"need logits (n, K), labels (n,), groups (n,); got {self.logits.shape}, "
                f"{self.labels.shape}, {self.groups.shape}"
            )
        if self.logits.shape[1] < 2:
            raise ValueError(f"need at least 2 classes, got K = {self.logits.shape[1]}")
        if n and (self.labels.min() < 0 or self.labels.max() >= self.logits.shape[1]):
            raise ValueError(f"labels must lie in [0, {self.logits.shape[1] - 1}]")
        if not np.isfinite(self.logits).all():
            raise ValueError("logits must be finite")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def K(self) -> int:
        """Number of classes."""
        return self.logits.shape[1]

    def probs(self, temperature: float = 1.0) -> np.ndarray:
        """softmax(logits / T)."""
        return softmax(self.logits, temperature)

    def take(self, index: np.ndarray) -> ModelOutputs:
        """The items at `index` (a mask or integer indices)."""
        return ModelOutputs(self.logits[index], self.labels[index], self.groups[index])


def synthetic(
    n: int, rng: np.random.Generator, *, K: int = 10, strengths: tuple[float, ...] = (3.5, 2.0)
) -> ModelOutputs:
    """Spec §6a: y ~ U{0..K-1}, g ~ U{0..G-1}, z = N(0, I_K) + b_g e_y (b_0 = 3.5 easy, b_1 = 2.0 hard)."""
    if n < 1 or K < 2 or not strengths:
        raise ValueError(f"need n >= 1, K >= 2 and at least one group strength; got n={n}, K={K}")
    y = rng.integers(K, size=n)
    g = rng.integers(len(strengths), size=n)
    z = rng.standard_normal((n, K))
    z[np.arange(n), y] += np.asarray(strengths, dtype=np.float64)[g]
    return ModelOutputs(z, y, g)


def synthetic_split(
    seed: int, n_cal: int, n_test: int, *, K: int = 10, strengths: tuple[float, ...] = (3.5, 2.0)
) -> tuple[ModelOutputs, ModelOutputs, np.random.Generator]:
    """Calibration and test outputs from one `default_rng(seed)` stream; the stream is returned for later draws."""
    rng = np.random.default_rng(seed)
    data = synthetic(n_cal + n_test, rng, K=K, strengths=strengths)
    return data.take(np.arange(n_cal)), data.take(np.arange(n_cal, n_cal + n_test)), rng


def split_sizes(n: int, split: tuple) -> tuple[int, int, int]:
    """Calibration / calibration-validation / test sizes of n items under an official task split: fractions
    (cal, val, test), counts (cal, None, None) with the rest halved into val and test, or counts (cal, val, test)."""
    cal, val, tst = split
    if isinstance(cal, float):
        a, b = int(cal * n), int(val * n)
        return a, b, n - a - b
    if val is None:
        rest = n - cal
        return cal, rest // 2, rest - rest // 2
    if cal + val + tst > n:
        raise ValueError(f"need {cal + val + tst} items for a {cal}/{val}/{tst} calib/val/test split, have {n}")
    return cal, val, tst


def split_outputs(
    outputs: ModelOutputs, split: tuple, rng: np.random.Generator
) -> tuple[ModelOutputs, ModelOutputs, ModelOutputs]:
    """Calibration, calibration-validation and test parts (sizes: `split_sizes`) of one random permutation."""
    n_cal, n_val, n_test = split_sizes(len(outputs), split)
    order = rng.permutation(len(outputs))
    cal = outputs.take(order[:n_cal])
    val = outputs.take(order[n_cal : n_cal + n_val])
    return cal, val, outputs.take(order[n_cal + n_val : n_cal + n_val + n_test])


def digits_outputs(seed: int = 0) -> tuple[ModelOutputs, ModelOutputs]:
    """Smoke data from scikit-learn's bundled digits: logistic regression trained on half, outputs on the rest
    split into calibration and test; groups = ink (pixel sum) above the median (1) or not (0)."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    train, rest = order[: len(y) // 2], order[len(y) // 2 :]
    with threadpool_limits(1):  # a 900 x 64 problem: extra BLAS threads only contend on shared cores
        model = LogisticRegression(max_iter=2000, C=0.05).fit(X[train] / 16, y[train])
    ink = X.sum(axis=1)
    groups = (ink > np.median(ink)).astype(int)
    out = ModelOutputs(model.decision_function(X[rest] / 16), y[rest], groups[rest])
    half = len(rest) // 2
    return out.take(np.arange(half)), out.take(np.arange(half, len(rest)))


def load_npz(path: str | Path) -> ModelOutputs:
    """Read `logits` (or `probs`) (n, K), `labels` (n,), `groups` (n,) from an `.npz` (no pickles)."""
    from iclr25.shared.safeload import load_npz as safe_load_npz

    arrays = safe_load_npz(path, what="model-output .npz (logits, labels, groups)")
    if "logits" in arrays:
        logits = arrays["logits"]
    elif "probs" in arrays:
        probs = arrays["probs"].astype(np.float64)
        if (probs < 0).any():
            raise ValueError(f"{path}: probs must be >= 0")
        logits = np.log(np.clip(probs, 1e-300, None))
    else:
        raise ValueError(f"{path} needs arrays 'logits' (or 'probs'), 'labels', 'groups'; has {sorted(arrays)}")
    missing = {"labels", "groups"} - set(arrays)
    if missing:
        raise ValueError(f"{path} is missing arrays {sorted(missing)}; has {sorted(arrays)}")
    try:
        return ModelOutputs(logits, arrays["labels"], arrays["groups"])
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def safe_pickle_load(path: str | Path):
    """Load a data pickle: plain containers, numbers, strings and numpy arrays/scalars only (nothing is run)."""
    from iclr25.shared.safeload import NUMPY_ARRAY_GLOBALS, restricted_pickle_load

    allowed = NUMPY_ARRAY_GLOBALS | {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")}
    return restricted_pickle_load(path, allowed, what="BiosBias pickle (a list of dicts)")


@dataclass
class BiosSplit:
    """One BiosBias split after filtering: features (n, 768), labels (n,) in 0..m-1, groups (n,) 0 = f, 1 = m."""

    features: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    texts: list[str]


def load_biosbias(
    folder: str | Path, m: int = 10, rng: np.random.Generator | None = None
) -> tuple[dict[str, BiosSplit], list[str]]:
    """Read `{train,dev,test}_all.pickle` (dicts with hard_text, label, g, avg_enc) as the official code does:
    drop labels 1, 2, 13, keep the m most frequent training labels, remap them to 0..m-1 in frequency order,
    and subsample every split to the same count per class (its rarest class). Returns splits and label names."""
    folder = Path(folder)
    rng = np.random.default_rng(0) if rng is None else rng
    raw = {}
    for split in ("train", "dev", "test"):
        path = folder / f"{split}_all.pickle"
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
        rows = safe_pickle_load(path)
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{path} must hold a list of dicts")
        for r in rows[:1]:
            missing = {"hard_text", "label", "g", "avg_enc"} - set(r)
            if missing:
                raise ValueError(f"{path}: records lack keys {sorted(missing)}")
        raw[split] = [r for r in rows if int(r["label"]) not in BIOS_DROPPED]
    counts = Counter(int(r["label"]) for r in raw["train"])
    top = sorted(counts, key=lambda lab: (-counts[lab], lab))[:m]
    remap = {lab: i for i, lab in enumerate(top)}
    out = {}
    for split, rows in raw.items():
        rows = [r for r in rows if int(r["label"]) in remap]
        labels = np.array([remap[int(r["label"])] for r in rows], dtype=np.int64)
        per_class = min(np.bincount(labels, minlength=len(top)))
        keep = np.sort(
            np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in range(len(top))])
        )
        bad = {r["g"] for r in rows} - {"f", "m"}
        if bad:
            raise ValueError(f"{split}: gender field g must be 'f' or 'm', got {sorted(bad)}")
        out[split] = BiosSplit(
            features=np.array([np.asarray(rows[i]["avg_enc"], dtype=np.float32) for i in keep]),
            labels=labels[keep],
            groups=np.array([{"f": 0, "m": 1}[rows[i]["g"]] for i in keep], dtype=np.int64),
            texts=[str(rows[i]["hard_text"]) for i in keep],
        )
    return out, [BIOS_ID2LABEL.get(lab, str(lab)) for lab in top]


def parse_ravdess_name(name: str) -> tuple[int, int]:
    """`MM-VC-EE-II-SS-RR-AA.wav` -> (emotion id 0..7 = code EE - 1, group 0 = male (odd AA), 1 = female)."""
    stem = Path(name).name.rsplit(".", 1)[0]
    parts = stem.split("-")
    if len(parts) != 7 or not all(p.isdigit() and len(p) == 2 for p in parts):
        raise ValueError(f"{name!r} is not a RAVDESS name MM-VC-EE-II-SS-RR-AA.wav")
    emotion, actor = int(parts[2]), int(parts[6])
    if not 1 <= emotion <= 8 or not 1 <= actor <= 24:
        raise ValueError(f"{name!r}: emotion must be 01..08 and actor 01..24")
    return emotion - 1, 0 if actor % 2 else 1


def scan_ravdess(root: str | Path) -> list[tuple[Path, int, int]]:
    """All RAVDESS `.wav` files under `root` as (path, emotion id, group), sorted by path."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no such folder: {root}")
    return [(p, *parse_ravdess_name(p.name)) for p in sorted(root.rglob("*.wav"))]


def load_facet_annotations(path: str | Path, m: int = 20) -> tuple[list[dict], list[str]]:
    """FACET `annotations.csv`: keep single-person, single-class images of the m most common classes
    (sorted alphabetically, as the official code); group = argmax of the four age_presentation columns."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"filename", "person_id", "class1", "class2", *FACET_AGE_COLUMNS}
    if rows and need - set(rows[0]):
        raise ValueError(f"{path} lacks columns {sorted(need - set(rows[0]))}")
    persons = Counter(r["filename"] for r in rows)
    kept = [r for r in rows if persons[r["filename"]] == 1 and not r["class2"].strip()]
    counts = Counter(r["class1"] for r in kept)
    classes = sorted(c for c, _ in counts.most_common(m))
    items = []
    for r in kept:
        if r["class1"] not in classes:
            continue
        ages = [float(r[c] or 0) for c in FACET_AGE_COLUMNS]
        items.append({"filename": r["filename"], "label": classes.index(r["class1"]), "group": int(np.argmax(ages))})
    return items, classes
