"""Test helpers for the packages' scale-out checks (two CPU processes over gloo equal one; the full preset starts on
two processes and checkpoints; a run stopped as Ctrl-C would resumes exactly). Imported only by tests; torch loads
inside the functions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

DISTRIBUTED_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")


class InterruptAt:
    """A metrics logger that stops training at step `at` as Ctrl-C would (raises KeyboardInterrupt from `log`)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def log(self, row: dict[str, Any], step: int) -> None:
        if step == self.at:
            raise KeyboardInterrupt


def flat_parameters(module: Any) -> Any:
    """Every parameter of a torch module, detached and flattened into one vector (to compare two trainings)."""
    import torch

    return torch.cat([p.detach().flatten() for p in module.parameters()])


def finish_worker(fabric: Any, result: Any, out: Path) -> None:
    """The end of a worker `run(fabric, ..., out)`: rank 0 saves `result` (a tensor, or a module's parameters
    flattened into one) to `out`, then every process waits for the others and closes gloo before it exits (its
    threads otherwise abort the exit now and then)."""
    import torch

    if isinstance(result, torch.nn.Module):
        result = flat_parameters(result)
    if fabric.global_rank == 0:
        torch.save(result, out)
    fabric.barrier()
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def two_processes_equal_one(worker: str, folder: Path, *args: Any, atol: float = 1e-6) -> tuple[Any, Any]:
    """Run `run(fabric, *args, out)` from the module source `worker` in one process and in two (ddp_spawn, gloo,
    float64 precision), check that what rank 0 saved is float64 and equal within `atol`, and return both. `args`
    must be picklable (dicts, not frozen dataclasses: Fabric's launch refuses those). Tests using it need
    `@pytest.mark.enable_socket`."""
    import torch

    from iclr25.shared.fabric import make_fabric

    name = f"iclr25_ddp_worker_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(worker)
    sys.path.insert(0, str(folder))  # spawned processes inherit sys.path
    try:
        module = __import__(name)
        make_fabric("cpu", devices=1, precision="64-true").launch(module.run, *args, folder / "one.pt")
        two = make_fabric("cpu", devices=2, strategy="ddp_spawn", precision="64-true")
        two.launch(module.run, *args, folder / "two.pt")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)
    one, two = torch.load(folder / "one.pt"), torch.load(folder / "two.pt")
    if one.dtype != torch.float64 or not torch.allclose(one, two, atol=atol, rtol=0):
        raise AssertionError(f"two processes differ from one: max |diff| {(one - two).abs().max():.3g} ({one.dtype})")
    return one, two


def reproduce_full_preset(
    slug: str, overrides: list[str], folder: Path, *flags: str, out: str = "run", checkpoints_under: str = "checkpoints"
) -> tuple[subprocess.CompletedProcess[str], Path, list[str]]:
    """`iclr25-<slug> reproduce --scale full --device cpu --quiet` with extra `flags` (e.g. `--devices 2`) and
    `overrides` (to make it tiny), run in `folder` into `out`; returns the process, the run folder (its marker checked
    complete when the run exited 0 or 1: 1 means a gated claim did not hold after a few steps) and the checkpoints it
    holds, relative to its `checkpoints_under` subfolder."""
    cli = Path(sys.executable).parent / f"iclr25-{slug}"
    env = {k: v for k, v in os.environ.items() if k not in DISTRIBUTED_ENV}
    result = subprocess.run(
        [str(cli), "reproduce", "--scale", "full", "--device", "cpu", "--out", out, "--quiet", *flags, *overrides],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**env, "ICLR25_QUIET": "1"},
        timeout=600,
    )
    run_dir = folder / out
    if result.returncode in (0, 1):
        status = json.loads((run_dir / ".iclr25-run.json").read_text())["status"]
        if status != "complete":
            raise AssertionError(f"the run folder is marked {status!r}")
    base = run_dir / checkpoints_under
    checkpoints = sorted(p.relative_to(base).as_posix() for p in run_dir.rglob("*.ckpt"))
    return result, run_dir, checkpoints


def readme_namespace(package: Path, blocks: int | None = None) -> dict[str, Any]:
    """Run the ```python blocks of `<package>/README.md` (the first `blocks` of them, or all) in one namespace, as
    a reader pasting them in order would, and return that namespace for the test's own checks."""
    import re

    readme = package / "README.md"
    found = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)
    if not found:
        raise AssertionError(f"{readme} has no python block")
    namespace: dict[str, Any] = {}
    for code in found[:blocks]:
        exec(compile(code, str(readme), "exec"), namespace)
    return namespace
