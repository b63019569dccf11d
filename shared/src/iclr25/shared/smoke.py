"""`iclr25 smoke`: a few hundred training steps of each paper's `full`-preset network, timed on one device.

A package declares in its light `config.py` what to time:

    SMOKE = SmokeSpec(
        build="iclr25.<pkg>.smoke:build",  # build(device, reduced) -> step(); step() runs one optimiser step
        full_steps=300_000,                 # optimiser steps the full preset trains in total (all models and seeds)
        what="GPT-2 small, 12 layers, context 1024, batch 64",
        steps_note="2 runs x 150,000 steps",
    )

or `SMOKE = NoGpuWork("why")` when its full preset trains no network. `build` makes the full preset's main
network and optimiser at full size on `device` (synthetic batches of the right shapes) and returns a function
that runs one training step and returns the samples in it. With `cpu_scale` set, `reduced=True` is passed on CPU
only (fewer layers or a smaller batch, said in the row); on a GPU the network is always the full size.

Each package is timed in a child process (so a hang is stopped by a deadline and a crash is one row): 2 warm-up
steps, then `steps` steps between `synchronize` calls. The table gives steps/s, samples/s, peak memory (CUDA:
`torch.cuda.max_memory_allocated` over build and steps; CPU: how much the child's peak resident set grew during
build and steps) and the full run's projected time on 1, 2, 4 and 8 GPUs, assuming ideal linear data-parallel
scaling (full_steps / steps_per_s / n): a lower bound, not a measurement of multi-GPU runs.

Standard library only at module level; torch is imported in the child process.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GPU_COUNTS = (1, 2, 4, 8)
WARMUP = 2
RESULT = "ICLR25_SMOKE_RESULT "
STATUSES = ("ok", "no GPU work", "timed out", "error")


@dataclass(frozen=True)
class SmokeSpec:
    """What `iclr25 smoke` times for a package: see the module docstring."""

    build: str
    full_steps: int
    what: str
    steps_note: str = ""
    cpu_scale: str = ""

    def __post_init__(self) -> None:
        module, sep, attr = self.build.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"SmokeSpec.build must be 'module:function', got {self.build!r}")
        if not isinstance(self.full_steps, int) or self.full_steps < 1:
            raise ValueError(f"SmokeSpec.full_steps must be an integer >= 1, got {self.full_steps!r}")


@dataclass(frozen=True)
class NoGpuWork:
    """A package whose full preset trains no network: the table says why instead of timing anything."""

    reason: str


def load_spec(slug: str) -> SmokeSpec | NoGpuWork:
    """The `SMOKE` a package's `config.py` declares (a ValueError when it declares none)."""
    module = importlib.import_module(f"iclr25.{slug.replace('-', '_')}.config")
    spec = getattr(module, "SMOKE", None)
    if not isinstance(spec, SmokeSpec | NoGpuWork):
        raise ValueError(f"{slug}: config.py declares no SMOKE (a SmokeSpec or NoGpuWork)")
    return spec


def default_steps(device: str) -> int:
    """200 timed steps on a GPU, 3 on the CPU (the CI run)."""
    return 3 if device == "cpu" else 200


def _row(slug: str, status: str, device: str, **fields: Any) -> dict[str, Any]:
    row = {
        "package": slug,
        "status": status,
        "device": device,
        "what": "",
        "note": "",
        "steps": 0,
        "seconds": None,
        "steps_per_s": None,
        "samples_per_s": None,
        "peak_memory_mb": None,
        "memory_kind": None,
        "full_steps": None,
        "steps_note": "",
        "projected_hours": None,
    }
    row.update(fields)
    return row


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    """Build the network and time its steps (runs in the child process); returns the measured fields."""
    import resource

    import numpy as np
    import torch

    from iclr25.shared.device import synchronize

    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 - builders that draw from the legacy global generator stay deterministic
    device = spec["device"]
    deadline = time.monotonic() + spec["budget_s"]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    module, _, attr = spec["build"].partition(":")
    build = getattr(importlib.import_module(module), attr)
    step = build(device, spec["reduced"])
    for _ in range(WARMUP):
        step()
    synchronize(device)
    samples = 0
    done = 0
    start = time.perf_counter()
    while done < spec["steps"]:
        samples += int(step())
        done += 1
        if time.monotonic() > deadline - 0.1 * spec["budget_s"]:  # keep what was timed, stop before the deadline
            break
    synchronize(device)
    seconds = time.perf_counter() - start
    if device == "cuda":
        peak, kind = torch.cuda.max_memory_allocated() / 2**20, "cuda max_memory_allocated"
    else:
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before  # KiB on Linux
        peak, kind = max(grown, 0) / 1024, "cpu peak RSS growth"
    return {"steps": done, "seconds": seconds, "samples": samples, "peak_memory_mb": peak, "memory_kind": kind}


