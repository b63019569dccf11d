"""The README's Python quickstart runs, its results block is the committed results.json's, exports resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iclr25.shared.results import Report, readme_block

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert blocks, "the README has no python block"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})


def test_results_block_matches():
    if not (ROOT / "results" / "quick" / "results.json").is_file():
        pytest.fail("results/quick/results.json is missing")
    assert readme_block(Report.read(ROOT / "results" / "quick")) in (ROOT / "README.md").read_text()


def test_lazy_exports_resolve():
    import iclr25.probe_pruning as pkg

    for name in pkg.__all__:
        assert getattr(pkg, name) is not None
