"""Data: the planted-element generator of spec §6a and loaders for the GeneExp layout (spec §6c).

Bases are stored as integers {0: A, 1: C, 2: G, 3: T, 4: N}; signals as raw (unnormalised) float tracks
[H3K27ac, DNase, Hi-C], since the signal Beta reads raw values.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.files import save_arrays

BASES = "ACGT"
_CODE = np.full(256, 4, dtype=np.uint8)
for _i, _b in enumerate(BASES):
    _CODE[ord(_b)] = _CODE[ord(_b.lower())] = _i
SPLITS = ("train", "valid", "test")


# ----------------------------------------------------------------------------------------------- planted data
def make_motifs(n_motifs: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """Random consensus motifs (n_motifs, length) of base codes."""
    return rng.integers(0, 4, size=(n_motifs, length)).astype(np.uint8)


def _sample_motif(consensus: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """Consensus base with probability p, else one of the other three uniformly (a PWM draw)."""
    other = (consensus + rng.integers(1, 4, size=consensus.shape)) % 4
    return np.where(rng.random(consensus.shape) < p, consensus, other).astype(np.uint8)


def _allowed_starts(length: int, width: int, gap: int, forbid: tuple[int, int]) -> np.ndarray:
    """Starts of a `width` interval that keep gap/2 away from the promoter window [forbid)."""
    s = np.arange(0, length - width)
    return s[(s + width + gap // 2 <= forbid[0]) | (s >= forbid[1] + gap // 2)]


def _place(rng: np.random.Generator, n: int, allowed: np.ndarray, width: int, gap: int) -> np.ndarray:
    """Starts of n non-overlapping intervals of `width` at least `gap` apart, drawn one by one from `allowed` (each
    uniformly among the starts still free)."""
    for _ in range(100):
        free = np.zeros(int(allowed.max()) + 1, dtype=bool)
        free[allowed] = True
        starts: list[int] = []
        while len(starts) < n:
            candidates = np.flatnonzero(free)
            if candidates.size == 0:
                break
            s = int(candidates[rng.integers(candidates.size)])
            starts.append(s)
            free[max(s - width - gap + 1, 0) : s + width + gap] = False
        if len(starts) == n:
            return np.sort(np.array(starts))
    raise ValueError(f"cannot place {n} sites of width {width} at least {gap} bp apart: use a longer window")


def generate_planted_dataset(
    n: int = 2000,
    length: int = 2048,
    n_motifs: int = 3,
    seed: int = 0,
    *,
    center_len: int = 128,
    motif_len: int = 10,
    consensus_p: float = 0.85,
    effects: tuple[float, ...] = (1.0, 0.7, 0.5),
    n_sites: int = 6,
    n_decoys: int = 3,
    min_gap: int = 30,
    promoter_effect: float = 0.3,
    decay: float = 800.0,
    noise: float = 0.1,
    split: tuple[float, float, float] = (0.7, 0.15, 0.15),
) -> dict[str, np.ndarray]:
    """Genome windows with planted regulatory elements (spec §6a).

    Each window: iid uniform background; 0-2 motifs in the central promoter window; `n_sites` candidate sites (a
    random motif each, accessibility a ~ Bernoulli(0.5)) and `n_decoys` accessible peaks with no motif, at random
    non-overlapping positions outside the promoter, >= `min_gap` bp apart. Signals: H3K27ac and DNase = Gaussian
    bumps (width w ~ U(60, 150), sigma = w/2, heights ~ Gamma(4, 0.5) per track) at accessible sites and decoys +
    Gamma(1, 0.1) background; Hi-C = (1 + |pos - centre| / 200)^-1 + N(0, 0.02^2).
    Target: y = 0.3 (promoter motif count) + sum_sites a w_k exp(-|pos - centre| / 800) + N(0, 0.1^2).

    Returns seq (n, L) uint8, signals (n, L, 3) float32, rna (n, 0), y (n,), blacklist (n, L) bool (none),
    true_mask (n, L) bool (the motif bases of accessible sites), bump_mask (n, L) bool (the bump regions
    |x - c| <= w/2 of accessible sites), motif_mask (n, L) bool (motif bases of every site), split (n,) in {0, 1, 2}, motifs, effects, center (promoter slice bounds).
    """
    if len(effects) < n_motifs:
        raise ValueError(f"effects needs n_motifs={n_motifs} entries, got {len(effects)}")
    if center_len >= length // 2:
        raise ValueError("center_len must be < length / 2")
    rng = np.random.default_rng(seed)
    motifs = make_motifs(n_motifs, motif_len, rng)
    w = np.asarray(effects[:n_motifs], dtype=np.float64)
    c0 = (length - center_len) // 2
    centre = length / 2
    seq = rng.integers(0, 4, size=(n, length)).astype(np.uint8)
    signals = np.empty((n, length, 3), dtype=np.float32)
    signals[..., :2] = rng.gamma(1.0, 0.1, size=(n, length, 2))
    pos = np.arange(length)
    hic = 1.0 / (1.0 + np.abs(pos - centre) / 200.0)
    signals[..., 2] = hic[None] + rng.normal(0.0, 0.02, size=(n, length))
    true_mask = np.zeros((n, length), dtype=bool)
    bump_mask = np.zeros((n, length), dtype=bool)
    motif_mask = np.zeros((n, length), dtype=bool)
    y = np.zeros(n)
    allowed = _allowed_starts(length, motif_len, min_gap, (c0, c0 + center_len))
    for g in range(n):
        n_prom = int(rng.integers(0, 3))  # 0-2 promoter motifs
        slots = rng.choice(np.arange(c0, c0 + center_len - motif_len + 1, motif_len + 2), size=n_prom, replace=False)
        for s in slots:
            seq[g, s : s + motif_len] = _sample_motif(motifs[rng.integers(n_motifs)], consensus_p, rng)
        starts = _place(rng, n_sites + n_decoys, allowed, motif_len, min_gap)
        rng.shuffle(starts)
        value = promoter_effect * n_prom
        for j, s in enumerate(starts):
            decoy = j >= n_sites
            accessible = decoy or rng.random() < 0.5
            mid = s + motif_len / 2
            if not decoy:
                k = int(rng.integers(n_motifs))
                seq[g, s : s + motif_len] = _sample_motif(motifs[k], consensus_p, rng)
                motif_mask[g, s : s + motif_len] = True
                if accessible:
                    true_mask[g, s : s + motif_len] = True
                    value += w[k] * math.exp(-abs(mid - centre) / decay)
            if accessible:
                width = rng.uniform(60, 150)
                sigma = width / 2
                lo, hi = max(int(mid - 5 * sigma), 0), min(int(mid + 5 * sigma) + 1, length)  # exp(-12.5) ~ 4e-6
                bump = np.exp(-((pos[lo:hi] - mid) ** 2) / (2 * sigma**2))
                heights = rng.gamma(4.0, 0.5, size=2)
                signals[g, lo:hi, :2] += (bump[:, None] * heights[None, :]).astype(np.float32)
                if not decoy:
                    bump_mask[g, np.abs(pos - mid) <= width / 2] = True
        y[g] = value + rng.normal(0.0, noise)
    split_id = np.zeros(n, dtype=np.int64)
    n_train, n_val = round(split[0] * n), round(split[1] * n)
    order = rng.permutation(n)
    split_id[order[n_train : n_train + n_val]] = 1
    split_id[order[n_train + n_val :]] = 2
    return {
        "seq": seq,
        "signals": signals,
        "rna": np.zeros((n, 0), dtype=np.float32),
        "y": y.astype(np.float32),
        "blacklist": np.zeros((n, length), dtype=bool),
        "true_mask": true_mask,
        "bump_mask": bump_mask,
        "motif_mask": motif_mask,
        "split": split_id,
        "motifs": motifs,
        "effects": w.astype(np.float32),
        "center": np.array([c0, c0 + center_len]),
    }


DATASET_KEYS = ("seq", "signals", "rna", "y", "blacklist", "split")


def npz_path(path: str | os.PathLike[str]) -> Path:
    """The file `np.savez` would write for `path`: `.npz` appended unless it is there."""
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def save_dataset(path: str | os.PathLike[str], data: dict[str, np.ndarray], *, overwrite: bool = False) -> Path:
    """Write a dataset dict as a compressed .npz (plain arrays only), through the guarded writer."""
    arrays = {k: np.asarray(v) for k, v in data.items()}
    return save_arrays(npz_path(path), arrays, compressed=True, overwrite=overwrite)


def load_dataset(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a dataset .npz (as written by `generate`) with allow_pickle=False; checks keys and shapes."""
    from iclr25.shared.safeload import UnsafeFileError, load_npz

    data = load_npz(path, what="Seq2Exp dataset .npz")
    out = {k: data[k] for k in data.files} if hasattr(data, "files") else dict(data)
    missing = [k for k in DATASET_KEYS if k not in out]
    if missing:
        raise UnsafeFileError(f"{path} is not a Seq2Exp dataset: it lacks {', '.join(missing)}")
    n, L = out["seq"].shape[:2] if out["seq"].ndim == 2 else (0, 0)
    if out["seq"].ndim != 2 or out["signals"].shape[:2] != (n, L) or out["y"].shape != (n,):
        raise UnsafeFileError(f"{path} is not a Seq2Exp dataset: seq (N, L), signals (N, L, S) and y (N,) disagree")
    return out


