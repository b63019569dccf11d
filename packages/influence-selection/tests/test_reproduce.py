"""The claim gate on the ci preset, and proof that it fails on deliberately broken variants of FI."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from iclr25.influence_selection import experiments, reproduce
from iclr25.influence_selection import fi as F
from iclr25.influence_selection.config import PRESETS

GATED = {
    "linear_fi_minus_iv_b20_pp",
    "linear_fi_wins_b20",
    "linear_fi_near_untrimmed_b20_pp",
    "noise_fi_top10_flipped",
    "noise_fi_bottom10_flipped",
    "al_auc_fi_minus_iv",
    "al_auc_fi_minus_random",
}


@pytest.mark.claims
def test_gated_claims_hold(tmp_path: Path) -> None:
    t = time.process_time()
    report = reproduce.run("ci", tmp_path / "run")
    assert {c.name for c in report.claims if c.gated} == GATED
    assert report.failed_gated == [], [(c.name, c.ours) for c in report.failed_gated]
    al = report.metrics["al"]
    assert all(al[s]["duplicates"] == 0 and al[s]["grew_by_acquire"] for s in ("fi", "iv", "random"))
    print(f"ci gate: {time.process_time() - t:.1f} s of CPU")


def _small(**kw):
    base = dict(linear_seeds=10, noise_seeds=10, al_seeds=2)
    return dataclasses.replace(PRESETS["ci"], **{**base, **kw})


def test_the_noise_gate_fails_without_the_1_over_n_in_g(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping 1/n from J inside G (the pitfall of spec 9) ranks the flipped points last."""
    real = F.fi_util

    def broken(*a, **k):
        return real(*a, **{**k, "metric_form": "drop_n"})

    monkeypatch.setattr(experiments, "fi_util", broken)
    report = reproduce.run("ci", tmp_path / "run", config=_small(al_rounds=1))
    failed = {c.name for c in report.failed_gated}
    assert "noise_fi_top10_flipped" in failed


def test_the_al_gate_fails_when_fi_picks_the_smallest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = F.fi_active
    monkeypatch.setattr(F, "fi_active", lambda *a, **k: -real(*a, **k))
    report = reproduce.run("ci", tmp_path / "run", config=_small())
    failed = {c.name for c in report.failed_gated}
    assert {"al_auc_fi_minus_iv", "al_auc_fi_minus_random"} <= failed
    assert "noise_fi_top10_flipped" not in failed  # the trimming part is untouched by this bug


def test_claims_and_figure_from_the_committed_quick_metrics(tmp_path: Path) -> None:
    """claims() re-judges the committed quick metrics identically; image-AL metrics add reported claims."""
    from iclr25.shared.results import Report

    committed = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = PRESETS["quick"]
    again = reproduce.claims(committed.metrics, cfg)
    assert [(c.name, c.holds) for c in again] == [(c.name, c.holds) for c in committed.claims]
    fake = {"strategies": ["fi", "random"], "data": "x", "fi": {"auc": 0.9}, "random": {"auc": 0.95}}
    extra = reproduce.claims({**committed.metrics, "image_al": fake}, cfg)
    img = [c for c in extra if c.name.startswith("image_al")]
    assert [(c.name, c.holds, c.gated) for c in img] == [("image_al_auc_fi_minus_random", False, False)]
    assert reproduce.plot(committed.metrics, cfg, tmp_path) == ["summary.png"]
    assert (tmp_path / "summary.png").stat().st_size > 1000
