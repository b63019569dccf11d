"""The README's first Python example runs as written."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs():
    namespace = readme_namespace(PACKAGE, blocks=1)
    assert namespace["logits"].shape == (2, 64, 256)
