"""Claims as data across the packages: every package's declared claims, evaluated again on its committed quick
metrics, are its committed claims (nothing measured changed when the claims left the code), and `iclr25 claims`
lists, re-evaluates, checks and writes them, with one-line errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclr25.shared import cli
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.paper import discover_papers
from iclr25.shared.results import Report

ROOT = Path(__file__).resolve().parents[1]
SLUGS = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
EXAMPLE = "fair-conformal-sets"  # a package whose quick run takes seconds


@pytest.mark.parametrize("slug", SLUGS)
def test_committed_claims_are_the_declared_claims(slug: str) -> None:
    paper = discover_papers()[slug]
    report = Report.read(ROOT / "packages" / slug / "results" / "quick")
    config = config_of(paper.load_presets(), report.scale, report.config)
    evaluated = evaluate(paper.load_claims()(config), report.metrics, config, throughput=report.throughput)
    assert differences(report.claims, evaluated) == []


def test_claims_lists_the_declarations(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["claims", EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert "| claim | gated | paper's value | where in the paper | reads | margin |" in out
    assert (
        "| marginal_coverage_lac | yes | n/a | - | `synthetic.lac.marginal.coverage` | 0.89 <= ours <= 0.915 |" in out
    )


def test_claims_check_passes_on_the_committed_results_and_fails_on_changed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    committed = ROOT / "packages" / EXAMPLE / "results" / "quick" / "results.json"
    assert cli.main(["claims", EXAMPLE, "--results", str(committed), "--check"]) == 0
    assert "identical to" in capsys.readouterr().out
    # a stored claim that its metrics do not support (as if a threshold had been edited by hand): --check fails
    data = json.loads(committed.read_text())
    data["metrics"]["synthetic"]["lac"]["marginal"]["coverage"] = 0.5
    tampered = tmp_path / "results.json"
    tampered.write_text(json.dumps(data))
    assert cli.main(["claims", EXAMPLE, "--results", str(tampered), "--check"]) == 1
    captured = capsys.readouterr()
    assert "DIFFERENT from" in captured.out
    assert (
        "marginal_coverage_lac: ours" in captured.err and "marginal_coverage_lac: holds True -> False" in captured.err
    )


def test_claims_out_writes_results_that_compare_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    committed = ROOT / "packages" / EXAMPLE / "results" / "quick"
    out = tmp_path / "reevaluated"
    assert cli.main(["claims", EXAMPLE, "--results", str(committed), "--out", str(out)]) == 0
    assert Report.read(out).claims[0].source == "" and Report.read(out).metrics == Report.read(committed).metrics
    capsys.readouterr()
    assert cli.main(["compare", str(out), str(committed)]) == 0
    assert "Changed claims" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["claims", EXAMPLE, "--check"], "--check and --out need --results"),
        (["claims", EXAMPLE, "--scale", "huge"], "has no scale 'huge'"),
        (["claims", "no-such-paper"], "no-such-paper"),
        (["claims", EXAMPLE, "--results", "packages/dist-loss/results/quick"], "not 'fair-conformal-sets'"),
        (["claims", EXAMPLE, "--results", "does/not/exist.json"], "does/not/exist.json"),
    ],
)
def test_bad_input_is_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(ROOT / a) if a.startswith("packages/") else a for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_claims_out_never_replaces_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "mine"
    existing.mkdir()
    (existing / "notes.txt").write_text("keep me")
    committed = ROOT / "packages" / EXAMPLE / "results" / "quick"
    assert cli.main(["claims", EXAMPLE, "--results", str(committed), "--out", str(existing)]) == 2
    assert (existing / "notes.txt").read_text() == "keep me" and sorted(p.name for p in existing.iterdir()) == [
        "notes.txt"
    ]
    assert capsys.readouterr().err.count("\n") == 1


def test_compare_lists_a_package_s_declared_timings_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """etd-exploration declares the intrinsic reward's share of loop time a timing (its claims module's TIMINGS):
    a rerun on another machine that moves it is no drift, while a moved value is."""
    committed = ROOT / "packages" / "etd-exploration" / "results" / "quick"
    data = json.loads((committed / "results.json").read_text())
    ppo = data["metrics"]["ppo"]["FourRooms-rewardfree"]["etd"]
    ppo["intrinsic_fraction"] *= 1.1
    (tmp_path / "timing").mkdir()
    (tmp_path / "timing" / "results.json").write_text(json.dumps(data))
    assert cli.main(["compare", str(tmp_path / "timing"), str(committed)]) == 0
    ppo["late_unique_cells"] += 0.5
    (tmp_path / "value").mkdir()
    (tmp_path / "value" / "results.json").write_text(json.dumps(data))
    assert cli.main(["compare", str(tmp_path / "value"), str(committed)]) == 1
    assert "late_unique_cells" in capsys.readouterr().err
