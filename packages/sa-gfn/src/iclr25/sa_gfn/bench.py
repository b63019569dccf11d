"""The paper's HyperGrid settings for SA-GFN (Madan et al., ICLR 2025; spec §5, §6b): L1 and modes-found curves.

Grids 32x32, 64x64 and 8x8x8x8 with the standard reward and R0 in {1e-3, 1e-4}; methods TB, DB, SubTB(0.9), the
coupled baselines (TB + RND, GAFN) and SA-GFN with each objective ("sagfn" = TB, "sagfn-db", "sagfn-subtb").
Every run is evaluated exactly (dynamic programming) every `eval_every` iterations: l1_mean of the sampler (the
Behavior net for SA-GFN) and the modes its own samples have found so far. Reported only (no gate).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclr25.sa_gfn.config import PAPER_GRIDS, SWEEP_METHODS
from iclr25.shared.validate import check_int_at_least

BENCH_METHODS: tuple[str, ...] = SWEEP_METHODS


def method_kwargs(name: str, hidden: int) -> tuple[str, dict[str, Any]]:
    """`build_method` name and keyword arguments of a bench method ('sagfn-db' = SA-GFN with DB, ...)."""
    if name not in BENCH_METHODS:
        raise ValueError(f"bench method must be one of {', '.join(BENCH_METHODS)}; got {name!r}")
    kw: dict[str, Any] = dict(hidden=hidden)
    if name.startswith("sagfn"):
        kw["objective"] = name.split("-", 1)[1] if "-" in name else "tb"
        return "sagfn", kw
    return name, kw


def bench_jobs(
    grids: tuple[str, ...] = PAPER_GRIDS,
    methods: tuple[str, ...] = BENCH_METHODS,
    iters: int = 20000,
    seeds: int = 1,
    eval_every: int = 1000,
    hidden: int = 256,
    device: str = "cpu",
) -> list:
    """One `Job` per grid x method x seed."""
    from iclr25.sa_gfn.config import _parse_grid
    from iclr25.sa_gfn.training import Job

    check_int_at_least("iters", iters, 1)
    check_int_at_least("seeds", seeds, 1)
    check_int_at_least("eval_every", eval_every, 1)
    jobs = []
    for g in grids:
        d, h, reward, r0 = _parse_grid(g)
        env = dict(ndim=d, height=h, reward=reward, **({"R0": r0} if reward == "standard" else {}))
        for m in methods:
            method, kw = method_kwargs(m, hidden)
            jobs += [Job(f"{g}/{m}/{s}", method, s, env, kw, iters, eval_every, device) for s in range(seeds)]
    return jobs


def bench(
    grids: tuple[str, ...] = PAPER_GRIDS,
    methods: tuple[str, ...] = BENCH_METHODS,
    iters: int = 20000,
    seeds: int = 1,
    eval_every: int = 1000,
    hidden: int = 256,
    workers: int = 2,
    device: str = "cpu",
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Run the bench; return (and write under `out`: bench.json, curves.png) the curves and seconds/iteration."""
    from iclr25.sa_gfn.training import run_all

    jobs = bench_jobs(grids, methods, iters, seeds, eval_every, hidden, device)
    results = run_all(jobs, workers)
    runs = {
        name: {
            "iters": [h["iter"] for h in r["history"]],
            "l1_mean": [h["l1_mean"] for h in r["history"]],
            "modes_found_sampler": [h["modes_found_sampler"] for h in r["history"]],
            "final": r["final"],
            "seconds_per_iter": r["seconds"] / iters,
        }
        for name, r in results.items()
    }
    result = {"grids": list(grids), "methods": list(methods), "iters": iters, "seeds": seeds, "runs": runs}
    if out is not None:
        write_bench(result, out)
    return result


def write_bench(result: dict[str, Any], out: str | Path) -> Path:
    """bench.json and curves.png (l1_mean and modes found per grid) under `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import atomic_write_json, save_figure

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "bench.json", result)
    grids = result["grids"]
    fig, axes = plt.subplots(2, len(grids), figsize=(3.2 * len(grids), 5.6), squeeze=False)
    for j, g in enumerate(grids):
        for m in result["methods"]:
            r = result["runs"].get(f"{g}/{m}/0")
            if r is None:
                continue
            axes[0, j].semilogy(r["iters"], r["l1_mean"], label=m)
            axes[1, j].plot(r["iters"], r["modes_found_sampler"], label=m)
        axes[0, j].set_title(g, fontsize=8)
        axes[1, j].set_xlabel("iteration")
    axes[0, 0].set_ylabel("l1_mean (exact)")
    axes[1, 0].set_ylabel("modes found by own samples")
    axes[0, -1].legend(fontsize=6)
    save_figure(fig, out / "curves.png")
    return out
