"""The CLI: light --help, fit-predict on a tiny CSV, bad input (one line, exit 2), reproduce with overrides."""

from __future__ import annotations

import json

import pytest

from iclr25.conditional_conformal.cli import main
from iclr25.shared.results import Report


@pytest.fixture
def table(tmp_path):
    from iclr25.conditional_conformal.data import bimodal_hetero

    X, Y = bimodal_hetero(400, 0)
    path = tmp_path / "file.csv"
    path.write_text(
        "x,noise,y\n"
        + "\n".join(f"{a:.5f},{i % 3},{b:.5f}" for i, (a, b) in enumerate(zip(X[:, 0], Y[:, 0], strict=True)))
        + "\n"
    )
    return path


@pytest.mark.parametrize("method", ["cp2-pcp-l", "cp2-hpd", "cqr"])
def test_fit_predict_writes_sets(table, tmp_path, capsys, method):
    out = tmp_path / method
    args = ["fit-predict", "--data", str(table), "--target", "y", "--features", "x", "--method", method]
    assert main([*args, "--epochs", "3", "--components", "3", "--M", "20", "--out", str(out)]) == 0
    info = json.loads((out / "metrics.json").read_text())
    assert info["method"] == method and 0.6 < info["coverage"] <= 1.0 and info["n_test"] == 100
    lines = (out / "sets.csv").read_text().splitlines()
    assert len(lines) == 101 and lines[0].startswith("row,y0,covered,size,set") and "[" in lines[1]
    assert "coverage=" in capsys.readouterr().out
    assert main([*args, "--epochs", "3", "--out", str(out)]) == 2  # not overwritten silently


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "nope"], "column 'nope'"),
        (["--target", "y", "--alpha", "1.5"], "--alpha"),
        (["--target", "y", "--M", "0"], "--M"),
        (["--target", "y", "--M", "100000000"], "--M must lie in [1, 5000]"),
        (["--target", "y", "--epochs", "100000000"], "--epochs must lie in [1, 10000]"),
        (["--target", "y", "--components", "100000000"], "--components must lie in [1, 256]"),
        (["--target", "y", "--features", "x,zz"], "--features"),
        (["--target", "y", "--cal-frac", "0.6", "--test-frac", "0.5"], "must leave rows"),
    ],
)
def test_bad_input_is_one_line(table, tmp_path, capsys, extra, message):
    code = main(["fit-predict", "--data", str(table), *extra, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_binary_file_is_refused_naming_it(tmp_path, capsys):
    import pickle

    path = tmp_path / "y.csv"
    path.write_bytes(pickle.dumps({"a": object.__new__(object).__class__}, protocol=2) + bytes(range(256)))
    assert main(["fit-predict", "--data", str(path), "--target", "y", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and not (tmp_path / "o").exists()


def test_missing_file_and_unknown_method(tmp_path, capsys):
    assert main(["fit-predict", "--data", str(tmp_path / "none.csv"), "--target", "y"]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["fit-predict", "--data", "x.csv", "--target", "y", "--method", "magic"])
    assert e.value.code == 2


def test_reproduce_small_override(tmp_path, capsys):
    out = tmp_path / "rep"
    over = ["parts=qhat,wsc", "seeds=1", "qhat_n=500", "wsc_n=800", "wsc_dirs=50", "wsc_seeds=1"]
    code = main(["reproduce", "--scale", "ci", "--seed", "3", "--out", str(out), *over])
    report = Report.read(out)
    assert code == (1 if report.failed_gated else 0)
    assert report.config["seeds"] == 1 and {c.name for c in report.claims} == {
        "qhat_linear",
        "qhat_difference",
        "wsc_half_bad",
        "wsc_iid",
    }
    assert report.command.startswith("iclr25-conditional-conformal reproduce --scale ci --seed 3 ")
    assert "results written to" in capsys.readouterr().out
    assert main(["reproduce", "--out", str(tmp_path / "x"), "parts=magic"]) == 2
    assert main(["reproduce", "--out", str(tmp_path / "y"), "alpha=2"]) == 2
    assert "alpha" in capsys.readouterr().err


@pytest.mark.parametrize(("bad", "column"), [("nan", "'y'"), ("inf", "'y'"), ("-inf", "'x'")])
def test_non_finite_values_are_refused_before_the_run_folder(table, tmp_path, capsys, bad, column):
    lines = table.read_text().splitlines()
    col = 2 if column == "'y'" else 0
    for k in (3, 7):  # two rows with a non-finite value in one used column
        cells = lines[k].split(",")
        cells[col] = bad
        lines[k] = ",".join(cells)
    table.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o"
    code = main(["fit-predict", "--data", str(table), "--target", "y", "--features", "x", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{column} (2 rows)" in err and "2 rows hold NaN or infinite" in err and "line 4" in err, err
    assert not out.exists()


def test_a_users_file_in_the_out_folder_is_never_replaced(table, tmp_path, capsys):
    import hashlib

    out = tmp_path / "mine"
    out.mkdir()
    (out / "metrics.json").write_text('{"mine": true}\n')
    before = hashlib.sha256((out / "metrics.json").read_bytes()).hexdigest()
    args = ["fit-predict", "--data", str(table), "--target", "y", "--features", "x", "--epochs", "2", "--M", "5"]
    for extra in ([], ["--overwrite"]):
        assert main([*args, "--out", str(out), *extra]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
        assert hashlib.sha256((out / "metrics.json").read_bytes()).hexdigest() == before
