"""A layer-wise device map for the package's decoders: a pipeline split over several GPUs, the same idea as
`device_map="balanced"` in transformers/accelerate (which the official code uses to load LLaMA-2 in fp16).

The embeddings go on the first device, the decoder layers in contiguous blocks over the devices, the final norm and
the LM head on the last; hidden states (and the position ids) move to the next device at a block boundary
(`DecoderLM.to_layer`). The split minimises the largest per-device weight load (an exact linear partition), under an
optional per-device budget, so a 13B model in fp16 (26 GB of weights) fits two 24 GB cards. Calibration statistics,
PP's history and FLAP's compensation bias live on the device of their layer, so they are split the same way.

    plan = plan_model(model, ["cuda:0", "cuda:1"], max_memory=[20 * 2**30] * 2)
    shard_model(model, plan)  # model(ids), collect_stats, ProbePruner, StaticPruner then run across both

Standard library at module level (torch is imported inside the functions), so configs can check memory strings
before torch loads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MEMORY_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
MAX_DEVICES = 1024


def parse_memory(text: str) -> int:
    """Bytes of a size such as "40GiB", "80GB", "512MiB" or "1000000" (bytes); a ValueError otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in MEMORY_UNITS):
        raise ValueError(f"a memory size looks like 40GiB, 80GB or 512MiB, got {text!r}")
    size = int(float(match.group(1)) * MEMORY_UNITS[unit or "b"])
    if size < 1:
        raise ValueError(f"a memory size must be at least 1 byte, got {text!r}")
    return size


def parse_max_memory(text: str, devices: int) -> list[int] | None:
    """Per-device weight budgets from "40GiB" (every device) or "20GiB,40GiB" (one per device); "" gives None."""
    if not text.strip():
        return None
    sizes = [parse_memory(part) for part in text.split(",")]
    if len(sizes) == 1:
        return sizes * devices
    if len(sizes) != devices:
        raise ValueError(f"max_memory names {len(sizes)} budgets for {devices} devices: give one, or one per device")
    return sizes


def _gib(n: float) -> str:
    """A byte count in GiB, MiB or KiB (two decimals), whichever is the largest below it."""
    if n == float("inf"):
        return "none"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


@dataclass(frozen=True)
class DevicePlan:
    """Which device holds what: `devices[0]` the embeddings, `devices[layer_slots[i]]` decoder layer i,
    `devices[-1]` the final norm and head; `loads` the weight bytes per device."""

    devices: tuple[str, ...]
    layer_slots: tuple[int, ...]
    loads: tuple[int, ...]

    @property
    def embed_device(self) -> str:
        return self.devices[0]

    @property
    def head_device(self) -> str:
        return self.devices[-1]

    @property
    def layer_devices(self) -> tuple[str, ...]:
        """The device of each decoder layer."""
        return tuple(self.devices[s] for s in self.layer_slots)

    def blocks(self) -> list[tuple[str, int, int]]:
        """(device, first layer, last layer) of each device's contiguous block."""
        out = []
        for slot, device in enumerate(self.devices):
            held = [i for i, s in enumerate(self.layer_slots) if s == slot]
            out.append((device, held[0], held[-1]))
        return out

    def describe(self) -> str:
        """One line per device: its layers and its weight load."""
        lines = []
        for slot, (device, first, last) in enumerate(self.blocks()):
            extra = (" + embeddings" if slot == 0 else "") + (" + norm/head" if slot == len(self.devices) - 1 else "")
            lines.append(f"{device}: layers {first}-{last}{extra}, {_gib(self.loads[slot])} of weights")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": list(self.devices),
            "layers": [[first, last] for _, first, last in self.blocks()],
            "weight_bytes": list(self.loads),
        }


def plan_device_map(
    layer_bytes: Sequence[int],
    devices: Sequence[str],
    embed_bytes: int = 0,
    head_bytes: int = 0,
    max_memory: Sequence[int] | None = None,
) -> DevicePlan:
    """Split the decoder layers (weights `layer_bytes`, in order) into one contiguous, non-empty block per device,
    the embeddings with the first block and the head with the last, minimising the largest device load (exact,
    by dynamic programming; ties go to the split that fills the earlier devices less) under the per-device budgets
    `max_memory` (bytes). A ValueError when there are more devices than layers or the weights do not fit."""
    n, k = len(layer_bytes), len(devices)
    if k < 1:
        raise ValueError("the device map needs at least one device")
    if n < 1:
        raise ValueError("the model has no decoder layers to place")
    if k > n:
        raise ValueError(f"{k} devices for a model of {n} decoder layers: each device needs at least one layer")
    if max_memory is not None and len(max_memory) != k:
        raise ValueError(f"{len(max_memory)} memory budgets for {k} devices")
    budget = list(max_memory) if max_memory is not None else [float("inf")] * k
    prefix = [0]
    for size in layer_bytes:
        prefix.append(prefix[-1] + int(size))

    def load(slot: int, start: int, stop: int) -> int:
        return prefix[stop] - prefix[start] + (embed_bytes if slot == 0 else 0) + (head_bytes if slot == k - 1 else 0)

    inf = float("inf")
    # best[d][i]: the smallest largest load placing layers [0, i) on devices 0..d; cut[d][i]: where device d starts
    best = [[inf] * (n + 1) for _ in range(k)]
    cut = [[0] * (n + 1) for _ in range(k)]
    for i in range(1, n + 1):
        if load(0, 0, i) <= budget[0]:
            best[0][i] = load(0, 0, i)
    for d in range(1, k):
        for i in range(d + 1, n + 1):
            for j in range(d, i):  # device d holds [j, i); the earliest start wins ties
                here = load(d, j, i)
                if here > budget[d] or best[d - 1][j] == inf:
                    continue
                value = max(best[d - 1][j], here)
                if value < best[d][i]:
                    best[d][i], cut[d][i] = value, j
    if best[k - 1][n] == inf:
        total = prefix[n] + embed_bytes + head_bytes
        shown = ", ".join(_gib(b) for b in budget)
        raise ValueError(
            f"the model's {_gib(total)} of weights do not fit {k} device(s) with budgets {shown} "
            "(give more devices or a larger max_memory)"
        )
    slots = [0] * n
    stop = n
    for d in range(k - 1, 0, -1):
        start = cut[d][stop]
        slots[start:stop] = [d] * (stop - start)
        stop = start
    loads = [0] * k
    for slot, size in zip(slots, layer_bytes, strict=True):
        loads[slot] += int(size)
    loads[0] += embed_bytes
    loads[-1] += head_bytes
    return DevicePlan(tuple(devices), tuple(slots), tuple(loads))


