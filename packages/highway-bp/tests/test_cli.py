"""The `iclr25-highway-bp` CLI: help, train, check, and one-line errors with exit code 2 on bad input."""

import json
import subprocess
import sys

import pytest

from iclr25.highway_bp.cli import main


def test_help_is_fast_and_torch_free():
    code = "import sys; from iclr25.highway_bp.cli import main; import iclr25.highway_bp; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


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


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse errors exit directly
        return int(e.code)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--k", "-1"], "--k must be >= 0"),
        (["train", "--epochs", "0"], "--epochs must be > 0"),
        (["train", "--model", "transformer"], "invalid choice"),
        (["check", "--depth", "0"], "--depth must be > 0"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
        (["reproduce", "--scale", "ci", "seeds=0"], "seeds must be >= 1"),
        (["reproduce", "--scale", "ci", "nonsense=1"], "unknown override key"),
        (["reproduce", "--scale", "ci", "gru_hbp_ks=abc"], "expects int"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