# ----------------------------------------------------------------------------------------------- real formats
def build_fai(fasta: str | os.PathLike[str]) -> list[tuple[str, int, int, int, int]]:
    """The samtools .fai index of a FASTA file: (name, length, offset, line bases, line bytes) per record."""
    records = []
    with open(fasta, "rb") as f:
        name, length, offset, bases, width = None, 0, 0, 0, 0
        pos = 0
        for line in f:
            if line.startswith(b">"):
                if name is not None:
                    records.append((name, length, offset, bases, width))
                name = line[1:].split()[0].decode()
                length, offset, bases, width = 0, pos + len(line), 0, 0
            else:
                if bases == 0:
                    bases, width = len(line.rstrip(b"\r\n")), len(line)
                length += len(line.rstrip(b"\r\n"))
            pos += len(line)
        if name is not None:
            records.append((name, length, offset, bases, width))
    return records


class Fasta:
    """Random access to a FASTA file through its .fai index (built in memory when absent); pure Python."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(2, "No such file", str(self.path))
        fai = Path(str(self.path) + ".fai")
        if fai.is_file():
            rows = [line.split("\t") for line in fai.read_text().splitlines() if line.strip()]
            self.index = {r[0]: tuple(int(v) for v in r[1:5]) for r in rows}
        else:
            self.index = {r[0]: r[1:] for r in build_fai(self.path)}

    def fetch(self, chrom: str, start: int, end: int) -> str:
        """Bases [start, end) of `chrom` (0-based, clipped to the chromosome)."""
        length, offset, bases, width = self.index[chrom]
        start, end = max(start, 0), min(end, length)
        if end <= start:
            return ""
        first = offset + (start // bases) * width + start % bases
        last = offset + ((end - 1) // bases) * width + (end - 1) % bases
        with open(self.path, "rb") as f:
            f.seek(first)
            raw = f.read(last - first + 1)
        return raw.replace(b"\n", b"").replace(b"\r", b"").decode()


def encode_bases(text: str) -> np.ndarray:
    """DNA text -> integer codes {A:0, C:1, G:2, T:3, other: 4 (N)}."""
    return _CODE[np.frombuffer(text.encode("ascii", "replace"), dtype=np.uint8)]


def padded_window(chrom_len: int, tss: int, length: int) -> tuple[int, int, int]:
    """(start, end, left_pad) of the window [tss - L/2, tss + L/2) clipped to [0, chrom_len)."""
    start = tss - length // 2
    a, b = max(start, 0), min(start + length, chrom_len)
    return a, b, a - start


def window_sequence(fasta: Fasta, chrom: str, tss: int, length: int) -> np.ndarray:
    """Integer bases of [tss - L/2, tss + L/2), padded with N (4) outside the chromosome."""
    a, b, left = padded_window(fasta.index[chrom][0], tss, length)
    out = np.full(length, 4, dtype=np.uint8)
    codes = encode_bases(fasta.fetch(chrom, a, b))
    out[left : left + len(codes)] = codes
    return out


def read_bedgraph(path: str | os.PathLike[str], chrom: str, start: int, end: int) -> np.ndarray:
    """Per-base values of [start, end) on `chrom` from a bedGraph file (0 where no interval; NaN -> 0)."""
    out = np.zeros(max(end - start, 0), dtype=np.float32)
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith(("#", "track", "browser")):
                continue
            fields = line.split()
            try:
                name, a, b, value = fields[0], int(fields[1]), int(fields[2]), float(fields[3])
            except (IndexError, ValueError):
                raise ValueError(f"{path}: line {number} is not bedGraph (chrom start end value)") from None
            if name != chrom or b <= start or a >= end:
                continue
            out[max(a, start) - start : min(b, end) - start] = 0.0 if math.isnan(value) else value
    return out


BIGWIG_MAGIC = 0x888FFC26  # the first 4 bytes of every bigWig file (either byte order)


@contextmanager
def _quiet_c_stderr() -> Iterator[None]:
    """Silence file descriptor 2 inside the block: libBigWig prints its own errors there, past Python's sys.stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


