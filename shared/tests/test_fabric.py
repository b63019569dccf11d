"""Fabric scale-out and checkpoint/resume: resume equals an uninterrupted run, 2-process DDP (gloo, CPU) equals
1 process with twice the batch, checkpoints are data."""

from __future__ import annotations

import importlib
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("lightning")

from iclr25.shared.fabric import Checkpointer, ScaleOut, make_fabric  # noqa: E402
from iclr25.shared.files import save_torch  # noqa: E402


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
    with pytest.raises(ValueError, match="fsdp is offered only where the Lightning Trainer trains"):
        make_fabric("cpu", strategy="fsdp")  # the rank-0 checkpoints would drop FSDP's shards
    with pytest.raises(ValueError, match="devices"):
        make_fabric("cpu", devices=0)


SCRIPT = """
import sys
from dataclasses import dataclass

from iclr25.shared.cli import add_run_args, guarded, make_parser, reproduce_command
from iclr25.shared.results import Claim
from iclr25.shared.run import start_run


@dataclass(frozen=True)
class Config:
    steps: int = 6
    batch: int = 16  # global batch, split over the processes


PRESETS = {"quick": Config()}


def run(scale="quick", out=None, *, seed=0, device="auto", wandb="off", overwrite=False, config=None, scale_out=None):
    import torch  # not needed by the runs that are refused before any work

    with start_run("toy", scale, PRESETS, out=out, seed=seed, device=device, overwrite=overwrite, config=config,
                   scale_out=scale_out) as run:
        fabric = run.fabric
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        model, optimizer = fabric.setup(model, optimizer)
        state = {"model": model, "optimizer": optimizer, "step": 0}
        checkpoints = run.checkpointer(every=2)
        checkpoints.resume(run.scale_out.resume, state, fabric)
        data = torch.randn(run.config.steps * run.config.batch, 4, dtype=torch.float64,
                           generator=torch.Generator().manual_seed(1))
        per_rank = run.config.batch // fabric.world_size
        while state["step"] < run.config.steps:
            step = state["step"]
            batch = data[step * run.config.batch : (step + 1) * run.config.batch]
            x = batch[fabric.global_rank * per_rank : (fabric.global_rank + 1) * per_rank]
            loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
            optimizer.zero_grad()
            fabric.backward(loss)
            optimizer.step()
            state["step"] += 1
            run.logger.log({"loss": float(loss)}, step=state["step"])
            checkpoints.maybe_save(state, fabric)
            if step + 1 == int(__import__("os").environ.get("TOY_STOP_AT", "0")):
                raise KeyboardInterrupt
        params = torch.cat([p.detach().flatten() for p in model.parameters()])
        torch.save(params, run.dir / f"params-rank{fabric.global_rank}.pt")
        claim = Claim("trained", "it trained", paper=None, ours=fabric.world_size, margin="", holds=True, gated=True)
        return run.report([claim], {"world_size": fabric.world_size})


@guarded("toy")
def main(argv=None):
    parser = make_parser("toy", "toy")
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_args(sub.add_parser("reproduce"), scales=("quick",), scale_out=True)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return reproduce_command("toy", args, run, PRESETS)


if __name__ == "__main__":
    sys.exit(main())
"""


def _toy_cli(tmp_path: Path, *argv: str, env: dict[str, str] | None = None):
    import os
    import subprocess
    import sys

    script = tmp_path / "toy_cli.py"
    script.write_text(SCRIPT)
    environment = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK")}
    environment.update({"ICLR25_QUIET": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, str(script), "reproduce", "--device", "cpu", "--precision", "64-true", *argv],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=300,
    )


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_cli_two_cpu_processes_share_one_run_folder_and_resume_continues(tmp_path: Path) -> None:
    """Through a real CLI: 2 gloo processes equal 1 process with the whole batch, rank 0 alone writes the folder;
    an interrupted run refuses a plain rerun, and `--resume auto` ends where an uninterrupted run ends."""
    import json

    one = _toy_cli(tmp_path, "--out", "one")
    assert one.returncode == 0, one.stderr[-2000:]
    two = _toy_cli(tmp_path, "--out", "two", "--devices", "2")
    assert two.returncode == 0, two.stderr[-2000:]
    a = torch.load(tmp_path / "one" / "params-rank0.pt")
    b0, b1 = (torch.load(tmp_path / "two" / f"params-rank{r}.pt") for r in (0, 1))
    assert torch.allclose(a, b0, atol=1e-6, rtol=0) and torch.equal(b0, b1)
    report = json.loads((tmp_path / "two" / "results.json").read_text())
    assert report["metrics"]["world_size"] == 2 and report["claims"][0]["ours"] == 2
    assert len((tmp_path / "two" / "metrics.jsonl").read_text().splitlines()) == 6  # logged once, by rank 0
    assert json.loads((tmp_path / "two" / ".iclr25-run.json").read_text())["status"] == "complete"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("runs")]  # no stray folder from rank 1

    cut = _toy_cli(tmp_path, "--out", "cut", env={"TOY_STOP_AT": "5"})
    assert cut.returncode == 130 and "interrupted" in cut.stderr
    refused = _toy_cli(tmp_path, "--out", "cut")
    assert refused.returncode == 2 and "incomplete run (interrupted" in refused.stderr
    resumed = _toy_cli(tmp_path, "--out", "cut", "--resume", "auto")  # continues from step 4
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert torch.equal(a, torch.load(tmp_path / "cut" / "params-rank0.pt"))
    again = _toy_cli(tmp_path, "--out", "cut", "--resume", "auto")
    assert again.returncode == 2 and "nothing to resume" in again.stderr
    nowhere = _toy_cli(tmp_path, "--resume", "auto")
    assert nowhere.returncode == 2 and "name that folder" in nowhere.stderr


