"""Loggers: CSV/JSON metrics always, wandb only when asked (offline unless "online").

Lightning runs use `make_loggers`; custom loops (RL, GFlowNets, custom backward passes) use
`MetricsLogger`. Either way `wandb.finish()` runs at the end, so a second run never silently reuses
the first one's wandb run.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from iclr25.shared.results import atomic_write_text

WANDB_MODES = ("off", "offline", "online")
# The names every training loop logs its progress under, so curves line up across packages: the training loss,
# the learning rate, the throughput in the loop's own unit per second (samples, sequences, frames), the epoch.
TRAINING_METRICS = ("loss", "lr", "throughput", "epoch")


def resolve_wandb_mode(mode: str | None) -> str:
    """The wandb mode to use: the flag if given, else WANDB_MODE=online|offline from the environment, else off."""
    if mode is None:
        env = os.environ.get("WANDB_MODE", "").lower()
        mode = env if env in ("online", "offline") else "off"
    if mode not in WANDB_MODES:
        raise ValueError(f"wandb mode must be one of {', '.join(WANDB_MODES)}; got {mode!r}")
    return mode


def finish_wandb() -> None:
    """Close the active wandb run, if wandb was imported and a run is open."""
    wandb = sys.modules.get("wandb")
    if wandb is not None and getattr(wandb, "run", None) is not None:
        wandb.finish()


def make_loggers(
    run_dir: str | Path,
    wandb: str | None = "off",
    project: str = "iclr25",
    name: str | None = None,
    config: dict[str, Any] | None = None,
) -> list[Any]:
    """Lightning loggers writing into `run_dir`: a CSVLogger, plus a WandbLogger unless wandb is off."""
    from lightning.pytorch.loggers import CSVLogger, WandbLogger

    run_dir = Path(run_dir)
    loggers: list[Any] = [CSVLogger(save_dir=run_dir, name="", version="")]
    mode = resolve_wandb_mode(wandb)
    if mode != "off":
        finish_wandb()  # never continue a previous run
        wandb_logger = WandbLogger(
            project=project,
            name=name,
            save_dir=str(run_dir),
            offline=(mode == "offline"),
            config=config,
        )
        loggers.append(wandb_logger)
    return loggers


def training_row(
    loss: float,
    *,
    lr: float | None = None,
    throughput: float | None = None,
    epoch: float | None = None,
    prefix: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """One logged row of a training loop under the shared names (`TRAINING_METRICS`), each behind `prefix` (e.g.
    "seed0/tsc/"), plus the loop's own `extra` metrics; names left as None are not logged."""
    if prefix and not prefix.endswith("/"):
        raise ValueError(f"a metric prefix ends with '/', got {prefix!r}")
    shared = {"loss": loss, "lr": lr, "throughput": throughput, "epoch": epoch}
    row = {name: value for name, value in {**shared, **extra}.items() if value is not None}
    return {f"{prefix}{name}": (value.item() if hasattr(value, "item") else value) for name, value in row.items()}


class MetricsLogger:
    """Metrics for custom training loops: `metrics.jsonl` + `metrics.csv` in the run folder, and wandb.

    Use as a context manager; on exit the CSV is written atomically and wandb is finished.
    """

    def __init__(
        self,
        run_dir: str | Path,
        wandb: str | None = "off",
        project: str = "iclr25",
        name: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.rows: list[dict[str, Any]] = []
        self._jsonl = open(self.run_dir / "metrics.jsonl", "a")  # noqa: SIM115 (closed in close())
        self.wandb_mode = resolve_wandb_mode(wandb)
        self._wandb_run = None
        if self.wandb_mode != "off":
            import wandb as wandb_lib

            finish_wandb()
            self._wandb_run = wandb_lib.init(
                project=project,
                name=name,
                dir=str(self.run_dir),
                mode=self.wandb_mode,
                config=config or {},
            )
            # Loops that restart their step count (one curve per seed or per model) would have wandb drop every
            # row whose step is below the largest seen so far; plotting against a logged "step" field keeps them.
            self._wandb_run.define_metric("step")
            self._wandb_run.define_metric("*", step_metric="step")

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """Record one row of scalar metrics (numpy/torch scalars are converted).

        `step` may go back (a new curve starting at 0): it is a logged field, not wandb's own step counter.
        """
        row = {k: (v.item() if hasattr(v, "item") else v) for k, v in metrics.items()}
        if step is not None:
            row = {"step": step, **row}
        self.rows.append(row)
        self._jsonl.write(json.dumps(row) + "\n")
        self._jsonl.flush()
        if self._wandb_run is not None:
            self._wandb_run.log(row)

    def close(self) -> None:
        """Write `metrics.csv` (union of all keys) and finish wandb; safe to call twice."""
        if self._jsonl.closed:
            return
        self._jsonl.close()
        if self.rows:
            keys: list[str] = []
            for row in self.rows:
                keys += [k for k in row if k not in keys]
            buffer = io.StringIO()
            writer = csv.DictWriter(buffer, fieldnames=keys)
            writer.writeheader()
            writer.writerows(self.rows)
            atomic_write_text(self.run_dir / "metrics.csv", buffer.getvalue())
        if self._wandb_run is not None:
            self._wandb_run.finish()
            self._wandb_run = None

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class NullLogger:
    """The logger of a process besides rank 0 in a multi-process run: metrics are logged once, by rank 0."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """Record nothing."""

    def close(self) -> None:
        """Nothing to close."""

    def __enter__(self) -> NullLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
