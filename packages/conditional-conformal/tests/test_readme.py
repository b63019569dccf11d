"""The README's Python quickstart runs, its results block matches results.json, every export imports."""

from __future__ import annotations

from pathlib import Path

import iclr25.conditional_conformal as pkg
from iclr25.shared.testing import check_readme_results, readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs():
    readme_namespace(PACKAGE)


def test_readme_results_block_matches_results_json():
    check_readme_results(PACKAGE)


def test_every_export_imports():
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
    assert pkg.PAPER.scales == ("ci", "quick", "full")
