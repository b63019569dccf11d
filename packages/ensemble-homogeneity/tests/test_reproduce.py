"""The claim gate on the ci preset, and proof that each gated claim fails on a deliberately broken method."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from iclr25.ensemble_homogeneity import analysis as A
from iclr25.ensemble_homogeneity.claims import declared
from iclr25.ensemble_homogeneity.config import PRESETS, Config, parse_run
from iclr25.ensemble_homogeneity.data import EnsemblePredictions
from iclr25.ensemble_homogeneity.experiments import analyse, run_name
from iclr25.ensemble_homogeneity.reproduce import run
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.results import Report

GATED = {
    "de_digits_mlp_k64_M32",
    "curve_digits_mlp_k64_M32",
    "estimate_digits_mlp_k64_M32",
    "de_synthetic_mlp_k64_M16",
    "superiority_synthetic_mlp_k64_M16",
    "curve_synthetic_mlp_k64_M16",
    "estimate_synthetic_mlp_k64_M16",
    "control_identical_members",
    "heterogeneous_counterexample",
}
SYN = "synthetic_mlp_k64_M16"


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    """The ci preset, run once, keeping the members' predictions for the broken-variant tests."""
    out = tmp_path_factory.mktemp("ci") / "run"
    report = run("ci", out, config=dataclasses.replace(PRESETS["ci"], save_preds=True))
    return report, out


@pytest.mark.claims
def test_gated_claims_hold(ci_run):
    report, _ = ci_run
    assert {c.name for c in report.claims if c.gated} == GATED
    assert report.failed_gated == [], [(c.name, c.ours) for c in report.failed_gated]
    m = report.metrics
    for name, thr in (("digits_mlp_k64_M32", 0.01), (SYN, 0.05)):  # the margins, re-read from the metrics
        de = m["runs"][name]["de"]
        assert de["median_ks_p"] > 0.05 and de["mean_disagreement"] > thr
        assert max(abs(e) for e in m["runs"][name]["curve_brier_true"]["estimate_rel_error"]) <= 0.10
        assert m["runs"][name]["train"]["interpolated"]
    losses = m["runs"][SYN]["losses"]
    assert all(losses[k]["ensemble"] < losses[k]["best_member"] for k in ("brier_true", "brier_multiclass", "nll"))
    h = m["heterogeneous"]
    assert h["best_member"] < h["ensemble"] <= h["mean_member"]
    assert report.cpu_s < 120, f"the ci gate took {report.cpu_s:.0f} s of CPU"
    assert report.throughput["train_member_samples_per_s"] > 0


def _rejudge(report, out, name, probs=None, config: Config | None = None):
    """Claims after re-analysing run `name` (optionally on other member probabilities) with the current code."""
    config = config or PRESETS["ci"]
    preds = EnsemblePredictions.from_npz(out / f"preds_{name}.npz")
    probs = preds.probs if probs is None else probs
    metrics = dataclasses.replace(report).metrics | {"runs": dict(report.metrics["runs"])}
    members = probs.shape[0]
    metrics["runs"][name] = analyse(probs, preds.labels, config, members, np.random.default_rng(0)) | {
        "train": {"interpolated": True}
    }
    return {c.name: c for c in evaluate(declared(config), metrics, config)}


@pytest.mark.claims
def test_rejudging_the_saved_run_reproduces_its_claims(ci_run):
    report, out = ci_run
    judged = _rejudge(report, out, SYN)
    assert all(judged[c.name].holds == c.holds for c in report.claims)


@pytest.mark.claims
def test_gate_fails_for_identical_members(ci_run):
    """Spec §9.5: members sharing one seed are one model: no disagreement, no gain over the best member."""
    report, out = ci_run
    probs = EnsemblePredictions.from_npz(out / f"preds_{SYN}.npz").probs
    judged = _rejudge(report, out, SYN, np.repeat(probs[:1], len(probs), axis=0))
    assert not judged[f"de_{SYN}"].holds
    assert not judged[f"superiority_{SYN}"].holds


@pytest.mark.claims
def test_gate_fails_without_the_finite_pool_factor(ci_run, monkeypatch):
    """The curve claim pins the exact subset-mean formula: dropping P/(P-1) breaks the M = 1 endpoint."""
    report, out = ci_run

    def broken(probs, y, sizes, loss="brier_true"):
        bias, var = A._pool_moments(probs, y, loss)
        return bias.mean() + (1.0 / np.asarray(sizes, float) - 1.0 / probs.shape[0]) * var.mean()

    monkeypatch.setattr(A, "subset_mean_curve", broken)
    assert not _rejudge(report, out, SYN)[f"curve_{SYN}"].holds


