"""The README's Python quickstart runs, and its results block is the committed results.json's."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.testing import check_readme_results, readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_quickstart_runs(capsys):
    readme_namespace(PACKAGE)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "nan" and out[1] == "0.0" and out[-1] == "True ('glide', 'gold')"


def test_results_block_matches():
    check_readme_results(PACKAGE)


def test_lazy_exports_resolve():
    import iclr25.siu_bioactivity as pkg

    for name in pkg.__all__:
        assert getattr(pkg, name) is not None
