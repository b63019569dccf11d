"""Every public name importable from the package root; the root and the CLI import neither torch nor numpy."""

from __future__ import annotations

import subprocess
import sys

import iclr25.influence_selection as pkg


def test_all_names_importable() -> None:
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
    assert pkg.PAPER.scales == ("ci", "quick", "full")


def test_import_is_light() -> None:
    code = (
        "import sys, iclr25.influence_selection, iclr25.influence_selection.cli, iclr25.influence_selection.config;"
        "print(sorted(m for m in ('torch', 'numpy', 'scipy', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
