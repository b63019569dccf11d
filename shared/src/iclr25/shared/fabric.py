"""Scale-out for custom training loops on Lightning Fabric (DDP, FSDP, mixed precision, several nodes), and
checkpoint/resume that any loop can use with or without Fabric.

    fabric = make_fabric(device, devices=2, strategy="ddp")          # `--device cpu --devices 2`: two gloo processes
    model, optimizer = fabric.setup(model, optimizer)
    checkpoints = Checkpointer(run.dir / "checkpoints", every=500, keep=2)
    state = {"model": model, "optimizer": optimizer, "step": 0}
    checkpoints.resume(resume, state, fabric)                          # --resume auto|PATH
    while state["step"] < steps:
        ...; state["step"] += 1
        checkpoints.maybe_save(state, fabric)

Checkpoints hold tensors, numbers and strings only (model, optimizer and scheduler state dicts, the step, the
Python/NumPy/torch RNG states of every process) and load with `weights_only=True`: a checkpoint is data, never
code. They are written atomically by rank 0 and the last `keep` are kept. torch and lightning are imported inside the functions.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STRATEGIES = ("auto", "ddp", "ddp_spawn", "fsdp")
PRECISIONS = ("32-true", "64-true", "16-mixed", "bf16-mixed", "bf16-true", "16-true")
CHECKPOINT = re.compile(r"step-(\d+)\.ckpt")


@dataclass(frozen=True)
class ScaleOut:
    """How a run's training loops scale out: `--devices`, `--num-nodes`, `--strategy`, `--precision`, `--resume`
    (`auto`: continue the run in `--out` from its newest checkpoint; or a checkpoint file), `--checkpoint-every`
    (steps; 0: the loop's own default)."""

    devices: int | str = 1
    num_nodes: int = 1
    strategy: str = "auto"
    precision: str | None = None
    resume: str | None = None
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        if self.devices != "auto" and (
            isinstance(self.devices, bool) or not isinstance(self.devices, int) or self.devices < 1
        ):
            raise ValueError(f"--devices must be an integer >= 1 or 'auto', got {self.devices!r}")
        if isinstance(self.num_nodes, bool) or not isinstance(self.num_nodes, int) or self.num_nodes < 1:
            raise ValueError(f"--num-nodes must be an integer >= 1, got {self.num_nodes!r}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"--strategy must be one of {', '.join(STRATEGIES)}; got {self.strategy!r}")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(f"--precision must be one of {', '.join(PRECISIONS)}; got {self.precision!r}")
        if (
            isinstance(self.checkpoint_every, bool)
            or not isinstance(self.checkpoint_every, int)
            or self.checkpoint_every < 0
        ):
            raise ValueError(f"--checkpoint-every must be an integer >= 0, got {self.checkpoint_every!r}")

    @property
    def distributed(self) -> bool:
        """More than one process."""
        return self.devices == "auto" or self.devices > 1 or self.num_nodes > 1

    @property
    def wants_fabric(self) -> bool:
        """A loop needs a Fabric: several processes, or a `--precision` (which Fabric applies on one device too)."""
        return self.distributed or self.precision is not None


def make_fabric(
    device: str = "auto",
    devices: int | str = 1,
    num_nodes: int = 1,
    strategy: str = "auto",
    precision: str | None = None,
) -> Any:
    """A `lightning.fabric.Fabric` for `device` ("auto", "cpu", "cuda", "mps"); `devices` processes per node
    (an int or "auto": every GPU), `num_nodes` nodes, the strategy (DDP when several processes), the precision
    (default: bf16-mixed on GPUs that support it, else 32-true)."""
    from lightning.fabric import Fabric

    from iclr25.shared.device import pick_device, pick_precision

    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    if strategy == "fsdp":  # Checkpointer saves one rank-0 state dict: FSDP's sharded parameters would be lost
        raise ValueError(
            "--strategy fsdp is offered only where the Lightning Trainer trains (patch-train); this loop checkpoints "
            "one full state dict from rank 0, which sharded parameters do not give: use ddp"
        )
    if devices != "auto" and (isinstance(devices, bool) or not isinstance(devices, int) or devices < 1):
        raise ValueError(f"devices must be an integer >= 1 or 'auto', got {devices!r}")
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be an integer >= 1, got {num_nodes!r}")
    accelerator = pick_device(device)
    if strategy == "auto" and (devices == "auto" or devices > 1 or num_nodes > 1):
        strategy = "ddp"
    return Fabric(
        accelerator="gpu" if accelerator == "cuda" else accelerator,
        devices=devices,
        num_nodes=num_nodes,
        strategy=strategy,
        precision=precision or pick_precision(accelerator),
    )


def distributed_sampler(dataset: Any, fabric: Any, seed: int, shuffle: bool = True) -> Any:
    """A DistributedSampler over `dataset` for this process's rank, seeded (call `.set_epoch(e)` every epoch)."""
    from torch.utils.data import DistributedSampler

    return DistributedSampler(
        dataset, num_replicas=fabric.world_size, rank=fabric.global_rank, shuffle=shuffle, seed=seed, drop_last=False
    )


def all_reduce_mean(fabric: Any, value: Any) -> float:
    """The mean of a scalar (float or tensor) over all processes, as a float on every rank."""
    import torch

    tensor = torch.as_tensor(value, dtype=torch.float64, device=fabric.device)
    return float(fabric.all_reduce(tensor, reduce_op="mean"))


def rng_state() -> dict[str, Any]:
    """The Python, NumPy (legacy global) and torch RNG states as tensors, numbers and strings only."""
    import numpy as np
    import torch

    version, keys, pos, has_gauss, cached = np.random.get_state()  # noqa: NPY002 (the global generator)
    state: dict[str, Any] = {
        "python": _to_lists(random.getstate()),
        "numpy": {
            "name": version,
            "keys": torch.from_numpy(np.asarray(keys)),
            "pos": pos,
            "has_gauss": has_gauss,
            "cached": cached,
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what `rng_state` returned."""
    import numpy as np
    import torch

    random.setstate(_to_tuples(state["python"]))
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy(), n["pos"], n["has_gauss"], n["cached"]))  # noqa: NPY002
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _to_lists(value: Any) -> Any:
    return [_to_lists(v) for v in value] if isinstance(value, tuple | list) else value


def _to_tuples(value: Any) -> Any:
    return tuple(_to_tuples(v) for v in value) if isinstance(value, list) else value


def _state_dicts(state: dict[str, Any]) -> dict[str, Any]:
    """Replace modules, optimizers and schedulers by their state dicts (unwrapping Fabric/DDP wrappers)."""
    out = {}
    for key, value in state.items():
        target = getattr(value, "module", value) if hasattr(value, "_forward_module") else value
        out[key] = target.state_dict() if hasattr(target, "state_dict") else value
    return out


CHECKPOINT_KEYS = ("state", "rng")


def check_checkpoint(path: str | Path) -> None:
    """Refuse, before any work, a `--resume` file that is not a training checkpoint of this project (missing,
    foreign, corrupt, or holding anything but tensors and plain data)."""
    from iclr25.shared.safeload import load_checkpoint

    load_checkpoint(path, required_keys=CHECKPOINT_KEYS, what="training checkpoint of this project")


class Checkpointer:
    """Saves a loop's state every `every` steps into `folder` (atomically, rank 0 only, the last `keep` kept) and
    restores the newest or a given one."""

    def __init__(self, folder: str | Path, every: int, keep: int = 2) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise ValueError(f"checkpoint interval must be an integer >= 0 (0: never), got {every!r}")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"checkpoints kept must be an integer >= 1, got {keep!r}")
        self.folder, self.every, self.keep = Path(folder), every, keep

    def checkpoints(self) -> list[Path]:
        """Saved checkpoints, oldest first."""
        found = [p for p in self.folder.glob("step-*.ckpt") if CHECKPOINT.fullmatch(p.name)]
        return sorted(found, key=lambda p: int(CHECKPOINT.fullmatch(p.name).group(1)))

    def save(self, state: dict[str, Any], fabric: Any = None) -> Path:
        """Write `state` (its modules/optimizers as state dicts, plus the RNG states) as `step-<step>.ckpt`. In a
        multi-process run the RNG states of every rank are gathered (`rng_per_rank`), since processes whose shares
        differ in size have drawn different amounts of random numbers (dropout masks)."""
        from iclr25.shared.files import remove_own_file, save_torch

        path = self.folder / f"step-{int(state['step'])}.ckpt"
        payload: dict[str, Any] = {"rng": rng_state()}
        if fabric is not None and fabric.world_size > 1:
            payload["rng_per_rank"] = _gather_rng_states(fabric)
        if fabric is None or fabric.global_rank == 0:
            save_torch(path, {"state": _state_dicts(state), **payload}, overwrite=True)
            for old in self.checkpoints()[: -self.keep]:
                remove_own_file(old)
        if fabric is not None:
            fabric.barrier()
        return path

    def maybe_save(self, state: dict[str, Any], fabric: Any = None) -> Path | None:
        """`save` when the step is a multiple of `every` (and `every` > 0)."""
        if self.every and int(state["step"]) % self.every == 0:
            return self.save(state, fabric)
        return None

    def resume(self, resume: str | Path | None, state: dict[str, Any], fabric: Any = None) -> Path | None:
        """Load `resume` ("auto": the newest checkpoint in the folder, if any; a path; None: nothing) into `state`
        in place: modules/optimizers get their state dicts back, other entries their values, RNGs their states
        (each rank its own when the checkpoint was written by as many processes; else rank 0's everywhere)."""
        from iclr25.shared.safeload import load_checkpoint

        if resume is None:
            return None
        if str(resume) == "auto":
            saved = self.checkpoints()
            if not saved:
                return None
            path = saved[-1]
        else:
            path = Path(resume)
        payload = load_checkpoint(path, required_keys=CHECKPOINT_KEYS, what="training checkpoint of this project")
        saved_state = payload["state"]
        missing = [k for k in state if k not in saved_state]
        if missing:
            raise ValueError(f"{path} lacks {', '.join(missing)}; it was written by another loop")
        for key, value in state.items():
            target = getattr(value, "module", value) if hasattr(value, "_forward_module") else value
            if hasattr(target, "load_state_dict"):
                target.load_state_dict(saved_state[key])
            else:
                state[key] = saved_state[key]
        ranks = payload.get("rng_per_rank")
        world, rank = (1, 0) if fabric is None else (fabric.world_size, fabric.global_rank)
        set_rng_state(ranks[rank] if ranks is not None and len(ranks) == world else payload["rng"])
        if fabric is not None:
            fabric.barrier()
        return path


def _gather_rng_states(fabric: Any) -> list[dict[str, Any]]:
    """Every rank's `rng_state()`, in rank order, on every rank (its tensors travel as NumPy arrays: the object
    gather pickles, and pickled tensors do not come back through it)."""
    import numpy as np
    import torch
    import torch.distributed as dist

    gathered: list[Any] = [None] * fabric.world_size
    dist.all_gather_object(gathered, _map_arrays(rng_state(), torch.Tensor, lambda t: t.numpy()))
    return [_map_arrays(state, np.ndarray, torch.from_numpy) for state in gathered]


def _map_arrays(value: Any, kind: type, convert: Any) -> Any:
    """`value` with every `kind` leaf (inside dicts and lists) replaced by `convert(leaf)`."""
    if isinstance(value, dict):
        return {key: _map_arrays(item, kind, convert) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_arrays(item, kind, convert) for item in value]
    return convert(value) if isinstance(value, kind) else value
