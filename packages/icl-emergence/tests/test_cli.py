"""The CLI: help, the verbs end to end on tiny inputs, bad input as one line with exit code 2."""

from __future__ import annotations

import json

import pytest

from iclr25.icl_emergence.cli import main

PROG = "iclr25-icl-emergence"


def _err(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith(PROG), err
    return err


def test_train_lds_then_bound(tmp_path, capsys):
    out = tmp_path / "lds"
    argv = ["train", "--data", "lds", "--topics", "4", "--seqs", "8", "--length", "12", "--steps", "20",
            "--d-model", "16", "--out", str(out), "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["K"] == 4 and report["N"] == 8 and report["T"] == 12 and report["kl"] > 0
    assert {"G_seq", "G_top", "icl_curve"} <= set(report) and (out / "model.pt").is_file()
    assert (out / "metrics.csv").is_file()  # the shared Lightning trainer logged the run
    capsys.readouterr()
    assert main(["bound", "--report", str(out / "report.json"), "--n-eff", "sequence"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["n_eff"] == "sequence" and printed["bound"] > printed["emp_loss"]


def test_ginc_gen_train_eval(tmp_path, capsys):
    data = tmp_path / "ginc"
    assert main(["ginc-gen", "--out", str(data), "--n-train", "4", "--train-length", "64", "--n-val", "1",
                 "--val-length", "16", "--n-prompts", "5", "--prompt-lengths", "3", "--n-examples", "0,2"]) == 0  # fmt: skip
    model = tmp_path / "model"
    assert main(["train", "--data", "ginc", "--ginc-dir", str(data), "--topics", "5", "--seqs", "4", "--length",
                 "32", "--steps", "5", "--d-model", "16", "--out", str(model), "--device", "cpu", "--trainer", "loop"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["eval", "--ckpt", str(model / "model.pt"), "--prompts",
                 str(data / "id_prompts_randomsample_3.json"), "--out", str(tmp_path / "ev")]) == 0  # fmt: skip
    result = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert set(result["by_n_examples"]) == {"0", "2"}
    assert all(0 <= r["accuracy"] <= 1 for r in result["by_n_examples"].values())
    # a vector checkpoint is refused for eval
    lds = tmp_path / "lds"
    main(["train", "--topics", "2", "--seqs", "2", "--length", "5", "--steps", "2", "--d-model", "8", "--out",
          str(lds), "--device", "cpu", "--trainer", "loop"])  # fmt: skip
    capsys.readouterr()
    assert (
        main(["eval", "--ckpt", str(lds / "model.pt"), "--prompts", str(data / "id_prompts_randomsample_3.json")]) == 2
    )
    assert "train --data ginc" in _err(capsys)


def test_train_ginc_generated(tmp_path):
    out = tmp_path / "g"
    assert main(["train", "--data", "ginc", "--topics", "2", "--seqs", "4", "--length", "24", "--steps", "5",
                 "--d-model", "16", "--out", str(out), "--device", "cpu", "--trainer", "loop"]) == 0  # fmt: skip
    assert 0 <= json.loads((out / "report.json").read_text())["icl_accuracy"] <= 1


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "--data", "text"], "data"),
        (["train", "--trainer", "keras"], "trainer"),
        (["train", "--topics", "0"], "topics"),
        (["train", "--lr", "nan"], "lr"),
        (["train", "--prior", "rotation2d", "--d", "3"], "d = 2"),
        (["train", "--ginc-dir", "x"], "--data ginc"),
        (["eval", "--ckpt", "afile", "--prompts", "afile"], "afile"),
        (["eval", "--ckpt", "missing.pt", "--prompts", "afile"], "missing.pt"),
        (["bound", "--report", "afile"], "afile"),
        (["bound", "--report", "missing.json"], "missing.json"),
        (["bound", "--report", "r.json"], "lacks"),
        (["bound", "--report", "r.json", "--delta", "2"], "delta"),
        (["bound", "--report", "r.json", "--n-eff", "word"], "n_eff"),
        (["ginc-gen", "--prompt-lengths", "a"], "prompt-lengths"),
        (["ginc-gen", "--n-train", "0"], "n-train"),
        (["ginc-gen", "--n-train", "100000000"], "--n-train must be in [1, 100000]"),
        (["ginc-gen", "--n-train", "100000", "--train-length", "100000"], "must be at most 200,000,000 tokens"),
        (["train", "--topics", "100000000"], "topics must be <= 4096"),
        (["train", "--length", "100000000"], "length must be <= 8192"),
        (["train", "--d-model", "100000000"], "d_model must be <= 4096"),
        (["train", "--steps", "100000000"], "steps must be <= 1e+06"),
        (["reproduce", "N=100000000"], "N must be <= 65536"),
        (["ginc-gen", "--n-hmms", "1", "--out", "t"], "n_hmms"),
        (["ginc-gen", "--out", "mine"], "no iclr25 run made"),
        (["reproduce", "Ks=4,1"], "increasing"),
        (["reproduce", "steps=0"], "steps"),
        (["reproduce", "prior=circle"], "prior"),
    ],
)
def test_bad_input(argv, needle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a checkpoint\n")
    (tmp_path / "r.json").write_text('{"K": 2}')
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("x")
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert needle in _err(capsys)
    assert (tmp_path / "mine" / "keep.txt").read_text() == "x"