BPT_MAGIC = 0x78CA8C91  # chromosome B+ tree
RTREE_MAGIC = 0x2468ACE0  # R-tree index of the data blocks


def check_bigwig(path: str | os.PathLike[str]) -> None:
    """Check a bigWig's structure before the C reader sees it (libBigWig aborts or crashes on some damaged files):
    the magic number, every offset of the header and zoom headers inside the file, the chromosome B+ tree (walked in
    full) and the R-tree index header. Raises a one-line `UnsafeFileError` naming what is wrong."""
    import struct

    from iclr25.shared.safeload import MissingFileError, UnsafeFileError

    if not Path(path).is_file():
        raise MissingFileError(f"{path} does not exist (expected a bigWig file)")
    size = Path(path).stat().st_size

    def bad(why: str) -> UnsafeFileError:
        return UnsafeFileError(f"{path} is not a readable bigWig file ({why}); give a bigWig or a bedGraph track")

    with open(path, "rb") as f:

        def read(offset: int, n: int) -> bytes:
            if offset < 0 or offset + n > size:
                raise bad(f"truncated or damaged: {n} bytes at offset {offset} lie past its {size} bytes")
            f.seek(offset)
            return f.read(n)

        head = f.read(64)
        if len(head) < 4 or BIGWIG_MAGIC not in (int.from_bytes(head[:4], "little"), int.from_bytes(head[:4], "big")):
            raise bad("its header lacks the bigWig magic number")
        if len(head) < 64:
            raise bad(f"a {len(head)}-byte file is shorter than the 64-byte header")
        e = "<" if int.from_bytes(head[:4], "little") == BIGWIG_MAGIC else ">"
        _, _, zooms, chrom_tree, data, index, _, _, autosql, summary, _, _ = struct.unpack(e + "IHHQQQHHQQIQ", head)
        for name, offset, n in (("chromosome tree", chrom_tree, 32), ("data", data, 4), ("index", index, 48)):
            if offset == 0 or offset + n > size:
                raise bad(f"its {name} offset {offset} lies outside its {size} bytes")
        for name, offset, n in (("autoSql", autosql, 1), ("summary", summary, 40)):
            if offset and offset + n > size:
                raise bad(f"its {name} offset {offset} lies outside its {size} bytes")
        for z in range(zooms):
            _, _, zdata, zindex = struct.unpack(e + "IIQQ", read(64 + 24 * z, 24))
            if zdata + 4 > size or zindex + 48 > size:
                raise bad(f"zoom level {z} points outside the file")
        if struct.unpack(e + "I", read(index, 4))[0] != RTREE_MAGIC:
            raise bad("its data index lacks the R-tree magic number")
        magic, _, key_size, val_size, n_items, _ = struct.unpack(e + "IIIIQQ", read(chrom_tree, 32))
        if magic != BPT_MAGIC or val_size != 8 or not 0 < key_size <= 255:
            raise bad("its chromosome tree header is damaged")
        found, todo, seen = 0, [chrom_tree + 32], set()
        while todo:  # iterative walk of the B+ tree: every node and every chromosome entry inside the file
            node = todo.pop()
            if node in seen or len(seen) > 1_000_000:
                raise bad("its chromosome tree has a cycle")
            seen.add(node)
            leaf, _, count = struct.unpack(e + "BBH", read(node, 4))
            width = key_size + 8
            items = read(node + 4, count * width)
            for i in range(count):
                value = items[i * width + key_size : (i + 1) * width]
                if leaf:
                    found += 1
                else:
                    todo.append(struct.unpack(e + "Q", value)[0])
        if found != n_items:
            raise bad(f"its chromosome tree lists {found} chromosomes, its header {n_items}")


