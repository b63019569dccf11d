"""The CLI: help, synth -> train -> eval round trip, and one-line errors on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from iclr25.dist_loss.cli import main, method_for


def test_synth_train_eval_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data.npz"
    assert main(["synth", "--seed", "1", "--out", str(data)]) == 0
    run = tmp_path / "run"
    args = ["train", "--loss", "dist", "--stage", "rrt", "--data", str(data), "--epochs", "2", "--out", str(run)]
    assert main([*args, "--device", "cpu"]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["method"] == "dist" and metrics["test"]["few_mae"] > 0
    assert (run / "backbone.pt").is_file()
    run2 = tmp_path / "run2"
    args2 = ["train", "--loss", "l1", "--reweight", "inverse", "--pretrained", str(run / "backbone.pt"), "--head-init"]
    args2.append("official")
    assert main([*args2, "--data", str(data), "--epochs", "1", "--out", str(run2)]) == 0
    assert json.loads((run2 / "metrics.json").read_text())["method"] == "inverse"
    capsys.readouterr()
    assert main(["eval", "--model", str(run / "model.pt"), "--data", str(data), "--shots", "100,20"]) == 0
    table = capsys.readouterr().out
    for region in ("all", "many", "median", "few"):
        assert f"| {region} |" in table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--loss", "dist", "--reweight", "sqrt_inv", "--out", "x"], "not supported"),
        (["train", "--loss", "hinge", "--out", "x"], "invalid choice"),
        (["train", "--epochs", "0", "--out", "x"], "epochs must be an integer >= 1"),
        (["train", "--lr", "nan", "--out", "x"], "lr must be a finite number"),
        (["train", "--lr", "-1", "--out", "x"], "lr must be > 0"),
        (["train", "--batch-size", "1.5", "--out", "x"], "batch_size expects int"),
        (["eval", "--model", "missing.pt"], "does not exist"),
        (["eval", "--model", "m.pt", "--shots", "20"], "--shots"),
        (["reproduce", "--scale", "ci", "seeds=0"], "seeds must be an integer >= 1"),
        (["reproduce", "--scale", "ci", "lr=nan"], "lr must be a finite number"),
        (["reproduce", "--scale", "ci", "bench_batches=256,0"], "bench_batches[1] must be an integer >= 2"),
        (["reproduce", "--scale", "ci", "nope=1"], "unknown override key"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
    ],
    ids=[
        "bad-combo",
        "bad-loss",
        "zero-epochs",
        "nan-lr",
        "negative-lr",
        "float-batch",
        "missing-model",
        "bad-shots",
        "bad-seeds",
        "nan-lr-override",
        "bad-bench-batch",
        "bad-key",
        "bad-scale",
    ],
)
def test_bad_input_one_line_exit_2(argv: list[str], message: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = subprocess.run([sys.executable, "-m", "iclr25.dist_loss.cli", *argv], capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("iclr25-dist-loss")


def test_method_mapping() -> None:
    assert method_for("dist", "inverse") == "dist_inverse"
    assert method_for("lds-fds", None) == "sqinv_lds_fds"
    assert method_for("bmc", None) == "bmc"


def test_unreadable_files_give_one_line_and_no_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.pt"
    garbage.write_text("not a checkpoint")
    bad_npz = tmp_path / "bad.npz"
    bad_npz.write_text("not an npz")
    out = tmp_path / "run"
    cases = [
        (["eval", "--model", str(garbage)], "is not a checkpoint"),
        (["train", "--pretrained", str(garbage), "--out", str(out)], "is not a checkpoint"),
        (["train", "--data", str(bad_npz), "--out", str(out)], "is not a .npz"),
    ]
    for argv, message in cases:
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert not out.exists()  # inputs are checked before the run folder is created


def test_train_folder_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A finished train run is replaced only with --overwrite, a foreign folder never, metrics never appended."""
    data = tmp_path / "data.npz"
    assert main(["synth", "--seed", "2", "--out", str(data)]) == 0
    assert main(["synth", "--seed", "2", "--out", str(data)]) == 2  # an existing file is not replaced silently
    assert "already exists" in capsys.readouterr().err
    assert main(["synth", "--seed", "3", "--out", str(data), "--overwrite"]) == 0
    run = tmp_path / "run"
    argv = ["train", "--stage", "e2e", "--loss", "l1", "--data", str(data), "--epochs", "1", "--out", str(run)]
    assert main([*argv, "--device", "cpu", "--quiet"]) == 0
    assert json.loads((run / ".iclr25-run.json").read_text())["status"] == "complete"
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 1
    capsys.readouterr()
    assert main(argv) == 2
    assert "already holds a complete run" in capsys.readouterr().err
    assert main([*argv, "--overwrite", "--quiet"]) == 0
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 1  # a fresh folder, not appended to
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert main([*argv[:-1], str(mine), "--overwrite"]) == 2
    assert "no iclr25 run made" in capsys.readouterr().err
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def _user_table(path: Path, n: int = 240) -> Path:
    """A tiny tabular file: 4 features, labels 20..80 on a 5-unit grid, skewed towards the middle."""
    rng = np.random.default_rng(0)
    y = np.clip(np.round(rng.normal(50, 10, n) / 5) * 5, 20, 80)
    x = np.c_[y / 10 + rng.normal(0, 0.5, n), rng.normal(size=(n, 3)) * 100]
    header = "a,b,c,d,price\n"
    path.write_text(header + "".join(",".join(str(v) for v in [*row, t]) + "\n" for row, t in zip(x, y, strict=True)))
    return path


