"""The README's Python quickstart runs as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme_namespace(PACKAGE, blocks=1)
    assert "torch.Size([2, 4, 8, 1, 32])" in capsys.readouterr().out
