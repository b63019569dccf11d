"""The README's Python quickstart runs, and its results block matches the committed results.json."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.testing import check_readme_results, readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs():
    readme_namespace(PACKAGE)


def test_readme_results_block_matches_results_json():
    check_readme_results(PACKAGE)