def _time_one(slug: str, spec: SmokeSpec, device: str, steps: int, budget_s: float) -> dict[str, Any]:
    reduced = device == "cpu" and bool(spec.cpu_scale)
    base = {
        "what": spec.what,
        "full_steps": spec.full_steps,
        "steps_note": spec.steps_note,
        "note": f"cpu: {spec.cpu_scale}" if reduced else "",
    }
    payload = json.dumps(
        {"build": spec.build, "device": device, "steps": steps, "budget_s": budget_s, "reduced": reduced}
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "iclr25.shared.smoke", payload],
            capture_output=True,
            text=True,
            timeout=budget_s,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired:
        return _row(slug, "timed out", device, **{**base, "note": f"no result within the budget of {budget_s:.0f} s"})
    result = next((line[len(RESULT) :] for line in done.stdout.splitlines()[::-1] if line.startswith(RESULT)), None)
    if done.returncode != 0 or result is None:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        last = lines[-1].strip() if lines else f"exit code {done.returncode}"
        return _row(slug, "error", device, **{**base, "note": f"error: {last[:300]}"})
    measured = json.loads(result)
    if measured["steps"] < 1 or measured["seconds"] <= 0:
        return _row(slug, "timed out", device, **{**base, "note": "no step finished within the budget"})
    rate = measured["steps"] / measured["seconds"]
    note = base["note"]
    if measured["steps"] < steps:
        note = "; ".join(filter(None, [note, f"timed {measured['steps']} of {steps} steps (budget)"]))
    return _row(
        slug,
        "ok",
        device,
        **{**base, "note": note},
        steps=measured["steps"],
        seconds=round(measured["seconds"], 4),
        steps_per_s=rate,
        samples_per_s=measured["samples"] / measured["seconds"] if measured["samples"] else None,
        peak_memory_mb=round(measured["peak_memory_mb"], 1),
        memory_kind=measured["memory_kind"],
        projected_hours={str(n): spec.full_steps / rate / n / 3600 for n in GPU_COUNTS},
    )


def run_smoke(
    device: str,
    steps: int,
    minutes: float,
    packages: Sequence[str],
    specs: dict[str, SmokeSpec | NoGpuWork] | None = None,
    echo: bool = False,
) -> list[dict[str, Any]]:
    """One row per package (see `_row`): its spec timed in a child process within `minutes` split evenly over the
    packages that train a network. `specs` replaces the packages' declared ones (tests)."""
    loaded: dict[str, SmokeSpec | NoGpuWork | str] = {}
    for slug in packages:
        try:
            loaded[slug] = specs[slug] if specs is not None and slug in specs else load_spec(slug)
        except Exception as e:  # a broken config module is one row, the others still run
            loaded[slug] = f"error: {' '.join(str(e).split()) or type(e).__name__}"
    timed = sum(isinstance(s, SmokeSpec) for s in loaded.values())
    budget_s = minutes * 60 / max(timed, 1)
    rows = []
    for slug, spec in loaded.items():
        if isinstance(spec, str):
            row = _row(slug, "error", device, note=spec)
        elif isinstance(spec, NoGpuWork):
            row = _row(slug, "no GPU work", device, note=f"no GPU work: {spec.reason}")
        else:
            if echo:
                print(f"iclr25 smoke: {slug} ({spec.what}) ...", file=sys.stderr, flush=True)
            row = _time_one(slug, spec, device, steps, budget_s)
        rows.append(row)
    return rows


def _hours(h: float | None) -> str:
    if h is None:
        return ""
    if h < 1:
        return f"{h * 60:.1f} min"
    return f"{h:.1f} h" if h < 48 else f"{h / 24:.1f} d"


