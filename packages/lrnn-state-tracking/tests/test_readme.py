"""The README's Python quickstart runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no python example"
    namespace: dict = {}
    threads = torch.get_num_threads()
    try:
        exec(compile(blocks[0], str(README), "exec"), namespace)
    finally:
        torch.set_num_threads(threads)
    assert -1.0 <= namespace["acc"] <= 1.0
    assert namespace["o_fast"].shape == (1, 2, 100, 16)


def test_readme_results_block_matches_committed_results():
    from iclr25.shared.results import Report, readme_block

    report = Report.read(README.parent / "results" / "quick")
    assert readme_block(report) in README.read_text()
    assert report.command == "iclr25-lrnn-state-tracking reproduce --scale quick"
