"""The verbs `ppl`, `train-lm`, `table`, `official-config`: normal use on tiny generated files, bad input -> exit 2."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from iclr25.lrnn_state_tracking.config import TrainConfig
from iclr25.lrnn_state_tracking.verbs import main

OFFICIAL = {
    "training": {
        "batch_size": 256,
        "lr": 0.001,
        "seed": 42,
        "lr_warmup_steps": 2000,
        "lr_decay_factor": 0.001,
        "weight_decay": 0.0,
        "grad_clip_norm": "None",
        "num_steps": 20000,
    },
    "model": {
        "n_layers": 2,
        "name": "delta_net",
        "d_model": 128,
        "layer_type": "delta_net",
        "sigmoid_scale": 2.0,
        "use_short_conv": True,
        "n_heads": 4,
    },
    "dataset": {
        "name": "form_language",
        "kwargs": {
            "synth_lang_type": "parity",
            "vocab_size": 3,
            "seed": 42,
            "context_length": 256,
            "min_sequence_length": 3,
            "max_sequence_length": 40,
            "count": {"train": 5120000, "validation": 8192, "test": 8192},
        },
    },
}


def test_train_lm_then_ppl(tmp_path, capsys):
    data = tmp_path / "corpus.jsonl"
    data.write_text("\n".join(json.dumps({"content": "print('hello')\n" * 20}) for _ in range(3)), encoding="utf-8")
    overrides = ["d_model=8", "n_heads=2", "n_layers=1", "seq_len=16", "steps=3", "batch_size=2"]
    args = ["train-lm", "--data", str(data), "--field", "content", "--out", str(tmp_path / "lm"), "--quiet"]
    assert main(args + overrides) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "ppl",
                "--ckpt",
                str(tmp_path / "lm" / "lm.pt"),
                "--data",
                str(data),
                "--field",
                "content",
                "--max-len",
                "64",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == 3 * 64 and [b["start"] for b in out["buckets"]] == [0, 16, 32, 64][:-1]


def test_official_config_writes_a_train_config(tmp_path, capsys):
    path = tmp_path / "parity_delta_net_2.yaml"
    path.write_text(yaml.safe_dump(OFFICIAL), encoding="utf-8")
    assert main(["official-config", str(path), "--write", str(tmp_path / "dn.yaml")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["train"]["eig_range"] == "[-1,1]" and out["test_lengths"] == [3, 40]
    assert TrainConfig(**yaml.safe_load((tmp_path / "dn.yaml").read_text())) == TrainConfig(
        task="parity", model="deltanet", eig_range="[-1,1]", seed=42
    )
    written = (tmp_path / "dn.yaml").read_bytes()
    assert main(["official-config", str(path), "--write", str(tmp_path / "dn.yaml")]) == 2  # never replaced
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already exists" in err[0] and (tmp_path / "dn.yaml").read_bytes() == written, err


def test_table_verb(tmp_path, capsys):
    path = tmp_path / "study.json"
    cells = [{"task": "parity", "model": "mamba", "eig_range": "[0,1]", "values": [0.01, -0.02]}]
    path.write_text(json.dumps({"study": "s", "setting": "tiny", "cells": cells}), encoding="utf-8")
    assert main(["table", str(path)]) == 0
    assert "| Mamba [0,1] | **0.010** (best of 2) / 0.000 |" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["ppl", "--ckpt", "missing.pt", "--data", "x.txt"], "does not exist"),
        (["ppl", "--ckpt", "CKPT", "--data", "x.txt", "--max-len", "0"], "must be >= 1"),
        (["ppl", "--ckpt", "CKPT", "--data", "BAD"], "not a byte-level LM checkpoint"),
        (["train-lm", "--data", "x.txt", "steps=0"], "steps"),
        (["train-lm", "--data", "x.txt", "model=lstm"], "model must be one of"),
        (["table", "BAD"], "not a readable JSON"),
        (["official-config", "x.txt"], "needs a 'training' mapping|is a mapping"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, match):
    (tmp_path / "x.txt").write_text("some text", encoding="utf-8")
    (tmp_path / "bad.csv").write_text("a,b", encoding="utf-8")
    (tmp_path / "ckpt.pt").write_bytes(b"not a checkpoint")
    subst = {
        "x.txt": str(tmp_path / "x.txt"),
        "CKPT": str(tmp_path / "ckpt.pt"),
        "BAD": str(tmp_path / "bad.csv"),
        "missing.pt": str(tmp_path / "missing.pt"),
    }
    assert main([subst.get(a, a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.search(match, err)


def test_verbs_are_wired_into_the_package_cli(tmp_path, capsys):
    from iclr25.lrnn_state_tracking.cli import main as cli_main

    path = tmp_path / "study.json"
    path.write_text(json.dumps({"study": "s", "setting": "", "cells": []}), encoding="utf-8")
    assert cli_main(["table", str(path)]) == 0
    assert "| DeltaNet [-1,1] | not run / 1.000 |" in capsys.readouterr().out
    assert cli_main(["ppl", "--ckpt", str(tmp_path / "none.pt"), "--data", str(path)]) == 2
