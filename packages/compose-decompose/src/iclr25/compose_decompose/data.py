"""Data for CtD (arXiv 2601.10169): generated SHAPE-like images, symbolic THING-like vectors, digit pairs, and
loaders for MNIST IDX, COCO instances JSON, THING CSV and CBM JSON-lines message logs (spec 6a, 6c).

The paper's dataset definitions are not public; these generators follow the spec's reconstruction. Every
dataset is a `ConceptData`: inputs grouped by attribute combination, `(n_combos, n_per, *input_shape)`.
Files are read as data only (no pickle).
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr25.compose_decompose.concepts import GRID, ConceptSpace, latin_square_holdout, shape_space, sum_mod_holdout
from iclr25.shared.files import write_text
from iclr25.shared.safeload import read_jsonl

COLORS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "yellow": (255, 255, 0)}


@dataclass
class ConceptData:
    """Inputs for every attribute combination: `inputs[c, r]` is render r of `combos[c]`; `heldout[c]` marks Compose
    test combinations (never used in training)."""

    space: ConceptSpace
    combos: np.ndarray  # (n_combos, m) value indices
    inputs: np.ndarray  # (n_combos, n_per, *input_shape) float32
    heldout: np.ndarray  # (n_combos,) bool
    name: str = ""

    def __post_init__(self) -> None:
        if len(self.combos) != len(self.inputs) or len(self.heldout) != len(self.combos):
            raise ValueError("combos, inputs and heldout must have one row per combination")
        if self.inputs.shape[1] < 1:
            raise ValueError("every combination needs at least one input")

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input, e.g. (3, 32, 32) or (12,)."""
        return tuple(self.inputs.shape[2:])

    @property
    def train_index(self) -> np.ndarray:
        """Indices of training combinations."""
        return np.flatnonzero(~self.heldout)

    @property
    def heldout_index(self) -> np.ndarray:
        """Indices of held-out combinations."""
        return np.flatnonzero(self.heldout)


