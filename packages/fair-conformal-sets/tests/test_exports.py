"""Every public name is importable from the package root, lazily, and PAPER is complete."""

from __future__ import annotations

import subprocess
import sys

import iclr25.fair_conformal_sets as pkg


def test_all_names_importable():
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
    assert set(pkg.__all__) <= set(dir(pkg))


def test_import_is_light():
    code = "import sys, iclr25.fair_conformal_sets; print('numpy' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_paper_descriptor():
    paper = pkg.PAPER
    assert paper.slug == "fair-conformal-sets" and paper.arxiv == "2410.01888"
    assert paper.summary and paper.scales == ("quick", "full")
    from iclr25.fair_conformal_sets.config import PRESETS

    assert tuple(PRESETS) == paper.scales
    assert callable(paper.load_reproduce()) and callable(paper.load_cli())
