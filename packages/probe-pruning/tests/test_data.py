"""Loaders on tiny generated files (spec §9.7): WikiText raw / jsonl, C4 json.gz, tokenizer.json; seeded windows."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch

from iclr25.probe_pruning import data
from iclr25.shared.safeload import UnsafeFileError


def test_builtin_corpora_are_distinct_domains():
    prose, code = data.prose_text(50_000), data.python_source_text(50_000)
    assert len(prose) == 50_000 and len(code) == 50_000
    assert code.count("def ") > 20 * max(1, prose.count("def "))
    tokens = data.to_tokens(prose[:100])
    assert tokens.dtype == np.int64 and tokens.max() < 256


def test_windows_are_seeded_and_reproducible():
    tokens = np.arange(1000, dtype=np.int64)
    a, b = data.random_windows(tokens, 8, 16, seed=3), data.random_windows(tokens, 8, 16, seed=3)
    assert torch.equal(a, b) and a.shape == (8, 16)
    assert not torch.equal(a, data.random_windows(tokens, 8, 16, seed=4))
    assert torch.equal(a[:, 1:] - a[:, :-1], torch.ones(8, 15, dtype=torch.long))
    ordered = data.ordered_windows(tokens, 100, limit=3)
    assert ordered.shape == (3, 100) and int(ordered[1, 0]) == 100
    assert [len(x) for x in data.batches(torch.zeros(5, 4), 2)] == [2, 2, 1]
    with pytest.raises(ValueError, match="no window"):
        data.random_windows(tokens[:10], 1, 16, 0)


def test_wikitext_raw_and_jsonl(tmp_path):
    raw = tmp_path / "wiki.test.raw"
    raw.write_text(" = Title = \n a line .\n another line .\n")
    assert data.load_wikitext(raw) == " = Title = \n\n a line .\n\n another line ."
    jl = tmp_path / "test.jsonl"
    jl.write_text("\n".join(json.dumps({"text": t}) for t in ["one", "two"]))
    assert data.load_wikitext(jl) == "one\n\ntwo"
    (tmp_path / "bad.jsonl").write_text('{"nope": 1}\n')
    with pytest.raises(UnsafeFileError, match=r"bad\.jsonl"):
        data.load_wikitext(tmp_path / "bad.jsonl")
    with pytest.raises(UnsafeFileError, match="missing"):
        data.load_wikitext(tmp_path / "missing.raw")


def test_c4_windows(tmp_path):
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    rng = np.random.default_rng(0)
    docs = [{"text": "".join(rng.choice(list("abcdef "), size=int(n))), "timestamp": "t", "url": "u"} for n in (5, 80, 200, 300)]  # fmt: skip
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(d) for d in docs))
    w1, w2 = data.load_c4_windows(path, 6, 32, seed=1), data.load_c4_windows(path, 6, 32, seed=1)
    assert w1.shape == (6, 32) and torch.equal(w1, w2)
    with pytest.raises(UnsafeFileError, match="too few"):
        data.load_c4_windows(path, 2, 1000, seed=1)
    (tmp_path / "junk.json.gz").write_bytes(b"not gzip")
    with pytest.raises(UnsafeFileError, match="junk"):
        data.load_c4_windows(tmp_path / "junk.json.gz", 1, 4, 0)


def test_tokenizer_json(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    tokenize = data.load_tokenizer(tmp_path / "tokenizer.json")
    assert tokenize("hello world zzz") == [1, 2, 0]
    (tmp_path / "bad.json").write_bytes(b"\x80\x04junk")
    with pytest.raises(UnsafeFileError, match=r"bad\.json"):
        data.load_tokenizer(tmp_path / "bad.json")
