"""Per-step training time of BPTT, FPI(k) and Highway-BP(k) for RNN language models over sequence lengths, as in
the paper's Table 3 / Table 6 (Fagnou et al., ICLR 2025, arXiv 2501.17086, §5.3: one GPU, ms per step and the
speed-up over BP).

One step is what a training step does: forward, the chosen backward, and Adam, on a `CharLM` with a loss at every
step (random character ids: the time does not depend on the text). The first `warmup` steps are not timed;
the table shows the median of `steps` timed steps (wall clock, synchronised on GPU) and the mean CPU time
(user + system) of the process per step. Standard library only at module level (the CLI imports it); torch loads
inside the functions. The `speed` verb of the CLI prints these tables.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from iclr25.highway_bp.config import LM_CELLS


@dataclass
class SpeedRow:
    """Timings of one (cell, sequence length): {run: ms per step} with run "bp", "fpi_k{k}", "hbp_k{k}"."""

    cell: str
    length: int
    wall_ms: dict[str, float]
    cpu_ms: dict[str, float]


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_step(model: Any, ids: Any, algo: str, k: int, steps: int, warmup: int, device: str) -> tuple[float, float]:
    """(median wall ms, mean process-CPU ms) of one training step of a `CharLM` on `ids` (T+1, B)."""
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, y = ids[:-1], ids[1:]
    walls, cpu = [], 0.0
    for i in range(warmup + steps):
        _sync(device)
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        model.step(x, y, k=k, algo=algo)
        opt.step()
        _sync(device)
        if i >= warmup:
            walls.append(1000 * (time.perf_counter() - t0))
            cpu += 1000 * (time.process_time() - c0)
    return statistics.median(walls), cpu / steps


def speed_table(
    cells: Sequence[str] = ("gru", "lstm"),
    lengths: Sequence[int] = (64, 256),
    *,
    hidden: int = 128,
    batch: int = 32,
    vocab: int = 128,
    hbp_ks: Sequence[int] = (0, 1, 2, 5, 10),
    fpi_ks: Sequence[int] = (0, 5, 10),
    steps: int = 5,
    warmup: int = 2,
    device: str = "cpu",
    seed: int = 0,
) -> list[SpeedRow]:
    """Time BP(TT), FPI(k) and Highway-BP(k) per step for every cell and sequence length."""
    import torch

    from iclr25.highway_bp.charlm import CharLM

    for cell in cells:
        if cell not in LM_CELLS:
            raise ValueError(f"cell must be one of {', '.join(LM_CELLS)}; got {cell!r}")
    for name, values in (("lengths", lengths), ("hbp_ks", hbp_ks), ("fpi_ks", fpi_ks)):
        if any(int(v) != v or v < (1 if name == "lengths" else 0) for v in values):
            raise ValueError(f"{name} must be whole numbers >= {1 if name == 'lengths' else 0}, got {list(values)}")
    if min(hidden, batch, steps) < 1 or vocab < 2 or warmup < 0:
        raise ValueError("hidden, batch and steps must be >= 1, vocab >= 2 and warmup >= 0")
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for cell in cells:
        torch.manual_seed(seed)
        model = CharLM(vocab, hidden, cell).to(device)
        for length in lengths:
            ids = torch.randint(0, vocab, (length + 1, batch), generator=gen).to(device)
            plan = [("bp", "bptt", 0)] + [(f"fpi_k{k}", "fpi", k) for k in fpi_ks]
            plan += [(f"hbp_k{k}", "hbp", k) for k in hbp_ks]
            wall, cpu = {}, {}
            for key, algo, k in plan:
                wall[key], cpu[key] = time_step(model, ids, algo, k, steps, warmup, device)
            rows.append(SpeedRow(cell, length, wall, cpu))
    return rows


def format_speed_table(rows: Sequence[SpeedRow], cpu: bool = False) -> str:
    """A Markdown table like the paper's Table 3: ms per step and the speed-up over BP at FPI/HBP k = 0, 5, 10."""
    if not rows:
        raise ValueError("no rows to format")
    keys = list(rows[0].wall_ms)
    fpi = [k for k in keys if k.startswith("fpi_")]
    hbp = [k for k in keys if k.startswith("hbp_")]
    head = ["task", "BP", *(f"FPI k={k[5:]}" for k in fpi), *(f"HBP k={k[5:]}" for k in hbp), "speed-up HBP/BP"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        ms = row.cpu_ms if cpu else row.wall_ms
        ups = "/".join(f"x{ms['bp'] / ms[k]:.2f}" for k in hbp)
        cells = [f"{row.cell.upper()}x1 L={row.length}", f"{ms['bp']:.1f}", *(f"{ms[k]:.1f}" for k in fpi + hbp), ups]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
