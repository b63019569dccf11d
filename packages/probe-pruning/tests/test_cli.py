"""The command line: help, verbs end to end on a tiny model, bad input as one line with exit code 2."""

from __future__ import annotations

import json

import pytest

from iclr25.probe_pruning.cli import main
from iclr25.probe_pruning.hf_io import save_pretrained


@pytest.fixture
def tiny_dir(tmp_path, make):
    from iclr25.probe_pruning.model import ModelConfig, build_model

    cfg = ModelConfig(vocab_size=256, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                      num_key_value_heads=4, intermediate_size=48)  # fmt: skip
    return save_pretrained(build_model(cfg), tmp_path / "model")


@pytest.mark.parametrize("method", ["pp", "flap", "wanda-sp", "fullbatch"])
def test_prune_logs_effective_settings(tmp_path, tiny_dir, method, capsys):
    out = tmp_path / f"out-{method}"
    argv = ["prune", "--model", str(tiny_dir), "--method", method, "--ratio", "0.4", "--skip-layers", "0",
            "--round-multiple", "8", "--seq-len", "16", "--batch", "4", "--batches", "2", "--calib-windows", "8",
            "--out", str(out), "--device", "cpu", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["r_adjusted"] == 0.6  # round(3/2 * 0.4, 2)
    assert report["settings"]["kept_units_last_batch"]
    assert report[f"{method}_ppl"] > 1 and report["dense_ppl"] > 1
    if method in ("pp", "fullbatch"):
        assert report["settings"]["probe_indices_first_batch"][0]["s_idx"]
    assert "r' = 0.6" in capsys.readouterr().out


def test_eval_and_train_tiny(tmp_path, tiny_dir):
    assert main(["eval", "--model", str(tiny_dir), "--seq-len", "16", "--batch", "2", "--batches", "1",
                 "--out", str(tmp_path / "e"), "--device", "cpu"]) == 0  # fmt: skip
    assert "dense_ppl" in json.loads((tmp_path / "e" / "report.json").read_text())
    assert main(["train-tiny", "--steps", "3", "--d-model", "16", "--n-layers", "2", "--n-heads", "2", "--d-ff", "24",
                 "--seq-len", "16", "--batch", "4", "--out", str(tmp_path / "t"), "--device", "cpu", "--quiet"]) == 0  # fmt: skip
    assert (tmp_path / "t" / "model" / "model.safetensors").is_file()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["prune", "--ratio", "0.4"], "--model is required"),
        (["prune", "--model", "nowhere"], "nowhere"),
        (["prune", "--model", "m", "--ratio", "1.5"], "ratio"),
        (["prune", "--model", "m", "--method", "magic"], "method"),
        (["prune", "--model", "m", "--fusion", "fixed:7"], "fusion"),
        (["eval", "--model", "m", "--seq-len", "1"], "seq_len"),
        (["train-tiny", "--steps", "0"], "steps"),
        (["train-tiny", "--n-heads", "5"], "n_heads"),
        (["reproduce", "ratio=nan"], "ratio"),
        (["reproduce", "skip_layers=9"], "skip_layers"),
        (["reproduce", "fusion=bad"], "fusion"),
    ],
)
def test_bad_input_is_one_line(tmp_path, monkeypatch, capsys, argv, needle):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert needle in err, err
    assert not (tmp_path / "runs").exists()


def test_model_folder_errors_name_the_folder(tmp_path, tiny_dir, capsys):
    (tiny_dir / "config.json").write_text('{"model_type": "gpt2"}')
    assert main(["prune", "--model", str(tiny_dir), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(tiny_dir) in err and "gpt2" in err


def test_full_preset_without_files_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--scale", "full", "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert "model_dir" in err and err.count("\n") == 1
    assert not (tmp_path / "f").exists()
