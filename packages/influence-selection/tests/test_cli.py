"""The CLI: trim and active verbs on built-in and user data, and one-line errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iclr25.influence_selection.cli import main


def test_trim_on_builtin_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trim", "--data", "gaussians", "--method", "fi", "--budget", "20", "--out", str(tmp_path / "t")]) == 0
    out = json.loads((tmp_path / "t" / "trim.json").read_text())
    assert len(out["removed"]) == 20 and out["method"] == "fi"
    assert "test accuracy" in capsys.readouterr().out


def test_trim_on_npy_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 80)
    X = rng.normal(size=(80, 3)) + y[:, None]
    for part, sl in (("train", slice(0, 60)), ("test", slice(60, 80))):
        np.save(tmp_path / f"X_{part}.npy", X[sl])
        np.save(tmp_path / f"y_{part}.npy", y[sl])
    assert main(["trim", "--data", str(tmp_path), "--method", "iv", "--budget", "5", "--out", str(tmp_path / "o")]) == 0


def test_trim_on_meta_json_reads_l2_reg(tmp_path: Path) -> None:
    rows = [f"{20 + i}, {['a', 'b'][i % 2]}, {'>50K' if (i * 7) % 3 == 0 else '<=50K'}" for i in range(40)]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "test.csv").write_text("\n".join(rows[:10]) + "\n")
    meta = {
        "train_path": "train.csv",
        "test_path": "test.csv",
        "column_names": "age,kind,income",
        "categorical_feat": "kind,income",
        "target_feat": "income",
        "label_mapping": {"income": {">50K": 1.0, "<=50K": 0.0}},
        "l2_reg": 3.0,
    }
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    argv = ["trim", "--data", str(tmp_path / "meta.json"), "--budget", "3", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    out = json.loads((tmp_path / "o" / "trim.json").read_text())
    assert len(out["removed"]) == 3
    assert out["l2"] == pytest.approx(3.0 / 30)  # l2_reg / n_train (40 rows, a quarter to validation)


def test_active_on_digits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["active", "--data", "digits", "--strategy", "entropy", "--rounds", "2", "--acquire", "10"]
    assert main([*args, "--init", "40", "--out", str(tmp_path / "a")]) == 0
    res = json.loads((tmp_path / "a" / "active.json").read_text())
    assert len(res["curve"]) == 3 and len(res["queried"]) == 2
    assert "AUC" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "--scale", "ci", "al_seeds=0"],
        ["reproduce", "--scale", "ci", "budgets=5,10"],
        ["reproduce", "--scale", "ci", "label_noise=0.9"],
        ["reproduce", "--scale", "ci", "al_strategies=fi,magic"],
        ["reproduce", "--scale", "ci", "nosuch=1"],
        ["trim", "--data", "gaussians", "--budget", "0"],
        ["trim", "--data", "gaussians", "--budget", "500"],
        ["trim", "--data", "nowhere.json"],
        ["trim", "--data", "table.csv"],
        ["active", "--data", "digits", "--rounds", "100", "--acquire", "100"],
        ["active", "--data", "digits", "--l2", "-1"],
    ],
)
def test_bad_input_is_one_line(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_unknown_choice_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["trim", "--data", "gaussians", "--method", "shapley"])
    assert info.value.code == 2 and capsys.readouterr().err.count("\n") == 1