# ------------------------------------------------------------------------------------------------ torch side
def _bytes(params: Any, dtype: Any) -> int:
    import torch

    size = torch.empty((), dtype=dtype).element_size() if dtype is not None else None
    return sum(p.numel() * (size or p.element_size()) for p in params)


def part_bytes(model: Any, dtype: Any = None) -> tuple[int, list[int], int]:
    """(embeddings, per-layer, head) weight bytes of `model` (in `dtype` when given; a tied head counts the copy it
    gets when it sits on another device than the embeddings)."""
    embed = _bytes((p for m in model.embed_modules() for p in m.parameters()), dtype)
    layers = [_bytes(layer.parameters(), dtype) for layer in model.layers]
    head = _bytes((p for m in model.head_modules() for p in m.parameters()), dtype)
    return embed, layers, head


def plan_model(
    model: Any, devices: Sequence[str], max_memory: Sequence[int] | None = None, dtype: Any = None
) -> DevicePlan:
    """`plan_device_map` for `model`'s parameter sizes (a model on the `meta` device plans without memory)."""
    embed, layers, head = part_bytes(model, dtype)
    return plan_device_map(layers, devices, embed, head, max_memory)


def plan_config(
    cfg: Any, devices: Sequence[str], max_memory: Sequence[int] | None = None, dtype: Any = None
) -> DevicePlan:
    """The plan of a model with config `cfg`, built on the `meta` device (no weights allocated)."""
    import torch

    from iclr25.probe_pruning.model import TinyLlama, TinyOPT

    with torch.device("meta"):
        model = TinyLlama(cfg) if cfg.arch == "llama" else TinyOPT(cfg)
    return plan_model(model, devices, max_memory, dtype)


def cuda_devices(n: int, device: str) -> list[str]:
    """The devices of a split over `n` GPUs of a run on `device` ("cpu" / "cuda" / "mps"): [device] for n = 1,
    else cuda:0 .. cuda:n-1; a ValueError when the run is not on CUDA or has fewer GPUs."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_DEVICES:
        raise ValueError(f"devices must be an integer in [1, {MAX_DEVICES}], got {n!r}")
    if n == 1:
        return [device]
    if device != "cuda":
        raise ValueError(f"devices={n} splits the model over {n} CUDA GPUs, but the run's device is {device}")
    import torch

    found = torch.cuda.device_count()
    if n > found:
        raise ValueError(f"devices={n} asks for more CUDA GPUs than the {found} this machine has")
    return [f"cuda:{i}" for i in range(n)]


def shard_model(model: Any, plan: DevicePlan) -> Any:
    """Move `model`'s parts to the devices of `plan` (in place) and return it; its forward and the pruners then move
    the hidden states at block boundaries. A tied LM head on another device than the embeddings gets its own copy
    of the weight there (inference only)."""
    import torch
    from torch import nn

    if len(plan.layer_slots) != len(model.layers):
        raise ValueError(f"the plan places {len(plan.layer_slots)} layers, the model has {len(model.layers)}")
    embed_dev, head_dev = torch.device(plan.embed_device), torch.device(plan.head_device)
    emb = model.embed_modules()[0]
    if model.lm_head.weight is emb.weight and embed_dev != head_dev:
        model.lm_head.weight = nn.Parameter(emb.weight.detach().to(head_dev), requires_grad=emb.weight.requires_grad)
    for module in model.embed_modules():
        module.to(embed_dev)
    for layer, device in zip(model.layers, plan.layer_devices, strict=True):
        layer.to(device)
    for module in model.head_modules():
        module.to(head_dev)
    model.embed_device = embed_dev
    model.layer_devices = tuple(torch.device(d) for d in plan.layer_devices)
    model.head_device = head_dev
    model.device_plan = plan
    return model


__all__ = [
    "DevicePlan",
    "cuda_devices",
    "parse_max_memory",
    "parse_memory",
    "part_bytes",
    "plan_config",
    "plan_device_map",
    "plan_model",
    "shard_model",
]
