"""The claim gate: the quick preset's gated claims hold, and fail on deliberately broken variants."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from iclr25.fair_conformal_sets import calibrate, claims, experiments, reproduce
from iclr25.fair_conformal_sets.config import PRESETS
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.results import Report

GATED = {
    "marginal_coverage_lac", "marginal_coverage_aps", "mondrian_coverage_lac_g0", "mondrian_coverage_lac_g1",
    "mondrian_coverage_aps_g0", "mondrian_coverage_aps_g1", "ess_size_gap_lac", "ess_size_gap_worst_seed_lac",
    "ess_coverage_lac", "ess_size_gap_aps", "ess_size_gap_worst_seed_aps", "ess_coverage_aps",
    "ess_two_split_validity", "delta_mondrian_above_marginal_lac", "delta_ess_below_marginal_lac",
    "delta_ess_below_marginal_aps",
}  # fmt: skip


def _claims(**changes):
    cfg = replace(PRESETS["quick"], digits=False, **changes)
    m = experiments.measure(cfg)
    return {c.name: c for c in evaluate(claims.declared(cfg), m, cfg)}, m


@pytest.mark.claims
def test_quick_preset_gated_claims(tmp_path):
    start = time.perf_counter()
    report = reproduce.run("quick", tmp_path / "quick")
    elapsed = time.perf_counter() - start
    gated = {c.name: c for c in report.claims if c.gated}
    assert set(gated) == GATED
    for name, claim in gated.items():
        assert claim.holds, f"{name}: ours = {claim.ours} ({claim.margin})"
    # the margins, restated from the issue, so a change in claims() cannot loosen them silently
    assert 0.89 <= gated["marginal_coverage_lac"].ours <= 0.915
    assert gated["ess_size_gap_lac"].ours <= 0.08 and gated["ess_size_gap_worst_seed_aps"].ours <= 0.2
    assert gated["ess_two_split_validity"].ours >= 0.895
    assert gated["delta_mondrian_above_marginal_lac"].ours >= 0.03
    assert gated["delta_ess_below_marginal_lac"].ours >= 0.03 and gated["delta_ess_below_marginal_aps"].ours >= 0.05
    assert report.throughput["set_items_per_s"] > 0
    assert elapsed < 120


@pytest.mark.claims
def test_gates_fail_when_the_quantile_rank_is_wrong(monkeypatch):
    """An off-by-alpha rank rule (the (1 - 1.5 alpha) quantile) must break every coverage gate."""
    true_rank = calibrate.conformal_rank
    monkeypatch.setattr(calibrate, "conformal_rank", lambda n, alpha: true_rank(n, 1.5 * alpha))
    claims, _ = _claims(validity_reps=100, mc_trials=1000, participants=2, n_boot=10)
    for name in ("marginal_coverage_lac", "mondrian_coverage_lac_g0", "ess_coverage_aps", "ess_two_split_validity"):
        assert not claims[name].holds, name


@pytest.mark.claims
def test_gates_fail_when_ess_is_group_blind(monkeypatch):
    """ESS that ignores the group (one pooled size curve) is just a marginal threshold: the size gate and the
    Delta gates must fail."""
    ess = calibrate.equalized_set_size

    def blind(S_cal, y_cal, g_cal, S_test, g_test, alpha, **kw):
        return ess(S_cal, y_cal, np.zeros_like(g_cal), S_test, np.zeros_like(g_test), alpha, **kw)

    monkeypatch.setattr(calibrate, "equalized_set_size", blind)
    claims, _ = _claims(validity_reps=10, mc_trials=1000, participants=2, n_boot=10)
    for name in (
        "ess_size_gap_lac",
        "ess_size_gap_aps",
        "delta_ess_below_marginal_lac",
        "delta_ess_below_marginal_aps",
    ):
        assert not claims[name].holds, name


@pytest.mark.claims
def test_gates_fail_when_mondrian_pools_groups(monkeypatch):
    """Mondrian that pools the groups is marginal CP: per-group coverage and Delta_Mondrian gates must fail."""
    monkeypatch.setattr(calibrate, "mondrian", lambda s, gc, S, gt, alpha, **kw: calibrate.marginal(s, S, alpha))
    claims, _ = _claims(validity_reps=10, mc_trials=1000, participants=2, n_boot=10)
    for name in ("mondrian_coverage_lac_g0", "mondrian_coverage_lac_g1", "delta_mondrian_above_marginal_lac"):
        assert not claims[name].holds, name


def test_real_task_outputs_and_study_data(tmp_path):
    """The full-scale path on stand-in files: model outputs per task (.npz) and a tiny study folder."""
    import csv

    from iclr25.fair_conformal_sets import data

    rng = np.random.default_rng(0)
    for name, n, K, G in (("bios", 17_500, 10, 2), ("facet", 6000, 20, 4), ("ravdess", 1440, 8, 2)):
        d = data.synthetic(n, rng, K=K, strengths=tuple(np.linspace(3.5, 2.0, G)))
        np.savez(tmp_path / f"{name}.npz", logits=d.logits, labels=d.labels, groups=d.groups)
    study = tmp_path / "study" / "ravdess"
    study.mkdir(parents=True)
    header = ["experiment", "participant_id", "prompt_idx", "response", "label", "label_text", "group",
              "group_text", "top1", "avgk_set", "conformal_marginal_set", "conformal_conditional_set"]  # fmt: skip
    rows = [[t, p, i, i % 3 if (p + i) % 4 else 0, i % 3, "x", f"{i % 2}.0", "g", 0, "0 1 ", "0 ", "0 1 2 "]
            for p, t in enumerate(["control", "marginal", "conditional"] * 3) for i in range(8)]  # fmt: skip
    with (study / "individual_results.csv").open("w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    with (study / "results.csv").open("w", newline="") as f:
        csv.writer(f).writerows([["", "participant_id", "experiment", "num_correct"], [0, 0, "control", 31]])
    cfg = replace(
        PRESETS["full"], seeds=1, n_test=2000, validity_reps=5, mc_trials=1000, participants=2, n_boot=20,
        digits=False, hpo_trials=3, npz_dir=str(tmp_path), fcpd_dir=str(tmp_path / "study"),
    )  # fmt: skip
    m = experiments.measure(cfg)
    assert set(m["real_tasks"]) == {"bios", "facet", "ravdess"}
    facet = m["real_tasks"]["facet"]
    assert facet["n"] == [4000, 1000, 1000] and len(facet["mondrian"]["coverage_g"]) == 4
    assert m["real_tasks"]["bios"]["n"] == [10_000, 5000, 2000] and m["real_tasks"]["bios"]["score"] == "saps"
    assert 0.85 < m["real_tasks"]["bios"]["marginal"]["coverage"] < 0.95
    assert set(m["fcpd"]) == {"ravdess"} and "conditional" in m["fcpd"]["ravdess"]["impact"]
    names = {c.name for c in evaluate(claims.declared(cfg), m, cfg)}
    assert {"fcpd_ravdess_treatment_accuracy", "fcpd_ravdess_delta_conditional_above_marginal"} <= names


def test_fcpd_accuracy_claim_tolerances(tmp_path):
    """BiosBias is compared to 1e-4 (exact counts), FACET to the spec's 3 decimals."""
    cfg = replace(PRESETS["quick"], fcpd_dir=str(tmp_path))  # declares the released-responses claims
    m = experiments.measure(replace(cfg, fcpd_dir="", seeds=1, n_test=500, validity_reps=2, mc_trials=100, participants=2,
                                  n_boot=10, digits=False))  # fmt: skip
    base = {"impact": {}, "accuracy_from_results_csv": {}}
    exact = dict(claims.FCPD_ACCURACY_EXACT["bios"])
    m["fcpd"] = {
        "bios": {**base, "accuracy_from_results_csv": exact},
        "facet": {**base, "accuracy_from_results_csv": {k: v + 4e-4 for k, v in claims.FCPD_ACCURACY["facet"].items()}},
    }  # fmt: skip
    table = {c.name: c for c in evaluate(claims.declared(cfg), m, cfg)}
    assert table["fcpd_bios_treatment_accuracy"].holds and table["fcpd_facet_treatment_accuracy"].holds
    m["fcpd"]["bios"]["accuracy_from_results_csv"] = {**exact, "conditional": 0.7030}
    table = {c.name: c for c in evaluate(claims.declared(cfg), m, cfg)}
    assert not table["fcpd_bios_treatment_accuracy"].holds and not table["fcpd_bios_treatment_accuracy"].gated
    # the released responses of RAVDESS were not given: its claims are reported as not measured, never dropped
    assert not table["fcpd_ravdess_treatment_accuracy"].measured and not table["fcpd_ravdess_treatment_accuracy"].holds


def test_committed_claims_are_the_declared_claims():
    """The declared claims, evaluated again on the committed quick metrics, are the committed claims."""
    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(claims.declared(cfg), report.metrics, cfg)) == []
