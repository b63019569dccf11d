"""The README's Python quickstart runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "README has no python block"
    exec(compile(blocks[0], str(README), "exec"), {})
    assert "torch.Size([2, 4, 8, 1, 32])" in capsys.readouterr().out
