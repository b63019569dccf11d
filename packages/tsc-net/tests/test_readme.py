"""The README's Python quickstart runs, and its per-method table matches the committed results.json."""

from __future__ import annotations

from pathlib import Path

from iclr25.shared.results import Report
from iclr25.shared.testing import readme_namespace

PACKAGE = Path(__file__).resolve().parents[1]
README = (PACKAGE / "README.md").read_text()


def test_readme_quickstart_runs():
    readme_namespace(PACKAGE)


def test_readme_method_table_matches_results_json():
    m = Report.read(PACKAGE / "results" / "quick").metrics
    for key in ("cv", "cv_k20", "geodesic_exits", "tsc", "blind"):
        row = m[key]["all"]
        line = next(ln for ln in README.splitlines() if ln.startswith(f"| `{key}`"))
        assert f"{row['minFDE']:.2f}" in line and f"{100 * row['violation']:.2f}" in line, (key, line)
