"""The command line: help, bad input (one line, exit 2), train + eval on a tiny run, distance-map."""

import json
import subprocess
import sys

import pytest

from iclr25.etd_exploration.cli import main


def test_help_is_fast_and_lists_verbs():
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "iclr25.etd_exploration.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for verb in ("reproduce", "train", "eval", "distance-map"):
        assert verb in out.stdout
    assert "torch" not in {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines()}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--frames", "0"], "--frames must be positive"),
        (["train", "--env", "NoSuchTask-1x1", "--frames", "10"], "unknown MiniGrid"),
        (["train", "--frames", "10", "n_envs=x"], "n_envs expects int"),
        (["train", "--frames", "10", "bogus=1"], "unknown override key"),
        (["train", "--intrinsic", "deir"], "invalid choice"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
        (["reproduce", "--scale", "ci", "maze_steps=abc"], "maze_steps expects int"),
        (["eval", "does/not/exist"], "does not exist"),
        (["distance-map", "--steps", "0"], "--steps must be >= 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors exit; the others return 2 through `guarded`
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_train_then_eval(tmp_path, capsys):
    run = tmp_path / "run"
    argv = [
        "train",
        "--env",
        "MiniGrid-Empty-5x5-v0",
        "--frames",
        "128",
        "--out",
        str(run),
        "--device",
        "cpu",
        "--eval-episodes",
        "1",
    ]
    assert main([*argv, "n_envs=2", "n_steps=64", "batch_size=64", "n_epochs=1"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["frames"] == 128 and (run / "policy.pt").is_file() and (run / "metrics.csv").is_file()
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 1
    assert main([*argv, "n_envs=2"]) == 2  # the run folder exists: refused without --overwrite


def test_distance_map_writes_a_figure(tmp_path, capsys):
    out = tmp_path / "map.png"
    assert main(["distance-map", "--steps", "3", "--out", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert "rho_pairs" in capsys.readouterr().out
