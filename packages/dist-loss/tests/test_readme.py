"""The README's Python quickstart runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs() -> None:
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README quickstart", "exec"), namespace)
    assert float(namespace["loss"].detach()) > 0
    assert namespace["pred"].grad is not None
