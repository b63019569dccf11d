"""The README's Python quickstart runs as written; the committed results record the quick command."""

from __future__ import annotations

from pathlib import Path

import torch

from iclr25.shared.results import Report
from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs():
    threads = torch.get_num_threads()
    try:
        namespace = readme_namespace(PACKAGE, blocks=1)
    finally:
        torch.set_num_threads(threads)
    assert -1.0 <= namespace["acc"] <= 1.0
    assert namespace["o_fast"].shape == (1, 2, 100, 16)


def test_committed_results_record_the_quick_command():
    assert Report.read(PACKAGE / "results" / "quick").command == "iclr25-lrnn-state-tracking reproduce --scale quick"
