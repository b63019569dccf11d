"""The paper record (paper.toml): its optional fields, their validation, and what `iclr25 info` prints of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclr25.shared import cli
from iclr25.shared.paper import README_HEADER_BEGIN, README_HEADER_END, Paper

MINIMAL = """
title = "A Paper"
authors = "A. Author, B. Author"
arxiv = "2401.00001"
summary = "One line."
scales = ["ci", "quick", "full"]
"""

FULL = """
title = "A Paper"
authors = "A. Author, B. Author"
arxiv = "2401.00001"
openreview = "AbCdEfGh12"
code = "someone/some-code"
code_commit = "05a1bf2"
licence = "MIT"
summary = "One line."
scales = ["ci", "quick", "full"]

[settings]
model = "ResNet-18"
data = "CIFAR-10"
"batch size" = "128"
"""


def test_a_record_without_the_optional_fields_loads() -> None:
    paper = Paper.from_toml(MINIMAL, "a-paper")
    assert (paper.openreview, paper.code, paper.code_commit, paper.licence, paper.settings) == ("", "", "", "", ())
    header = paper.readme_header()
    assert header.startswith(README_HEADER_BEGIN) and header.endswith(README_HEADER_END)
    assert "Official code: none public" in header and "OpenReview" not in header and "settings" not in header


def test_a_record_with_every_field_loads_in_order() -> None:
    paper = Paper.from_toml(FULL, "a-paper")
    assert paper.openreview == "AbCdEfGh12" and paper.code_commit == "05a1bf2" and paper.licence == "MIT"
    assert paper.settings == (("model", "ResNet-18"), ("data", "CIFAR-10"), ("batch size", "128"))
    header = paper.readme_header()
    assert "[AbCdEfGh12](https://openreview.net/forum?id=AbCdEfGh12)" in header
    assert "[`05a1bf2`](https://github.com/someone/some-code/tree/05a1bf2)" in header and "licence: MIT" in header
    assert "  - batch size: 128" in header


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ('venue_year = "2025"', r"pkg/paper\.toml: unknown or derived fields \['venue_year'\]"),
        ('slug = "other"', r"pkg/paper\.toml: unknown or derived fields \['slug'\]"),
        ("openreview = 12", r"pkg/paper\.toml: field 'openreview' must be a TOML str, got int"),
        ('licence = ["MIT"]', r"pkg/paper\.toml: field 'licence' must be a TOML str"),
        ('settings = "model: x"', r"pkg/paper\.toml: field 'settings' must be a TOML dict"),
        ('openreview = "https://openreview.net/forum?id=x"', r"pkg/paper\.toml: Paper\.openreview must be"),
        ('code_commit = "abc1234"', r"pkg/paper\.toml: Paper\.code_commit .* given together with `code`"),
        ('code = "x/y"\ncode_commit = "main"', r"pkg/paper\.toml: Paper\.code_commit must be"),
        ('licence = "MIT"', r"pkg/paper\.toml: Paper\.licence 'MIT' is the official code's"),
        ("settings = { model = 3, data = 'x' }", r"pkg/paper\.toml: Paper\.settings must map names to"),
        ("settings = { model = 'x' }", r"pkg/paper\.toml: Paper\.settings must have 2 to 6 entries"),
        ('scales = ["quick", 2]', r"pkg/paper\.toml: field 'scales' must be a list of strings"),
        ("title = ", r"pkg/paper\.toml: not valid TOML"),
    ],
)
def test_a_wrong_type_or_unknown_field_is_a_value_error_naming_the_file(extra: str, match: str) -> None:
    lines = [line for line in MINIMAL.splitlines() if not line.startswith(extra.split(" ")[0] + " ")]
    with pytest.raises(ValueError, match=match):
        Paper.from_toml("\n".join([*lines, extra]) + "\n", "a-paper", source="pkg/paper.toml")


def test_every_installed_record_loads_and_its_header_renders() -> None:
    from iclr25.shared.paper import discover_papers

    papers = discover_papers()
    assert papers, "no paper packages installed"
    for paper in papers.values():
        assert paper.readme_header().count("\n- ") >= 4, paper.slug


def test_info_prints_the_new_fields(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    full, minimal = Paper.from_toml(FULL, "full-paper"), Paper.from_toml(MINIMAL, "min-paper")
    monkeypatch.setattr(cli, "discover_papers", lambda: {"full-paper": full, "min-paper": minimal})
    assert cli.main(["info", "full-paper"]) == 0
    out = capsys.readouterr().out
    for text in ("OpenReview:    AbCdEfGh12", "code commit:   05a1bf2", "code licence:  MIT", "settings:"):
        assert text in out
    assert "    model       ResNet-18\n" in out and "    batch size  128\n" in out
    assert cli.main(["info", "min-paper"]) == 0
    out = capsys.readouterr().out
    assert "OpenReview:    unknown" in out and "official code: none public" in out and "settings:" not in out


def test_the_scaffold_writes_the_record_placeholders_and_a_filled_header(tmp_path: Path) -> None:
    from iclr25.shared.scaffold import new_package

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "pyproject.toml").write_text((root / "pyproject.toml").read_text())
    package = new_package(tmp_path, "demo-paper", "A Demo Paper")
    text = (package / "src" / "iclr25" / "demo_paper" / "paper.toml").read_text()
    for name in ("# openreview = ", "# code = ", "# code_commit = ", "# licence = ", "# [settings]"):
        assert name in text
    paper = Paper.from_toml(text, "demo-paper")
    readme = (package / "README.md").read_text().splitlines()
    assert readme[0] == "# iclr25-demo-paper" and readme[2] == README_HEADER_BEGIN
    assert paper.readme_header() in "\n".join(readme)
