"""The README's Python quickstart runs, and the paper offers the ci, quick and full scales."""

from __future__ import annotations

from pathlib import Path

import iclr25.conditional_conformal as pkg
from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs():
    readme_namespace(PACKAGE)


def test_paper_offers_the_three_scales():
    assert pkg.PAPER.scales == ("ci", "quick", "full")
