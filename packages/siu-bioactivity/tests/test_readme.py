"""The README's Python quickstart runs as written (the workspace tests check every README's results block)."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_quickstart_runs(capsys):
    readme_namespace(PACKAGE)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "nan" and out[1] == "0.0" and out[-1] == "True ('glide', 'gold')"