class ShapeRenderer:
    """SHAPE-like renderer: one coloured shape (size 10-12 px, +-jitter px) in one quadrant on black, RGB uint8."""

    def __init__(self, size: int = 32, jitter: int = 1, seed: int = 0) -> None:
        if size < 16 or size % 2:
            raise ValueError(f"size must be an even number >= 16, got {size}")
        if jitter < 0:
            raise ValueError(f"jitter must be >= 0, got {jitter}")
        self.size, self.jitter = size, jitter
        self.rng = np.random.default_rng(seed)

    def render(self, combo: dict[str, str] | Sequence[str]) -> np.ndarray:
        """Render `{"shape": .., "color": .., "position": ..}` (or the triple in that order) -> (H, W, 3) uint8.

        Optional `"size": "small" | "large"` (default large); positions are quadrants (`top_left`, ...) or cells of a
        3 x 3 grid (`r0c0` ... `r2c2`, the extended space).
        """
        from PIL import Image, ImageDraw

        if not isinstance(combo, dict):
            combo = dict(zip(("shape", "color", "position"), combo, strict=True))
        shape, color, pos = combo["shape"], combo["color"], combo["position"]
        if color not in COLORS:
            raise ValueError(f"unknown color {color!r}; allowed: {', '.join(COLORS)}")
        size = combo.get("size", "large")
        if size not in ("small", "large"):
            raise ValueError(f"unknown size {size!r}; allowed: small, large")
        scale = self.size / 32
        grid = pos in GRID
        lo = 10 if size == "large" and not grid else (6 if size == "large" else 4)  # spec 6a: 10-12 px at 32 x 32
        extent = round(int(self.rng.integers(lo, lo + 3)) * scale)
        dx, dy = self.rng.integers(-self.jitter, self.jitter + 1, size=2)
        if grid:
            cell = self.size / 3
            cx = int((int(pos[3]) + 0.5) * cell) + int(dx)
            cy = int((int(pos[1]) + 0.5) * cell) + int(dy)
        elif any(s in pos for s in ("left", "right")) and any(s in pos for s in ("top", "bottom")):
            q = self.size // 4
            cx = (q if "left" in pos else 3 * q) + int(dx)
            cy = (q if "top" in pos else 3 * q) + int(dy)
        else:
            raise ValueError(
                f"unknown position {pos!r}; use top_left, top_right, bottom_left, bottom_right or r0c0..r2c2"
            )
        img = Image.new("RGB", (self.size, self.size))
        draw = ImageDraw.Draw(img)
        half = extent // 2
        box = (cx - half, cy - half, cx - half + extent - 1, cy - half + extent - 1)
        fill = COLORS[color]
        if shape == "circle":
            draw.ellipse(box, fill=fill)
        elif shape == "square":
            draw.rectangle(box, fill=fill)
        elif shape == "triangle":
            draw.polygon([(box[0], box[3]), (box[2], box[3]), ((box[0] + box[2]) / 2, box[1])], fill=fill)
        elif shape == "cross":
            t = max(1, extent // 3)
            draw.rectangle((box[0], cy - t // 2, box[2], cy - t // 2 + t - 1), fill=fill)
            draw.rectangle((cx - t // 2, box[1], cx - t // 2 + t - 1, box[3]), fill=fill)
        else:
            raise ValueError(f"unknown shape {shape!r}; allowed: circle, square, triangle, cross")
        return np.asarray(img, dtype=np.uint8)


def make_shape_dataset(
    n_per_combo: int = 10,
    holdout: str = "latin",
    size: int = 32,
    jitter: int = 1,
    seed: int = 0,
    extended: bool = False,
) -> ConceptData:
    """SHAPE-like images for all 64 combos (`extended`: 288, with size and a 3 x 3 grid; hold-out `summod`),
    `n_per_combo` renders each, float32 CHW in [0, 1] (spec 6a, 6b)."""
    if n_per_combo < 1:
        raise ValueError(f"n_per_combo must be >= 1, got {n_per_combo}")
    space = shape_space(extended)
    if extended and holdout == "latin":
        holdout = "summod"
    combos = space.combos()
    renderer = ShapeRenderer(size=size, jitter=jitter, seed=seed)
    names = space.names
    imgs = np.stack(
        [
            renderer.render({n: space.attributes[n][v] for n, v in zip(names, c, strict=True)})
            for c in combos
            for _ in range(n_per_combo)
        ]
    )  # (64 * n, H, W, 3)
    inputs = imgs.reshape(len(combos), n_per_combo, size, size, 3).transpose(0, 1, 4, 2, 3).astype(np.float32) / 255
    return ConceptData(space, combos, inputs, _holdout(space, holdout), name="shapes")


def _holdout(space: ConceptSpace, holdout: str) -> np.ndarray:
    if holdout == "latin":
        return latin_square_holdout(space)
    if holdout == "summod":
        return sum_mod_holdout(space, 4)
    if holdout == "none":
        return np.zeros(len(space.combos()), dtype=bool)
    raise ValueError(f"holdout must be 'latin', 'summod' or 'none', got {holdout!r}")


def one_hot_combos(space: ConceptSpace, combos: np.ndarray) -> np.ndarray:
    """Concatenated one-hot vectors of combos, (n, n_fvp) float32."""
    out = np.zeros((len(combos), space.n_fvp), dtype=np.float32)
    out[np.arange(len(combos))[:, None], space.fvps_of(combos)] = 1.0
    return out


def make_thing_dataset(
    n_per_combo: int = 50,
    noise: float = 0.3,
    holdout: str = "latin",
    seed: int = 0,
    space: ConceptSpace | None = None,
) -> ConceptData:
    """Symbolic THING-like data: concatenated one-hots + N(0, noise^2) per draw (the spec's pilot stand-in)."""
    if n_per_combo < 1 or noise < 0:
        raise ValueError(f"need n_per_combo >= 1 and noise >= 0, got {n_per_combo}, {noise}")
    space = space or shape_space()
    combos = space.combos()
    base = one_hot_combos(space, combos)  # (C, F)
    rng = np.random.default_rng(seed)
    inputs = base[:, None, :] + noise * rng.standard_normal((len(combos), n_per_combo, space.n_fvp))
    return ConceptData(space, combos, inputs.astype(np.float32), _holdout(space, holdout), name="thing")


def load_thing_csv(path: str | Path) -> tuple[ConceptSpace, np.ndarray, np.ndarray]:
    """THING CSV (one column per attribute, one row per object) -> (space, combos (n, m), one-hot inputs (n, F))."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2 or not rows[0]:
        raise ValueError(f"{path}: need a header row and at least one object row")
    header, body = rows[0], rows[1:]
    if any(len(r) != len(header) for r in body):
        raise ValueError(f"{path}: every row needs {len(header)} fields")
    attributes = {h: sorted({r[i] for r in body}) for i, h in enumerate(header)}
    for h, vals in attributes.items():
        if len(vals) < 2:
            attributes[h] = [*vals, f"not_{vals[0]}"]  # a constant column still is an attribute
    space = ConceptSpace(attributes)
    combos = np.array([[attributes[h].index(r[i]) for i, h in enumerate(header)] for r in body], dtype=np.int64)
    return space, combos, one_hot_combos(space, combos)


def _open_maybe_gzip(path: Path) -> bytes:
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def load_mnist_idx(images: str | Path, labels: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """MNIST IDX pair (optionally gzipped) -> (uint8 (n, rows, cols), uint8 (n,)); checks magics 2051 / 2049."""
    img, lab = _open_maybe_gzip(Path(images)), _open_maybe_gzip(Path(labels))
    if len(img) < 16 or int.from_bytes(img[:4], "big") != 2051:
        raise ValueError(f"{images}: not an IDX image file (magic 2051)")
    if len(lab) < 8 or int.from_bytes(lab[:4], "big") != 2049:
        raise ValueError(f"{labels}: not an IDX label file (magic 2049)")
    n, rows, cols = (int.from_bytes(img[4 + 4 * i : 8 + 4 * i], "big") for i in range(3))
    m = int.from_bytes(lab[4:8], "big")
    if len(img) != 16 + n * rows * cols or len(lab) != 8 + m:
        raise ValueError(f"IDX sizes do not match their headers ({images}, {labels})")
    if n != m:
        raise ValueError(f"{n} images but {m} labels")
    x = np.frombuffer(img, dtype=np.uint8, offset=16).reshape(n, rows, cols)
    return x, np.frombuffer(lab, dtype=np.uint8, offset=8).copy()


def make_digit_pairs(
    images: np.ndarray, labels: np.ndarray, n_per_combo: int = 10, holdout: str = "latin", seed: int = 0
) -> ConceptData:
    """Two digits side by side (FVPs `left=d1`, `right=d2`), grayscale (1, H, 2W) in [0, 1] (spec 6c)."""
    rng = np.random.default_rng(seed)
    digits = [str(d) for d in range(10)]
    space = ConceptSpace({"left": digits, "right": list(digits)})
    by_label = [np.flatnonzero(labels == d) for d in range(10)]
    if any(len(b) == 0 for b in by_label):
        raise ValueError("every digit 0-9 needs at least one image")
    x = images.astype(np.float32)
    x = x / max(float(x.max()), 1e-8)
    combos = space.combos()
    out = np.empty((len(combos), n_per_combo, 1, x.shape[1], 2 * x.shape[2]), dtype=np.float32)
    for c, (a, b) in enumerate(combos):
        left = x[rng.choice(by_label[a], n_per_combo)]
        right = x[rng.choice(by_label[b], n_per_combo)]
        out[c, :, 0] = np.concatenate([left, right], axis=2)
    return ConceptData(space, combos, out, _holdout(space, holdout), name="digits")


def load_digits_pairs(n_per_combo: int = 10, holdout: str = "latin", seed: int = 0) -> ConceptData:
    """Pairs of scikit-learn's 8 x 8 digits (shipped in its wheel): the offline real-image MNIST proxy."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return make_digit_pairs(d.images, d.target, n_per_combo=n_per_combo, holdout=holdout, seed=seed)


def load_coco_instances(
    json_path: str | Path, image_dir: str | Path, size: int = 32, supercategories: bool = False
) -> tuple[np.ndarray, list[list[str]], list[str]]:
    """COCO instances JSON -> (images float32 (n, 3, size, size), concepts per image, concept names).

    Concepts = the object categories (or supercategories) present; images without annotations are kept with none.
    """
    from PIL import Image

    json_path, image_dir = Path(json_path), Path(image_dir)
    if not json_path.is_file():
        raise FileNotFoundError(f"no such file: {json_path}")
    data = json.loads(json_path.read_text())
    for key in ("images", "annotations", "categories"):
        if key not in data:
            raise ValueError(f"{json_path}: not a COCO instances file (no {key!r})")
    key = "supercategory" if supercategories else "name"
    cat = {c["id"]: c[key] for c in data["categories"]}
    present: dict[int, set[str]] = {im["id"]: set() for im in data["images"]}
    for a in data["annotations"]:
        if a["image_id"] in present and a["category_id"] in cat:
            present[a["image_id"]].add(cat[a["category_id"]])
    images, concepts = [], []
    for im in data["images"]:
        f = image_dir / im["file_name"]
        if not f.is_file():
            raise FileNotFoundError(f"no such file: {f}")
        with Image.open(f) as pic:
            arr = np.asarray(pic.convert("RGB").resize((size, size)), dtype=np.float32) / 255
        images.append(arr.transpose(2, 0, 1))
        concepts.append(sorted(present[im["id"]]))
    names = sorted(set(cat.values()))
    return np.stack(images) if images else np.zeros((0, 3, size, size), np.float32), concepts, names


def load_cbm_jsonl(path: str | Path) -> list[tuple[list[str], list[str]]]:
    """CBM message log: JSON lines `["w1.w2", "c1.c2"]` (or `{"message":..,"phrase":..}`) -> (words, concepts)."""
    out = []
    for where, item in read_jsonl(path, "CBM JSON-lines log"):
        if isinstance(item, dict):
            item = list(item.values())
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(s, str) and s for s in item)):
            raise ValueError(f'{where}: expected ["w1.w2", "c1.c2"], got {json.dumps(item)[:60]!r}')
        out.append((item[0].split("."), item[1].split(".")))
    if not out:
        raise ValueError(f"{path}: no samples")
    return out


EOS_WORD = "eos"  # the end-of-message word our message logs end with (the reference logs end with EGG's EOS, 0)


def write_cbm_jsonl(
    path: str | Path, samples: Iterable[tuple[Sequence[object], Sequence[object]]], eos: str | None = EOS_WORD
) -> Path:
    """Write (words, concepts) samples as CBM JSON lines `["w1.w2.eos", "c1.c2"]`. Each message ends with the word
    `eos` (None: no end word), as in the reference CBM logs, whose scorer drops every message's last word by
    default (`words_eos=True`)."""
    end = [] if eos is None else [eos]
    lines = [json.dumps([".".join(map(str, [*w, *end])), ".".join(map(str, c))]) for w, c in samples]
    return write_text(path, "\n".join(lines) + "\n")


DATASETS = ("thing", "shapes", "digits")


def make_dataset(
    name: str,
    seed: int = 0,
    noise: float = 0.3,
    thing_per_combo: int = 50,
    n_per_combo: int = 10,
    image_size: int = 32,
    extended: bool = False,
) -> ConceptData:
    """A dataset by name: `thing` (symbolic), `shapes` (rendered; `extended`: + size, 3 x 3 grid), `digits`."""
    if name == "thing":
        return make_thing_dataset(thing_per_combo, noise, seed=seed)
    if name == "shapes":
        return make_shape_dataset(n_per_combo, size=image_size, seed=seed, extended=extended)
    if name == "digits":
        return load_digits_pairs(n_per_combo, seed=seed)
    raise ValueError(f"unknown dataset {name!r}; allowed: {', '.join(DATASETS)}")