@pytest.mark.claims
def test_curve_gate_fails_for_an_estimator_right_only_at_the_endpoints(ci_run, monkeypatch):
    """A wrong closed form that is non-increasing and exact at M = 1 and M = P (the old gate's only checks): the
    factor (P - M)/(P - 1) instead of (P/(P-1))(1/M - 1/P). Directly formed M-ensembles expose it."""
    report, out = ci_run

    def broken(probs, y, sizes, loss="brier_true"):
        bias, var = A._pool_moments(probs, y, loss)
        P = probs.shape[0]
        return bias.mean() + (P - np.asarray(sizes, float)) / (P - 1) * var.mean()

    monkeypatch.setattr(A, "subset_mean_curve", broken)
    judged = _rejudge(report, out, SYN)
    r = EnsemblePredictions.from_npz(out / f"preds_{SYN}.npz")
    curve = broken(r.probs, r.labels, [1, 2, 4, 8, 16])
    j = A.jensen_gap(r.probs, r.labels, "brier_true")
    assert np.all(np.diff(curve) <= 0)  # what the old gate checked still holds ...
    assert abs(curve[0] - j["mean_member"]) < 1e-9 and abs(curve[-1] - j["ensemble"]) < 1e-9
    assert not judged[f"curve_{SYN}"].holds  # ... and the new one fails


@pytest.mark.claims
def test_gate_fails_for_a_dependent_pair(ci_run, monkeypatch):
    """The two-model estimator needs two independent members: a member paired with itself has V̂ = 0."""
    report, out = ci_run
    monkeypatch.setattr(A, "random_pairs", lambda n, k, rng: [(i, i) for i in range(k)])
    assert not _rejudge(report, out, SYN)[f"estimate_{SYN}"].holds


@pytest.mark.claims
def test_gate_fails_for_a_vote_ensemble(ci_run, monkeypatch):
    """Averaging hard votes instead of probabilities loses the ensemble's gain in Brier and NLL."""
    report, out = ci_run

    def votes(probs):
        return np.eye(probs.shape[-1])[np.argmax(np.mean(probs, 0), -1)]

    monkeypatch.setattr(A, "ensemble_probs", votes)
    assert not _rejudge(report, out, SYN)[f"superiority_{SYN}"].holds


@pytest.mark.claims
def test_heterogeneous_claim_fails_on_a_homogeneous_pool(ci_run):
    """The counter-example claim is not true by construction: a homogeneous pool beats its best member."""
    report, out = ci_run
    preds = EnsemblePredictions.from_npz(out / f"preds_{SYN}.npz")
    j = A.jensen_gap(preds.probs, preds.labels, "brier_true")
    metrics = dict(report.metrics)
    metrics["heterogeneous"] = dict(metrics["heterogeneous"]) | {
        k: j[k] for k in ("ensemble", "best_member", "mean_member")
    }
    judged = {c.name: c for c in evaluate(declared(PRESETS["ci"]), metrics, PRESETS["ci"])}
    assert not judged["heterogeneous_counterexample"].holds


def test_presets_and_run_specs():
    assert set(PRESETS) == {"ci", "quick", "full"}
    assert parse_run("digits:mlp:64:32") == ("digits", "mlp", 64, 32)
    assert run_name("cifar10:cnn:10:100") == "cifar10_cnn_k10_M100"
    for bad, match in (
        ("digits:mlp:64", "dataset:model:width:members"),
        ("digits:cnn:64:32", "use model mlp"),
        ("digits:mlp:64:1", "members"),
        ("mnist:mlp:64:8", "dataset"),
    ):
        with pytest.raises(ValueError, match=match):
            parse_run(bad)
    with pytest.raises(ValueError, match="sizes must be strictly increasing"):
        Config(sizes=(4, 2))
    with pytest.raises(ValueError, match="control_members"):
        Config(control_members=1)


def test_image_pipeline_runs_end_to_end(tmp_path):
    """The full preset's path (CNN ensembles on images, lr schedule, no CIFAR files) on a tiny configuration."""
    cfg = dataclasses.replace(
        PRESETS["full"],
        runs=("cifar10:cnn:2:3",),
        image_train=200,
        max_epochs=2,
        batch_size=50,
        sizes=(1, 2, 3),
        estimate_sizes=(2,),
        n_pairs=3,
        hetero_dataset="",
        mc_subsets=0,
        figures=False,
        threads=1,
    )
    report = run("full", tmp_path / "r", config=cfg)
    r = report.metrics["runs"]["cifar10_cnn_k2_M3"]
    assert r["train"]["epochs"] == 2 and len(r["curve_brier_true"]["exact"]) == 3
    assert "NOT cifar10" in report.metrics["data"]["cifar10"] and "NOT cifar10" in report.notes
    assert {c.name for c in report.claims} >= {"de_cifar10_cnn_k2_M3", "curve_cifar10_cnn_k2_M3"}


def test_committed_claims_are_the_declared_claims():
    """The declared claims, evaluated again on the committed quick metrics, are the committed claims."""
    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []
