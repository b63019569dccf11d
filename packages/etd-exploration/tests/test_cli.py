"""The command line: help, bad input (one line, exit 2), train + eval on a tiny run, distance-map."""

import json

import pytest

from iclr25.etd_exploration.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--frames", "0"], "--frames must be positive"),
        (["train", "--env", "NoSuchTask-1x1", "--frames", "10"], "unknown MiniGrid"),
        (["train", "--frames", "10", "n_envs=x"], "n_envs expects int"),
        (["train", "--frames", "10", "bogus=1"], "unknown override key"),
        (["train", "--intrinsic", "ngu"], "invalid choice"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
        (["reproduce", "--scale", "ci", "maze_steps=abc"], "maze_steps expects int"),
        (["eval", "does/not/exist"], "does not exist"),
        (["eval", "does/not/exist", "--episodes", "0"], "--episodes must be >= 1"),
        (["distance-map", "--steps", "0"], "--steps must be >= 1"),
        (["reproduce", "maze_steps=0"], "maze_steps must be an integer >= 1"),
        (["reproduce", "maze_lr=-1"], "maze_lr must be > 0"),
        (["reproduce", "maze_lr=nan"], "maze_lr must be a finite number"),
        (["reproduce", "ppo_seeds=0"], "ppo_seeds must be an integer >= 1"),
        (["reproduce", "maze_data_steps=10"], "maze_data_steps must be an integer >= 50"),
        (["reproduce", "ppo_methods=etd,ngu"], "ppo_methods[1] must be one of"),
        (["reproduce", "int_coef=-0.1"], "int_coef must be >= 0"),
        (["train", "--frames", "nan"], "--frames must be positive"),
        (["train", "--frames", "10", "lr=-1"], "lr must be > 0"),
        (["train", "--frames", "10", "gamma=1.5"], "gamma must lie in [0, 1]"),
        (["train", "--frames", "10", "boundary=off"], "boundary must be one of"),
        (["train", "--frames", "10", "--seed", "-1"], "seed must be an integer"),
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
    assert "already holds a complete run" in capsys.readouterr().err
    assert json.loads((run / ".iclr25-run.json").read_text())["status"] == "complete"


def test_train_refuses_a_folder_no_run_made(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    for extra in ([], ["--overwrite"]):
        assert main(["train", "--frames", "10", "--out", str(mine), *extra]) == 2
        assert "no iclr25 run made" in capsys.readouterr().err
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_distance_map_writes_a_run_folder(tmp_path, capsys):
    out = tmp_path / "map"
    argv = ["distance-map", "--steps", "3", "--out", str(out), "--device", "cpu"]
    assert main(argv) == 0
    assert (out / "distance_map.png").stat().st_size > 1000
    assert (out / "metrics.csv").is_file() and json.loads((out / "summary.json").read_text())["config"]["steps"] == 3
    assert json.loads((out / ".iclr25-run.json").read_text())["status"] == "complete"
    assert "rho_pairs" in capsys.readouterr().out
    assert main(argv) == 2  # a finished run is not replaced without --overwrite
    assert "already holds a complete run" in capsys.readouterr().err
    assert main([*argv, "--overwrite", "--steps", "2"]) == 0
    assert json.loads((out / "summary.json").read_text())["config"]["steps"] == 2


def test_overhead_refuses_a_bad_target(tmp_path, capsys):
    assert main(["overhead", str(tmp_path / "table.txt")]) == 2
    assert main(["overhead", str(tmp_path / "missing" / "table.json")]) == 2
    assert "overhead writes a .json file" in capsys.readouterr().err
    assert main(["profile", str(tmp_path / "table.txt")]) == 2
    assert "profile writes a .json file" in capsys.readouterr().err
