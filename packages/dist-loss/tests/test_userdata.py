"""A user's own data end to end: CSV/NPZ tables and ECG-shaped signals on tiny generated files, a custom label
grid, shot thresholds rescaled to the data, the diabetes smoke test (spec 6a) and one-line errors for bad files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from iclr25.dist_loss.config import Config
from iclr25.dist_loss.data import agedb_labels
from iclr25.dist_loss.metrics import shot_regions
from iclr25.dist_loss.userdata import check_label_grid, load_user_data, scaled_shots


def _table(n: int = 50, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)) * [1.0, 10.0, 100.0] + [0.0, 5.0, -50.0]
    y = np.clip(np.round(40 + 12 * x[:, 0] + rng.normal(0, 3, n)), 0, 100)
    return x, y


def _write_csv(path: Path, x: np.ndarray, y: np.ndarray, target: str = "target") -> Path:
    header = ",".join([f"f{i}" for i in range(x.shape[1])] + [target])
    rows = "\n".join(",".join(str(v) for v in [*row, label]) for row, label in zip(x, y, strict=True))
    path.write_text(header + "\n" + rows + "\n")
    return path


def test_csv_npz_and_ecg_give_standardised_splits(tmp_path: Path) -> None:
    x, y = _table()
    from_csv = load_user_data(_write_csv(tmp_path / "d.csv", x, y), seed=3)
    np.savez(tmp_path / "d.npz", x=x, y=y)
    from_npz = load_user_data(tmp_path / "d.npz", seed=3)
    for d in (from_csv, from_npz):
        assert (d.y_train.size, d.y_val.size, d.y_test.size) == (30, 10, 10)
        np.testing.assert_allclose(d.x_train.mean(0), 0, atol=1e-5)
        np.testing.assert_allclose(d.x_train.std(0), 1, atol=1e-4)
        assert sorted(np.concatenate([d.y_train, d.y_val, d.y_test])) == sorted(y)
    np.testing.assert_allclose(from_csv.x_test, from_npz.x_test, atol=1e-5)
    assert not np.array_equal(load_user_data(tmp_path / "d.npz", seed=4).y_test, from_npz.y_test)  # seeded split
    signals = np.random.default_rng(1).normal(size=(20, 2, 8))
    np.save(tmp_path / "sig.npy", signals)
    (tmp_path / "k.csv").write_text("id,potassium\n" + "".join(f"{i},{3 + i / 10}\n" for i in range(20)))
    ecg = load_user_data(tmp_path / "sig.npy", tmp_path / "k.csv", target="potassium")
    assert ecg.x_train.shape == (12, 16) and ecg.x_val.shape == (4, 16)  # leads x T flattened
    np.savez(tmp_path / "ecg.npz", x=signals, y=np.arange(20.0))
    assert load_user_data(tmp_path / "ecg.npz").x_test.shape == (4, 16)
    splits = {k: np.full((4, 2) if k.startswith("x") else 4, float(i)) for i, k in enumerate(
        ["x_train", "y_train", "x_val", "y_val", "x_test", "y_test"])}  # fmt: skip
    np.savez(tmp_path / "synth.npz", **splits)
    as_written = load_user_data(tmp_path / "synth.npz")
    np.testing.assert_array_equal(as_written.x_val, splits["x_val"])  # the synth format is used as written


def test_scaled_shots_keep_the_dir_regions_on_agedb_and_fit_small_data() -> None:
    train = agedb_labels("train")
    many, few = scaled_shots(train, 0.0, 1.0)
    ages = np.arange(102)
    np.testing.assert_array_equal(shot_regions(ages, train, many, few), shot_regions(ages, train, 100, 20))
    small = np.repeat(np.arange(0, 100, 10.0), [1, 2, 4, 8, 16, 16, 8, 4, 2, 1])  # 62 labels, 10 bins
    many, few = scaled_shots(small, 0.0, 10.0)
    regions = shot_regions(np.arange(0, 100, 10.0), small, many, few, 0.0, 10.0)
    assert {"many", "median", "few"} == set(regions.tolist())
    assert shot_regions(small, small, 100, 20, 0.0, 10.0).tolist() == ["few"] * small.size  # DIR's would not


def test_label_grid_check() -> None:
    check_label_grid(np.array([25.0, 346.0]), 20, 350, 10)
    with pytest.raises(ValueError, match=r"span \[25, 346\], outside the label grid \[0, 120\]"):
        check_label_grid(np.array([25.0, 346.0]), 0, 120, 1)


def _bad_files(tmp_path: Path) -> list[tuple[str, str, str]]:
    """(data_file, labels_file, expected message) for each kind of bad file."""
    x, y = _table(12)
    _write_csv(tmp_path / "good.csv", x, y)
    (tmp_path / "nocol.csv").write_text("a,b\n1,2\n")
    (tmp_path / "text.csv").write_text("a,target\n1,2\nx,3\n")
    (tmp_path / "ragged.csv").write_text("a,target\n1,2\n3\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("a,target\n")
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00\x81")
    np.savez(tmp_path / "keys.npz", features=np.ones((4, 2)))
    np.savez(tmp_path / "objects.npz", x=np.array([{"a": 1}] * 4, dtype=object), y=np.arange(4.0))
    (tmp_path / "broken.npz").write_text("not a zip")
    np.save(tmp_path / "sig.npy", np.zeros((3, 2, 5)))
    (tmp_path / "k.csv").write_text("label\n1\n2\n")
    (tmp_path / "data.txt").write_text("1 2 3")
    np.savez(tmp_path / "tiny.npz", x=np.ones((4, 2)), y=np.arange(4.0))
    np.savez(tmp_path / "nan.npz", x=np.ones((10, 2)), y=np.r_[np.arange(9.0), np.nan])
    return [
        ("nocol.csv", "", "has no column 'target'"),
        ("text.csv", "", "every cell must be a number"),
        ("ragged.csv", "", "line 3 has 1 cells, the header 2"),
        ("empty.csv", "", "is empty"),
        ("header.csv", "", "no data rows"),
        ("binary.csv", "", "not a readable CSV"),
        ("keys.npz", "", "must hold arrays 'x' and 'y'"),
        ("objects.npz", "", "objects.npz"),
        ("broken.npz", "", "broken.npz"),
        ("sig.npy", "k.csv", "has 2 labels for the 3 signals"),
        ("sig.npy", "", "give their labels CSV"),
        ("good.csv", "k.csv", "a labels CSV goes with ECG signals"),
        ("data.txt", "", "must be a .csv or .npz"),
        ("tiny.npz", "", "too few to split"),
        ("nan.npz", "", "labels must be finite"),
    ]


def test_bad_files_raise_value_errors_naming_the_problem(tmp_path: Path) -> None:
    for data, labels, message in _bad_files(tmp_path):
        with pytest.raises(ValueError, match=re.escape(message)) as err:
            load_user_data(tmp_path / data, (tmp_path / labels) if labels else None)
        assert "\n" not in str(err.value), data


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data_file=missing.csv"], "data_file missing.csv does not exist"),
        (["data_file=nocol.csv"], "has no column 'target'"),
        (["data_file=objects.npz"], "objects.npz"),
        (["data_file=good.csv"], "outside the label grid"),  # ages 0..100 fit; the fixture's labels do not
        (["data_file=good.csv", "max_label=700"], "exceeds the 8 training samples"),
        (["labels_file=k.csv"], "labels_file goes with data_file"),
        (["data_file=good.csv", "data_dir=x"], "not both"),
        (["data_file=good.csv", "val_fraction=0.7"], "val_fraction must be in (0, 0.5)"),
        (["data_file=good.csv", "many_shot=1", "few_shot=5"], "many_shot must be >= few_shot"),
    ],
    ids=["missing", "no-column", "pickle", "grid", "batch", "labels-alone", "both", "fraction", "shots"],
)
def test_reproduce_bad_files_one_line_exit_2(overrides: list[str], message: str, tmp_path: Path) -> None:
    _bad_files(tmp_path)
    x, y = _table(12)
    _write_csv(tmp_path / "good.csv", x, y + 500)  # labels above 500: off the default 0..120 grid
    argv = ["reproduce", "--scale", "ci", "--out", str(tmp_path / "run"), "--quiet", *overrides]
    out = subprocess.run([sys.executable, "-m", "iclr25.dist_loss.cli", *argv], capture_output=True, text=True,
                         cwd=tmp_path)  # fmt: skip
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and message in lines[0], out.stderr


def test_diabetes_smoke_reproduce_reports_every_region(tmp_path: Path) -> None:
    """Spec 6a's wheel-shipped smoke test: sklearn's diabetes data (442 samples, targets 25-346) on 10-unit bins
    with rescaled shot thresholds; it must run and report all regions (its numbers are not a claim)."""
    from sklearn.datasets import load_diabetes

    from iclr25.dist_loss.reproduce import run

    x, y = load_diabetes(return_X_y=True)
    np.savez(tmp_path / "diabetes.npz", x=x, y=y)
    config = Config(
        data_file=str(tmp_path / "diabetes.npz"), min_label=20, max_label=350, step=10, batch_size=64,
        seeds=1, epochs_stage1=3, epochs_stage2=3, methods=("l1", "dist"), end_to_end=False,
        compare_default_init=False, bench_batches=(64,), bench_repeats=1, figures=True,
    )  # fmt: skip
    report = run("ci", tmp_path / "run", device="cpu", config=config)
    metrics = report.metrics
    assert metrics["shot_thresholds"] == {"many": 8.0, "few": 5.56}  # scaled_shots on the seed-0 split
    for method in ("rrt_l1", "rrt_dist"):
        m = metrics["test"][method]
        for region in ("many", "median", "few"):
            assert m[f"{region}_n"]["mean"] > 0 and np.isfinite(m[f"{region}_mae"]["mean"])
    assert not any(c.gated for c in report.claims)  # a user's data is reported, never gated
    assert (tmp_path / "run" / "prediction_histogram.png").is_file()


def test_ecg_shaped_file_runs_end_to_end(tmp_path: Path) -> None:
    from iclr25.dist_loss.reproduce import run

    rng = np.random.default_rng(0)
    k = np.round(rng.gamma(9.0, 0.5, 200), 1)  # potassium-like, 1.0..10.0 mmol/L on a 0.1 grid
    t = np.linspace(0, 1, 16)
    signals = np.sin(2 * np.pi * (t[None, None] * k[:, None, None])) + 0.1 * rng.normal(size=(200, 3, 16))
    np.save(tmp_path / "ecg.npy", signals)
    (tmp_path / "k.csv").write_text("label\n" + "".join(f"{v}\n" for v in k))
    config = Config(
        data_file=str(tmp_path / "ecg.npy"), labels_file=str(tmp_path / "k.csv"), min_label=0.0, max_label=12.0,
        step=0.5, batch_size=32, seeds=1, epochs_stage1=2, epochs_stage2=2, methods=("l1", "dist", "sqinv_lds_fds"),
        end_to_end=False, compare_default_init=False, bench_batches=(32,), bench_repeats=1, figures=False,
    )  # fmt: skip
    report = run("ci", tmp_path / "run", device="cpu", config=config)
    assert set(report.metrics["test"]) == {"e2e_l1", "rrt_l1", "rrt_dist", "rrt_sqinv_lds_fds"}
    assert report.metrics["test"]["rrt_dist"]["all_n"]["mean"] == 40
