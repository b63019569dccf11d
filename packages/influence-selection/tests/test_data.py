"""Generators and the loaders on tiny generated files (never the network)."""

from __future__ import annotations

import gzip
import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from iclr25.influence_selection import data as D


def test_two_gaussians_shapes_balance_and_label_noise() -> None:
    s = D.two_gaussians(0)
    assert s.X_train.shape == (150, 2) and s.X_val.shape == (100, 2) and s.X_test.shape == (600, 2)
    assert s.y_train.sum() == 75 and s.y_test.sum() == 300
    np.testing.assert_allclose(s.X_test[s.y_test == 1].mean(0), [6, 6], atol=0.15)
    n = D.two_gaussians(0, label_noise=0.1)
    assert len(n.flipped) == 15 and len(set(n.flipped)) == 15
    np.testing.assert_array_equal(n.X_train, s.X_train)  # the flips are drawn after the test set
    np.testing.assert_array_equal(n.y_train[n.flipped], 1 - s.y_train[n.flipped])
    assert np.sum(n.y_train != s.y_train) == 15


def test_moons_and_digits() -> None:
    m = D.two_moons(0)
    assert m.X_train.shape == (500, 2) and m.X_test.shape == (250, 2)
    assert m.X_train[:, 0].min() > -1.5 and m.X_train[:, 0].max() < 6.5
    sp = D.digits_split(0)
    assert sp.X_init.shape == (60, 64) and sp.X_pool.shape == (1000, 64) and sp.X_test.shape == (400, 64)
    assert sp.X_pool.max() <= 1.0
    idx = np.concatenate([sp.X_init, sp.X_pool, sp.X_val, sp.X_test])
    assert len(np.unique(idx, axis=0)) >= len(idx) - 20  # disjoint draws (digits has a few duplicate images)
    up = D.upsample_digits(sp.X_init[:3])
    assert up.shape == (3, 28, 28)
    with pytest.raises(ValueError, match="exceeds"):
        D.digits_split(0, n_pool=2000)


def _write_adult_like(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(30):
        inc = ">50K" if i % 3 == 0 else "<=50K"
        wc = ["Private", "State-gov", "?"][i % 3] if i != 4 else "Private"
        rows.append(f"{20 + i}, {wc}, {rng.integers(1e4, 1e5)}, {['Male', 'Female'][i % 2]}, {40 + i % 7}, {inc}")
    (folder / "train.csv").write_text("\n".join(rows) + "\n")
    test = [f"{30 + i}, Private, 5000, Female, 40, {'>50K.' if i % 2 else '<=50K.'}" for i in range(6)]
    (folder / "test.csv").write_text("\n".join(test) + "\n")
    meta = {
        "train_path": "./data/adult/train.csv",
        "test_path": "./data/adult/test.csv",
        "column_names": "age,workclass,fnlwgt,sex,hours-per-week,income",
        "categorical_feat": "workclass,sex,income",
        "drop_feat": "fnlwgt",
        "na_values": "?",
        "target_feat": "income",
        "sensitive_feat": "sex",
        "label_mapping": {"income": {">50K": 1.0, "<=50K": 0.0}, "sex": {"Male": 1.0, "Female": 0.0}},
        "l2_reg": 2.2622,
    }
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder / "meta.json"


def test_tabular_meta_loader(tmp_path: Path) -> None:
    s = D.load_tabular_meta(_write_adult_like(tmp_path), val_p=0.25, seed=0)
    n = 30 - 10  # rows with '?' are dropped
    assert len(s.y_train) + len(s.y_val) == n and len(s.y_val) == 5
    assert s.feature_names == ["age", "workclass=Private", "workclass=State-gov", "sex", "hours-per-week"]
    assert s.X_train.shape[1] == 5 and s.X_test.shape == (6, 5)
    np.testing.assert_array_equal(s.y_test, [0, 1, 0, 1, 0, 1])  # '>50K.' of the test file maps to 1
    full = np.concatenate([s.X_train, s.X_val])
    np.testing.assert_allclose(full.mean(0), 0, atol=1e-12)  # standardised with the train statistics
    np.testing.assert_allclose(full.std(0), 1, atol=1e-12)


def test_tabular_meta_bad_inputs(tmp_path: Path) -> None:
    meta = _write_adult_like(tmp_path)
    bad = json.loads(meta.read_text())
    del bad["target_feat"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="target_feat"):
        D.load_tabular_meta(tmp_path / "bad.json")
    (tmp_path / "train.csv").write_text("1, 2\n")
    with pytest.raises(ValueError, match="fields"):
        D.load_tabular_meta(meta)


def test_npy_features(tmp_path: Path) -> None:
    np.save(tmp_path / "X_init.npy", np.ones((4, 3)))
    np.save(tmp_path / "y_init.npy", np.arange(4))
    np.save(tmp_path / "X_pool.npy", np.zeros((6, 3)))
    np.save(tmp_path / "y_pool.npy", np.arange(6))
    arrs = D.load_npy_features(tmp_path)
    assert arrs["X_pool"].shape == (6, 3) and arrs["y_init"].tolist() == [0, 1, 2, 3]
    np.save(tmp_path / "y_pool.npy", np.arange(5))
    with pytest.raises(ValueError, match="rows"):
        D.load_npy_features(tmp_path)
    np.save(tmp_path / "X_obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="X_obj"):
        D.load_npy_features(tmp_path)
    with pytest.raises(ValueError, match="no X_"):
        D.load_npy_features(tmp_path / "..", suffix="_nothing")


def test_idx_images_and_labels(tmp_path: Path) -> None:
    imgs = np.random.default_rng(0).integers(0, 256, (10, 28, 28), dtype=np.uint8)
    (tmp_path / "img-idx3-ubyte").write_bytes(struct.pack(">IIII", 2051, 10, 28, 28) + imgs.tobytes())
    with gzip.open(tmp_path / "lab-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 2049, 10) + bytes(range(10)))
    np.testing.assert_array_equal(D.load_idx(tmp_path / "img-idx3-ubyte"), imgs)
    assert D.load_idx(tmp_path / "lab-idx1-ubyte.gz").tolist() == list(range(10))
    (tmp_path / "bad").write_bytes(struct.pack(">II", 1234, 1) + b"\0")
    with pytest.raises(ValueError, match="magic"):
        D.load_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(struct.pack(">IIII", 2051, 10, 28, 28) + b"\0" * 5)
    with pytest.raises(ValueError, match="header"):
        D.load_idx(tmp_path / "short")


class _Evil:
    def __reduce__(self):
        return (print, ("owned",))


def test_cifar10_batch_and_a_malicious_pickle(tmp_path: Path) -> None:
    data = np.random.default_rng(0).integers(0, 256, (4, 3072), dtype=np.uint8)
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({b"data": data, b"labels": [1, 2, 3, 4]}, protocol=2))
    X, y = D.load_cifar10_batch(tmp_path / "data_batch_1")
    assert X.shape == (4, 32, 32, 3) and y.tolist() == [1, 2, 3, 4]
    np.testing.assert_array_equal(X[0, :, :, 0].ravel(), data[0, :1024])
    (tmp_path / "evil").write_bytes(pickle.dumps({b"data": _Evil()}))
    with pytest.raises(ValueError, match="refused"):
        D.load_cifar10_batch(tmp_path / "evil")
