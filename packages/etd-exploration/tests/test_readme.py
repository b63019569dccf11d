"""The README's Python quickstart runs as written."""

from pathlib import Path

from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs(capsys):
    readme_namespace(PACKAGE)
    assert "(2,) True" in capsys.readouterr().out
