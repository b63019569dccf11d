"""The README's Python quickstart runs, its results block is the committed results.json's, exports resolve."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.testing import check_readme_results, readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]


def test_quickstart_runs():
    readme_namespace(PACKAGE)


def test_results_block_matches():
    check_readme_results(PACKAGE)


def test_lazy_exports_resolve():
    import iclr25.probe_pruning as pkg

    for name in pkg.__all__:
        assert getattr(pkg, name) is not None
