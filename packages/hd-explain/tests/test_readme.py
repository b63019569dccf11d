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
    rows = {
        "HD-Explain, RBF, h = dim x |": [("rectangular", "hd"), ("digits", "hd_dim_x"), ("hard", "hd_dim_x")],
        "HD-Explain, RBF, h = dim x + C": [("rectangular", "hd_dim_d"), ("digits", "hd"), ("hard", "hd")],
        "HD-Explain, IMQ |": [("rectangular", "hd_imq"), ("digits", "hd_imq"), ("hard", "hd_imq")],
        "HD-Explain, linear": [("digits", "hd_linear"), ("hard", "hd_linear")],
        "HD-Explain\\* (representation)": [("rectangular", "hd_star"), ("digits", "hd_star"), ("hard", "hd_star")],
        "Influence function": [("rectangular", "if"), ("digits", "if"), ("hard", "if")],
        "TracIn": [("rectangular", "tracin"), ("digits", "tracin"), ("hard", "tracin")],
        "Representer points": [("rectangular", "rps"), ("digits", "rps"), ("hard", "rps")],
        "RBF similarity in input space": [
            ("rectangular", "sim_input_rbf"),
            ("digits", "sim_input_rbf"),
            ("hard", "sim_input_rbf"),
        ],
    }
    for label, cells in rows.items():
        line = next(ln for ln in README.splitlines() if ln.startswith("| " + label))
        for section, key in cells:
            v = (m["digits"]["hard_noise"] if section == "hard" else m[section])["mean"][key]
            assert f"{v['hit']:.3f} / {v['coverage']:.3f}" in line, (label, section, key, line)
    rec = m["mislabel"]["recall_at_flipped"]["realistic"]
    for name, key in (("HD-Explain", "hd"), ("HD-Explain\\*", "hd_star"), ("IF", "if"), ("RPS", "rps")):
        assert f"{name} {rec[key]:.3f}" in README, (name, rec[key])
