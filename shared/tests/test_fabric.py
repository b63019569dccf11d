"""Fabric scale-out and checkpoint/resume: resume equals an uninterrupted run, 2-process DDP (gloo, CPU) equals
1 process with twice the batch, checkpoints are data."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("lightning")

from iclr25.shared.fabric import Checkpointer, make_fabric  # noqa: E402


def _toy(seed: int = 0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    return model, optimizer, scheduler


def _train(steps: int, folder: Path, resume: str | None = None, stop_at: int | None = None) -> torch.Tensor:
    """A loop whose batches come from the global torch RNG, so resuming must restore it too."""
    model, optimizer, scheduler = _toy()
    state = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "step": 0}
    checkpoints = Checkpointer(folder, every=3, keep=2)
    checkpoints.resume(resume, state)
    while state["step"] < (stop_at or steps):
        x = torch.randn(16, 4, dtype=torch.float64)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        state["step"] += 1
        checkpoints.maybe_save(state)
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_resume_equals_an_uninterrupted_run_bit_for_bit(tmp_path: Path) -> None:
    torch.manual_seed(123)
    straight = _train(10, tmp_path / "a")
    torch.manual_seed(123)
    _train(10, tmp_path / "b", stop_at=7)  # "killed" after step 7: the last checkpoint is step 6
    torch.manual_seed(999)  # whatever the new process's RNG holds, the checkpoint's comes back
    resumed = _train(10, tmp_path / "b", resume="auto")
    assert torch.equal(straight, resumed)
    assert [p.name for p in Checkpointer(tmp_path / "a", every=3, keep=2).checkpoints()] == [
        "step-6.ckpt",
        "step-9.ckpt",
    ]


def test_checkpoints_are_data(tmp_path: Path) -> None:
    checkpoints = Checkpointer(tmp_path, every=1)
    assert checkpoints.resume("auto", {"step": 0}) is None  # nothing saved yet: start fresh
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (marker.write_text, ("x",))

    bad = tmp_path / "step-1.ckpt"
    torch.save({"state": Payload(), "rng": {}}, bad)
    with pytest.raises(ValueError, match=r"step-1\.ckpt"):
        checkpoints.resume(bad, {"step": 0})
    assert not marker.exists()
    foreign = tmp_path / "foreign.ckpt"
    torch.save({"weights": torch.zeros(2)}, foreign)
    with pytest.raises(ValueError, match=r"foreign\.ckpt"):
        checkpoints.resume(foreign, {"step": 0})
    (tmp_path / "text.ckpt").write_bytes(pickle.dumps("not a checkpoint"))
    with pytest.raises(ValueError, match=r"text\.ckpt"):
        checkpoints.resume(tmp_path / "text.ckpt", {"step": 0})
    with pytest.raises(ValueError, match="interval"):
        Checkpointer(tmp_path, every=-1)
    with pytest.raises(ValueError, match="strategy"):
        make_fabric("cpu", strategy="horovod")
    with pytest.raises(ValueError, match="devices"):
        make_fabric("cpu", devices=0)


WORKER = """
import torch

BATCH, STEPS = 8, 5


def train(fabric, data, out):
    \"\"\"Each process takes its slice of every global batch; DDP averages the gradients.\"\"\"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model, optimizer = fabric.setup(model, optimizer)
    per_rank = 2 * BATCH // fabric.world_size
    for step in range(STEPS):
        batch = data[step * 2 * BATCH : (step + 1) * 2 * BATCH]
        x = batch[fabric.global_rank * per_rank : (fabric.global_rank + 1) * per_rank]
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        fabric.backward(loss)
        optimizer.step()
    if fabric.global_rank == 0:
        torch.save(torch.cat([p.detach().flatten() for p in model.parameters()]), out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_two_process_ddp_equals_one_process_with_twice_the_batch(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "ddp_toy_worker.py").write_text(WORKER)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned processes inherit sys.path
    import ddp_toy_worker

    data = torch.randn(80, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    make_fabric("cpu", devices=1, precision="64-true").launch(ddp_toy_worker.train, data, tmp_path / "one.pt")
    two = make_fabric("cpu", devices=2, strategy="ddp_spawn", precision="64-true")
    two.launch(ddp_toy_worker.train, data, tmp_path / "two.pt")
    a, b = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    assert torch.allclose(a, b, atol=1e-6, rtol=0), (a - b).abs().max()
    torch.manual_seed(0)
    untrained = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    assert not torch.allclose(a, torch.cat([p.detach().flatten() for p in untrained.parameters()]))
