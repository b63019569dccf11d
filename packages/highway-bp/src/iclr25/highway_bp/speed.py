"""Per-step training time of BPTT, FPI(k) and Highway-BP(k) for RNN language models over sequence lengths, as in
the paper's Table 3 / Table 6 (Fagnou et al., ICLR 2025, arXiv 2501.17086, §5.3: one GPU, ms per step and the
speed-up over BP).

One step is what a training step does: forward, the chosen backward, and Adam, on a `CharLM` with a loss at every
step (random character ids: the time does not depend on the text). The first `warmup` steps are not timed;
the table shows the median of `steps` timed steps (wall clock, synchronised on GPU) and the mean CPU time
(user + system) of the process per step. Standard library only at module level (the CLI imports it); torch loads
inside the functions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
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


def add_speed_args(parser: argparse.ArgumentParser) -> None:
    """The `speed` verb's flags."""
    parser.add_argument("--cells", nargs="+", choices=LM_CELLS, default=["gru", "lstm"])
    parser.add_argument("--lengths", nargs="+", type=int, default=[64, 256], help="sequence lengths L")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=128)
    parser.add_argument("--hbp-ks", nargs="+", type=int, default=[0, 1, 2, 5, 10])
    parser.add_argument("--fpi-ks", nargs="+", type=int, default=[0, 5, 10])
    parser.add_argument("--steps", type=int, default=5, help="timed steps per entry (median shown)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--device", default="auto", help="cpu | cuda | auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the tables (.md) and the timings (.json) here")


def speed_verb(args: argparse.Namespace) -> int:
    """`iclr25-highway-bp speed`: time the backward passes and print Table-3-like tables (wall and CPU ms)."""
    import torch

    from iclr25.shared.device import pick_device

    if args.threads < 0:
        raise ValueError(f"--threads must be >= 0, got {args.threads}")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    rows = speed_table(
        args.cells,
        args.lengths,
        hidden=args.hidden,
        batch=args.batch_size,
        vocab=args.vocab,
        hbp_ks=args.hbp_ks,
        fpi_ks=args.fpi_ks,
        steps=args.steps,
        warmup=args.warmup,
        device=device,
        seed=args.seed,
    )
    where = f"{device}, {torch.get_num_threads()} threads" if device == "cpu" else device
    setting = f"hidden {args.hidden}, batch {args.batch_size}, vocab {args.vocab}, loss at every step"
    text = (
        f"Wall-clock ms per training step (median of {args.steps}; {where}; {setting}):\n\n"
        f"{format_speed_table(rows)}\n\nProcess CPU ms per step (user + system, mean):\n\n"
        f"{format_speed_table(rows, cpu=True)}\n"
    )
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".md").write_text(text, encoding="utf-8")
        data = {"argv": sys.argv[1:], "device": where, "rows": [asdict(r) for r in rows]}
        args.out.with_suffix(".json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":  # `python -m iclr25.highway_bp.speed ...` (the same as `iclr25-highway-bp speed ...`)
    _parser = argparse.ArgumentParser(prog="python -m iclr25.highway_bp.speed", description=speed_verb.__doc__)
    add_speed_args(_parser)
    sys.exit(speed_verb(_parser.parse_args()))