@contextmanager
def open_bigwig(path: str | os.PathLike[str]) -> Iterator[Any]:
    """A pyBigWig handle on a checked bigWig file; a damaged one raises one `UnsafeFileError` line (the C library's
    own messages are kept off stderr)."""
    from iclr25.shared.safeload import UnsafeFileError

    check_bigwig(path)
    import pyBigWig  # optional: the [genomics] extra

    try:
        with _quiet_c_stderr():
            bw = pyBigWig.open(str(path))  # type: ignore[attr-defined]
    except RuntimeError:
        bw = None
    if bw is None:
        raise UnsafeFileError(f"{path} is not a readable bigWig file (its header or index is damaged)")
    try:
        yield bw
    finally:
        bw.close()


def read_bigwig(bw: Any, path: str | os.PathLike[str], chrom: str, start: int, end: int) -> np.ndarray:
    """Per-base values of [start, end) on `chrom` from an open bigWig (NaN and absent chromosomes -> 0)."""
    from iclr25.shared.safeload import UnsafeFileError

    size = bw.chroms().get(chrom)
    out = np.zeros(max(end - start, 0), dtype=np.float32)
    a, b = max(start, 0), min(end, size or 0)
    if b <= a:
        return out
    try:
        with _quiet_c_stderr():
            values = bw.values(chrom, a, b, numpy=True)
    except RuntimeError:
        raise UnsafeFileError(f"{path}: the data of {chrom}:{a}-{b} cannot be read (a damaged bigWig file)") from None
    out[a - start : b - start] = np.nan_to_num(np.asarray(values, dtype=np.float32), nan=0.0)
    return out


