"""Loaders on tiny generated files: a GINC folder in the official layout, MetaICL JSONL, classification exports,
the byte tokenizer (spec §6c, §9.7)."""

from __future__ import annotations

import json

import pytest

from iclr25.icl_emergence.data import (
    ByteTokenizer,
    WordLevelTokenizer,
    build_icl_prompt,
    load_classification,
    load_ginc_dir,
    load_metaicl_jsonl,
    write_ginc_dir,
)
from iclr25.icl_emergence.ginc import GINC, GINCConfig
from iclr25.shared.safeload import UnsafeFileError


@pytest.fixture(scope="module")
def tiny_ginc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ginc")
    g = GINC(GINCConfig(n_symbols=12, n_values=3, n_slots=4, n_hmms=4))
    write_ginc_dir(g, folder, n_train=2, train_length=30, n_val=1, val_length=10, prompt_lengths=(3,),
                   n_examples=(0, 2), n_prompts=3)  # fmt: skip
    return g, folder


def test_ginc_dir_round_trip(tiny_ginc):
    g, folder = tiny_ginc
    names = {p.name for p in folder.iterdir()}
    assert {"train.json", "val.json", "train.txt", "val.txt", "tokenizer.json"} <= names
    assert {"id_prompts_randomsample_3.json", "ood_prompts_randomsample_3.json"} <= names
    d = load_ginc_dir(folder)
    assert len(d.train) == 2 and len(d.val) == 1 and len(d.train[0]["ids"]) == 30
    assert d.tokenizer.vocab["[endoftext]"] == 0 and len(d.tokenizer) == len(g.vocab) + 1
    # token ids are the WordLevel ids: GINC index + 1
    doc = d.train[0]
    assert doc["ids"] == [g.vocab.index(w) + 1 for w in doc["text"].split()]
    assert d.tokenizer.decode(doc["ids"]) == doc["text"]
    assert (folder / "train.txt").read_text().startswith(doc["text"] + " / ")
    rows = d.prompts["id_prompts_randomsample_3.json"]
    assert len(rows) == 6 and {r["n_examples"] for r in rows} == {0, 2}
    assert set(rows[0]) >= {"text", "label", "x", "slot_pattern", "test_value", "hmm_type", "hmm_id", "label_id"}
    assert rows[0]["label_id"] == g.vocab.index(rows[0]["label"]) + 1
    assert all(r["hmm_type"] == "OOD_sample" for r in d.prompts["ood_prompts_randomsample_3.json"])
    hidden = json.loads((folder / "train.json").read_text().splitlines()[0])["hiddens"]
    assert len(hidden) == 30


def test_bad_ginc_files(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        load_ginc_dir(tmp_path / "nope")
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(UnsafeFileError, match=r"tokenizer\.json"):
        load_ginc_dir(tmp_path)
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": {}}}))
    with pytest.raises(UnsafeFileError, match="WordLevel"):
        WordLevelTokenizer.from_file(tmp_path / "tokenizer.json")
    tok = WordLevelTokenizer({"a": 0})
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.encode("a b")


def test_metaicl_round_trip(tmp_path):
    rows = [
        {"task": "sst2", "input": "great film", "output": "positive", "options": ["negative", "positive"]},
        {"task": "sst2", "input": "dull", "output": "negative", "options": ["negative", "positive"]},
        {"task": "qa", "input": "2+2?", "output": "4", "options": []},
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    tasks = load_metaicl_jsonl(path)
    assert sorted(tasks) == ["qa", "sst2"] and len(tasks["sst2"]) == 2
    prompt = build_icl_prompt(tasks["sst2"], {"input": "fine"}, 2)
    assert prompt == "great film positive\n\ndull negative\n\nfine"
    assert build_icl_prompt(tasks["sst2"], {"input": "x"}, 0) == "x"
    with pytest.raises(ValueError, match="k must"):
        build_icl_prompt(tasks["sst2"], {"input": "x"}, 3)
    (tmp_path / "bad.jsonl").write_text('{"task": "a", "input": 3, "output": "b"}\n')
    with pytest.raises(ValueError, match="input"):
        load_metaicl_jsonl(tmp_path / "bad.jsonl")


def test_classification_exports(tmp_path):
    (tmp_path / "d.csv").write_text("sentence,label\nhello,1\nbye,0\n")
    assert load_classification(tmp_path / "d.csv", "sentence", "label", {"1": "pos", "0": "neg"}) == [
        ("hello", "pos"),
        ("bye", "neg"),
    ]
    (tmp_path / "d.jsonl").write_text('{"text": "a", "label": 2}\n')
    assert load_classification(tmp_path / "d.jsonl") == [("a", "2")]
    with pytest.raises(ValueError, match="lacks"):
        load_classification(tmp_path / "d.jsonl", "sentence")


def test_byte_tokenizer():
    tok = ByteTokenizer()
    ids = tok.encode("héllo", eot=True)
    assert ids[-1] == 256 and max(ids[:-1]) < 256 and tok.decode(ids) == "héllo"
