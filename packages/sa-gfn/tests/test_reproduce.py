"""Claim gate: the `ci` preset of the reproduction, asserting every gated claim with its margin (spec §9.3, 9.5, 9.7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclr25.sa_gfn.claims import declared
from iclr25.sa_gfn.config import PRESETS, Config
from iclr25.sa_gfn.experiments import decoupling_jobs, early_separation
from iclr25.sa_gfn.reproduce import run
from iclr25.sa_gfn.training import run_job
from iclr25.shared.claims import evaluate


def claims_by_name(m: dict, cfg: Config) -> dict:
    return {c.name: c for c in evaluate(declared(cfg), m, cfg)}


@pytest.mark.claims
def test_ci_claims(tmp_path):
    report = run("ci", tmp_path / "ci", device="cpu")
    m = report.metrics
    bound = PRESETS["ci"].l1_bound
    for obj in ("tb", "db", "subtb"):
        assert m[f"correct/{obj}"]["l1_mean"] <= bound, obj
    assert m["correct/sagfn-c0"]["l1_mean"] <= bound
    assert abs(m["correct/tb"]["log_Z"] - 3.1091) <= 0.05
    seeds = PRESETS["ci"].seeds
    assert m["sparse_sagfn"]["seeds_all_captured"] >= 2 and seeds == 3
    assert m["sparse_tb"]["seeds_all_captured"] <= 1
    assert m["sparse_tb"]["tv_mean"] - m["sparse_sagfn"]["tv_mean"] >= 0.2
    dec = m["decouple/decoupled"]  # Behavior on target while its Sibling stays far off it
    assert dec["l1_mean"] <= bound
    assert dec["sibling_tv"] >= max(0.2, 10 * dec["tv"])
    assert not report.failed_gated, [c.name for c in report.failed_gated]
    saved = json.loads((tmp_path / "ci" / "results.json").read_text())
    assert {c["name"] for c in saved["claims"]} == {c.name for c in report.claims}
    reported = {"coupled_ablation_biased", "decoupled_sibling_far_early"}
    assert all(c["gated"] for c in saved["claims"] if c["name"] not in reported)
    assert "decoupled_sibling_far_early" in saved_names(saved) and "decoupling.png" in report.figures


def saved_names(saved: dict) -> set[str]:
    return {c["name"] for c in saved["claims"]}


def _history(ratios: list[float], every: int = 25) -> list[dict]:
    return [{"iter": every * (i + 1), "tv": 0.1, "sibling_tv": 0.1 * r} for i, r in enumerate(ratios)]


def test_early_separation_claim_reads_the_curve_and_can_fail():
    cfg = PRESETS["ci"]
    iters = 200  # 10% = iteration 20 -> the first evaluation at or after it, 25
    far = early_separation(_history([3.0, 1.5, 2.5, 4.0, 5.0, 6.0, 7.0, 8.0]), iters)
    assert far["early_iter"] == 25 and far["early_ratio"] == pytest.approx(3.0) and far["ratio_ge_2_from"] == 75
    near = early_separation(_history([1.2, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]), iters)
    assert near["ratio_ge_2_from"] == 50
    assert early_separation(_history([1.0] * 8), iters)["ratio_ge_2_from"] is None
    final = {"l1_mean": 1e-4, "tv": 0.001, "sibling_tv": 0.4}
    claim = claims_by_name({"decouple/decoupled": {**final, "early": far}, "decouple/coupled": final}, cfg)
    assert claim["decoupled_sibling_far_early"].holds and not claim["decoupled_sibling_far_early"].gated
    claim = claims_by_name({"decouple/decoupled": {**final, "early": near}, "decouple/coupled": final}, cfg)
    assert not claim["decoupled_sibling_far_early"].holds


def test_decoupling_gate_fails_when_behavior_is_coupled():
    """Broken variant: a Behavior net that keeps the Sibling's reward (no relabelling) fails the decoupling gate."""
    cfg = PRESETS["ci"]
    sa_kw = dict(hidden=cfg.hidden, n_layers=cfg.n_layers, uniform_pb=cfg.uniform_pb, n_sibling=16, n_behavior=8)
    coupled = next(j for j in decoupling_jobs(cfg, 0, "cpu", sa_kw) if j.name == "decouple/coupled")
    final = run_job(coupled)["final"]
    m = {"decouple/decoupled": final, "decouple/coupled": final}  # the broken net in the method's place
    by_name = claims_by_name(m, cfg)
    assert by_name["decoupled_behavior_l1"].holds is False
    assert final["l1_mean"] > 2 * cfg.l1_bound


def test_tiny_run_writes_report_and_can_fail(tmp_path):
    """A run too short to learn anything must report its gated claims as failing (the gate can fail)."""
    cfg = Config(
        seeds=1,
        iters=3,
        correctness_iters=3,
        eval_every=1,
        equal_budget=True,
        baselines=("tb-rnd", "gafn"),
        grids=("2x5:standard:0.1", "2x5:sparse:0"),
        sweep_iters=2,
        bitseq_iters=2,
        workers=1,
        throughput=False,
    )
    report = run("quick", tmp_path / "tiny", device="cpu", config=cfg)
    assert report.metrics["sweep/2x5:sparse:0/gafn/0"]["l1_mean"] >= 0
    assert set(report.metrics["bitseq_modes_found"]) == {"tb", "sagfn"}
    assert report.claim("sparse_tv_vs_gafn").gated is False
    assert report.claim("correct_tb_l1").holds is False
    assert report.claim("sparse_tv_gap").holds is False
    assert report.claim("sparse_tv_gap_equal_budget").gated is False
    assert {"terminal_distribution.png", "tv_sparse.png", "l1_correctness.png"} <= set(report.figures)
    for f in report.figures:
        assert (tmp_path / "tiny" / f).stat().st_size > 1000
    with pytest.raises(FileExistsError):
        run("quick", tmp_path / "tiny", device="cpu", config=cfg)


def test_presets_and_bad_scale():
    assert set(PRESETS) == {"ci", "quick", "full"}
    assert PRESETS["quick"].seeds == 5 and PRESETS["quick"].iters == 800
    with pytest.raises(ValueError, match="scale"):
        run("medium")
    with pytest.raises(ValueError, match="grid"):
        Config(grids=("64:standard",))


def test_committed_claims_are_the_declared_claims():
    from iclr25.shared.claims import config_of, differences
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []
