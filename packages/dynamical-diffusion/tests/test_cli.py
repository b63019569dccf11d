"""The CLI: help, the train -> sample -> eval round trip on a tiny config, simulate, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from iclr25.dynamical_diffusion.cli import main

TINY = ["n_train=32", "n_test=4", "steps=3", "batch_size=4", "width=8", "n_samples=2", "ddim_steps=2", "seeds=1"]


def test_help_is_fast_and_lists_verbs() -> None:
    code = "import sys, iclr25.dynamical_diffusion.cli as c; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # no torch import at CLI import time
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0


def test_train_sample_eval_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--dataset", "pde1d", "--r", "0.5", "--out", str(tmp_path / "m"), *TINY]) == 0
    assert (tmp_path / "m" / "model.pt").is_file()
    assert main(["sample", "--checkpoint", str(tmp_path / "m" / "model.pt"), "--out", str(tmp_path / "s")]) == 0
    samples = np.load(tmp_path / "s" / "samples.npy")
    assert samples.shape == (2, 4, 8, 1, 32)
    capsys.readouterr()
    assert main(["eval", "--run", str(tmp_path / "s")]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert set(metrics) >= {"crps", "ens_mse", "official_rmse", "crps_per_lead"}
    assert len(metrics["crps_per_lead"]) == 5
    assert np.isfinite(metrics["crps"])


def test_simulate(tmp_path: Path) -> None:
    assert main(["simulate", "pde1d", "--n", "3", "--out", str(tmp_path / "x.npy")]) == 0
    assert np.load(tmp_path / "x.npy").shape == (3, 8, 1, 32)
    assert main(["simulate", "ns2d", "--n", "2", "--size", "16", "--out", str(tmp_path / "ns.npy")]) == 0
    assert np.load(tmp_path / "ns.npy").shape == (2, 15, 2, 16, 16)  # velocity (u, v)


def test_ns2d_two_channel_train_and_sample(tmp_path: Path) -> None:
    tiny = [*TINY, "size=16", "n_context=2", "n_future=2", "ch_mult=1,2"]
    assert main(["train", "--dataset", "ns2d", "--out", str(tmp_path / "m"), *tiny]) == 0
    assert main(["sample", "--checkpoint", str(tmp_path / "m" / "model.pt"), "--out", str(tmp_path / "s")]) == 0
    assert np.load(tmp_path / "s" / "samples.npy").shape == (2, 4, 4, 2, 16, 16)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--r", "1.5", *TINY], "gamma_ratio"),
        (["train", "steps=-1"], "steps"),
        (["train", "nosuchkey=1"], "unknown override key"),
        (["train", "steps=abc"], "steps expects int"),
        (["sample", "--checkpoint", "missing.pt", "--out", "x"], "does not exist"),
        (["eval", "--run", "missing"], "does not exist"),
        (["sample", "--checkpoint", "BAD", "--out", "x"], "is not a model.pt written by `train`"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if argv[0] == "train":
        argv = [*argv, "--out", str(tmp_path / "run")]
    if "BAD" in argv:  # a file that exists but is not a checkpoint
        (tmp_path / "bad.pt").write_text("not a checkpoint")
        argv = [str(tmp_path / "bad.pt") if a == "BAD" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1


def test_bad_choice_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