def _num(x: float | None, digits: int = 2) -> str:
    if x is None:
        return ""
    return f"{x:,.{digits}f}" if x < 1000 else f"{x:,.0f}"


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """The table: one row per package; projections assume ideal linear data-parallel scaling."""
    head = "| package | status | network (full preset) | steps/s | samples/s | peak memory (MB) | full steps | "
    head += " | ".join(f"full run, {n} GPU{'s' if n > 1 else ''}" for n in GPU_COUNTS) + " | note |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]  # one rule cell per column
    for r in rows:
        projected = r["projected_hours"] or {}
        full = f"{r['full_steps']:,}" if r["full_steps"] else ""
        if r["steps_note"]:
            full += f" ({r['steps_note']})"
        cells = [
            r["package"],
            r["status"],
            r["what"],
            _num(r["steps_per_s"]),
            _num(r["samples_per_s"], 1),
            _num(r["peak_memory_mb"], 1),
            full,
            *(_hours(projected.get(str(n))) for n in GPU_COUNTS),
            r["note"],
        ]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    devices = sorted({r["device"] for r in rows})
    kinds = sorted({r["memory_kind"] for r in rows if r["memory_kind"]})
    foot = (
        f"\nDevice: {', '.join(devices)}. Peak memory: {', '.join(kinds) or 'none measured'}. Projected full-run "
        "time = full steps / steps per second / GPUs, assuming ideal linear data-parallel scaling (a lower bound; "
        "no multi-GPU run was timed).\n"
    )
    return "\n".join(lines) + "\n" + foot


def smoke_main(args: Any, specs: dict[str, SmokeSpec | NoGpuWork] | None = None) -> int:
    """`iclr25 smoke`: check the flags, time every package, write smoke.json and smoke.md into a new run folder,
    print the table; 0 when every row is ok or has no GPU work, 1 when any errored or timed out."""
    from iclr25.shared.paper import discover_papers
    from iclr25.shared.run import check_run_folder, default_run_dir, open_run_folder

    known = sorted(discover_papers()) + sorted(specs or {})
    if args.packages:
        chosen = [p.strip() for p in args.packages.split(",") if p.strip()]
        unknown = [p for p in chosen if p not in known]
        if unknown or not chosen:
            raise ValueError(
                f"--packages: unknown {', '.join(unknown) or '(none given)'}; installed: {', '.join(known)}"
            )
    else:
        chosen = known
    if args.device == "auto":
        from iclr25.shared.device import cuda_available

        device = "cuda" if cuda_available() else "cpu"
    else:
        device = args.device
        if device == "cuda":
            from iclr25.shared.device import pick_device

            pick_device("cuda")
    steps = args.steps or default_steps(device)
    out = args.out or default_run_dir("all", "smoke", device)
    check_run_folder(out, args.overwrite)
    rows = run_smoke(device, steps, args.minutes, chosen, specs=specs, echo=True)
    table = to_markdown(rows)
    from iclr25.shared.files import write_json, write_text

    with open_run_folder(out, args.overwrite, paper="all", command="smoke") as folder:
        write_json(
            Path(folder) / "smoke.json",
            {"device": device, "steps": steps, "minutes": args.minutes, "gpu_counts": list(GPU_COUNTS), "rows": rows},
        )
        write_text(Path(folder) / "smoke.md", table)
    print(table)
    print(f"written to {out}/smoke.json and smoke.md")
    return 0 if all(r["status"] in ("ok", "no GPU work") for r in rows) else 1


def add_smoke_parser(sub: Any) -> None:
    """`iclr25 smoke [--device] [--steps] [--minutes] [--packages] [--out] [--overwrite]`."""
    from iclr25.shared.cli import positive_float
    from iclr25.shared.validate import int_in

    smoke = sub.add_parser("smoke", help="time a few hundred steps of every paper's full-preset network")
    smoke.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    smoke.add_argument("--steps", type=int_in(1, 100_000), help="timed steps (default: 200 on cuda, 3 on cpu)")
    smoke.add_argument("--minutes", type=positive_float, default=10.0, help="time budget, split over packages")
    smoke.add_argument("--packages", help="comma-separated slugs (default: every installed paper)")
    smoke.add_argument("--out", type=Path, help="run folder (default: runs/all/smoke-<device>-<time>)")
    smoke.add_argument("--overwrite", action="store_true", help="replace a folder an earlier smoke run made")


if __name__ == "__main__":  # the child process of `_time_one`
    measured = _child(json.loads(sys.argv[1]))
    print(RESULT + json.dumps(measured), flush=True)
