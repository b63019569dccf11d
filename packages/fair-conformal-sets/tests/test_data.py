"""Generators and loaders, on tiny generated files."""

from __future__ import annotations

import csv
import os
import pickle

import numpy as np
import pytest

from iclr25.fair_conformal_sets import data


def test_synthetic_generator_spec_6a():
    a = data.synthetic(20_000, np.random.default_rng(0))
    b = data.synthetic(20_000, np.random.default_rng(0))
    assert np.array_equal(a.logits, b.logits)  # one rng stream per seed
    assert a.K == 10 and set(np.unique(a.groups)) == {0, 1}
    assert abs(a.groups.mean() - 0.5) < 0.02 and np.bincount(a.labels).min() > 1800
    top1 = a.logits.argmax(axis=1) == a.labels
    easy, hard = top1[a.groups == 0].mean(), top1[a.groups == 1].mean()
    assert easy > hard + 0.2  # b = 3.5 vs 2.0
    # the boost sits on the true label: its mean logit exceeds the others by b_g
    gap0 = a.logits[a.groups == 0][np.arange((a.groups == 0).sum()), a.labels[a.groups == 0]].mean()
    assert abs(gap0 - 3.5) < 0.05


def test_synthetic_split_continues_the_stream():
    cal, test, rng = data.synthetic_split(4, 100, 50)
    whole = data.synthetic(150, np.random.default_rng(4))
    assert np.array_equal(cal.logits, whole.logits[:100]) and np.array_equal(test.labels, whole.labels[100:])
    assert rng.random() == pytest.approx(rng.random(), abs=1.0)  # a live generator


def test_digits_smoke():
    cal, test = data.digits_outputs(0)
    assert cal.K == 10 and len(cal) + len(test) > 850
    assert (test.logits.argmax(axis=1) == test.labels).mean() > 0.85
    assert set(np.unique(cal.groups)) == {0, 1}


def test_npz_round_trip_and_bad_files(tmp_path):
    d = data.synthetic(30, np.random.default_rng(0))
    np.savez(tmp_path / "o.npz", logits=d.logits, labels=d.labels, groups=d.groups)
    back = data.load_npz(tmp_path / "o.npz")
    assert np.array_equal(back.logits, d.logits) and np.array_equal(back.groups, d.groups)
    np.savez(tmp_path / "p.npz", probs=d.probs(), labels=d.labels, groups=d.groups)
    assert np.allclose(data.load_npz(tmp_path / "p.npz").probs(), d.probs())
    np.savez(tmp_path / "missing.npz", logits=d.logits, labels=d.labels)
    with pytest.raises(ValueError, match="groups"):
        data.load_npz(tmp_path / "missing.npz")
    np.savez(tmp_path / "bad.npz", logits=d.logits, labels=d.labels + 10, groups=d.groups)
    with pytest.raises(ValueError, match="labels must lie"):
        data.load_npz(tmp_path / "bad.npz")
    np.savez(tmp_path / "obj.npz", logits=np.array([{"a": 1}], dtype=object), labels=d.labels, groups=d.groups)
    with pytest.raises(ValueError, match=r"refused|pickled"):
        data.load_npz(tmp_path / "obj.npz")
    with pytest.raises(FileNotFoundError):
        data.load_npz(tmp_path / "none.npz")


def _bios_rows(rng, n, labels):
    return [
        {
            "hard_text": f"bio {i}",
            "label": int(labels[i % len(labels)]),
            "g": "fm"[i % 2],
            "avg_enc": rng.standard_normal(4).astype(np.float32) if i % 3 else [float(v) for v in rng.random(4)],
        }
        for i in range(n)
    ]


