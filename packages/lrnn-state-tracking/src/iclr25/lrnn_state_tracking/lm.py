"""Perplexity by token position, the evaluation of Fig. 5 of Grazzi, Siems et al., "Unlocking State-Tracking in Linear
RNNs Through Negative Eigenvalues" (ICLR 2025, arXiv 2411.12537), §5.3: mean next-token NLL per position bucket on
text corpora (CodeParrot, Math-Hard, TriviaQA, ... in the paper).

- `ByteTokenizer`: 256 bytes + BOS (256) + EOS (257); no downloads (the paper's models use a learned tokenizer).
- `read_texts`: documents from `.txt` (one file = one document), `.jsonl` / `.jsonl.zst` (one JSON object a line;
  `field` names the text, e.g. `text` for FineWeb/SlimPajama, `content` for CodeParrot, `problem+solution` for MATH)
  and `.parquet` (needs pyarrow). Files are data: JSON is parsed, nothing in them runs.
- `train_lm`: a small byte-level DeltaNet/Mamba LM (a CPU stand-in for the paper's FLA pre-training).
- `position_nll`: mean NLL (nats) and perplexity per position bucket for any causal model over the byte vocabulary.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25.lrnn_state_tracking.config import LMConfig
from iclr25.shared.files import save_torch
from iclr25.shared.safeload import read_jsonl

BOS, EOS = 256, 257
LM_VOCAB = 258
TEXT_SUFFIXES = (".txt", ".jsonl", ".jsonl.zst", ".parquet")


class ByteTokenizer:
    """UTF-8 bytes as tokens 0..255, plus BOS = 256 and EOS = 257."""

    vocab_size = LM_VOCAB

    def encode(self, text: str, bos: bool = True, eos: bool = True) -> list[int]:
        """Token ids of `text`: [BOS] + its UTF-8 bytes + [EOS]."""
        return [BOS] * bos + list(text.encode("utf-8")) + [EOS] * eos

    def decode(self, ids: list[int]) -> str:
        """Text of token ids (BOS/EOS dropped, invalid UTF-8 replaced)."""
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in TEXT_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    raise ValueError(f"{path}: unsupported file type; allowed: {', '.join(TEXT_SUFFIXES)}")


def _field_text(record: Any, fields: list[str], where: str) -> str:
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [f for f in fields if f not in record]
    if missing:
        raise ValueError(f"{where}: no field {missing[0]!r} (fields: {', '.join(map(str, record)) or 'none'})")
    values = [record[f] for f in fields]
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{where}: field(s) {'+'.join(fields)} must be strings")
    return "\n".join(values)


def read_texts(path: str | Path, field: str = "text", max_docs: int | None = None) -> list[str]:
    """Documents of a text file; `field` is a JSON key/parquet column, several joined with '+' (e.g. problem+solution)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path} does not exist or is not a file")
    if max_docs is not None and max_docs < 1:
        raise ValueError(f"max_docs must be >= 1, got {max_docs}")
    fields = [f for f in field.split("+") if f]
    if not fields:
        raise ValueError(f"field must name at least one key, got {field!r}")
    suffix = _suffix(path)
    docs: list[str] = []
    try:
        if suffix == ".txt":
            docs = [path.read_text(encoding="utf-8")]
        elif suffix == ".parquet":
            docs = _read_parquet(path, fields, max_docs)
        else:
            for where, record in read_jsonl(path):
                if max_docs is not None and len(docs) >= max_docs:
                    break
                docs.append(_field_text(record, fields, where))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    docs = [d for d in docs if d]
    if not docs:
        raise ValueError(f"{path}: no non-empty documents")
    return docs[:max_docs] if max_docs is not None else docs


