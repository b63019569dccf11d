"""Perplexity by position (Fig. 5): byte tokenizer, text loaders on tiny generated files, NLL buckets, LM training."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from torch import nn

from iclr25.lrnn_state_tracking.config import LMConfig
from iclr25.lrnn_state_tracking.lm import (
    BOS,
    EOS,
    LM_VOCAB,
    ByteTokenizer,
    bucket_edges,
    encode_documents,
    load_lm,
    perplexity,
    position_nll,
    read_texts,
    save_lm,
    train_lm,
)


class Uniform(nn.Module):
    """Logits all zero: NLL log(258) at every position."""

    def forward(self, tokens):
        return torch.zeros(*tokens.shape, LM_VOCAB)


class Oracle(nn.Module):
    """Knows one fixed document: predicts its next byte with probability ~1, so its NLL is ~0 on that document only."""

    def __init__(self, doc):
        super().__init__()
        self.doc = torch.as_tensor(doc)

    def forward(self, tokens):
        T = tokens.shape[1]
        logits = torch.full((*tokens.shape, LM_VOCAB), -50.0)
        logits[:, torch.arange(T), self.doc[1 : T + 1]] = 50.0
        return logits


def test_byte_tokenizer_round_trip():
    tok = ByteTokenizer()
    ids = tok.encode("héllo")
    assert ids[0] == BOS and ids[-1] == EOS and len(ids) == 2 + len("héllo".encode())
    assert tok.decode(ids) == "héllo"


def test_read_texts_formats(tmp_path):
    (tmp_path / "a.txt").write_text("one document\nwith two lines", encoding="utf-8")
    assert read_texts(tmp_path / "a.txt") == ["one document\nwith two lines"]
    rows = [{"text": "first", "content": "def f(): pass"}, {"text": "second", "content": "x = 1"}]
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert read_texts(tmp_path / "b.jsonl") == ["first", "second"]
    assert read_texts(tmp_path / "b.jsonl", field="content", max_docs=1) == ["def f(): pass"]
    math_rows = [{"problem": "1+1?", "solution": "2"}]
    (tmp_path / "m.jsonl").write_text(json.dumps(math_rows[0]), encoding="utf-8")
    assert read_texts(tmp_path / "m.jsonl", field="problem+solution") == ["1+1?\n2"]


def test_read_texts_jsonl_zst(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    text = "\n".join(json.dumps({"text": f"doc {i}"}) for i in range(3))
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    assert read_texts(tmp_path / "c.jsonl.zst") == ["doc 0", "doc 1", "doc 2"]
    (tmp_path / "bad.jsonl.zst").write_bytes(b"not zstd at all")
    with pytest.raises(ValueError, match="zstandard"):
        read_texts(tmp_path / "bad.jsonl.zst")


def test_read_texts_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["a b", "c d"]}), tmp_path / "d.parquet")
    assert read_texts(tmp_path / "d.parquet") == ["a b", "c d"]


@pytest.mark.parametrize(
    ("name", "content", "field", "match"),
    [
        ("x.csv", "a,b", "text", "unsupported file type"),
        ("e.jsonl", '{"text": "ok"}\n{broken', "text", ":2: not valid JSON"),
        ("f.jsonl", '{"body": "ok"}', "text", "no field 'text'"),
        ("g.jsonl", '{"text": 3}', "text", "must be strings"),
        ("h.jsonl", "[1, 2]", "text", "expected a JSON object"),
        ("i.jsonl", "\n\n", "text", "no non-empty documents"),
        ("j.txt", "x", "+", "at least one key"),
    ],
)
def test_read_texts_rejects_bad_files(tmp_path, name, content, field, match):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_texts(tmp_path / name, field=field)


def test_read_texts_rejects_missing_and_binary(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_texts(tmp_path / "nope.txt")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00\x80")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_texts(tmp_path / "bin.txt")


def test_bucket_edges_and_encoding():
    assert bucket_edges(100) == [0, 16, 32, 64, 100]
    docs = encode_documents(["abcdef", "xy"], max_len=4)
    assert [len(d) for d in docs] == [5, 4]  # truncated to max_len + 1 tokens; short ones keep their EOS
    assert docs[1].tolist() == [BOS, ord("x"), ord("y"), EOS]


def test_position_nll_hand_values():
    docs = encode_documents(["hello world", "hi"], max_len=64)
    out = position_nll(Uniform(), docs, edges=[0, 4, 64], batch_size=1)
    assert out["tokens"] == sum(len(d) - 1 for d in docs)  # padding is never scored
    assert out["nll"] == pytest.approx(math.log(LM_VOCAB), abs=1e-6)  # float32 logits
    assert [b["tokens"] for b in out["buckets"]] == [4 + 3, len(docs[0]) - 1 - 4]
    oracle = position_nll(Oracle(docs[0]), docs[:1], edges=[0, 64])
    assert oracle["nll"] < 1e-6 and oracle["ppl"] == pytest.approx(1.0)
    # a mixed batch: the oracle is right on its document only, so the per-position mean mixes 0 and ~100 nats
    mixed = position_nll(Oracle(docs[0]), docs, edges=[0, 1, 64], batch_size=2)
    assert mixed["buckets"][0]["tokens"] == 2
    with pytest.raises(ValueError, match="edges"):
        position_nll(Uniform(), docs, edges=[1, 8])


def test_train_lm_learns_and_ppl_round_trip(tmp_path):
    torch.manual_seed(0)
    text = "the cat sat on the mat. " * 40
    cfg = LMConfig(d_model=16, n_layers=1, n_heads=2, seq_len=32, steps=60, batch_size=8, lr=3e-3)
    docs = encode_documents([text], max_len=128)
    untrained = position_nll(train_lm([text], LMConfig(**{**cfg.__dict__, "steps": 1})).model, docs)
    result = train_lm([text], cfg, log_every=20)
    trained = position_nll(result.model, docs)
    assert trained["nll"] < untrained["nll"] - 1.0  # a repeated sentence is easy to learn
    save_lm(result, tmp_path / "lm.pt")
    (tmp_path / "eval.jsonl").write_text(json.dumps({"content": text}), encoding="utf-8")
    out = perplexity(tmp_path / "lm.pt", tmp_path / "eval.jsonl", field="content", max_len=128)
    assert out["nll"] == pytest.approx(trained["nll"], rel=1e-6)
    assert out["model"] == "deltanet" and out["eig_range"] == "[-1,1]"
    model, loaded = load_lm(tmp_path / "lm.pt")
    assert loaded == cfg and isinstance(model, nn.Module)


def test_load_lm_rejects_foreign_files(tmp_path):
    torch.save({"config": {}, "state_dict": {}}, tmp_path / "task.pt")
    with pytest.raises(ValueError, match="kind"):
        load_lm(tmp_path / "task.pt")
    torch.save({"kind": "other", "config": {}, "state_dict": {}}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="kind is 'other'"):
        load_lm(tmp_path / "other.pt")


def test_lm_config_validates():
    with pytest.raises(ValueError, match="model must be one of"):
        LMConfig(model="lstm")
    with pytest.raises(ValueError, match="divisible"):
        LMConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="eig_range"):
        LMConfig(eig_range="[0,2]")
    assert np.isfinite(LMConfig().lr)
