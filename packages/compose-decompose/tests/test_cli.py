"""The `iclr25-compose-decompose` CLI: light --help, train / compose / eval / cbm / reproduce verbs, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import iclr25.compose_decompose as pkg
from iclr25.compose_decompose.cli import CHANNELS, DATASETS, main
from iclr25.shared.results import Report

FIXTURE = [["1.2.0", "a.b"], ["1.3.0", "a.c"], ["4.2.0", "d.b"], ["4.3.0", "d.c"], ["1.1.0", "a"]]


def test_help_is_light_and_names_agree():
    code = (
        "import sys; import iclr25.compose_decompose; from iclr25.compose_decompose.cli import main; "
        "print('numpy' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    from iclr25.compose_decompose.config import CHANNELS as CONFIG_CHANNELS
    from iclr25.compose_decompose.data import DATASETS as DATA_DATASETS

    assert CHANNELS == CONFIG_CHANNELS and DATASETS == DATA_DATASETS
    assert pkg.PAPER.scales == ("ci", "quick", "full")


def test_every_public_name_imports():
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name


def test_cbm_verb(tmp_path, capsys):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in FIXTURE) + "\n")
    # the reference CBM code drops each message's last word (its EOS) unless told otherwise: so does the verb
    for flags in ([], ["--words-eos"]):
        assert main(["cbm", str(path), *flags]) == 0
        res = json.loads(capsys.readouterr().out)
        assert (res["match"], res["precision"], res["recall"], res["total_edges"]) == (1.0, 0.9, 1.0, 10)
    assert main(["cbm", str(path), "--no-words-eos"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["total_edges"] == 15 and res["match"] < 1.0  # the EOS word "0" now counts as a word
    path.write_text('["1", "a"]\n')
    assert main(["cbm", str(path)]) == 2
    err = capsys.readouterr().err
    assert "two words" in err and "--no-words-eos" in err
    assert main(["cbm", str(path), "--no-words-eos"]) == 0


def test_train_compose_eval(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--step", "decompose", "--channel", "cb", "--dataset", "thing", "--steps", "40", "--out", str(out)]
    assert main([*args, "eval_games=50"]) == 0
    assert (out / "checkpoint.pt").is_file() and (out / "messages.jsonl").is_file()
    info = json.loads((out / "train.json").read_text())
    assert info["settings"]["channel"] == "cb" and 0 <= info["metrics"]["decompose_cand_acc"] <= 1
    assert "results written to" in capsys.readouterr().out
    assert main(["compose", str(out), "--zero-shot", "--games", "50"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["mode"] == "zero-shot" and 0 <= res["game_acc"] <= 1 and (out / "compose.json").is_file()
    assert main(["compose", str(out), "--steps", "5", "--games", "50", "--phrase-size", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["phrase_size"] == 3
    assert main(["eval", str(out), "--games", "50"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert {"decompose_cbm", "posdis", "bosdis", "compose_zero_shot_game_acc"} <= set(res)
    log = (out / "messages.jsonl").read_text().splitlines()
    assert all(json.loads(line)[0].endswith(".eos") for line in log)  # the reference format: an EOS word per message
    assert main(["cbm", str(out / "messages.jsonl")]) == 0
    default = json.loads(capsys.readouterr().out)
    assert "eos" not in default["mapping"] and default["unique_words"] >= 1
    # the run folder is not overwritten silently
    assert main([*args, "eval_games=50"]) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--steps", "0"], "--steps must be >= 1"),
        (["train", "K=0"], "K must be"),
        (["train", "lr=-1"], "lr must be"),
        (["train", "magic=1"], "unknown override key"),
        (["compose", "NOPE"], "no checkpoint.pt"),
        (["eval", "NOPE"], "no checkpoint.pt"),
        (["cbm", "NOPE.jsonl"], "nope.jsonl does not exist"),
        (["reproduce", "channels=vq"], "channels[0]"),
    ],
    ids=["steps", "K", "lr", "key", "compose-dir", "eval-dir", "cbm-file", "channel"],
)
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    argv = [a.replace("NOPE", str(tmp_path / "nope")) for a in argv]
    if argv[0] in ("train", "reproduce"):
        argv = [*argv, "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_foreign_checkpoint_is_refused(tmp_path, capsys):
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    assert main(["eval", str(tmp_path)]) == 2
    assert "checkpoint" in capsys.readouterr().err


def test_reproduce_small_override(tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(
        ["reproduce", "--scale", "ci", "--seed", "2", "--out", str(out), "steps=30", "seeds=1", "eval_games=50"]
    )
    report = Report.read(out)
    assert code == (1 if report.failed_gated else 0)
    assert report.command.startswith("iclr25-compose-decompose reproduce --scale ci --seed 2 ")
    assert {"steps=30", "seeds=1", "eval_games=50"} <= set(report.command.split())
    assert "thing/cb/K12/s2" in report.metrics["runs"]
    assert report.figures and all((out / f).stat().st_size > 0 for f in report.figures)
    assert "results written to" in capsys.readouterr().out
