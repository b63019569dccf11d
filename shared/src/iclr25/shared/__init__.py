"""Shared plumbing for the iclr25 paper packages (nothing paper-specific lives here).

Public names are exported lazily so that importing this package stays cheap: torch, Lightning and
wandb load only when a function that needs them is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.run import lazy_exports

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.shared.cli import CliError
    from iclr25.shared.device import Throughput
    from iclr25.shared.device import pick_device
    from iclr25.shared.fabric import Checkpointer
    from iclr25.shared.fabric import ScaleOut
    from iclr25.shared.fabric import make_fabric
    from iclr25.shared.logging import MetricsLogger
    from iclr25.shared.paper import Paper
    from iclr25.shared.paper import discover_papers
    from iclr25.shared.results import Claim
    from iclr25.shared.results import Report
    from iclr25.shared.results import RunExistsError
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.results import atomic_write_text
    from iclr25.shared.results import save_figure
    from iclr25.shared.run import RunFolderError
    from iclr25.shared.run import open_run_folder
    from iclr25.shared.run import start_run
    from iclr25.shared.safeload import UnsafeFileError
    from iclr25.shared.safeload import load_checkpoint
    from iclr25.shared.safeload import load_npy
    from iclr25.shared.safeload import load_npz
    from iclr25.shared.safeload import restricted_pickle_load
    from iclr25.shared.seed import seed_everything
    from iclr25.shared.trainer import make_trainer

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__)