def _read_parquet(path: Path, fields: list[str], max_docs: int | None) -> list[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: reading .parquet needs pyarrow (pip install pyarrow)") from None
    try:
        table = pq.read_table(path, columns=fields)
    except Exception as e:  # pyarrow raises several types for a bad file or a missing column
        raise ValueError(f"{path}: cannot read columns {'+'.join(fields)} ({str(e).splitlines()[0]})") from None
    columns = [table.column(f).to_pylist() for f in fields]
    rows = list(zip(*columns, strict=True))[:max_docs]
    return [_field_text(dict(zip(fields, row, strict=True)), fields, f"{path} row {i}") for i, row in enumerate(rows)]


def encode_documents(texts: list[str], max_len: int, tokenizer: ByteTokenizer | None = None) -> list[np.ndarray]:
    """[BOS] + bytes + [EOS] per document, truncated to `max_len` + 1 tokens (max_len predictions each)."""
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    tok = tokenizer or ByteTokenizer()
    return [np.asarray(tok.encode(t)[: max_len + 1], dtype=np.int64) for t in texts]


def bucket_edges(max_len: int, first: int = 16) -> list[int]:
    """Position bucket edges 0, first, 2·first, 4·first, ... up to max_len (the last bucket ends at max_len)."""
    edges, e = [0], first
    while e < max_len:
        edges.append(e)
        e *= 2
    return [*edges, max_len]


@torch.no_grad()
def position_nll(
    model: nn.Module,
    docs: list[np.ndarray],
    edges: list[int] | None = None,
    batch_size: int = 8,
    device: str = "cpu",
) -> dict[str, Any]:
    """Mean next-token NLL (nats) per position bucket [edges[i], edges[i+1]) and overall, with perplexities.

    Position p is the 0-based index of the predicted token minus one (the prediction made after p + 1 tokens).
    """
    docs = [d for d in docs if len(d) >= 2]
    if not docs:
        raise ValueError("need at least one document with two or more tokens")
    longest = max(len(d) for d in docs) - 1
    edges = edges or bucket_edges(longest)
    if edges[0] != 0 or any(b <= a for a, b in itertools.pairwise(edges)):
        raise ValueError(f"bucket edges must start at 0 and increase, got {edges}")
    nll_sum = torch.zeros(longest, dtype=torch.float64)
    count = torch.zeros(longest, dtype=torch.float64)
    was_training = model.training
    model.eval()
    order = sorted(range(len(docs)), key=lambda i: len(docs[i]))  # similar lengths together: less padding
    for start in range(0, len(order), batch_size):
        batch = [docs[i] for i in order[start : start + batch_size]]
        T = max(len(d) for d in batch)
        tokens = torch.full((len(batch), T), EOS, dtype=torch.long)
        valid = torch.zeros(len(batch), T - 1, dtype=torch.bool)
        for r, d in enumerate(batch):
            tokens[r, : len(d)] = torch.from_numpy(d)
            valid[r, : len(d) - 1] = True
        tokens = tokens.to(device)
        logits = model(tokens[:, :-1]).float()  # (B, T-1, V)
        nll = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none").double().cpu()
        nll_sum[: T - 1] += (nll * valid).sum(0)
        count[: T - 1] += valid.sum(0)
    model.train(was_training)
    buckets = []
    for lo, hi in itertools.pairwise(edges):
        n = count[lo:hi].sum().item()
        if n:
            mean = nll_sum[lo:hi].sum().item() / n
            buckets.append({"start": lo, "end": hi, "tokens": int(n), "nll": mean, "ppl": math.exp(mean)})
    total = nll_sum.sum().item() / count.sum().item()
    return {"nll": total, "ppl": math.exp(total), "tokens": int(count.sum().item()), "buckets": buckets}


def make_lm(cfg: LMConfig) -> nn.Module:
    """The byte-level LM a config names: embedding → blocks → head over 258 tokens."""
    from iclr25.lrnn_state_tracking.models import LRNNForSequenceTasks

    return LRNNForSequenceTasks(LM_VOCAB, cfg.d_model, cfg.n_layers, cfg.model, cfg.eig_range, cfg.n_heads)


@dataclass
class LMResult:
    """A trained byte-level LM, its config, loss history and throughput."""

    model: nn.Module
    config: LMConfig
    history: list[tuple[int, float]]
    tokens_per_s: float


def train_lm(texts: list[str], cfg: LMConfig, device: str = "cpu", log_every: int = 0) -> LMResult:
    """Train on random `seq_len`-token windows of the concatenated documents (each BOS + bytes + EOS), AdamW."""
    from iclr25.shared.progress import progress

    stream = np.concatenate([np.asarray(ByteTokenizer().encode(t), dtype=np.int64) for t in texts])
    if len(stream) < cfg.seq_len + 1:
        raise ValueError(f"the texts hold {len(stream)} tokens, fewer than seq_len + 1 = {cfg.seq_len + 1}")
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng([cfg.seed, 2])
    model = make_lm(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    history, start = [], time.perf_counter()
    model.train()
    for step in progress(range(cfg.steps), desc="train lm", unit="step"):
        offsets = rng.integers(0, len(stream) - cfg.seq_len, size=cfg.batch_size)
        window = torch.from_numpy(np.stack([stream[o : o + cfg.seq_len + 1] for o in offsets])).to(device)
        logits = model(window[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1).float(), window[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if log_every and (step + 1) % log_every == 0:
            history.append((step + 1, loss.item()))
    seconds = time.perf_counter() - start
    return LMResult(model, cfg, history, cfg.steps * cfg.batch_size * cfg.seq_len / max(seconds, 1e-9))


def save_lm(result: LMResult, path: str | Path, *, overwrite: bool = False) -> None:
    """Save a byte-level LM (config dict + weights) for `load_lm`, through the guarded writer (into a run folder
    this process holds, or as a new file)."""
    state = {"kind": "byte_lm", "config": asdict(result.config), "state_dict": result.model.state_dict()}
    save_torch(path, state, overwrite=overwrite)


def load_lm(path: str | Path, device: str = "cpu") -> tuple[nn.Module, LMConfig]:
    """Rebuild a model saved by `save_lm`; a foreign, corrupt or unsafe file is a one-line ValueError (weights only)."""
    from iclr25.shared.safeload import load_checkpoint as safe_load

    what = "byte-level LM checkpoint written by `train_lm`"
    data = safe_load(path, map_location=device, required_keys=("kind", "config", "state_dict"), what=what)
    try:
        if data["kind"] != "byte_lm":
            raise ValueError(f"kind is {data['kind']!r}")
        cfg = LMConfig(**data["config"])
        model = make_lm(cfg).to(device)
        model.load_state_dict(data["state_dict"])
    except (RuntimeError, KeyError, TypeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path} is not a {what} ({first})") from None
    return model, cfg


def perplexity(
    ckpt: str | Path,
    data: str | Path,
    field: str = "text",
    max_len: int = 2_048,
    max_docs: int | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """The `ppl` verb: a saved byte-level LM scored on a text file, mean NLL and perplexity per position bucket."""
    device = kw.pop("device", "cpu")
    model, cfg = load_lm(ckpt, device)
    docs = encode_documents(read_texts(data, field, max_docs), max_len)
    out = position_nll(model, docs, device=device, **kw)
    return {"model": cfg.model, "eig_range": cfg.eig_range, "data": str(data), "field": field, **out}
