"""Every public name imports from the package root; importing the root stays light; the paper descriptor."""

from __future__ import annotations

import subprocess
import sys

import iclr25.hd_explain as pkg


def test_every_public_name_imports():
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
    assert set(pkg.__all__) <= set(dir(pkg))


def test_import_is_light():
    code = "import sys, iclr25.hd_explain as p; print('torch' in sys.modules, 'numpy' in sys.modules, p.PAPER.slug)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "hd-explain"]


def test_paper_descriptor():
    assert pkg.PAPER.arxiv == "2403.15576" and pkg.PAPER.scales == ("quick", "full")
    assert set(pkg.PAPER.scales) == set(pkg.PRESETS)
