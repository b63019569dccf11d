"""The `iclr25-sa-gfn` command line, including bad input (one line, exit 2)."""

from __future__ import annotations

import json

import pytest

from iclr25.sa_gfn.cli import main


def test_train_command(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(
        [
            "train",
            "--H",
            "5",
            "--ndim",
            "2",
            "--method",
            "tb",
            "--iters",
            "20",
            "--eval-every",
            "10",
            "--hidden",
            "16",
            "--out",
            str(out),
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["final"]["iter"] == 20 and 0 <= summary["final"]["tv"] <= 1
    assert (out / "metrics.csv").is_file() and (out / "terminal_distribution.npz").is_file()
    assert main(["train", "--H", "5", "--iters", "5", "--out", str(out), "--device", "cpu"]) == 2  # exists


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "--method", "ppo"], "invalid choice"),
        (["train", "--H", "0"], "integer >= 1"),
        (["train", "--H", "2000", "--ndim", "3"], "too large"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
        (["reproduce", "--scale", "ci", "seeds=abc"], "seeds expects int"),
        (["reproduce", "--scale", "ci", "nope=1"], "unknown override key"),
        (["reproduce", "--scale", "ci", "seeds=0"], "seeds must be an integer >= 1"),
        (["reproduce", "eps=nan"], "eps must be a finite number"),
        (["train", "--R0", "nan"], "--R0 must be a finite number"),
        (
            ["reproduce", "--scale", "ci", "sibling_reward=edge"],
            "sibling_reward must be one of terminal_logsumexp, gafn_terminal, gafn_edge; got 'edge'",
        ),
        (["reproduce", "--scale", "ci", "baselines=ppo"], "baselines[0] must be one of tb-rnd, gafn; got 'ppo'"),
        (["train", "--method", "tb", "--objective", "db"], "SA-GFN options"),
        (["train", "--method", "tb", "--intrinsic-scale", "5"], "novelty bonus"),
        (["train", "--intrinsic-scale", "-1"], "intrinsic_scale must be"),
        (["train", "--objective", "db", "--sibling-reward", "gafn_edge"], "needs objective='tb'"),
        (["train", "--rnd-normalize", "max"], "invalid choice"),
        (["bench", "--methods", "ppo"], "--methods got ['ppo']"),
        (["bench", "--grids", "2x2000:standard:0.1"], "at most 2e6 states"),
        (["bench", "--grids", "64:standard"], "must look like 'DxH:reward:R0'"),
    ],
)
def test_bad_input_one_line_exit_2(argv, needle, capsys, tmp_path):
    full = [*argv, "--out", str(tmp_path / "x")] if argv[0] == "reproduce" else argv
    try:
        rc = main(full)
    except SystemExit as e:  # argparse errors exit from inside main
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_eval_missing_folder(tmp_path, capsys):
    assert main(["eval", str(tmp_path)]) == 2
    assert "no results.json" in capsys.readouterr().err


def test_train_passes_method_options(tmp_path, capsys):
    out = tmp_path / "sa"
    argv = ["train", "--H", "5", "--iters", "4", "--eval-every", "2", "--hidden", "16", "--out", str(out)]
    argv += ["--objective", "subtb", "--intrinsic-scale", "50", "--rnd-normalize", "mean", "--device", "cpu"]
    assert main(argv) == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert (config["objective"], config["intrinsic_scale"], config["rnd_normalize"]) == ("subtb", 50.0, "mean")


def test_bench_command(tmp_path, capsys):
    out = tmp_path / "bench"
    argv = ["bench", "--grids", "2x5:standard:0.001", "--methods", "tb,sagfn-db", "--iters", "4"]
    argv += ["--eval-every", "2", "--hidden", "16", "--workers", "1", "--out", str(out), "--device", "cpu"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "2x5:standard:0.001/sagfn-db/0: l1_mean" in text
    assert json.loads((out / "bench.json").read_text())["methods"] == ["tb", "sagfn-db"]
