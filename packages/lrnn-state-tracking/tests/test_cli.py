"""The command line: fast --help, the verbs, and one-line errors with exit code 2 on bad input."""

from __future__ import annotations

import json

import pytest

from iclr25.lrnn_state_tracking.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--eig-range", "-2,2"], "eig_range must be one of"),
        (["train", "--task", "dyck"], "invalid choice"),
        (["train", "steps"], "key=value"),
        (["train", "nonsense=1"], "unknown override key"),
        (["train", "steps=0"], "steps must be an integer >= 1"),
        (["train", "n_heads=0"], "n_heads must be an integer >= 1"),
        (["train", "steps=100000000"], "steps must be <= 1e+06"),
        (["train", "d_model=100000000"], "d_model must be <= 4096"),
        (["train", "batch_size=100000000"], "batch_size must be <= 16384"),
        (["reproduce", "--scale", "ci", "grid_layers=100000"], "grid_layers must be <= 64"),
        (["train", "lr=nan"], "lr must be a finite number"),
        (["train", "lr=-1"], "lr must be > 0"),
        (["train", "--device", "tpu"], "invalid choice"),
        (["train", "--model", "transformer", "d_model=30", "n_heads=4"], "divisible"),
        (["reproduce", "--scale", "ci", "speed_T=-3"], "speed_T must be an integer >= 0"),
        (["reproduce", "--scale", "ci", "fig1_lr=nan"], "fig1_lr must be a finite number"),
        (["reproduce", "--scale", "ci", "fig1_seeds=0"], "fig1_seeds must be an integer >= 1"),
        (["eval", "--ckpt", "missing.pt"], "does not exist"),
        (["eval", "--ckpt", "missing.pt", "--lengths", "40-256"], "MIN:MAX"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
    ],
)
def test_bad_input_one_line_exit_2(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        raise SystemExit(main([*argv, *(["--out", str(tmp_path / "x")] if argv[0] == "train" else [])]))
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1


def test_theory_check_passes(capsys):
    assert main(["theory-check"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("pass") == 6


def test_train_then_eval(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--task", "parity", "--model", "deltanet", "--eig-range", "-1,1", "--out", str(out)]
    argv += ["steps=3", "eval_n=64", "batch_size=8"]
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["eig_range"] == "[-1,1]" and summary["steps"] == 3
    assert -1.5 <= summary["scaled_accuracy"] <= 1.0
    capsys.readouterr()
    assert main(["eval", "--ckpt", str(out / "model.pt"), "--lengths", "40:60", "--n", "32"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 32 and result["model"] == "deltanet"
    assert json.loads((out / ".iclr25-run.json").read_text())["status"] == "complete"
    lines = (out / "metrics.jsonl").read_text().splitlines()
    capsys.readouterr()
    assert main(argv) == 2  # the run folder exists: refuse without --overwrite
    assert "already holds a complete run" in capsys.readouterr().err
    assert main([*argv, "--overwrite", "--quiet"]) == 0
    assert len((out / "metrics.jsonl").read_text().splitlines()) == len(lines)  # a fresh folder, not appended to


def test_train_never_writes_into_a_foreign_folder(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "model.pt").write_text("my own model")
    argv = ["train", "--out", str(mine), "--overwrite", "steps=3", "eval_n=8", "batch_size=4"]
    assert main(argv) == 2
    assert "no iclr25 run made" in capsys.readouterr().err
    assert (mine / "model.pt").read_text() == "my own model"
