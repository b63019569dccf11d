"""Reproduction of TSC-Net's claims (spec §6a, §9.7): the plan, `run(scale)`.

Simulated scenes (`experiments.measure`) at every preset but `full`; real data (`dataset="sdd"`, the `full`
preset: `experiments.measure_sdd`) on the Y-Net SDD pickles and masks in `data_dir`. The claims are declared in
`claims` and evaluated on the measured metrics.

Gated (no training, deterministic): the simulator puts no ground-truth point on a non-walkable pixel; CV-K20 beats
CV; the non-learned geodesic-exits reference beats 0.8 x CV-K20 with fewer obstacle violations. Reported: TSC-lite vs
CV-K20, scene-aware vs scene-blind, cell goals vs goal regression on irregular agents (benchmark).
"""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, reproduction
from iclr25.tsc_net.claims import declared
from iclr25.tsc_net.config import PRESETS, Config
from iclr25.tsc_net.experiments import measure, measure_sdd, missing_sdd_files

SLUG = "tsc-net"


def _check_dataset(scale: str, config: Config) -> None:
    """Refuse, before a run folder is made, a real-data run whose files are missing (one line: what, where, and
    where to get it), and the ETH/UCY reproduction, which is not built."""
    if config.dataset == "sim":
        return
    if config.dataset != "sdd":
        raise ValueError(
            f"dataset={config.dataset}: the {config.dataset} reproduction is not built yet (only dataset=sdd); use "
            "`train --data` with the loaders (see README, Not done)"
        )
    problem = missing_sdd_files(Path(config.data_dir))
    if problem:
        raise ValueError(problem)


@reproduction(SLUG, PRESETS, check=_check_dataset, precision=True)
def run(r: Run) -> Report:
    """Run the `scale` preset (ci, quick, benchmark, bench, full) into `out`; returns the Report with its claims."""
    cfg = r.config
    if cfg.dataset == "sdd":
        metrics, throughput, figures = measure_sdd(cfg, r)
        notes = (
            f"SDD (Y-Net split) from {metrics['data']['data_dir']}; numbers in pixels, K = {cfg.n_cvae * cfg.n_cell}. "
            "The paper's SDD table was not found: no paper values. Learned-model claims are gated only at paper "
            f"scale (train_steps >= {PRESETS['full'].train_steps}, official architecture)."
        )
        return r.report(
            evaluate(declared(cfg), metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes
        )
    metrics, throughput, figures = measure(cfg, r)
    notes = (
        "Simulated scenes (spec §6a); numbers in pixels. The paper's tables were not found: no paper values. "
        "CPU, torch threads = config.threads."
    )
    return r.report(evaluate(declared(cfg), metrics, cfg), metrics, throughput=throughput, figures=figures, notes=notes)


__all__ = ["run"]
