"""Data: the paper's synthetic generators, digits, label flips, and real-format loaders on tiny generated files."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from iclr25.hd_explain import (
    cifar10_or_synthetic,
    digits,
    flip_labels,
    load_cifar10,
    load_dataset,
    load_image_folder,
    load_mask,
    load_named,
    load_svhn,
    moons,
)
from iclr25.hd_explain import rectangular as rect


def test_rectangular_matches_the_official_construction():
    X, y = rect(500, (4, 4), 4, seed=42)
    # the official generator: seed, cell labels, then x and y, cells assigned by a loop over ranges
    rng = np.random.RandomState(42)
    cells = rng.choice(4, 16)
    xs, ys = rng.uniform(-2, 2, 500), rng.uniform(-2, 2, 500)
    split = np.linspace(-2, 2, 5)
    expected = []
    for px, py in zip(xs, ys, strict=True):
        for i in range(4):
            for j in range(4):
                if split[i] <= px < split[i + 1] and split[j] <= py < split[j + 1]:
                    expected.append(cells[i * 4 + j])
    assert X.shape == (500, 2) and np.allclose(X[:, 0], xs) and np.array_equal(y, expected)
    assert set(np.unique(y)) <= set(range(4))


def test_moons_and_digits():
    X, y = moons(100)
    assert X.shape == (100, 2) and set(np.unique(y)) == {0, 1}
    Xtr, ytr, Xte, _ = digits(1400, seed=0)
    assert Xtr.shape == (1400, 64) and Xte.shape == (397, 64)
    assert np.allclose(Xtr.mean(0), 0, atol=1e-5)
    assert not np.array_equal(digits(1400, seed=1)[1], ytr)
    with pytest.raises(ValueError, match="pool"):
        digits(5000)


def test_flip_labels():
    y = np.arange(100) % 10
    yc, mask = flip_labels(y, 7, 10, seed=3)
    assert mask.sum() == 7 and np.array_equal(yc[mask], (y[mask] + 1) % 10)
    assert np.array_equal(yc[~mask], y[~mask])


def test_cifar10_batches(tmp_path):
    rng = np.random.default_rng(0)
    for name, n in (("data_batch_1", 4), ("data_batch_2", 3), ("test_batch", 2)):
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": list(range(n))}
        (tmp_path / name).write_bytes(pickle.dumps(batch, protocol=2))
    X, y = load_cifar10(tmp_path)
    assert X.shape == (7, 3, 32, 32) and X.max() <= 1.0 and list(y) == [0, 1, 2, 3, 0, 1, 2]
    assert load_cifar10(tmp_path, train=False)[0].shape == (2, 3, 32, 32)
    assert load_dataset(tmp_path)[0].shape == (7, 3, 32, 32)


def test_cifar_loader_refuses_code(tmp_path):
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo pwned",))

    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({b"data": Evil(), b"labels": [0]}))
    with pytest.raises(ValueError, match="refused"):
        load_cifar10(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_cifar10(tmp_path / "none")


def test_svhn_mat(tmp_path):
    from scipy.io import savemat

    X = np.random.default_rng(0).integers(0, 256, (32, 32, 3, 5), dtype=np.uint8)
    savemat(tmp_path / "train_32x32.mat", {"X": X, "y": np.array([[10], [1], [2], [10], [9]])})
    Xl, y = load_svhn(tmp_path / "train_32x32.mat")
    assert Xl.shape == (5, 3, 32, 32) and list(y) == [0, 1, 2, 0, 9]
    assert np.allclose(Xl[1, 2, 3, 4], X[3, 4, 2, 1] / 255)
    assert load_dataset(tmp_path / "train_32x32.mat")[0].shape == (5, 3, 32, 32)


def test_image_folder(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in ("glioma", "normal"):
        (tmp_path / c).mkdir()
        for i in range(2):
            Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)).save(tmp_path / c / f"{i}.png")
    X, y, classes = load_image_folder(tmp_path)
    assert X.shape == (4, 3, 4, 4) and list(y) == [0, 0, 1, 1] and classes == ["glioma", "normal"]
    assert load_image_folder(tmp_path, size=8)[0].shape == (4, 3, 8, 8)


def test_npz_and_csv(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.ones((3, 2)), y=np.array([0, 1, 0]))
    X, y = load_dataset(tmp_path / "d.npz")
    assert X.shape == (3, 2) and y.dtype == np.int64
    (tmp_path / "d.csv").write_text("0.1,0.2,1\n0.3,0.4,0\n")
    X, y = load_dataset(tmp_path / "d.csv")
    assert X.shape == (2, 2) and list(y) == [1, 0]
    np.savez(tmp_path / "bad.npz", A=np.ones(2))
    with pytest.raises(ValueError, match="lacks"):
        load_dataset(tmp_path / "bad.npz")
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ValueError, match="unknown data format"):
        load_dataset(tmp_path / "x.txt")


def test_load_named_mask_and_image_set(tmp_path):
    assert load_named("moons")[0].shape == (500, 2) and len(load_named("digits")[0]) == 1400
    with pytest.raises(FileNotFoundError, match="built-in"):
        load_named(str(tmp_path / "none.npz"))
    np.savez(tmp_path / "empty.npz", X=np.zeros((0, 2)), y=np.zeros(0))
    with pytest.raises(ValueError, match="no examples"):
        load_named(str(tmp_path / "empty.npz"))
    np.save(tmp_path / "m.npy", np.array([1, 0, 1]))
    assert load_mask(tmp_path / "m.npy", 3).tolist() == [True, False, True]
    np.savez(tmp_path / "none.npz")
    with pytest.raises(ValueError, match="mask of length 3"):
        load_mask(tmp_path / "none.npz", 3)
    X, y, source = cifar10_or_synthetic("cifar10", None, 6, 8, 0)
    assert X.shape == (6, 3, 8, 8) and y.shape == (6,) and source.startswith("synthetic (no CIFAR-10")
