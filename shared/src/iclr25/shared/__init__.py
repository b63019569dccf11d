"""Shared plumbing for the iclr25 paper packages (nothing paper-specific lives here).

Public names are exported lazily so that importing this package stays cheap: torch, Lightning and
wandb load only when a function that needs them is called.
"""

from __future__ import annotations

from iclr25.shared.run import lazy_exports

_EXPORTS = {
    "Paper": "paper",
    "discover_papers": "paper",
    "Claim": "results",
    "Report": "results",
    "RunExistsError": "results",
    "atomic_write_text": "results",
    "atomic_write_json": "results",
    "save_figure": "results",
    "start_run": "run",
    "open_run_folder": "run",
    "RunFolderError": "run",
    "CliError": "cli",
    "load_checkpoint": "safeload",
    "load_npy": "safeload",
    "load_npz": "safeload",
    "restricted_pickle_load": "safeload",
    "UnsafeFileError": "safeload",
    "make_fabric": "fabric",
    "Checkpointer": "fabric",
    "ScaleOut": "fabric",
    "seed_everything": "seed",
    "pick_device": "device",
    "Throughput": "device",
    "make_trainer": "trainer",
    "MetricsLogger": "logging",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
