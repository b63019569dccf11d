"""The head-initialisation study: the flat backward half-line (hand-computed) and a tiny run of the study."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iclr25.dist_loss.config import Config
from iclr25.dist_loss.headinit import head_init_study, loss_along_line, main, summarise


def test_total_loss_is_flat_from_the_reversed_predictor_to_the_mean_predictor() -> None:
    """One batch of symmetric labels, g = y, q = sort(y), L1 base, lam = 1 (hard sort: gaps <= 1/eps). With
    m = mean|y - mean y|, the sample term is (1 - t) m and the distribution term (1 - |t|) m for |t| <= 1: their sum
    is 2m on the whole backward half [-1, 0] and falls as 2(1 - t) m on the forward half."""
    y = np.array([10.0, 20.0, 25.0, 30.0, 40.0, 45.0, 50.0, 60.0])  # symmetric about 35
    ts = np.linspace(-1, 1, 9)
    line = loss_along_line(y, y, np.sort(y), ts, lam=1.0, eps=1e-3)
    m = np.abs(y - y.mean()).mean()
    np.testing.assert_allclose(line["sample"], (1 - ts) * m, atol=1e-9)
    np.testing.assert_allclose(line["dist"], (1 - np.abs(ts)) * m, atol=1e-9)
    total = np.add(line["sample"], line["dist"])
    np.testing.assert_allclose(total[ts <= 0], 2 * m, atol=1e-9)  # flat: no push back through t = 0
    np.testing.assert_allclose(total[ts >= 0], 2 * (1 - ts[ts >= 0]) * m, atol=1e-9)
    with pytest.raises(ValueError, match="fewer than"):
        loss_along_line(y[:4], y[:4], np.sort(y), ts)


def test_tiny_study_pairs_l1_and_dist_heads(tmp_path: Path) -> None:
    config = Config(epochs_stage1=1, epochs_stage2=1)
    rows, line = head_init_study(config, (0,), (0, 1), long_epochs=2, long_lr_steps=(1,))
    assert len(rows) == 2 * 4 * 2  # head seeds x (three inits + official at its schedule) x (L1, Dist)
    summary = summarise(rows)
    assert set(summary) == {"zero@1", "default@1", "official@1", "official@2"}
    assert all(entry["n"] == 2 and 0 <= entry["failure_rate"] <= 1 for entry in summary.values())
    corr = {(r["init"], r["head_seed"]): r["init_corr"] for r in summary_rows(summary)}
    assert corr[("zero", 0)] == 0.0  # constant initial predictions
    assert corr[("default", 1)] == corr[("official", 1)] != 0.0  # same random weights, different bias
    assert len(line["t"]) == len(line["sample"]) == len(line["dist"]) == 61


def summary_rows(summary: dict) -> list[dict]:
    """Every run of a summary with its init."""
    return [{"init": e["init"], **r} for e in summary.values() for r in e["runs"]]


def test_cli_writes_results_and_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study"
    argv = ["--out", str(out), "--head-seeds", "1", "--long-epochs", "0", "epochs_stage1=1", "epochs_stage2=1"]
    assert main(argv) == 0
    saved = json.loads((out / "summary.json").read_text())
    assert set(saved["summary"]) == {"zero@1", "default@1", "official@1"}
    assert saved["meta"]["command"].endswith("epochs_stage2=1") and (out / "head_init.png").is_file()
    assert len((out / "runs.jsonl").read_text().splitlines()) == 6
    capsys.readouterr()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text("my notes")
    for bad, message in [
        (argv, "pass --overwrite"),
        (["--out", str(mine), "--head-seeds", "1", "--overwrite"], "no iclr25 run made"),
        (["--out", str(tmp_path / "x"), "--data-seeds", "a"], "comma-separated integers"),
        (["--out", str(tmp_path / "x"), "lr=-1"], "lr must be > 0"),
        (["--out", str(tmp_path / "x"), "--long-inits", "zero,ones"], "--long-inits takes"),
    ]:
        assert main(bad) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert (mine / "summary.json").read_text() == "my notes"
    assert main([*argv, "--overwrite"]) == 0  # an earlier study's run folder is replaced
    assert json.loads((out / ".iclr25-run.json").read_text())["files"] == [
        "head_init.png",
        "runs.jsonl",
        "summary.json",
    ]
