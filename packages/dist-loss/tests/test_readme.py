"""The README's Python quickstart runs as written."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs() -> None:
    namespace = readme_namespace(PACKAGE, blocks=1)
    assert float(namespace["loss"].detach()) > 0
    assert namespace["pred"].grad is not None