def read_track(path: str | os.PathLike[str], chrom: str, start: int, end: int) -> np.ndarray:
    """Per-base values of a signal file: bigWig (needs pyBigWig) or bedGraph; NaN -> 0."""
    path = str(path)
    if path.lower().endswith((".bw", ".bigwig")):
        with open_bigwig(path) as bw:
            return read_bigwig(bw, path, chrom, start, end)
    return read_bedgraph(path, chrom, start, end)


def window_track(path: str, chrom: str, chrom_len: int, tss: int, length: int) -> np.ndarray:
    """A signal track over the window, padded with 0 outside the chromosome."""
    a, b, left = padded_window(chrom_len, tss, length)
    out = np.zeros(length, dtype=np.float32)
    values = read_track(path, chrom, a, b)
    out[left : left + len(values)] = values
    return out


def read_hic(path: str | os.PathLike[str], chrom: str, tss: int, chrom_len: int, length: int) -> np.ndarray:
    """log10(1 + contact) with the TSS per base over the window, from `hic_feat_<chr>.h5` key `<chr>_<tss>`;
    the stored vector covers [tss - L/2, tss + L/2) clipped to the chromosome, and is padded like the sequence."""
    import h5py  # optional: the [genomics] extra

    key = f"{chrom}_{tss}"
    with h5py.File(path, "r") as f:
        if key not in f:
            return np.zeros(length, dtype=np.float32)
        values = np.asarray(f[key][()], dtype=np.float64).ravel()
    a, b, left = padded_window(chrom_len, tss, length)
    out = np.zeros(length, dtype=np.float64)
    n = min(len(values), b - a)
    out[left : left + n] = np.nan_to_num(values[:n], nan=0.0)
    return np.log10(1.0 + np.maximum(out, 0.0)).astype(np.float32)


