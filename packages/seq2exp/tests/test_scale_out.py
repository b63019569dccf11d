"""Scale-out of the training loop (Lightning Fabric): 2 CPU processes (gloo) equal 1 process with the whole batch,
an interrupted run resumed from its checkpoint equals an uninterrupted one, and the full preset (on generated windows
of GeneExp's sizes, made tiny) starts with `--devices 2 --device cpu`, trains, checkpoints and resumes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.seq2exp.cli import main
from iclr25.seq2exp.config import Config
from iclr25.seq2exp.data import generate_planted_dataset
from iclr25.seq2exp.training import Arrays, build_model, fit, model_config
from iclr25.shared.fabric import Checkpointer
from iclr25.shared.testing import InterruptAt, flat_parameters, reproduce_full_preset, two_processes_equal_one

TINY = {"length": 768, "center_len": 32, "backbone": "cnn", "d": 4, "n_layers": 1}

WORKER = """
import numpy as np
import torch

from iclr25.seq2exp.config import Config
from iclr25.seq2exp.data import generate_planted_dataset
from iclr25.seq2exp.training import Arrays, build_model, fit, model_config
from iclr25.shared.testing import finish_worker


def run(fabric, cfg, name, out):
    torch.set_num_threads(1)
    config = Config(**cfg)  # a dict: Fabric's launch refuses frozen dataclasses
    data = generate_planted_dataset(30, config.length, 3, 0, center_len=config.center_len)
    parts = [Arrays.from_numpy(data, np.flatnonzero(data["split"] == k)) for k in range(2)]
    torch.manual_seed(0)
    model = build_model(name, model_config(config, name))
    fit(model, parts[0], parts[1], epochs=2, batch_size=8, lr=1e-2, seed=0, official_schedule=True, fabric=fabric)
    finish_worker(fabric, model, out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
@pytest.mark.parametrize("name", ["seq2exp-soft", "seq2exp-hard", "seq-signal"])
def test_two_processes_equal_one_with_the_whole_batch(name: str, tmp_path: Path) -> None:
    # 21 training windows in batches of 8: the last batch (5) splits 3 + 2, so the shares' loss weights are checked
    one, _ = two_processes_equal_one(WORKER, tmp_path, TINY, name)
    torch.manual_seed(0)
    untrained = flat_parameters(build_model(name, model_config(Config(**TINY), name))).double()
    assert not torch.allclose(one, untrained)  # it trained


def _fit(folder: Path, **kwargs) -> tuple[torch.nn.Module, dict]:
    cfg = Config(**TINY)
    data = generate_planted_dataset(30, cfg.length, 3, 0, center_len=cfg.center_len)
    parts = [Arrays.from_numpy(data, np.flatnonzero(data["split"] == k)) for k in range(2)]
    torch.manual_seed(0)
    model = build_model("seq2exp-soft", model_config(cfg, "seq2exp-soft"))
    fitted = fit(
        model, parts[0], parts[1], epochs=3, batch_size=8, seed=0, checkpointer=Checkpointer(folder, 4), **kwargs
    )
    return model, fitted


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    # 3 steps an epoch; the interruption comes at the end of epoch 1 (step 6), the checkpoint is mid-epoch (step 4)
    straight, straight_fit = _fit(tmp_path / "a", log=lambda row, step: None)
    with pytest.raises(KeyboardInterrupt):
        _fit(tmp_path / "b", log=InterruptAt(1).log)
    assert [p.name for p in Checkpointer(tmp_path / "b", 4).checkpoints()] == ["step-4.ckpt"]
    resumed, resumed_fit = _fit(tmp_path / "b", resume="auto")
    assert torch.equal(flat_parameters(straight), flat_parameters(resumed))
    assert resumed_fit["history"] == straight_fit["history"]  # the loss curve and the selection continue exactly
    assert resumed_fit["best_val_mse"] == straight_fit["best_val_mse"]
    assert [p.name for p in Checkpointer(tmp_path / "a", 4).checkpoints()] == ["step-8.ckpt", "step-9.ckpt"]
    done, done_fit = _fit(tmp_path / "a", resume="auto")  # resuming a finished run trains nothing
    assert torch.equal(flat_parameters(straight), flat_parameters(done))
    assert done_fit["history"] == straight_fit["history"]


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_checkpoints_and_resumes(tmp_path: Path) -> None:
    tiny = ["n_genes=20", "max_genes=8", "length=768", "center_len=32", "d=4", "n_layers=1", "backbone=cnn",
            "epochs=1", "batch_size=4", "models=seq,seq2exp-soft", "checkpoint_every=1", "threads=1"]  # fmt: skip
    result, run_dir, saved = reproduce_full_preset("seq2exp", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold after 2 steps
    assert saved == ["seq/step-1.ckpt", "seq/step-2.ckpt", "seq2exp-soft/step-1.ckpt", "seq2exp-soft/step-2.ckpt"]
    first = json.loads((run_dir / "results.json").read_text())
    assert first["metrics"]["data"].startswith("generated") and "GENERATED DATA" in first["notes"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("seq2exp-soft/loss" in row for row in rows) == 1  # logged once, by rank 0
    assert {"seq/loss", "seq/lr", "seq/throughput", "seq/epoch"} <= set().union(*rows)
    # a run killed during seq2exp-soft's second step: its marker still says running, the last checkpoint is step 1
    marker = run_dir / ".iclr25-run.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "status": "running"}))
    (run_dir / "checkpoints" / "seq2exp-soft" / "step-2.ckpt").unlink()
    again, _, saved = reproduce_full_preset("seq2exp", tiny, tmp_path, "--devices", "2", "--resume", "auto")
    assert again.returncode in (0, 1), again.stderr[-3000:]
    assert saved == ["seq/step-1.ckpt", "seq/step-2.ckpt", "seq2exp-soft/step-1.ckpt", "seq2exp-soft/step-2.ckpt"]
    second = json.loads((run_dir / "results.json").read_text())
    for name in ("seq", "seq2exp-soft"):  # seq resumed at its end, seq2exp-soft at step 1: the same test values
        assert second["metrics"]["models"][name]["mse"] == first["metrics"]["models"][name]["mse"], name
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("seq2exp-soft/loss" in row for row in rows) == 2  # the resumed run logged its epoch once more


@pytest.mark.parametrize(
    "flags",
    [
        ["--devices", "0"],
        ["--resume", "model.ckpt"],  # reproduce trains many models: only 'auto'
        ["--precision", "9-bits"],
    ],
)
def test_bad_scale_out_flags_one_line_exit_2(flags: list[str], tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code = main(["reproduce", "--scale", "full", "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert not out.exists()


def test_workers_with_scale_out_refused(tmp_path: Path, capsys) -> None:
    code = main(["reproduce", "--scale", "ci", "--out", str(tmp_path / "r"), "--checkpoint-every", "5", "workers=2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "workers=1" in err, err
