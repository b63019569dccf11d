"""Scale-out of the classifier training loop (Lightning Fabric): 2 CPU processes (gloo) equal 1 process with the
whole batch (ResNet-18 with batch norm over the whole batch, augmentation drawn alike), an interrupted run resumed
from its checkpoint equals an uninterrupted one, and the full preset starts with `--devices 2 --device cpu`, trains,
checkpoints and resumes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.hd_explain.models import MLP, ResNet18
from iclr25.hd_explain.training import train_classifier
from iclr25.shared.fabric import Checkpointer
from iclr25.shared.testing import InterruptAt, flat_parameters, reproduce_full_preset, two_processes_equal_one

WORKER = """
import numpy as np
import torch

from iclr25.hd_explain.models import ResNet18
from iclr25.hd_explain.training import train_classifier
from iclr25.shared.testing import finish_worker


def run(fabric, cfg, out):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((cfg["n"], 3, 8, 8)).astype(np.float32), rng.integers(0, 3, cfg["n"])
    torch.manual_seed(0)
    model = ResNet18(3, 3, 2)
    stats = train_classifier(model, X, y, 2, 0.01, cfg["batch"], seed=0, augment=True, fabric=fabric)
    stats_ = [b.flatten() for name, b in model.named_buffers() if "running" in name]
    extra = torch.tensor([stats["train_acc"], stats["final_loss"]], dtype=torch.float64)
    finish_worker(fabric, torch.cat([p.detach().flatten() for p in model.parameters()] + stats_ + [extra]), out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_two_processes_equal_one_with_the_whole_batch(tmp_path: Path) -> None:
    # 21 images in batches of 8: the last batch (5) splits 3/2, and batch norm needs the whole batch's statistics
    one, _ = two_processes_equal_one(WORKER, tmp_path, {"n": 21, "batch": 8})
    assert one.abs().sum() > 0
    fake = type("TwoProcesses", (), {"global_rank": 0, "world_size": 2})
    model, X, y = MLP(2, (4,), 2), np.zeros((4, 2)), np.zeros(4)
    with pytest.raises(ValueError, match="multiple of the 2 processes"):
        train_classifier(model, X, y, 1, 0.01, 7, fabric=fake)


def _train(folder: Path, **kwargs) -> tuple[torch.nn.Module, dict]:
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((40, 3, 8, 8)).astype(np.float32), rng.integers(0, 3, 40)
    torch.manual_seed(0)
    model = ResNet18(3, 3, 2)
    stats = train_classifier(
        model, X, y, 4, 0.01, 8, seed=0, augment=True, checkpointer=Checkpointer(folder, every=3), **kwargs
    )
    return model, stats


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    straight, straight_stats = _train(tmp_path / "a")  # 5 steps an epoch, 20 in all
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b", logger=InterruptAt(10))  # at the end of epoch 2
    assert [p.name for p in Checkpointer(tmp_path / "b", every=3).checkpoints()] == ["step-6.ckpt", "step-9.ckpt"]
    resumed, resumed_stats = _train(tmp_path / "b", resume="auto")  # from step 9: inside epoch 2
    assert torch.equal(flat_parameters(straight), flat_parameters(resumed))
    for a, b in zip(straight.buffers(), resumed.buffers(), strict=True):  # batch-norm statistics too
        assert torch.equal(a, b)
    assert (resumed_stats["train_acc"], resumed_stats["final_loss"]) == (
        straight_stats["train_acc"],
        straight_stats["final_loss"],
    )
    assert [p.name for p in Checkpointer(tmp_path / "a", every=3).checkpoints()] == ["step-18.ckpt", "step-20.ckpt"]
    done, _ = _train(tmp_path / "a", resume="auto")  # resuming a finished run trains nothing
    assert torch.equal(flat_parameters(straight), flat_parameters(done))


def test_a_foreign_resume_file_is_refused_in_one_line(tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "iclr25-hd-explain"
    args = [str(cli), "reproduce", "--scale", "full", "--devices", "2", "--out", "run", "--resume", "x.ckpt"]
    (tmp_path / "x.ckpt").write_text("not a checkpoint")
    result = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists() and (tmp_path / "x.ckpt").read_text() == "not a checkpoint"


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_checkpoints_and_resumes(tmp_path: Path) -> None:
    tiny = ["sections=images", "image_dataset=synthetic", "image_train_size=40", "image_size=8", "image_epochs=2",
            "image_width=2", "image_batch=10", "image_seeds=1", "pool_every=2", "probes=5", "temperatures=0.1",
            "rps_iters=20", "figures=false", "checkpoint_every=3"]  # fmt: skip
    result, run_dir, saved = reproduce_full_preset("hd-explain", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold after 8 steps
    assert saved == ["resnet18/step-6.ckpt", "resnet18/step-8.ckpt"]
    first = json.loads((run_dir / "results.json").read_text())
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("resnet18/loss" in row for row in rows) == 2  # one row an epoch, logged once, by rank 0
    assert {"resnet18/loss", "resnet18/lr", "resnet18/throughput", "resnet18/epoch"} <= set().union(*rows)
    # a run killed in its second epoch: the marker still says running, the newest checkpoint is step 6
    marker = run_dir / ".iclr25-run.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "status": "running"}))
    (run_dir / "checkpoints" / "resnet18" / "step-8.ckpt").unlink()
    again, _, saved = reproduce_full_preset("hd-explain", tiny, tmp_path, "--devices", "2", "--resume", "auto")
    assert again.returncode in (0, 1), again.stderr[-3000:]
    assert saved == ["resnet18/step-6.ckpt", "resnet18/step-8.ckpt"]
    second = json.loads((run_dir / "results.json").read_text())
    for key in ("results", "train_acc"):  # resumed at step 6: the same trained network, the same explanations
        assert second["metrics"]["images"][key] == first["metrics"]["images"][key], key
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("resnet18/loss" in row for row in rows) == 3  # the resumed run logged its second epoch again


def test_seed_workers_give_the_results_of_one_process(tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "iclr25-hd-explain"
    tiny = ["sections=rectangular,digits,mislabel", "rect_seeds=2", "rect_epochs=3", "digits_seeds=2", "digits_pool=100",
            "digits_epochs=2", "n_flipped=10", "probes=5", "rps_iters=20", "figures=false"]  # fmt: skip
    metrics = []
    for workers in (1, 2):
        args = [str(cli), "reproduce", "--scale", "quick", "--device", "cpu", "--out", f"w{workers}", "--quiet"]
        result = subprocess.run([*args, *tiny, f"workers={workers}"], capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: the gates need not hold at this size
        metrics.append(json.loads((tmp_path / f"w{workers}" / "results.json").read_text())["metrics"])
        rows = [json.loads(line) for line in (tmp_path / f"w{workers}" / "metrics.jsonl").read_text().splitlines()]
        assert sum("mislabel/seed1/loss" in row for row in rows) == 2  # each seed's epochs, logged once
    one, two = metrics
    for section, key in (("rectangular", "per_seed"), ("digits", "per_seed"), ("mislabel", "curves")):
        assert two[section][key] == one[section][key], section
    assert two["digits"]["train_acc"] == one["digits"]["train_acc"]
