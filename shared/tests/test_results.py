"""Claim/Report schema, atomic writes and run-folder protection."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from iclr25.shared.files import LEDGER
from iclr25.shared.results import (
    SCHEMA_VERSION,
    Claim,
    Report,
    atomic_write_json,
    atomic_write_text,
    claims_table,
    readme_block,
    save_figure,
)


def _report() -> Report:
    claims = [
        Claim(
            "coverage",
            "coverage near 1-alpha",
            paper=0.9,
            ours=np.float64(0.903),
            margin="|x-0.9|<=0.015",
            holds=True,
            gated=True,
        ),
        Claim("width", "narrower than ACI", paper="yes", ours=1.2, margin="<= 1.05x", holds=False, gated=False),
    ]
    return Report(
        paper="demo", scale="quick", claims=claims, metrics={"a": {"b": 1.5}}, throughput={"steps_per_s": 1e5}
    )


def test_report_round_trips_through_json(tmp_path: Path) -> None:
    report = _report()
    path = report.write(tmp_path / "run")
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["claims"][0]["ours"] == pytest.approx(0.903)
    assert isinstance(data["claims"][0]["ours"], float)  # numpy scalar converted
    back = Report.read(tmp_path / "run")
    assert back.claims == report.claims
    assert back.metrics == report.metrics
    assert (tmp_path / "run" / "report.md").read_text().startswith("# demo: quick reproduction")


def test_failed_gated_lists_only_gated_failures() -> None:
    report = _report()
    assert report.failed_gated == []
    report.claims[0].holds = False
    assert [c.name for c in report.failed_gated] == ["coverage"]
    assert report.claim("width").status == "FAILS (reported)"
    with pytest.raises(KeyError, match="no claim"):
        report.claim("missing")


def test_unknown_schema_version_is_rejected() -> None:
    data = _report().to_dict()
    data["schema_version"] = 999
    with pytest.raises(ValueError, match="schema version"):
        Report.from_dict(data)


def test_non_finite_numbers_become_strings(tmp_path: Path) -> None:
    path = atomic_write_json(tmp_path / "x.json", {"a": float("nan"), "b": np.arange(3)})
    assert json.loads(path.read_text()) == {"a": "nan", "b": [0, 1, 2]}


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "a.txt", "one")
    atomic_write_text(tmp_path / "a.txt", "two", overwrite=True)  # a file the project wrote, unchanged since
    assert (tmp_path / "a.txt").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.txt", LEDGER])


def test_atomic_writes_get_the_permissions_of_a_plain_open(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    previous = os.umask(0o022)
    try:
        (tmp_path / "plain.txt").write_text("x")
        atomic_write_text(tmp_path / "a.txt", "x")
        save_figure(plt.figure(), tmp_path / "f.png")
    finally:
        os.umask(previous)
    mode = stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
    assert mode == 0o644
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "f.png").stat().st_mode) == mode


def test_claims_table_and_readme_block() -> None:
    report = _report()
    table = claims_table(report.claims)
    assert table.splitlines()[2] == r"| coverage | 0.9 | 0.903 | \|x-0.9\|<=0.015 | holds (gated) |"
    block = readme_block(report)
    assert block.splitlines()[0].startswith("<!-- results:quick begin")
    assert table in block


def test_save_figure_writes_png(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "figs" / "line.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_claim_requires_a_name() -> None:
    with pytest.raises(ValueError, match="name"):
        Claim("", "x", None, 1.0, "", True, False)
