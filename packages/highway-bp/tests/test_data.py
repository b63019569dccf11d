"""Data: digits splits and loaders for the paper's real formats on tiny generated files (spec §9 check 7)."""

import json
import pickle

import numpy as np
import pytest

from iclr25.highway_bp import data


def test_digits_split():
    Xtr, _ytr, Xte, yte = data.load_digits_split()
    assert Xtr.shape == (1437, 64) and Xte.shape == (360, 64)
    assert Xtr.dtype == np.float32 and Xtr.min() >= 0.0 and Xtr.max() <= 1.0
    assert set(np.unique(yte)) == set(range(10))
    assert np.bincount(yte).min() >= 35  # stratified: 36 ± 1 per class
    seq = data.pixel_sequences(Xtr)
    assert seq.shape == (1437, 64, 1) and np.array_equal(seq[:, :, 0], Xtr)
    with pytest.raises(ValueError, match="test_size"):
        data.load_digits_split(test_size=0)


def test_cifar10_loader_and_pixel_view(cifar_writer, tmp_path):
    batches = cifar_writer(tmp_path)
    X, y = data.load_cifar10(tmp_path, "train")
    assert X.shape == (20, 3, 32, 32) and X.dtype == np.uint8 and y.dtype == np.int64
    assert y.min() >= 0 and y.max() <= 9
    Xt, _ = data.load_cifar10(tmp_path, "test")
    assert Xt.shape == (4, 3, 32, 32)
    raw = batches["data_batch_1"][b"data"][0]
    seq = data.cifar_pixel_sequences(X[:1])
    assert seq.shape == (1, 1024, 3) and seq.dtype == np.float32
    # pixel 1 (row 0, column 1): R, G, B planes at offsets 1, 1025, 2049
    expected = (raw[[1, 1025, 2049]] / 255.0 - data.CIFAR_MEAN) / data.CIFAR_STD
    assert np.allclose(seq[0, 1], expected, atol=1e-6)
    with pytest.raises(ValueError, match="split"):
        data.load_cifar10(tmp_path, "val")
    with pytest.raises(FileNotFoundError):
        data.load_cifar10(tmp_path / "missing")


def test_pixel_sequence_task(cifar_writer, tmp_path):
    (Xtr, ytr, Xte, yte), d_in = data.pixel_sequence_task("digits")
    assert d_in == 1 and Xtr.shape == (1437, 64, 1) and Xte.shape == (360, 64, 1) and len(ytr) == 1437
    cifar_writer(tmp_path)
    (Xtr, ytr, Xte, yte), d_in = data.pixel_sequence_task("cifar", tmp_path)
    assert d_in == 3 and Xtr.shape == (20, 1024, 3) and Xte.shape == (4, 1024, 3) and len(yte) == 4
    with pytest.raises(ValueError, match="data_dir"):
        data.pixel_sequence_task("cifar")


def test_imagenet32_labels_shift_to_zero_based(tmp_path):
    rng = np.random.default_rng(0)
    for name in ["train_data_batch_1", "train_data_batch_2", "train_data_batch_10", "val_data"]:
        labels = [1, 1000, 5] if name != "val_data" else [7, 8, 1000]
        batch = {"data": rng.integers(0, 256, (3, 3072), dtype=np.uint8), "labels": labels}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    X, y = data.load_imagenet32(tmp_path, "train")
    assert X.shape == (9, 3, 32, 32) and X.dtype == np.uint8
    assert y.min() == 0 and y.max() == 999
    _, yv = data.load_imagenet32(tmp_path, "val")
    assert yv.tolist() == [6, 7, 999]
    (tmp_path / "val_data").write_bytes(pickle.dumps({"data": np.zeros((1, 3072), np.uint8), "labels": [0]}))
    with pytest.raises(ValueError, match="1-based"):
        data.load_imagenet32(tmp_path, "val")


def test_wikitext_chars(tmp_path):
    (tmp_path / "wiki.train.raw").write_text(" = Title = \n aab ab\n", encoding="utf-8")
    (tmp_path / "wiki.valid.raw").write_text("abz", encoding="utf-8")
    ids, vocab = data.load_wikitext_chars(tmp_path, "train", size=3)
    assert vocab[0] == data.UNK and vocab[1] == " " and len(vocab) == 4
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() < len(vocab)
    vids, _ = data.load_wikitext_chars(tmp_path, "valid", vocab=vocab)
    assert vids[-1] == 0  # "z" is unknown
    with pytest.raises(FileNotFoundError):
        data.load_wikitext_chars(tmp_path, "test")


@pytest.mark.parametrize("fmt", ["jsonl", "tsv"])
def test_mnli(tmp_path, fmt):
    rows = [
        {"sentence1": "A man.", "sentence2": "A person.", "gold_label": "entailment"},
        {"sentence1": "A dog.", "sentence2": "A cat.", "gold_label": "contradiction"},
        {"sentence1": "Rain.", "sentence2": "Wet.", "gold_label": "-"},
        {"sentence1": "Sun.", "sentence2": "Hot.", "gold_label": "neutral"},
    ]
    path = tmp_path / f"mnli.{fmt}"
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    else:
        lines = ["index\tsentence1\tsentence2\tgold_label"]
        lines += [f"{i}\t{r['sentence1']}\t{r['sentence2']}\t{r['gold_label']}" for i, r in enumerate(rows)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = data.load_mnli(path)
    assert [label for *_, label in out] == [0, 2, 1]
    assert out[0][:2] == ("A man.", "A person.")
    other = tmp_path / "mnli.txt"
    other.write_text("")
    with pytest.raises(ValueError, match=r"\.jsonl or \.tsv"):
        data.load_mnli(other)
