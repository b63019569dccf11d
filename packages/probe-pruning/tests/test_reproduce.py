"""Claim gate (spec §9.6): the `ci` preset (the quick setting: 2 seeds, 700 training steps each, domain B, r = 0.4)
asserting each gated claim with its margin, and the same gate failing on a deliberately broken method."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclr25.probe_pruning import pruning
from iclr25.probe_pruning.claims import declared
from iclr25.probe_pruning.config import PRESETS, Config
from iclr25.probe_pruning.reproduce import run
from iclr25.shared.claims import evaluate


def claims(m, cfg):
    return evaluate(declared(cfg), m, cfg)


SEEDS = ("seed0", "seed1")


@pytest.mark.claims
def test_ci_claims(tmp_path):
    report = run("ci", tmp_path / "ci", device="cpu")
    m = report.metrics
    assert PRESETS["ci"].seeds == 2 and PRESETS["ci"].train_steps == 700 and PRESETS["ci"].ratio == 0.4
    for s in SEEDS:
        p = m[s]["ppl_B"]
        assert p["dense"] <= min(v for k, v in p.items() if k != "dense"), (s, p)
        assert p["pp"] < p["random"], (s, p)
        assert p["pp"] <= 0.9 * p["inverted"], (s, p)
        assert p["fullbatch"] <= 1.05 * p["pp"], (s, p)
        assert m[s]["r_adjusted"] == 0.53
        assert m[s]["kept_units"]["1.mlp"] == 88 and m[s]["kept_units"]["1.attn"] == 2
    assert m["flops"]["probe_fraction_pp"] <= 0.05 and m["flops"]["probe_shape"] == [1, 32]
    assert not report.failed_gated, [(c.name, c.ours) for c in report.failed_gated]
    saved = json.loads((tmp_path / "ci" / "results.json").read_text())
    assert {c["name"] for c in saved["claims"]} == {c.name for c in report.claims}
    assert not report.claim("pp_vs_wanda_sp_seed0").gated and not report.claim("pp_vs_flap_seed0").gated


@pytest.mark.claims
def test_gate_fails_when_the_score_is_broken(tmp_path, monkeypatch):
    """PP with its PPsp scores negated keeps its least important units: the control gates must fail (the trained
    models are reused from the test above when it ran in this process)."""
    mlp, head = pruning.ppsp_mlp_scores, pruning.ppsp_head_scores
    monkeypatch.setattr(pruning, "ppsp_mlp_scores", lambda C, W: -mlp(C, W))
    monkeypatch.setattr(pruning, "ppsp_head_scores", lambda C, W, n: -head(C, W, n))
    report = run("ci", tmp_path / "broken", device="cpu")
    failed = {c.name for c in report.failed_gated}
    assert {"pp_lt_random_seed0", "pp_vs_inverted_seed0", "pp_lt_random_seed1", "pp_vs_inverted_seed1"} <= failed


def _metrics(**ppl):
    base = {"dense": 5.0, "wanda-sp": 6.5, "flap": 6.2, "pp": 6.3, "fullbatch": 6.3, "random": 8.8, "inverted": 10.9}
    base.update(ppl)
    return {"seed0": {"ppl_B": base}, "flops": {"probe_fraction_pp": 0.012, "kept_fraction": 0.65}}


@pytest.mark.parametrize(
    ("change", "claim"),
    [
        ({"pp": 9.0}, "pp_lt_random_seed0"),
        ({"inverted": 6.5}, "pp_vs_inverted_seed0"),
        ({"fullbatch": 6.7}, "fullbatch_vs_pp_seed0"),
        ({"dense": 6.4}, "dense_le_pruned_seed0"),
    ],
)
def test_each_gate_can_fail(change, claim):
    cfg = Config(seeds=1)
    assert all(c.holds for c in claims(_metrics(), cfg) if c.gated)
    broken = {c.name: c for c in claims(_metrics(**change), cfg)}
    assert not broken[claim].holds and broken[claim].gated
    too_big = _metrics()
    too_big["flops"]["probe_fraction_pp"] = 0.2
    assert not {c.name: c for c in claims(too_big, cfg)}["probe_flops_fraction"].holds


def test_runtime_claims_fail_over_three_minutes():
    m = _metrics()
    m.update(measure_wall_s=120.0, measure_cpu_s=70.0)
    ok = {c.name: c for c in claims(m, Config(seeds=1))}
    assert ok["wall_time_s"].holds and ok["cpu_time_s"].holds and not ok["cpu_time_s"].gated
    m.update(measure_wall_s=400.0, measure_cpu_s=200.0)
    slow = {c.name: c for c in claims(m, Config(seeds=1))}
    assert not slow["wall_time_s"].holds and not slow["cpu_time_s"].holds


def test_small_run_writes_report_and_figure(tmp_path):
    cfg = Config(
        seeds=1, train_steps=3, eval_batches=2, calib_windows=8, latency_reps=1, workers=1, corpus_bytes=200_000
    )
    report = run("quick", tmp_path / "small", device="cpu", config=cfg)
    assert (tmp_path / "small" / "ppl_domain_b.png").stat().st_size > 1000
    assert set(report.metrics["seed0"]["ablations_B"]) >= {"pp_probe_only", "pp_history_only", "pp_no_ema"}
    assert "latency" in report.metrics and report.throughput["train_samples_per_s"] > 0
    with pytest.raises(FileExistsError):
        run("quick", tmp_path / "small", device="cpu", config=cfg)


def test_committed_claims_are_the_declared_claims():
    from iclr25.shared.claims import config_of, differences
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []


def test_a_missing_model_is_not_measured():
    """A model the run did not train is reported as not measured (and its gates fail), never dropped."""
    by_name = {c.name: c for c in claims(_metrics(), Config(seeds=2))}
    assert by_name["pp_lt_random_seed0"].holds and by_name["pp_lt_random_seed0"].measured
    missing = by_name["pp_lt_random_seed1"]
    assert missing.gated and not missing.measured and not missing.holds
