"""The CLI: help, the train -> sample -> eval round trip on a tiny config, simulate, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iclr25.dynamical_diffusion.cli import main

TINY = ["n_train=32", "n_test=4", "steps=3", "batch_size=4", "width=8", "n_samples=2", "ddim_steps=2", "seeds=1"]


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
    # run folders: a finished run is replaced only with --overwrite
    ckpt = ["--checkpoint", str(tmp_path / "m" / "model.pt")]
    assert main(["sample", *ckpt, "--out", str(tmp_path / "s")]) == 2
    assert "already holds a complete run" in capsys.readouterr().err
    assert main(["sample", *ckpt, "--out", str(tmp_path / "s"), "--overwrite", "--n-samples", "3"]) == 0
    assert np.load(tmp_path / "s" / "samples.npy").shape[0] == 3
    assert main(["train", "--out", str(tmp_path / "m"), *TINY]) == 2
    assert "already holds a complete run" in capsys.readouterr().err
    assert json.loads((tmp_path / "m" / ".iclr25-run.json").read_text())["status"] == "complete"


def test_verbs_never_write_into_a_users_folder_or_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for extra in ([], ["--overwrite"]):
        assert main(["train", "--out", str(mine), *TINY, *extra]) == 2
        assert "no iclr25 run made" in capsys.readouterr().err
        assert main(["sample", "--checkpoint", "missing.pt", "--out", str(mine), *extra]) == 2
        assert "no iclr25 run made" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]
    precious = tmp_path / "precious.npy"
    precious.write_text("keep")
    for extra in ([], ["--overwrite"]):  # a user's file is never replaced, --overwrite or not
        assert main(["simulate", "pde1d", "--n", "2", "--out", str(precious), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(precious) in err[0] and precious.read_text() == "keep", err
    ours = tmp_path / "ours.npy"
    assert main(["simulate", "pde1d", "--n", "2", "--out", str(ours)]) == 0
    assert main(["simulate", "pde1d", "--n", "3", "--out", str(ours), "--overwrite"]) == 0  # simulate's own file
    assert np.load(ours).shape[0] == 3
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "mine",
        "ours.npy",
        "precious.npy",
    ]


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
        (["train", "lr=-1"], "lr must be > 0"),
        (["train", "gamma_ratio=nan"], "gamma_ratio must be a finite number"),
        (["train", "ch_mult=1,0"], "ch_mult[1] must be an integer >= 1"),
        (["reproduce", "seeds=0"], "seeds must be an integer >= 1"),
        (["reproduce", "ablation_ratios=0.5,2"], "ablation_ratios[1] must lie in [0, 1]"),
        (
            ["sample", "--checkpoint", "missing.pt", "--out", "x", "--n-samples", "0"],
            "--n-samples: expected an integer >= 1 and <= 1024",
        ),
        (["sample", "--checkpoint", "missing.pt", "--out", "x", "--n-samples", "100000000"], "and <= 1024"),
        (["sample", "--checkpoint", "missing.pt", "--out", "x", "--ddim-steps", "0"], "--ddim-steps: expected"),
        (["sample", "--checkpoint", "missing.pt", "--out", "x", "--clip-x0", "-1"], "--clip-x0: expected a finite"),
        (["sample", "--checkpoint", "missing.pt", "--out", "x", "--seed", "-1"], "--seed must be an integer in"),
        (["train", "size=100000000"], "size must be <= 256"),
        (["train", "steps=100000000"], "steps must be <= 1e+07"),
        (["reproduce", "n_train=100000000"], "n_train must be <= 1e+06"),
        (["simulate", "pde1d", "--n", "0", "--out", "x.npy"], "--n: expected an integer >= 1 and <= 1000000"),
        (["simulate", "pde2d", "--size", "100000000", "--out", "x.npy"], "--size: expected an integer >= 8 and <= 256"),
        (["simulate", "ns2d", "--n", "100000", "--size", "256", "--out", "x.npy"], "4 GiB of float32"),
        (["simulate", "pde1d", "--out", "x.txt"], "must name a .npy file"),
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
    try:
        code = main(argv)
    except SystemExit as e:  # a flag's argparse type refused the value
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1


def test_bad_choice_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
