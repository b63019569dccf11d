"""Scale-out of the ensemble training loop: 2 CPU processes (gloo, Lightning Fabric) equal 1 process with the whole
batch (CNN with batch norm: the statistics of the whole batch), an interrupted run resumed from its checkpoint equals
an uninterrupted one, member workers give the members of the one-process run, and the full preset starts with
`--devices 2 --device cpu`, trains, checkpoints and resumes."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.ensemble_homogeneity.data import Dataset
from iclr25.ensemble_homogeneity.models import BatchedMLPEnsemble, member_seeds
from iclr25.ensemble_homogeneity.training import TrainSettings, train_ensemble, train_homogeneous
from iclr25.shared.fabric import Checkpointer
from iclr25.shared.parallel import map_in_processes
from iclr25.shared.testing import InterruptAt, flat_parameters, reproduce_full_preset, two_processes_equal_one

WORKER = """
import torch

from iclr25.ensemble_homogeneity.models import BatchedCNNEnsemble, member_seeds
from iclr25.ensemble_homogeneity.training import TrainSettings, train_ensemble
from iclr25.shared.testing import finish_worker


def run(fabric, cfg, out):
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(cfg["n"], 3, 8, 8, generator=g), torch.randint(0, 3, (cfg["n"],), generator=g)
    net = BatchedCNNEnsemble(2, 3, 2, seeds=member_seeds(0, 2))
    settings = TrainSettings(lr=0.05, batch_size=cfg["batch"], max_epochs=2, until_interpolation=False)
    info = train_ensemble(net, x.to(fabric.device), y.to(fabric.device), settings, member_seeds(1, 2), fabric=fabric)
    stats = [b.flatten() for name, b in net.named_buffers() if "running" in name]
    acc = torch.as_tensor(info["train_acc"], dtype=torch.float64)
    result = torch.cat([p.detach().flatten() for p in net.parameters()] + stats + [acc])
    finish_worker(fabric, result, out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_two_processes_equal_one_with_the_whole_batch(tmp_path: Path) -> None:
    # 21 points in batches of 8: the last batch (5) splits 3/2, and batch norm needs the whole batch's statistics
    one, _ = two_processes_equal_one(WORKER, tmp_path, {"n": 21, "batch": 8})
    assert one.abs().sum() > 0
    fake = type("TwoProcesses", (), {"global_rank": 0, "world_size": 2})
    net, x, y = BatchedMLPEnsemble(3, 4, 2, 2), torch.zeros(4, 3), torch.zeros(4, dtype=torch.long)
    with pytest.raises(ValueError, match="multiple of the 2 processes"):
        train_ensemble(net, x, y, TrainSettings(batch_size=7), [1, 2], fabric=fake)


def _blobs(n: int = 80, noise: float = 1.0) -> Dataset:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, n + 40)
    x = (rng.normal(size=(n + 40, 5)) * noise + 2 * np.eye(3, 5)[y]).astype(np.float32)
    return Dataset("blobs", x[:n], y[:n], x[n:], y[n:], 3)


def _train(folder: Path, **kwargs) -> tuple[BatchedMLPEnsemble, dict]:
    ds = _blobs()
    net = BatchedMLPEnsemble(5, 8, 3, 3, seeds=member_seeds(0, 3))
    settings = TrainSettings(lr=0.1, batch_size=16, max_epochs=4, until_interpolation=False)
    x, y = torch.as_tensor(ds.x_train), torch.as_tensor(ds.y_train)
    info = train_ensemble(net, x, y, settings, member_seeds(1, 3), checkpointer=Checkpointer(folder, every=3), **kwargs)
    return net, info


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    straight, straight_info = _train(tmp_path / "a")  # 5 steps an epoch, 20 in all
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b", logger=InterruptAt(10))  # at the end of epoch 2
    assert [p.name for p in Checkpointer(tmp_path / "b", every=3).checkpoints()] == ["step-6.ckpt", "step-9.ckpt"]
    resumed, resumed_info = _train(tmp_path / "b", resume="auto")  # from step 9: inside epoch 2
    assert torch.equal(flat_parameters(straight), flat_parameters(resumed))
    assert resumed_info["history"] == straight_info["history"] and resumed_info["steps"] == 20
    assert [p.name for p in Checkpointer(tmp_path / "a", every=3).checkpoints()] == ["step-18.ckpt", "step-20.ckpt"]
    done, done_info = _train(tmp_path / "a", resume="auto")  # resuming a finished run trains nothing
    assert torch.equal(flat_parameters(straight), flat_parameters(done))
    assert done_info["history"] == straight_info["history"]


