"""The README's Python quickstart runs as written (the workspace tests check every README's results block)."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs():
    readme_namespace(PACKAGE)