def test_a_precision_needs_a_fabric_and_a_loop_that_applies_it(tmp_path: Path) -> None:
    """`--precision` on one device makes a Fabric (so it applies); a reproduction whose loops apply none refuses it
    before its run folder exists, never ignores it silently."""
    from iclr25.shared.run import reproduction

    assert not ScaleOut().wants_fabric and ScaleOut(devices=2).wants_fabric
    assert ScaleOut(precision="bf16-mixed").wants_fabric and not ScaleOut(precision="bf16-mixed").distributed

    @dataclass(frozen=True)
    class Config:
        steps: int = 1

    def body(run):
        return run.report([], {"fabric": "fabric" in run.training_options("loop")})

    plain = reproduction("demo", {"quick": Config()})(body)
    applies = reproduction("demo", {"quick": Config()}, precision=True)(body)
    with pytest.raises(ValueError, match="--precision: demo's training loops apply no precision setting"):
        plain("quick", tmp_path / "plain", scale_out=ScaleOut(precision="64-true"))
    assert not (tmp_path / "plain").exists()
    assert applies("quick", tmp_path / "a", device="cpu", scale_out=ScaleOut(precision="64-true")).metrics["fabric"]
    assert not applies("quick", tmp_path / "b", device="cpu").metrics["fabric"]


def test_loops_that_apply_no_precision_train_in_float32_on_several_processes(tmp_path: Path, monkeypatch) -> None:
    """Fabric's default precision autocasts to bf16 on GPUs that support it: a reproduction whose loops apply no
    precision gets a 32-true Fabric for several processes (no Fabric is launched here: the body only looks)."""
    from iclr25.shared.run import RUN_DIR_ENV, reproduction

    monkeypatch.setenv(RUN_DIR_ENV, str(tmp_path))  # a multi-process run sets it for its processes; restored after

    @dataclass(frozen=True)
    class Config:
        steps: int = 1

    def body(run):
        return run.report([], {"precision": str(run.scale_out.precision)})

    plain = reproduction("demo", {"quick": Config()})(body)
    applies = reproduction("demo", {"quick": Config()}, precision=True)(body)
    assert plain("quick", tmp_path / "a", scale_out=ScaleOut(devices=2)).metrics["precision"] == "32-true"
    assert plain("quick", tmp_path / "b", scale_out=ScaleOut()).metrics["precision"] == "None"  # one process
    assert applies("quick", tmp_path / "c", scale_out=ScaleOut(devices=2)).metrics["precision"] == "None"


RANK_WORKER = """
import torch

from iclr25.shared.fabric import Checkpointer
from iclr25.shared.testing import finish_worker


def run(fabric, cfg, out):
    # two processes whose shares differ in size (rank r draws r + 1 random rows a step), checkpointed every 2 steps:
    # the averaged gradient depends on both processes' random streams
    torch.manual_seed(100 + fabric.global_rank)  # every process its own random stream
    model = torch.nn.Linear(1, 1).double()
    model, optimizer = fabric.setup(model, torch.optim.SGD(model.parameters(), lr=0.1))
    state = {"model": model, "optimizer": optimizer, "step": 0}
    checkpoints = Checkpointer(cfg["folder"], every=2)
    checkpoints.resume(cfg["resume"], state, fabric)
    while state["step"] < cfg["stop"]:
        x = torch.randn(fabric.global_rank + 1, 1, dtype=torch.float64)
        optimizer.zero_grad()
        fabric.backward(((model(x) - 3 * x) ** 2).mean())
        optimizer.step()
        state["step"] += 1
        checkpoints.maybe_save(state, fabric)
    finish_worker(fabric, model.module, out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_each_process_resumes_its_own_random_stream(tmp_path: Path) -> None:
    """Processes that draw different amounts of random numbers resume exactly: the checkpoint keeps every rank's RNG
    state. Restoring rank 0's state in every process (the checkpoint without the per-rank states) does not."""
    (tmp_path / "rank_worker.py").write_text(RANK_WORKER)
    sys.path.insert(0, str(tmp_path))  # spawned processes import the worker by name
    try:
        worker = importlib.import_module("rank_worker")

        def launch(name: str, folder: str, stop: int, resume: str | None = None) -> torch.Tensor:
            fabric = make_fabric("cpu", devices=2, strategy="ddp_spawn", precision="64-true")
            fabric.launch(worker.run, {"folder": tmp_path / folder, "stop": stop, "resume": resume}, tmp_path / name)
            return torch.load(tmp_path / name)

        straight = launch("straight.pt", "a", stop=6)
        launch("cut.pt", "b", stop=3)  # "killed" after step 3: the newest checkpoint is step 2
        payload = torch.load(tmp_path / "b" / "step-2.ckpt", weights_only=True)
        assert len(payload["rng_per_rank"]) == 2
        assert not torch.equal(payload["rng_per_rank"][0]["torch"], payload["rng_per_rank"][1]["torch"])
        save_torch(tmp_path / "c" / "step-2.ckpt", {k: v for k, v in payload.items() if k != "rng_per_rank"})
        assert torch.equal(straight, launch("resumed.pt", "b", stop=6, resume="auto"))
        assert not torch.equal(straight, launch("rank0.pt", "c", stop=6, resume="auto"))  # rank 0's everywhere
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("rank_worker", None)