def test_biosbias_pickles(tmp_path):
    rng = np.random.default_rng(0)
    # label 21 most frequent, then 19, 26; label 1 and 13 dropped
    train = _bios_rows(rng, 60, [21, 21, 21, 19, 19, 26, 1, 13, 13, 13])
    for split, rows in (("train", train), ("dev", _bios_rows(rng, 30, [21, 19, 26])), ("test", train[:40])):
        with open(tmp_path / f"{split}_all.pickle", "wb") as f:
            pickle.dump(rows, f)
    splits, names = data.load_biosbias(tmp_path, m=2)
    assert names == ["Professor", "Physician"]
    tr = splits["train"]
    assert tr.features.shape[1] == 4 and set(tr.labels.tolist()) == {0, 1}
    assert np.bincount(tr.labels).min() == np.bincount(tr.labels).max()  # balanced per class
    assert set(tr.groups.tolist()) <= {0, 1} and len(tr.texts) == len(tr.labels)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_biosbias_refuses_code_in_pickles(tmp_path):
    for split in ("train", "dev", "test"):
        with open(tmp_path / f"{split}_all.pickle", "wb") as f:
            pickle.dump([{"hard_text": "x", "label": 0, "g": "f", "avg_enc": _Evil()}], f)
    with pytest.raises(ValueError, match="refused"):
        data.load_biosbias(tmp_path)


def test_ravdess_names(tmp_path):
    assert data.parse_ravdess_name("03-01-05-01-02-01-12.wav") == (4, 1)  # angry, actor 12 = female
    assert data.parse_ravdess_name("03-01-01-01-01-01-01.wav") == (0, 0)  # neutral, actor 1 = male
    with pytest.raises(ValueError, match="emotion must be"):
        data.parse_ravdess_name("03-01-09-01-01-01-01.wav")
    with pytest.raises(ValueError, match="RAVDESS"):
        data.parse_ravdess_name("song.wav")
    (tmp_path / "Actor_03").mkdir()
    (tmp_path / "Actor_03" / "03-01-08-02-02-02-03.wav").write_bytes(b"")
    [(path, emotion, group)] = data.scan_ravdess(tmp_path)
    assert path.name.startswith("03-01-08") and (emotion, group) == (7, 0)


def test_facet_annotations(tmp_path):
    cols = ["filename", "person_id", "class1", "class2", *data.FACET_AGE_COLUMNS]
    rows = [
        ["a.jpg", 1, "guitarist", "", 0, 1, 0, 0],
        ["b.jpg", 2, "farmer", "", 0, 0, 1, 0],
        ["c.jpg", 3, "farmer", "", 1, 0, 0, 0],
        ["d.jpg", 4, "farmer", "guard", 1, 0, 0, 0],  # two classes: dropped
        ["e.jpg", 5, "guard", "", 0, 0, 0, 1],
        ["e.jpg", 6, "guard", "", 0, 0, 0, 1],  # two persons: dropped
        ["f.jpg", 7, "boatman", "", 0, 0, 0, 1],
    ]
    path = tmp_path / "annotations.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([cols, *rows])
    items, classes = data.load_facet_annotations(path, m=2)
    assert classes == ["farmer", "guitarist"]  # the 2 most common, then alphabetical
    by_file = {i["filename"]: i for i in items}
    assert "d.jpg" not in by_file and "e.jpg" not in by_file
    assert by_file["b.jpg"]["group"] == 2 and by_file["c.jpg"]["group"] == 0
    assert by_file["a.jpg"]["label"] == 1 and "f.jpg" not in by_file  # boatman is not in the top 2


def test_split_sizes_of_the_official_task_splits():
    assert data.split_sizes(1200, (0.5833333, 0.16666666, 0.25)) == (699, 199, 302)
    assert data.split_sizes(6001, (4000, None, None)) == (4000, 1000, 1001)
    assert data.split_sizes(20_000, (10_000, 5000, 2000)) == (10_000, 5000, 2000)
    with pytest.raises(ValueError, match="need 17000 items"):
        data.split_sizes(16_999, (10_000, 5000, 2000))


def test_split_outputs_are_disjoint_parts_of_one_permutation():
    out = data.synthetic(100, np.random.default_rng(0))
    cal, val, test = data.split_outputs(out, (60, None, None), np.random.default_rng(1))
    assert (len(cal), len(val), len(test)) == (60, 20, 20)
    rows = np.concatenate([cal.logits, val.logits, test.logits])
    assert np.array_equal(rows, out.logits[np.random.default_rng(1).permutation(100)])