def test_member_workers_equal_the_sequential_run() -> None:
    ds = _blobs(n=40)
    settings = TrainSettings(lr=0.1, batch_size=16, max_epochs=100)
    probs, info = train_homogeneous(ds, "mlp", 32, 4, seed=0, settings=settings)
    # the precondition that makes the check bite: the second chunk alone fits earlier than the whole ensemble, so
    # it must train on past its own interpolation to the ensemble's epoch
    second = BatchedMLPEnsemble(5, 32, 3, 2, seeds=member_seeds(0, 4)[2:])
    alone = train_ensemble(second, torch.as_tensor(ds.x_train), torch.as_tensor(ds.y_train), settings,
                           member_seeds(10_000, 4)[2:])  # fmt: skip
    assert info["interpolated"] and alone["epochs"] < info["epochs"]
    two_probs, two_info = train_homogeneous(ds, "mlp", 32, 4, seed=0, settings=settings, workers=2)
    # the workers compute with the command's portable CPU kernels: so does the reference here (two spawned copies)
    sequential = functools.partial(train_homogeneous, ds, "mlp", 32, seed=0, settings=settings)
    (probs, info), again = map_in_processes(sequential, [4, 4], workers=2)
    assert np.array_equal(again[0], probs)
    assert np.array_equal(two_probs, probs)
    assert (two_info["epochs"], two_info["steps"]) == (info["epochs"], info["steps"])
    assert np.array_equal(two_info["train_acc"], info["train_acc"])
    with pytest.raises(ValueError, match="workers > 1"):
        train_homogeneous(ds, "mlp", 32, 4, settings=settings, workers=2, checkpointer=Checkpointer("x", every=1))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cli = Path(sys.executable).parent / "iclr25-ensemble-homogeneity"
    return subprocess.run([str(cli), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_workers_with_fabric_ranks_are_refused_in_one_line(tmp_path: Path) -> None:
    result = _cli("reproduce", "--scale", "ci", "--devices", "2", "--out", "run", "workers=2", cwd=tmp_path)
    assert result.returncode == 2 and "use workers=1" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_checkpoints_and_resumes(tmp_path: Path) -> None:
    tiny = ["runs=image:cnn:2:2", "image_train=100", "batch_size=10", "max_epochs=2", "sizes=1,2", "estimate_sizes=2",
            "superiority_gated=synthetic", "n_pairs=1", "curve_subsets=2", "mc_subsets=0", "hetero_dataset=",
            "figures=false", "threads=1", "checkpoint_every=5"]  # fmt: skip
    result, run_dir, saved = reproduce_full_preset("ensemble-homogeneity", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold after 20 steps
    assert saved == ["image_cnn_k2_M2/step-15.ckpt", "image_cnn_k2_M2/step-20.ckpt"]
    first = json.loads((run_dir / "results.json").read_text())
    assert first["metrics"]["runs"]["image_cnn_k2_M2"]["train"]["steps"] == 20
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("image_cnn_k2_M2/loss" in row for row in rows) == 2  # one row an epoch, logged once, by rank 0
    assert {"image_cnn_k2_M2/loss", "image_cnn_k2_M2/lr", "image_cnn_k2_M2/throughput"} <= set().union(*rows)
    # a run killed in its second epoch: the marker still says running, the newest checkpoint is step 15
    marker = run_dir / ".iclr25-run.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "status": "running"}))
    (run_dir / "checkpoints" / "image_cnn_k2_M2" / "step-20.ckpt").unlink()
    again, _, saved = reproduce_full_preset(
        "ensemble-homogeneity", tiny, tmp_path, "--devices", "2", "--resume", "auto"
    )
    assert again.returncode in (0, 1), again.stderr[-3000:]
    assert saved == ["image_cnn_k2_M2/step-15.ckpt", "image_cnn_k2_M2/step-20.ckpt"]
    second = json.loads((run_dir / "results.json").read_text())
    run_first, run_second = first["metrics"]["runs"]["image_cnn_k2_M2"], second["metrics"]["runs"]["image_cnn_k2_M2"]
    assert run_second["de"] == run_first["de"] and run_second["losses"] == run_first["losses"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("image_cnn_k2_M2/loss" in row for row in rows) == 3  # the resumed run logged its second epoch again
