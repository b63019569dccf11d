"""The CLI: simulate -> train -> eval/predict on tiny settings, and bad input as one line with exit code 2."""

from __future__ import annotations

import pytest

from iclr25.tsc_net.cli import main

TINY = ["--train-scenes", "2", "--test-scenes", "1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    assert main(["simulate", "--out", str(root / "sim"), *TINY, "--quiet"]) == 0
    argv = ["train", "--data", str(root / "sim"), "--out", str(root / "run"), "--train-steps", "2", "--d-model", "32"]
    assert main([*argv, "--quiet"]) == 0
    return root


def test_eval_and_predict(trained, capsys):
    capsys.readouterr()
    args = ["--model", str(trained / "run" / "model.pt"), "--data", str(trained / "sim"), "--max-peds", "8"]
    assert main(["eval", *args, "--k", "10"]) == 0
    out = capsys.readouterr().out
    assert "minFDE" in out and "goal_minFDE" in out
    assert main(["predict", *args, "--out", str(trained / "pred"), "--quiet"]) == 0
    assert (trained / "pred" / "predictions.npz").is_file() and (trained / "pred" / "samples.png").is_file()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["eval", "--model", "nope.pt", "--data", "."], "nope.pt"),
        (["train", "--data", "nowhere", "--out", "t"], "train.pkl"),
        (["train", "--data", "sim", "--lr", "nan", "--out", "t"], "lr"),
        (["simulate", "--train-scenes", "0", "--out", "t"], "train-scenes"),
        (["reproduce", "d_model=30"], "d_model"),
        (["reproduce", "models=foo"], "models"),
    ],
)
def test_bad_input_is_one_line(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_eval_refuses_bad_k(trained, capsys):
    assert main(["eval", "--model", str(trained / "run" / "model.pt"), "--data", str(trained / "sim"), "--k", "7"]) == 2
    assert "--k" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [([], "data_dir data/sdd"), (["dataset=ethucy", "data_dir=eth"], "not built yet")],
)
def test_full_scale_without_its_data_is_refused_before_a_run_folder_is_made(
    overrides, needle, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the preset's data_dir (data/sdd) is relative: absent here
    assert main(["reproduce", "--scale", "full", "--out", str(tmp_path / "full"), *overrides]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and not (tmp_path / "full").exists()
