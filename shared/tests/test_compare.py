"""`iclr25 compare` and `iclr25 history` on generated results: identical, drifted, failing, missing, malformed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclr25.shared import cli
from iclr25.shared.compare import DRIFTED, FAILS, IDENTICAL, MISSING, NEW, NOISE, TIMING, WITHIN, compare
from iclr25.shared.results import Claim, Report


def _report(coverage: float = 0.9, holds: bool = True, ratio: float = 1.05, extra: bool = False, **kw) -> Report:
    claims = [
        Claim("coverage", "near 0.9", paper=0.9, ours=coverage, margin="±0.01", holds=holds, gated=True),
        Claim("ratio", "narrower", paper=None, ours=ratio, margin="<= 1", holds=ratio <= 1, gated=False),
    ]
    if extra:
        claims.append(Claim("extra", "new claim", paper=None, ours=1.0, margin="", holds=True, gated=False))
    metrics = {"widths": [1.0, 2.0, 3.0], "train": {"loss": 0.5, "seconds": 10.0}, "device": "cpu"}
    metrics.update(kw)
    return Report(
        paper="demo", scale="quick", claims=claims, metrics=metrics, throughput={"samples_per_s": 100.0}, runtime_s=20.0
    )


def _status(result, name: str) -> str:
    return next(r.status for r in result.rows if r.name == name)


def test_identical_runs_pass_and_timing_never_fails() -> None:
    slow = _report()
    slow.throughput = {"samples_per_s": 10.0}
    slow.runtime_s = 200.0
    result = compare(slow, _report())
    assert not result.failed
    assert _status(result, "coverage") == IDENTICAL and _status(result, "widths") == IDENTICAL
    rows = {r.name: r for r in result.rows}
    assert (
        rows["throughput.samples_per_s"].status == TIMING and "(slower)" in rows["throughput.samples_per_s"].difference
    )
    assert rows["train.seconds"].status == TIMING and rows["runtime_s"].difference == "x10 (slower)"


def test_drift_is_caught_exactly_unless_a_tolerance_is_stated() -> None:
    result = compare(_report(coverage=0.9001), _report())
    assert _status(result, "coverage") == DRIFTED and [r.name for r in result.failed] == ["coverage"]
    assert _status(compare(_report(coverage=0.9001), _report(), tolerances={"coverage": 1e-3}), "coverage") == WITHIN
    stated = _report(coverage=0.9001)
    stated.claims[0].tolerance = 1e-3
    assert not compare(stated, _report()).failed
    lists = compare(_report(widths=[1.0, 2.0, 3.5]), _report())
    assert _status(lists, "widths") == DRIFTED and _status(lists, "device") == IDENTICAL


def test_a_failing_gated_claim_and_a_missing_claim_fail() -> None:
    assert _status(compare(_report(holds=False), _report()), "coverage") == FAILS
    gone = _report()
    gone.claims = gone.claims[:1]
    assert _status(compare(gone, _report()), "ratio") == MISSING
    assert _status(compare(_report(extra=True), _report()), "extra") == NEW
    assert not compare(_report(extra=True), _report()).failed
    with pytest.raises(ValueError, match="baseline of 'other'"):
        compare(_report(), Report(paper="other", scale="quick"))


def _write(folder: Path, report: Report) -> Path:
    report.write(folder)
    return folder


def test_cli_exit_codes_json_summary_and_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path / "base", _report())
    same = _write(tmp_path / "same", _report())
    drift = _write(tmp_path / "drift", _report(coverage=0.95))
    summary, history = tmp_path / "summary.md", tmp_path / "history.jsonl"
    assert (
        cli.main(
            [
                "compare",
                str(same),
                str(base),
                "--json",
                str(tmp_path / "c.json"),
                "--summary",
                str(summary),
                "--history",
                str(history),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "c.json").read_text())["passed"] is True
    assert "demo (quick): no drift" in summary.read_text()
    assert cli.main(["compare", str(drift), str(base), "--history", str(history)]) == 1
    err = capsys.readouterr().err
    assert "claim 'coverage' drifted" in err
    assert cli.main(["compare", str(drift), str(base), "--tolerance", "coverage=0.1"]) == 0
    lines = history.read_text().splitlines()
    assert [json.loads(line)["claims"]["coverage"] for line in lines] == [0.9, 0.95]
    png = tmp_path / "h.png"
    assert cli.main(["history", str(history), "--paper", "demo", "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["history", str(history), "--paper", "demo", "--figure", "nosuch", "--out", str(png)]) == 2
    assert cli.main(["history", str(history), "--paper", "other", "--out", str(png)]) == 2


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        (lambda p: None, "holds no results.json"),
        (lambda p: (p / "results.json").write_text("{not json"), "is not a results.json"),
        (lambda p: (p / "results.json").write_text('{"schema_version": 99}'), "is not a results.json"),
        (lambda p: (p / "results.json").write_text('{"schema_version": 1, "paper": "x"}'), "is not a results.json"),
    ],
)
def test_malformed_files_are_one_line_exit_2(setup, needle: str, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    setup(bad)
    base = _write(tmp_path / "base", _report())
    assert cli.main(["compare", str(bad), str(base)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_no_baseline_needs_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _write(tmp_path / "run", _report())
    assert cli.main(["compare", str(run)]) == 2
    assert "--allow-missing-baseline" in capsys.readouterr().err
    assert cli.main(["compare", str(run), "--allow-missing-baseline"]) == 0
    failing = _write(tmp_path / "failing", _report(holds=False))
    assert cli.main(["compare", str(failing), "--allow-missing-baseline"]) == 1
    assert cli.main(["compare", str(run), str(run), "--tolerance", "coverage"]) == 2
    (tmp_path / "h.jsonl").write_text("{}\nnot json\n")
    assert cli.main(["history", str(tmp_path / "h.jsonl"), "--paper", "demo", "--out", str(tmp_path / "x.png")]) == 2


def test_float_noise_is_counted_apart_from_change() -> None:
    """Last-digit differences (another machine's kernels) are float noise, summarised in one line; a change just
    beyond a relative 1e-9 is drift; timings are listed apart and never drift."""
    noisy = _report(coverage=0.9 * (1 + 3e-16), widths=[1.0, 2.0 + 4e-16, 3.0], near_zero=1e-13)
    result = compare(noisy, _report(near_zero=0.0))
    assert _status(result, "coverage") == NOISE and _status(result, "widths") == NOISE
    assert _status(result, "near_zero") == NOISE and not result.failed
    text = result.to_markdown()
    assert "3 values within float noise" in text and "Changed claims" not in text and "Changed metrics" not in text
    assert text.index("**Timings** (never drift)") > 0 and "| runtime_s |" in text

    moved = compare(_report(coverage=0.9 * (1 + 1e-8), ratio=1.2, widths=[1.0, 2.0, 3.3]), _report())
    assert _status(moved, "coverage") == DRIFTED and _status(moved, "widths") == DRIFTED
    text = moved.to_markdown()
    assert text.index("**Changed claims**") < text.index("**Changed metrics**") < text.index("**Timings**")
    assert "relative" in next(r.difference for r in moved.rows if r.name == "ratio")
    assert "| ratio | 1.05 | 1.2 | +0.15 (+0.125 relative) | drifted |" in text


def test_a_package_declared_metric_tolerance_applies() -> None:
    """A metric the package declares a measured tolerance for moves within it without drifting; beyond it, drifts."""
    declared = _report(widths=[1.0, 2.0, 3.04])
    declared.tolerances = {"widths": 0.05}
    assert _status(compare(declared, _report()), "widths") == WITHIN
    baseline = _report()
    baseline.tolerances = {"widths": 0.05}  # the committed results declare it too
    assert _status(compare(_report(widths=[1.0, 2.0, 3.04]), baseline), "widths") == WITHIN
    assert _status(compare(_report(widths=[1.0, 2.0, 3.2]), baseline), "widths") == DRIFTED


def test_a_timing_claim_is_a_ratio_never_drift_unless_a_gate_fails() -> None:
    fast = _report()
    fast.claims.append(Claim("step_speedup", "faster", paper=2.0, ours=3.1, margin=">= 1", holds=True, gated=True))
    base = _report()
    base.claims.append(Claim("step_speedup", "faster", paper=2.0, ours=2.4, margin=">= 1", holds=True, gated=True))
    row = next(r for r in compare(fast, base).rows if r.name == "step_speedup")
    assert row.kind == "timing" and row.status == TIMING and not compare(fast, base).failed
    fast.claims[-1].holds = False
    assert _status(compare(fast, base), "step_speedup") == FAILS


def test_a_comparison_notes_when_either_side_used_native_kernels() -> None:
    portable, native = _report(), _report()
    portable.environment = {"kernels": {"mode": "portable"}}
    native.environment = {"kernels": {"mode": "native"}}
    twin = _report()
    twin.environment = {"kernels": {"mode": "portable"}}
    assert compare(portable, twin).notes == []
    note = compare(native, portable).notes
    assert len(note) == 1 and "baseline used portable" in note[0] and "this run native" in note[0]
    assert note[0] in compare(native, portable).to_markdown()
    assert "not recorded" in compare(portable, _report()).notes[0]  # a baseline from before kernels were recorded


@pytest.mark.parametrize(
    "name", ["timing.total_s", "timing_s.mdn", "maze.clean.train_s", "summary.seq/train_s", "seeds.0.timing.generate_s"]
)
def test_seconds_and_timing_groups_are_timings_never_drift(name: str) -> None:
    old, new = _report(**{name: 4.3}), _report(**{name: 1.8})
    result = compare(new, old)
    assert _status(result, name) == TIMING and not result.failed


@pytest.mark.parametrize("name", ["train.loss", "n_steps", "rho_s_pairs", "timeless"])
def test_other_metrics_still_drift(name: str) -> None:
    result = compare(_report(**{name: 1.8}), _report(**{name: 4.3}))
    assert _status(result, name) == DRIFTED and result.failed


@pytest.mark.parametrize(
    ("name", "timing"),
    [
        ("throughput.tokens_per_s", True),
        ("timing.total_s", True),
        ("train_s_per_seed.patch", True),
        ("wall_ratio_per_seed", True),
        ("cpu_ratio_per_seed", True),
        ("equal_compute_cpu_time", True),
        ("step_ms", True),
        ("patch_step_speedup", True),
        ("val_nll_per_seed.patch", False),  # "per_s" of "per seed" is not "per second"
        ("n_timesteps", False),
        ("grid.msa_depth", False),
        ("curves.0.fps", True),
        ("fpsx", False),
        ("coverage.eci", False),
    ],
)
def test_timings_are_told_from_metrics_by_their_names(name: str, timing: bool) -> None:
    from iclr25.shared.compare import _is_timing

    assert _is_timing(name) is timing


def test_records_in_lists_are_compared_leaf_by_leaf_and_declared_timings_never_drift() -> None:
    """Per-seed records: their timings are told apart from their values; a package's TIMINGS patterns hold too."""
    history = [{"epoch": 0, "loss": 0.5, "fps": 300.0}, {"epoch": 1, "loss": 0.25, "fps": 310.0}]
    old = _report(**{"seeds": [{"seed": 0, "mse": 0.37, "train_s": 306.8, "history": history}]})
    old.metrics["ppo"] = {"etd": {"intrinsic_fraction": 0.64, "coverage": [[1.0, 2.0], [3.0, 4.0]]}}
    new = _report(**{"seeds": [{"seed": 0, "mse": 0.37, "train_s": 310.7, "history": [
        {**history[0], "fps": 290.0}, {**history[1], "fps": 320.0}
    ]}]})  # fmt: skip
    new.metrics["ppo"] = {"etd": {"intrinsic_fraction": 0.63, "coverage": [[1.0, 2.0], [3.0, 4.0]]}}
    drift = compare(new, old)
    assert [r.name for r in drift.failed] == ["ppo.etd.intrinsic_fraction"]  # no pattern declared: a drifted value
    result = compare(new, old, timings=("ppo.*.intrinsic_fraction",))
    assert not result.failed
    assert _status(result, "seeds.0.train_s") == TIMING and _status(result, "seeds.0.history.1.fps") == TIMING
    assert _status(result, "seeds.0.history.1.loss") == IDENTICAL and _status(result, "seeds.0.mse") == IDENTICAL
    assert _status(result, "ppo.etd.coverage") == IDENTICAL  # a matrix of numbers stays one value
    new.metrics["seeds"][0]["history"][1]["loss"] = 0.3  # a real change inside a record is still drift
    assert [r.name for r in compare(new, old, timings=("ppo.*.intrinsic_fraction",)).failed] == [
        "seeds.0.history.1.loss"
    ]
