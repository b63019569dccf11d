"""The README's Python quickstart runs, and its results block matches the committed results.json."""

from __future__ import annotations

import re
from pathlib import Path

from iclr25.shared.results import Report, readme_block

PACKAGE = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs() -> None:
    text = (PACKAGE / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python block"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_readme_results_block_matches_results_json() -> None:
    text = (PACKAGE / "README.md").read_text()
    assert readme_block(Report.read(PACKAGE / "results" / "quick")) in text