def test_train_and_eval_on_user_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = _user_table(tmp_path / "table.csv")
    grid = ["--min-label", "20", "--max-label", "80", "--step", "5"]
    run = tmp_path / "run"
    argv = ["train", "--data", str(table), "--target", "price", *grid, "--batch-size", "32", "--epochs", "2"]
    assert main([*argv, "--out", str(run), "--device", "cpu", "--quiet"]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["grid"] == {"min_label": 20.0, "max_label": 80.0, "step": 5.0}
    assert metrics["shots"]["many"] < 100 and metrics["test"]["all_n"] == 48  # rescaled; 20 % of 240 test rows
    capsys.readouterr()
    assert main(["eval", "--model", str(run / "model.pt"), "--data", str(table)]) == 0
    out = capsys.readouterr().out
    assert "label grid 20..80 step 5" in out and "| few |" in out  # the grid and target come from model.pt
    assert f"| all | {metrics['test']['all_n']:.0f} | {metrics['test']['all_mae']:.3f} |" in out
    signals = np.random.default_rng(1).normal(size=(100, 2, 8))
    np.save(tmp_path / "ecg.npy", signals)
    (tmp_path / "k.csv").write_text("label\n" + "".join(f"{3 + i % 40 / 10}\n" for i in range(100)))
    ecg = ["train", "--data", str(tmp_path / "ecg.npy"), "--labels", str(tmp_path / "k.csv"), "--stage", "e2e"]
    ecg += ["--min-label", "2", "--max-label", "8", "--step", "0.5", "--batch-size", "16", "--epochs", "1"]
    assert main([*ecg, "--out", str(tmp_path / "ecg"), "--quiet"]) == 0
    assert json.loads((tmp_path / "ecg" / "metrics.json").read_text())["test"]["all_n"] == 20


def test_train_refuses_bad_user_files_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = _user_table(tmp_path / "table.csv")
    (tmp_path / "text.csv").write_text("a,target\n1,2\nx,3\n")
    np.save(tmp_path / "ecg.npy", np.zeros((5, 2, 4)))
    out = tmp_path / "run"
    cases = [
        (["--data", str(table)], "has no column 'target'"),
        (["--data", str(table), "--target", "price", "--min-label", "30"], "outside the label grid [30, 120]"),
        (["--data", str(table), "--target", "price"], "exceeds the 144 training samples"),
        (["--data", str(tmp_path / "text.csv")], "every cell must be a number"),
        (["--data", str(tmp_path / "ecg.npy")], "give their labels CSV"),
        (["--labels", str(table)], "--labels goes with --data"),
        (["--data", str(table), "--step", "0"], "step must be > 0"),
        (["--data", str(table), "--few-shot", "150"], "many_shot must be >= few_shot"),
    ]
    for extra, message in cases:
        capsys.readouterr()
        assert main(["train", *extra, "--out", str(out), "--quiet"]) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (extra, err)
    assert not out.exists()  # every file is checked before the run folder is made


def test_synth_overwrite_never_replaces_a_users_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--overwrite replaces only a file an earlier synth wrote (and nobody changed since), checked before any work."""
    import hashlib

    mine = tmp_path / "thesis.npz"
    mine.write_bytes(b"my own data")
    before = hashlib.sha256(mine.read_bytes()).hexdigest()
    for extra in ([], ["--overwrite"]):
        capsys.readouterr()
        assert main(["synth", "--out", str(mine), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(mine) in err[0], err
        assert hashlib.sha256(mine.read_bytes()).hexdigest() == before
    ours = tmp_path / "data.npz"
    assert main(["synth", "--out", str(ours)]) == 0
    with ours.open("ab") as f:  # changed by hand since synth wrote it: no longer ours to replace
        f.write(b"edit")
    edited = hashlib.sha256(ours.read_bytes()).hexdigest()
    capsys.readouterr()
    assert main(["synth", "--out", str(ours), "--overwrite"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert hashlib.sha256(ours.read_bytes()).hexdigest() == edited


def test_synth_data_scale_is_bounded_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from iclr25.dist_loss.config import MAX_DATA_SCALE, Config

    out = tmp_path / "big.npz"
    assert main(["synth", "--data-scale", str(MAX_DATA_SCALE + 1), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"[1, {MAX_DATA_SCALE}]" in err[0] and not out.exists(), err
    with pytest.raises(ValueError, match=f"data_scale must be <= {MAX_DATA_SCALE}"):
        Config(data_scale=100_000_000)
