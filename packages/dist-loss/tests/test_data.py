"""Data (spec 6a, 6c, 9.6): AgeDB-DIR histograms, synthetic generators and real-format loaders on tiny files."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from iclr25.dist_loss.data import (
    agedb_labels,
    balanced_split,
    load_dir_csv,
    load_ecg,
    load_images,
    load_tabular,
    make_disk_images,
    make_tabular,
    parse_agedb_filenames,
)
from iclr25.dist_loss.metrics import shot_regions


def test_agedb_histograms_and_regions() -> None:
    train, test = agedb_labels("train"), agedb_labels("test")
    assert train.size == 12208 and test.size == 2140 and agedb_labels("val").size == 2140
    regions = shot_regions(np.arange(102), train)
    assert [(regions == r).sum() for r in ("many", "median", "few")] == [51, 16, 35]
    few_share = (shot_regions(test, train) == "few").mean()
    assert few_share == pytest.approx(0.076, abs=0.001)
    with pytest.raises(ValueError, match="split"):
        agedb_labels("dev")


def test_make_tabular_shapes_and_determinism() -> None:
    a, b = make_tabular(seed=3), make_tabular(seed=3)
    assert a.x_train.shape == (12208, 16) and a.x_test.shape == (2140, 16)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert not np.array_equal(a.x_train, make_tabular(seed=4).x_train)
    assert not np.array_equal(a.x_val, a.x_test)  # fresh noise per split
    corr = np.corrcoef(a.x_train[:, 0], a.y_train)[0, 1]
    assert abs(corr) > 0.3  # the features carry the label


def test_disk_images_radius_grows_with_label() -> None:
    img = make_disk_images(np.array([5.0, 50.0, 100.0]), noise=0.0, size=32)
    assert img.shape == (3, 1, 32, 32)
    area = img.sum(axis=(1, 2, 3))
    assert area[0] < area[1] < area[2]


def test_dir_csv_and_images(tmp_path: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    (tmp_path / "images").mkdir()
    rows = []
    for i, (age, split) in enumerate(
        [(21, "train"), (35, "train"), (35, "val"), (60, "test"), (4, "train"), (90, "test")]
    ):
        name = f"images/{i}.jpg"
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(tmp_path / name)
        rows.append({"age": age, "path": name, "split": split})
    with (tmp_path / "agedb.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["age", "path", "split"])
        writer.writeheader()
        writer.writerows(rows)
    meta = load_dir_csv(tmp_path / "agedb.csv", tmp_path)
    np.testing.assert_array_equal(meta["age"], [21, 35, 35, 60, 4, 90])
    train = load_dir_csv(tmp_path / "agedb.csv", split="train")
    assert train["age"].tolist() == [21, 35, 4]
    images = load_images(train["path"], size=16)
    assert images.shape == (3, 3, 16, 16) and images.min() >= 0 and images.max() <= 1


def test_dir_csv_bad_columns(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("age,file\n3,a.jpg\n")
    with pytest.raises(ValueError, match="lacks columns"):
        load_dir_csv(tmp_path / "bad.csv")
    with pytest.raises(FileNotFoundError):
        load_dir_csv(tmp_path / "missing.csv")


def test_agedb_filenames_and_balanced_split() -> None:
    parsed = parse_agedb_filenames(["0_MariaCallas_35_f.jpg", "dir/12_John_Doe_71_m.jpg"])
    assert [(p["id"], p["name"], p["age"], p["gender"]) for p in parsed] == [
        (0, "MariaCallas", 35, "f"),
        (12, "John_Doe", 71, "m"),
    ]
    with pytest.raises(ValueError, match="AgeDB pattern"):
        parse_agedb_filenames(["not_an_agedb_name.png"])
    ages = np.repeat([20, 30, 40], [100, 9, 2])
    split = balanced_split(ages, per_age=30)
    assert ((split == "val") & (ages == 20)).sum() == 30 and ((split == "test") & (ages == 20)).sum() == 30
    assert ((split == "val") & (ages == 30)).sum() == 3
    assert ((split == "train") & (ages == 40)).sum() == 2
    np.testing.assert_array_equal(split, balanced_split(ages, per_age=30))  # seeded


def test_tabular_csv_npz_and_ecg(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("a,target,b\n1,10,2\n3,20,4\n")
    x, y = load_tabular(tmp_path / "d.csv")
    np.testing.assert_array_equal(x, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(y, [10, 20])
    np.savez(tmp_path / "d.npz", x=np.ones((3, 2)), y=np.arange(3))
    x, y = load_tabular(tmp_path / "d.npz")
    assert x.shape == (3, 2) and y.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="no column"):
        load_tabular(tmp_path / "d.csv", target="age")
    np.save(tmp_path / "sig.npy", np.zeros((2, 12, 50)))
    (tmp_path / "k.csv").write_text("id,label\n0,4.1\n1,5.6\n")
    sig, k = load_ecg(tmp_path / "sig.npy", tmp_path / "k.csv")
    assert sig.shape == (2, 12, 50) and k.tolist() == [4.1, 5.6]
    np.save(tmp_path / "flat.npy", np.zeros((2, 50)))
    with pytest.raises(ValueError, match="leads"):
        load_ecg(tmp_path / "flat.npy", tmp_path / "k.csv")
