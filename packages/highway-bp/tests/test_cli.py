"""The `iclr25-highway-bp` CLI: help, train, check, and one-line errors with exit code 2 on bad input."""

import json

import pytest

from iclr25.highway_bp.cli import main


def test_check_resmlp_and_gru(capsys):
    assert main(["check", "--depth", "4", "--width", "6"]) == 0
    assert main(["check", "--model", "lstm", "--depth", "4", "--width", "5"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("ok") >= 5


@pytest.mark.parametrize("model", ["resmlp", "gru"])
def test_train_prints_metrics(capsys, tmp_path, model):
    args = ["train", "--model", model, "--backward", "hbp", "--k", "2", "--epochs", "1", "--hidden", "8"]
    args += ["--depth", "3", "--batch-size", "256", "--out", str(tmp_path / "run")]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["backward"] == "hbp" and result["k"] == 2 and 0.0 <= result["test_acc"] <= 1.0
    assert (tmp_path / "run" / "metrics.csv").is_file()
    assert json.loads((tmp_path / "run" / "result.json").read_text())["test_acc"] == result["test_acc"]


def test_train_folder_rules(capsys, tmp_path):
    """Issue 14 item 7: never into a non-empty folder without --overwrite, never appending to old metrics."""
    run = tmp_path / "run"
    args = ["train", "--model", "resmlp", "--k", "1", "--epochs", "1", "--hidden", "4", "--depth", "2"]
    args += ["--batch-size", "512", "--out", str(run), "--quiet"]
    assert main(args) == 0
    assert json.loads((run / ".iclr25-run.json").read_text())["status"] == "complete"
    lines = (run / "metrics.jsonl").read_text().splitlines()
    capsys.readouterr()
    assert main(args) == 2
    assert "already holds a complete run" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert (run / "metrics.jsonl").read_text().splitlines() == lines  # replaced, not appended to
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "metrics.jsonl").write_text("my own\n")
    capsys.readouterr()
    assert main([*args[:-3], "--out", str(mine), "--overwrite"]) == 2
    assert "no iclr25 run made" in capsys.readouterr().err
    assert (mine / "metrics.jsonl").read_text() == "my own\n"


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse errors exit directly
        return int(e.code)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--k", "-1"], "k must be an integer >= 0"),
        (["train", "--epochs", "0"], "epochs must be an integer >= 1"),
        (["train", "--lr", "nan"], "lr must be a finite number"),
        (["train", "--lr", "-1"], "lr must be > 0"),
        (["train", "--device", "tpu"], "invalid choice"),
        (["train", "--model", "transformer"], "invalid choice"),
        (["check", "--depth", "0"], "--depth must be > 0"),
        (["train", "--depth", "100000000"], "depth must be <= 256"),
        (["train", "--hidden", "100000000"], "hidden must be <= 2048"),
        (["train", "--epochs", "100000000"], "epochs must be <= 1000"),
        (["train", "--batch-size", "100000000"], "batch_size must be <= 4096"),
        (["check", "--depth", "100000000"], "--depth must be in [1, 256]"),
        (["check", "--model", "gru", "--depth", "100000"], "--depth must be in [1, 4096]"),
        (["check", "--width", "100000000"], "--width must be in [1, 2048]"),
        (["reproduce", "--scale", "ci", "mlp_depth=100000000"], "mlp_depth must be <= 256"),
        (["reproduce", "--scale", "ci", "lm_length=100000000"], "lm_length must be <= 4096"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
        (["reproduce", "--scale", "ci", "seeds=0"], "seeds must be an integer >= 1"),
        (["reproduce", "--scale", "ci", "mlp_lr=nan"], "mlp_lr must be a finite number"),
        (["reproduce", "--scale", "ci", "gru_lr=-1"], "gru_lr must be > 0"),
        (["reproduce", "--scale", "ci", "gru_schedule=linear"], "gru_schedule must be one of"),
        (["reproduce", "--scale", "ci", "resnet_blocks=5,0"], "resnet_blocks[1] must be an integer >= 1"),
        (["reproduce", "--scale", "ci", "nonsense=1"], "unknown override key"),
        (["reproduce", "--scale", "ci", "gru_hbp_ks=abc"], "expects int"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_speed_prints_a_table_like_table_3(capsys, tmp_path):
    args = ["speed", "--cells", "gru", "lstm", "--lengths", "6", "--hidden", "4", "--batch-size", "2", "--vocab", "5"]
    args += ["--hbp-ks", "0", "2", "--fpi-ks", "1", "--steps", "1", "--warmup", "0", "--device", "cpu"]
    assert main([*args, "--out", str(tmp_path / "speed")]) == 0
    out = capsys.readouterr().out
    assert "| GRUx1 L=6 |" in out and "| LSTMx1 L=6 |" in out and "HBP k=2" in out and "FPI k=1" in out
    assert json.loads((tmp_path / "speed.json").read_text())["rows"][1]["cell"] == "lstm"
    assert (tmp_path / "speed.md").read_text().strip() == out.strip()
    assert main([*args, "--out", str(tmp_path / "speed")]) == 2  # its earlier files: only with --overwrite
    assert "already exists" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "speed"), "--overwrite"]) == 0


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
@pytest.mark.parametrize("name", ["speed.json", "speed.md"])
def test_speed_never_replaces_a_users_file_and_checks_before_timing(capsys, tmp_path, monkeypatch, name, overwrite):
    import hashlib

    import iclr25.highway_bp.speed as speed

    def no_timing(*args, **kwargs):
        raise AssertionError("the timing work started before --out was checked")

    monkeypatch.setattr(speed, "speed_table", no_timing)
    mine = tmp_path / name
    mine.write_text("my own timings")
    before = hashlib.sha256(mine.read_bytes()).hexdigest()
    assert main(["speed", "--lengths", "6", "--out", str(tmp_path / "speed.json"), *overwrite]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(mine) in err[0], err
    assert hashlib.sha256(mine.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize(
    "bad",
    [
        ["--lengths", "0"],
        ["--lengths", "100000000"],
        ["--hbp-ks", "-1"],
        ["--cells", "rnn"],
        ["--vocab", "1"],
        ["--hidden", "100000000"],
        ["--steps", "100000000"],
    ],
)
def test_speed_refuses_bad_input(capsys, bad):
    with pytest.raises(SystemExit) as exc:
        main(["speed", *bad])
    assert exc.value.code == 2 and "error" in capsys.readouterr().err
