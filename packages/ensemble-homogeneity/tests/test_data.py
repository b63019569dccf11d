"""Data: the bundled tasks, the generated image task, loaders on tiny generated files, the .npz format."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from iclr25.ensemble_homogeneity.data import (
    EnsemblePredictions,
    load_cifar,
    load_image_dataset,
    load_sklearn,
    load_tiny_imagenet,
    make_image_task,
    standardise_images,
)


def test_digits_split():
    d = load_sklearn("digits")
    assert d.x_train.shape == (1000, 64) and d.x_test.shape == (797, 64)
    assert d.x_train.dtype == np.float32 and d.x_train.max() <= 1.0 and d.n_classes == 10
    assert np.all(np.bincount(d.y_train) >= 95)  # stratified
    again = load_sklearn("digits")
    assert np.array_equal(again.x_test, d.x_test)  # random_state = 0


def test_synthetic_task():
    d = load_sklearn("synthetic")
    assert d.x_train.shape == (2000, 20) and d.x_test.shape == (2000, 20) and d.n_classes == 5
    np.testing.assert_allclose(d.x_train.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(d.x_train.std(0), 1, atol=1e-4)
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_sklearn("mnist")


def test_image_task():
    d = standardise_images(make_image_task(200, 50, seed=1))
    assert d.x_train.shape == (200, 3, 32, 32) and d.x_test.shape == (50, 3, 32, 32)
    assert d.y_train.max() < 10 and d.input_shape == (3, 32, 32)
    np.testing.assert_allclose(d.x_train.mean(axis=(0, 2, 3)), 0, atol=1e-4)


def _batch(path: Path, n: int, key: bytes, n_classes: int, rng) -> tuple[np.ndarray, list[int]]:
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = [int(v) for v in rng.integers(0, n_classes, n)]
    with open(path, "wb") as f:
        pickle.dump({b"data": data, key: labels, b"batch_label": b"x"}, f, protocol=2)
    return data, labels


def test_cifar10_loader(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    batches = [_batch(folder / f"data_batch_{i}", 2, b"labels", 10, rng) for i in range(1, 6)]
    test = _batch(folder / "test_batch", 2, b"labels", 10, rng)
    d = load_cifar(tmp_path, which=10)
    assert d.x_train.shape == (10, 3, 32, 32) and d.x_test.shape == (2, 3, 32, 32)
    assert d.x_train.dtype == np.float32 and d.y_train.dtype == np.int64 and d.n_classes == 10
    assert d.y_train.tolist() == [v for b in batches for v in b[1]]
    # channel layout: the first 1024 bytes are the red plane, row-major
    assert d.x_test[1, 0, 0, 1] == pytest.approx(test[0][1, 1] / 255)
    assert d.x_test[1, 2, 31, 31] == pytest.approx(test[0][1, 3071] / 255)


def test_cifar100_loader(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    for name in ("train", "test"):
        data = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": data, b"fine_labels": [99, 3], b"coarse_labels": [19, 0]}, f, protocol=2)
    fine = load_cifar(folder, which=100)
    coarse = load_cifar(tmp_path, which=100, label="coarse")
    assert fine.y_train.tolist() == [99, 3] and fine.n_classes == 100
    assert coarse.y_test.tolist() == [19, 0] and coarse.n_classes == 20


def test_cifar_refuses_code_and_missing_files(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()

    class Evil:
        def __reduce__(self):
            return (print, ("ran",))

    with open(folder / "train", "wb") as f:
        pickle.dump({b"data": Evil()}, f)
    with pytest.raises(ValueError, match="refused"):
        load_cifar(folder, which=100)
    with pytest.raises(FileNotFoundError):
        load_cifar(tmp_path / "nothing", which=10)


def test_tiny_imagenet_tree(tmp_path):
    from PIL import Image

    root = tmp_path / "tiny-imagenet-200"
    wnids = ["n01443537", "n01629819"]
    (root / "val" / "images").mkdir(parents=True)
    (root / "wnids.txt").write_text("\n".join(wnids) + "\n")
    rng = np.random.default_rng(2)
    ann = []
    for c, w in enumerate(wnids):
        (root / "train" / w / "images").mkdir(parents=True)
        for i in range(2):
            img = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
            img.save(root / "train" / w / "images" / f"{w}_{i}.JPEG", format="JPEG")
            name = f"val_{c}_{i}.JPEG"
            img.save(root / "val" / "images" / name, format="JPEG")
            ann.append(f"{name}\t{w}\t0\t0\t63\t63")
    (root / "val" / "val_annotations.txt").write_text("\n".join(ann) + "\n")
    x, y, ids = load_tiny_imagenet(tmp_path, "train")
    assert x.shape == (4, 3, 64, 64) and x.dtype == np.uint8 and y.tolist() == [0, 0, 1, 1] and ids == wnids
    xv, yv, _ = load_tiny_imagenet(root, "val")
    assert xv.shape == (4, 3, 64, 64) and yv.tolist() == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="split must be"):
        load_tiny_imagenet(root, "test")
    ds = load_image_dataset("tinyimagenet", tmp_path)
    assert ds.x_train.shape == (4, 3, 64, 64) and ds.x_train.dtype == np.float32 and ds.n_classes == 2


def test_npz_round_trip(tmp_path, small_pool):
    probs, y = small_pool
    preds = EnsemblePredictions(probs, y, {"seed": [0, 1], "width": 64})
    back = EnsemblePredictions.from_npz(preds.to_npz(tmp_path / "p.npz"))
    assert np.array_equal(back.probs, preds.probs) and np.array_equal(back.labels, preds.labels)
    assert back.meta == {"seed": [0, 1], "width": 64} and back.n_members == 6


def test_npz_logits_and_bad_files(tmp_path, small_pool):
    probs, y = small_pool
    np.savez(tmp_path / "logits.npz", logits=np.log(probs) + 3.0, labels=y)
    np.testing.assert_allclose(EnsemblePredictions.from_npz(tmp_path / "logits.npz").probs, probs, atol=1e-12)
    np.savez(tmp_path / "nolabels.npz", probs=probs)
    with pytest.raises(ValueError, match="must hold 'labels'"):
        EnsemblePredictions.from_npz(tmp_path / "nolabels.npz")
    np.savez(tmp_path / "bad.npz", probs=probs * 2, labels=y)
    with pytest.raises(ValueError, match="sum to 1"):
        EnsemblePredictions.from_npz(tmp_path / "bad.npz")
    np.savez(tmp_path / "obj.npz", probs=np.array([object()]), labels=y)
    with pytest.raises(ValueError, match="refused"):
        EnsemblePredictions.from_npz(tmp_path / "obj.npz")
    with pytest.raises(FileNotFoundError):
        EnsemblePredictions.from_npz(tmp_path / "missing.npz")
