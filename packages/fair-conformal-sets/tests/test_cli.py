"""The `iclr25-fair-conformal-sets` CLI: help, sets, analyze-study, reproduce, bad input."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from iclr25.fair_conformal_sets import data
from iclr25.fair_conformal_sets.cli import main
from iclr25.shared.results import Report


@pytest.fixture
def outputs_npz(tmp_path):
    d = data.synthetic(2000, np.random.default_rng(0))
    path = tmp_path / "outputs.npz"
    np.savez(path, logits=d.logits, labels=d.labels, groups=d.groups)
    return path


def test_help_is_light():
    code = "import sys; from iclr25.fair_conformal_sets.cli import main; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0


@pytest.mark.parametrize("mode", ["marginal", "mondrian", "ess"])
def test_sets_verb(outputs_npz, tmp_path, capsys, mode):
    out = tmp_path / mode
    args = ["sets", "--npz", str(outputs_npz), "--score", "aps", "--mode", mode, "--alpha", "0.1", "--out", str(out)]
    assert main(args) == 0
    report = json.loads((out / "report.json").read_text())
    assert 0.85 < report["before_filling"]["overall"]["coverage"] < 0.95
    assert report["n_cal"] == 1000 and report["n_test"] == 1000
    with np.load(out / "sets.npz") as f:
        assert f["sets"].shape == (1000, 10) and f["sets"].dtype == bool
    assert "simulated Delta" in capsys.readouterr().out
    assert main(args) == 2  # an existing run folder is never replaced silently
    assert main([*args, "--overwrite"]) == 0


def test_sets_with_separate_calibration_and_filling(outputs_npz, tmp_path):
    out = tmp_path / "sep"
    args = ["sets", "--npz", str(outputs_npz), "--cal-npz", str(outputs_npz), "--mode", "mondrian"]
    assert main([*args, "--fill-empty", "true", "--out", str(out)]) == 0
    with np.load(out / "sets.npz") as f:
        assert f["sets"].any(axis=1).all() and len(f["index"]) == 2000


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mode", "classwise"], "mode must be one of"),
        (["--score", "thr"], "score must be one of"),
        (["--alpha", "1.5"], "alpha must lie in"),
        (["--cal-fraction", "0.0001"], "cal_fraction"),
        (["--mode", "ess", "--smoothing", "true"], "smoothing"),
        (["--k-reg", "x"], "k_reg expects int"),
    ],
)
def test_sets_bad_input_is_one_line(outputs_npz, tmp_path, capsys, extra, message):
    code = main(["sets", "--npz", str(outputs_npz), *extra, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err


def test_sets_missing_and_foreign_files(tmp_path, capsys):
    assert main(["sets", "--npz", str(tmp_path / "none.npz"), "--out", str(tmp_path / "a")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "x.npz").write_bytes(b"not an archive")
    assert main(["sets", "--npz", str(tmp_path / "x.npz"), "--out", str(tmp_path / "b")]) == 2
    assert main(["sets", "--out", str(tmp_path / "c")]) == 2
    assert "--npz is required" in capsys.readouterr().err


def test_analyze_study(tmp_path, capsys):
    header = ["experiment", "participant_id", "prompt_idx", "response", "label", "label_text", "group",
              "group_text", "top1", "avgk_set", "conformal_marginal_set", "conformal_conditional_set"]  # fmt: skip
    rows = [
        [t, p, i, (i % 3) if p % 2 else 0, i % 3, "x", f"{i % 2}.0", "g", 0, "0 1 ", "0 ", "0 1 2 "]
        for p, t in enumerate(["control", "control", "marginal", "marginal", "conditional", "conditional"])
        for i in range(6)
    ]
    with (tmp_path / "individual_results.csv").open("w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    with (tmp_path / "results.csv").open("w", newline="") as f:
        csv.writer(f).writerows([["", "participant_id", "experiment", "num_correct", "time_taken", "Age", "Sex",
                                  "Ethnicity"], [0, 0, "control", 3, 1, "DATA_EXPIRED", "DATA_EXPIRED", "x"]])  # fmt: skip
    out = tmp_path / "run"
    assert main(["analyze-study", "--dir", str(tmp_path), "--task", "facet", "--n-boot", "50", "--out", str(out)]) == 0
    result = json.loads((out / "analysis.json").read_text())
    assert set(result["treatments"]) == {"control", "marginal", "conditional"}
    assert "Delta" in capsys.readouterr().out
    assert main(["analyze-study", "--dir", str(tmp_path), "--task", "mnist"]) == 2
    assert "task must be one of" in capsys.readouterr().err


def test_reproduce_small_override(tmp_path, capsys):
    out = tmp_path / "rep"
    overrides = ["seeds=1", "n_test=2000", "validity_reps=5", "mc_trials=1000", "participants=3", "digits=false"]
    code = main(["reproduce", "--scale", "quick", "--seed", "2", "--out", str(out), *overrides])
    report = Report.read(out)
    assert code == (1 if report.failed_gated else 0)
    assert report.config["seeds"] == 1 and report.figures and (out / report.figures[0]).stat().st_size > 0
    assert report.command.startswith("iclr25-fair-conformal-sets reproduce --scale quick --seed 2 ")
    assert {"seeds=1", "validity_reps=5", "digits=False"} <= set(report.command.split())
    assert {c.name for c in report.claims} >= {"marginal_coverage_lac", "delta_ess_below_marginal_aps"}
    assert "results written to" in capsys.readouterr().out
    assert main(["reproduce", "--out", str(tmp_path / "x"), "scores=thr"]) == 2
    assert main(["reproduce", "--out", str(tmp_path / "y"), "seeds=0"]) == 2
    assert main(["reproduce", "--out", str(tmp_path / "z"), "bogus=1"]) == 2
    assert main(["reproduce", "--out", str(tmp_path / "w"), f"npz_dir={tmp_path}"]) == 2
    assert main(["reproduce", "--out", str(tmp_path / "v"), f"fcpd_dir={tmp_path / 'none'}"]) == 2
    err = capsys.readouterr().err
    assert "holds none of bios.npz" in err and "is not a folder" in err