def read_bool_dict(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """A pickled dict[chrom -> bool array per bp] (official blacklist / include list), read as data only."""
    from iclr25.shared.safeload import UnsafeFileError, restricted_pickle_load

    data = restricted_pickle_load(path, what="dict of per-base bool arrays")
    if not isinstance(data, dict) or not all(isinstance(v, np.ndarray) for v in data.values()):
        raise UnsafeFileError(f"{path} is not a dict of per-base bool arrays")
    return {str(k): v.astype(bool) for k, v in data.items()}


def read_csv_rows(path: str | os.PathLike[str], index: str) -> dict[str, dict[str, str]]:
    """Rows of a CSV (or tab-separated .txt) keyed by the `index` column."""
    with open(path, newline="", encoding="utf-8") as f:
        sample = f.readline()
        f.seek(0)
        reader = csv.DictReader(f, delimiter="\t" if "\t" in sample else ",")
        if reader.fieldnames is None or index not in reader.fieldnames:
            raise ValueError(f"{path} has no {index!r} column")
        return {row[index]: row for row in reader}


def fold_split(split_csv: str | os.PathLike[str], fold: int) -> dict[str, list[str]]:
    """ENSIDs of train/valid/test in column `fold_<fold>` of the leave-chromosome-out split CSV."""
    rows = read_csv_rows(split_csv, "ENSID")
    column = f"fold_{fold}"
    if rows and column not in next(iter(rows.values())):
        raise ValueError(f"{split_csv} has no column {column}")
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for ensid, row in rows.items():
        if row[column] in out:
            out[row[column]].append(ensid)
    return out


RNA_FEATURES = (
    "UTR5LEN_log10zscore",
    "CDSLEN_log10zscore",
    "INTRONLEN_log10zscore",
    "UTR3LEN_log10zscore",
    "UTR5GC",
    "CDSGC",
    "UTR3GC",
    "ORFEXONDENSITY_log10zscore",
)


TRACK_SUFFIXES = (".bigwig", ".bw", ".bedgraph", ".bdg")


@dataclass
class GeneExpPaths:
    """Files of the GeneExp layout under data_root (official names, spec §6c); `files` overrides any of them by its
    `Config` field name (fasta, chr_length, expression_csv, split_csv, gene_list, h3k27ac, dnase, hic_dir,
    blacklist, peaks)."""

    root: Path
    cell: str
    files: dict[str, str] | None = None

    def _given(self, key: str) -> Path | None:
        value = (self.files or {}).get(key)
        return Path(value) if value else None

    @property
    def fasta(self) -> Path:
        """hg38 FASTA."""
        return self._given("fasta") or self.root / "hg38" / "hg38.ml.fa"

    @property
    def chr_length(self) -> Path:
        """chr_length.json."""
        return self._given("chr_length") or self.root / "chr_length.json"

    @property
    def expression(self) -> Path:
        """Expression + mRNA features CSV."""
        return self._given("expression_csv") or (
            self.root / "promo_enhan_inter" / "GM12878_K562_18377_gene_expr_fromXpresso.csv"
        )

    @property
    def split(self) -> Path:
        """Leave-chromosome-out fold CSV."""
        return self._given("split_csv") or (
            self.root / "promo_enhan_inter" / "leave_chrom_out_crossvalidation_split_18377genes.csv"
        )

    @property
    def genes(self) -> Path:
        """ABC GeneList.txt of the cell type."""
        return self._given("gene_list") or self.root / "promo_enhan_inter" / "ABC" / self.cell / "GeneList.txt"

    def track_folder(self, assay: str) -> Path:
        """`promo_enhan_inter/<assay>/<cell>/`."""
        return self.root / "promo_enhan_inter" / assay / self.cell

    def track(self, assay: str) -> Path:
        """The given track, or the first bigWig / bedGraph file of `<assay>/<cell>/`."""
        given = self._given({"H3K27ac": "h3k27ac", "DNase-seq": "dnase"}.get(assay, assay))
        if given is not None:
            return given
        folder = self.track_folder(assay)
        files = sorted(p for p in folder.glob("*") if p.suffix.lower() in TRACK_SUFFIXES)
        if not files:
            raise FileNotFoundError(2, "no bigWig/bedGraph file", str(folder))
        return files[0]

    @property
    def hic_dir(self) -> Path:
        """Folder of the per-chromosome Hi-C files."""
        return self._given("hic_dir") or self.root / "promo_enhan_inter" / "HiC" / self.cell

    def hic(self, chrom: str) -> Path:
        """Hi-C contacts with the TSS, one h5 file per chromosome."""
        return self.hic_dir / f"hic_feat_{chrom}.h5"

    @property
    def blacklist(self) -> Path:
        """Per-base blacklist dict (optional)."""
        return self._given("blacklist") or self.root / "hg38_blacklist_dict_v1.pkl"

    @property
    def peaks(self) -> Path:
        """MACS3 peaks of the DNase track as a bigWig (optional)."""
        return self._given("peaks") or (
            self.root / "promo_enhan_inter" / "DNase-seq" / self.cell / "peaks" / "peaks_bigWig" / "macs3.bigWig"
        )

    def missing(self) -> list[str]:
        """What the full reproduction needs and cannot find: '<field> (<what>) at <path>' per item."""
        out = []
        for field, what, path in (
            ("fasta", "hg38 FASTA", self.fasta),
            ("chr_length", "chromosome lengths JSON", self.chr_length),
            ("expression_csv", "expression + mRNA features CSV", self.expression),
            ("split_csv", "leave-chromosome-out fold CSV", self.split),
            ("gene_list", f"ABC GeneList.txt of {self.cell}", self.genes),
        ):
            if not path.is_file():
                out.append(f"{field} ({what}) at {path}")
        for field, assay in (("h3k27ac", "H3K27ac"), ("dnase", "DNase-seq")):
            try:
                track = self.track(assay)
            except FileNotFoundError:
                out.append(f"{field} ({assay} bigWig/bedGraph of {self.cell}) in {self.track_folder(assay)}")
                continue
            if not track.is_file():
                out.append(f"{field} ({assay} bigWig/bedGraph) at {track}")
        if not self.hic_dir.is_dir():
            out.append(f"hic_dir (folder of hic_feat_<chr>.h5) at {self.hic_dir}")
        return out


class GeneWindowDataset:
    """GeneExp windows: (data_root, cell_type, fold, seq_range, split)[i] -> dict(seq, signals, rna_feat, y,
    blacklist, includelist, peak_mask, ensid) (spec §6c). Signal tracks: bigWig (pyBigWig) or bedGraph."""

    def __init__(
        self,
        data_root: str | os.PathLike[str],
        cell_type: str = "K562",
        fold: int = 11,
        seq_range: int = 200_000,
        split: str = "train",
        files: dict[str, str] | None = None,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
        self.paths = p = GeneExpPaths(Path(data_root), cell_type, files)
        self.cell, self.length = cell_type, seq_range
        self.fasta = Fasta(p.fasta)
        self.chrom_len: dict[str, int] = json.loads(p.chr_length.read_text())["hg38"]
        self.expr = read_csv_rows(p.expression, "ENSID")
        self.genes = read_csv_rows(p.genes, "symbol")
        ids = fold_split(p.split, fold)[split]
        self.ids = [e for e in ids if e in self.expr and e in self.genes]
        self.h3k27ac, self.dnase = p.track("H3K27ac"), p.track("DNase-seq")
        root = p.root
        self.blacklist = read_bool_dict(p.blacklist) if p.blacklist.is_file() else {}
        self.includelist = (
            read_bool_dict(root / "hg38_includelist_dict.pkl") if (root / "hg38_includelist_dict.pkl").is_file() else {}
        )
        self.peaks = p.peaks if p.peaks.is_file() else None

    def __len__(self) -> int:
        return len(self.ids)

    def target(self, i: int) -> float:
        """y = log10(CAGE + 1) of gene i, without reading its window."""
        return math.log10(float(self.expr[self.ids[i]].get(f"{self.cell}_CAGE_128*3_sum", "nan")) + 1.0)

    def _bools(self, table: dict[str, np.ndarray], chrom: str, tss: int) -> np.ndarray:
        out = np.zeros(self.length, dtype=bool)
        if chrom in table:
            a, b, left = padded_window(len(table[chrom]), tss, self.length)
            out[left : left + b - a] = table[chrom][a:b]
        return out

    def __getitem__(self, i: int) -> dict[str, Any]:
        ensid = self.ids[i]
        gene, expr = self.genes[ensid], self.expr[ensid]
        chrom, tss = gene["chr"], int(float(gene["tss"]))
        clen = self.chrom_len[chrom]
        L = self.length
        hic_path = self.paths.hic(chrom)
        signals = np.stack(
            [
                window_track(str(self.h3k27ac), chrom, clen, tss, L),
                window_track(str(self.dnase), chrom, clen, tss, L),
                read_hic(hic_path, chrom, tss, clen, L) if hic_path.is_file() else np.zeros(L, np.float32),
            ],
            -1,
        )
        activity = math.sqrt(
            max(float(gene.get("H3K27ac.RPM.TSS1Kb", 0) or 0), 0.0)
            * max(float(gene.get("DHS.RPM.TSS1Kb", 0) or 0), 0.0)
        )
        rna = np.array([float(expr.get(k, 0) or 0) for k in RNA_FEATURES] + [activity], dtype=np.float32)
        target = float(expr.get(f"{self.cell}_CAGE_128*3_sum", "nan"))  # y = log10(CAGE + 1)
        peak = window_track(str(self.peaks), chrom, clen, tss, L) > 0 if self.peaks else np.zeros(L, bool)
        return {
            "seq": window_sequence(self.fasta, chrom, tss, L),
            "signals": signals,
            "rna_feat": rna,
            "y": np.float32(math.log10(target + 1.0)),
            "blacklist": self._bools(self.blacklist, chrom, tss),
            "includelist": self._bools(self.includelist, chrom, tss),
            "peak_mask": peak,
            "ensid": ensid,
        }


class GeneratedWindowDataset:
    """GeneExp-shaped windows made by the planted generator (spec §6a) one at a time, for the full preset when no
    GeneExp files are given: the paper's sizes (window length, genes per split, RNA features) without its data.

    Split `split` of `n_genes` windows split 70/15/15; window i is `generate_planted_dataset(1, length, ...)` from
    the seed (seed, split index, i), so any process reads the same window without holding the split in memory, and
    each window has motifs of its own (the task is learnable from the tracks, not from a shared motif set). The
    `GeneWindowDataset` interface: len, `target(i)`, `[i]` -> seq, signals, rna_feat (`n_rna` zeros), y,
    blacklist (none), includelist, peak_mask (none: the MACS-style caller runs on the DNase window), ensid."""

    def __init__(
        self, n_genes: int, length: int, split: str = "train", *, seed: int = 0, center_len: int = 2000, n_rna: int = 9
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
        n_train, n_val = round(0.7 * n_genes), round(0.15 * n_genes)
        self.n = {"train": n_train, "valid": n_val, "test": n_genes - n_train - n_val}[split]
        self.split, self.length, self.seed, self.center_len, self.n_rna = split, length, seed, center_len, n_rna
        self.peaks = None
        self._cache: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return self.n

    def _window(self, i: int) -> dict[str, Any]:
        if not 0 <= i < self.n:
            raise IndexError(f"window {i} of a split of {self.n}")
        if i not in self._cache:
            self._cache = {}  # one window kept: target(i) then [i] generate it once
            seed = [self.seed, SPLITS.index(self.split), i]
            data = generate_planted_dataset(1, self.length, 3, seed, center_len=self.center_len, split=(1.0, 0.0, 0.0))
            self._cache[i] = {k: v[0] if getattr(v, "ndim", 0) and len(v) == 1 else v for k, v in data.items()}
        return self._cache[i]

    def target(self, i: int) -> float:
        """y of window i."""
        return float(self._window(i)["y"])

    def __getitem__(self, i: int) -> dict[str, Any]:
        w = self._window(i)
        return {
            "seq": w["seq"],
            "signals": w["signals"],
            "rna_feat": np.zeros(self.n_rna, dtype=np.float32),
            "y": np.float32(w["y"]),
            "blacklist": w["blacklist"],
            "includelist": np.ones(self.length, dtype=bool),
            "peak_mask": np.zeros(self.length, dtype=bool),
            "ensid": f"generated-{self.split}-{i}",
        }
