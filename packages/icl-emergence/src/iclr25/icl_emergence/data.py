"""Data: official GINC directories (write and read; `tokenizer.json` parsed without `tokenizers`), MetaICL-style
task files, generic classification exports (JSONL / CSV) and a byte-level tokenizer (spec §6c)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.icl_emergence.ginc import GINC
from iclr25.shared import safeload
from iclr25.shared.files import write_text
from iclr25.shared.safeload import reading_file

ENDOFTEXT = "[endoftext]"
OFFICIAL_PROMPT_KEYS = ("text", "label", "x", "slot_pattern", "test_value", "hmm_type", "n_examples", "hmm_id")


# ------------------------------------------------------------------------------------------------ tokenizers
@dataclass
class WordLevelTokenizer:
    """A HF WordLevel tokenizer read from its JSON (`model.vocab`), whitespace pre-tokenised."""

    vocab: dict[str, int]
    unk_token: str | None = None
    inverse: dict[int, str] = field(init=False)

    def __post_init__(self) -> None:
        self.inverse = {i: t for t, i in self.vocab.items()}

    @classmethod
    def from_file(cls, path: str | Path) -> WordLevelTokenizer:
        """Parse a `tokenizer.json` (WordLevel model); a foreign file is a one-line error."""
        with reading_file(path, "WordLevel tokenizer.json") as p:
            data = json.loads(p.read_text())
            model = data["model"]
            if model.get("type") != "WordLevel" or not isinstance(model.get("vocab"), dict):
                raise ValueError("model.type must be WordLevel with a vocab mapping")
            vocab = {str(k): int(v) for k, v in model["vocab"].items()}
            return cls(vocab, model.get("unk_token"))

    def encode(self, text: str) -> list[int]:
        """Whitespace tokens -> ids (unknown words -> the unk id, else a ValueError)."""
        ids = []
        for word in text.split():
            if word in self.vocab:
                ids.append(self.vocab[word])
            elif self.unk_token in self.vocab:
                ids.append(self.vocab[self.unk_token])
            else:
                raise ValueError(f"token {word!r} is not in the vocabulary")
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """ids -> space-joined words."""
        return " ".join(self.inverse[int(i)] for i in ids)

    def __len__(self) -> int:
        return len(self.vocab)


class ByteTokenizer:
    """Byte-level tokenizer: UTF-8 bytes 0..255 plus an end-of-text id 256 (no downloads)."""

    eot = 256
    vocab_size = 257

    def encode(self, text: str, eot: bool = False) -> list[int]:
        """UTF-8 bytes of `text` (plus the end-of-text id)."""
        return [*text.encode("utf-8"), *([self.eot] if eot else [])]

    def decode(self, ids: Iterable[int]) -> str:
        """Bytes back to text (end-of-text ids dropped; invalid UTF-8 replaced)."""
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------------------------ GINC files
def ginc_tokenizer_json(vocab: list[str]) -> dict[str, Any]:
    """The official tokenizer.json layout: id 0 = [endoftext], then the GINC vocabulary."""
    words = [ENDOFTEXT, *vocab]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "special": True, "content": ENDOFTEXT, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False}],
        "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)}, "unk_token": "<unk>"},
    }  # fmt: skip


def _jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(row) + "\n" for row in rows))


def write_ginc_dir(
    ginc: GINC,
    out: str | Path,
    *,
    n_train: int = 1000,
    train_length: int = 10240,
    n_val: int = 100,
    val_length: int = 1024,
    prompt_lengths: Iterable[int] = (3, 5, 8, 10),
    n_examples: Iterable[int] = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256),
    n_prompts: int = 2500,
    seed: int = 1111,
) -> list[Path]:
    """Write a GINC dataset folder in the official layout (train/val .json + .txt, tokenizer.json, ID/OOD prompt
    files per k); documents come from uniformly chosen ID HMMs. Files go through the guarded writer: into a run
    folder this process holds, or as new files (an existing file is never replaced)."""
    out = Path(out)
    rng = np.random.default_rng(seed)
    written = []
    for name, n, length in (("train", n_train, train_length), ("val", n_val, val_length)):
        which = rng.integers(ginc.n_id, size=n)
        docs = []
        for j in which:
            toks, hid = ginc.sample_documents([int(j)], 1, length, rng)
            docs.append({"text": " ".join(ginc.vocab[t] for t in toks[0, 0]), "hmm_idx": int(j), "hmm_type": "ID",
                         "hiddens": hid[0, 0].tolist()})  # fmt: skip
        _jsonl(out / f"{name}.json", docs)
        write_text(out / f"{name}.txt", "".join(d["text"] + " / " for d in docs))
        written += [out / f"{name}.json", out / f"{name}.txt"]
    write_text(out / "tokenizer.json", json.dumps(ginc_tokenizer_json(ginc.vocab)))
    written.append(out / "tokenizer.json")
    prng = np.random.default_rng(seed + 3)
    for k in prompt_lengths:
        for kind, prefix in (("ID_sample", "id"), ("OOD_sample", "ood")):
            rows = []
            for n in n_examples:
                if (k + 1) * n > 1024:  # the official rule
                    continue
                rows += [
                    {key: p[key] for key in OFFICIAL_PROMPT_KEYS}
                    for p in ginc.make_prompts(kind, k, n, n_prompts, prng)
                ]
            path = out / f"{prefix}_prompts_randomsample_{k}.json"
            _jsonl(path, rows)
            written.append(path)
    return written


def read_jsonl(path: str | Path, what: str = "JSON-lines file") -> list[dict[str, Any]]:
    """Rows of a JSON-lines file (each a JSON object); anything else is a one-line error naming the file."""
    rows = []
    for where, row in safeload.read_jsonl(path, what):
        if not isinstance(row, dict):
            raise ValueError(f"{where}: not a JSON object (expected a {what})")
        rows.append(row)
    return rows


@dataclass
class GINCDir:
    """A loaded GINC folder: tokenizer, documents (token ids) and prompt files (with `ids`, `label_id`)."""

    tokenizer: WordLevelTokenizer
    train: list[dict[str, Any]]
    val: list[dict[str, Any]]
    prompts: dict[str, list[dict[str, Any]]]


def load_prompts(path: str | Path, tokenizer: WordLevelTokenizer) -> list[dict[str, Any]]:
    """A GINC prompt file; adds `ids` (prompt token ids) and `label_id` under `tokenizer`."""
    rows = read_jsonl(path, "GINC prompt file (JSON lines with text and label)")
    for i, row in enumerate(rows):
        if not isinstance(row.get("text"), str) or not isinstance(row.get("label"), str):
            raise ValueError(f"{path}: line {i + 1} lacks a text or label string")
        row["ids"] = tokenizer.encode(row["text"])
        row["label_id"] = tokenizer.encode(row["label"])[0]
    return rows


def load_ginc_dir(path: str | Path) -> GINCDir:
    """Read an official-format GINC folder (train.json, val.json, tokenizer.json, *_prompts_randomsample_*.json)."""
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"{path} is not a folder (expected a GINC dataset folder)")
    tok = WordLevelTokenizer.from_file(path / "tokenizer.json")
    docs = {}
    for name in ("train", "val"):
        rows = read_jsonl(path / f"{name}.json", "GINC document file") if (path / f"{name}.json").is_file() else []
        for row in rows:
            row["ids"] = tok.encode(str(row.get("text", "")))
        docs[name] = rows
    prompts = {p.name: load_prompts(p, tok) for p in sorted(path.glob("*_prompts_randomsample_*.json"))}
    return GINCDir(tok, docs["train"], docs["val"], prompts)


# ------------------------------------------------------------------------------------------------ MetaICL / exports
def load_metaicl_jsonl(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """MetaICL-style JSON lines {"task", "input", "output", "options"} grouped by task (= topic)."""
    tasks: dict[str, list[dict[str, Any]]] = {}
    for i, row in enumerate(read_jsonl(path, "MetaICL JSON-lines file")):
        for key in ("task", "input", "output"):
            if not isinstance(row.get(key), str):
                raise ValueError(f"{path}: line {i + 1} lacks a string {key!r}")
        tasks.setdefault(row["task"], []).append(row)
    return tasks


def build_icl_prompt(examples: list[dict[str, Any]], query: dict[str, Any], k: int, sep: str = "\n\n") -> str:
    """k demonstrations "input output" joined by `sep`, then the query's input (MetaICL's concatenation)."""
    if k < 0 or k > len(examples):
        raise ValueError(f"k must lie in [0, {len(examples)}], got {k}")
    demos = [f"{e['input']} {e['output']}" for e in examples[:k]]
    return sep.join([*demos, query["input"]])


def load_classification(
    path: str | Path, text_field: str = "text", label_field: str = "label", label_names: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """(text, label name) pairs from a JSONL or CSV export of a classification set (e.g. HF `datasets`)."""
    path = Path(path)
    if path.suffix == ".csv":
        with reading_file(path, "CSV file") as p, p.open(newline="") as f:
            rows = list(csv.DictReader(f))
    else:
        rows = read_jsonl(path, "JSON-lines classification file")
    out = []
    for i, row in enumerate(rows):
        if text_field not in row or label_field not in row:
            raise ValueError(f"{path}: row {i + 1} lacks {text_field!r} or {label_field!r}")
        label = str(row[label_field])
        out.append((str(row[text_field]), (label_names or {}).get(label, label)))
    return out
