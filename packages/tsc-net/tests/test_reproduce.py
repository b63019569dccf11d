"""The claim gate (ci preset: simulator + non-learned predictors, spec §9.7) and that it fails on broken variants."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iclr25.shared.claims import evaluate
from iclr25.tsc_net import data as data_module
from iclr25.tsc_net import experiments, reproduce
from iclr25.tsc_net.claims import declared
from iclr25.tsc_net.config import PRESETS


@pytest.mark.claims
def test_gated_claims_hold_on_the_ci_preset(tmp_path):
    report = reproduce.run("ci", tmp_path / "run")
    gated = [c for c in report.claims if c.gated]
    assert {c.name for c in gated} == {"sim_gt_walkable", "cvk20_beats_cv", "geodesic_vs_cvk20", "geodesic_violations"}
    assert not report.failed_gated, [(c.name, c.ours, c.margin) for c in report.failed_gated]
    m = report.metrics
    assert m["geodesic_exits"]["all"]["minFDE"] < 0.8 * m["cv_k20"]["all"]["minFDE"]
    assert m["data"]["test_irregular"] > 0


SMALL = PRESETS["ci"].__class__(train_scenes=2, test_scenes=3, test_clips_per_scene=6, models=(), plot=False)


@pytest.mark.claims
def test_gate_fails_when_the_simulator_lets_agents_onto_obstacles(tmp_path, monkeypatch):
    monkeypatch.setattr(data_module, "_on_walkable", lambda ok, xy: np.ones(len(xy), dtype=bool))
    report = reproduce.run("ci", tmp_path / "run", config=SMALL)
    assert "sim_gt_walkable" in {c.name for c in report.failed_gated}


@pytest.mark.claims
def test_gate_fails_when_the_scene_is_uninformative(tmp_path, monkeypatch):
    """Exits read back in the wrong scene: the geodesic reference no longer knows where agents go."""
    real = experiments.load_data

    def shuffled(cfg, seed, folder):
        train, tm, test, masks, exits = real(cfg, seed, folder)
        return train, tm, test, masks, exits[1:] + exits[:1]

    monkeypatch.setattr(experiments, "load_data", shuffled)
    report = reproduce.run("ci", tmp_path / "run", config=SMALL)
    assert "geodesic_vs_cvk20" in {c.name for c in report.failed_gated}


BENCHMARK = PRESETS["benchmark"]  # every learned model, goal regression included


def test_claims_report_learned_comparisons_without_gating():
    row = {"all": {"minFDE": 5.0, "violation": 0.01}, "irregular": {"minFDE": 9.0}}
    metrics = {"data": {"gt_on_obstacles": 0}, "cv": {"all": {"minFDE": 12.0}},
               "cv_k20": {"all": {"minFDE": 8.0, "violation": 0.06}},
               "geodesic_exits": {"all": {"minFDE": 3.0, "violation": 0.0}},
               "tsc": row, "blind": {"all": {"minFDE": 7.0, "violation": 0.05}},
               "goalreg": {"all": {"minFDE": 6.0}, "irregular": {"minFDE": 10.0}}}  # fmt: skip
    claims = {c.name: c for c in evaluate(declared(BENCHMARK), metrics, BENCHMARK)}
    assert claims["tsc_vs_cvk20"].holds and not claims["tsc_vs_cvk20"].gated
    assert claims["violations_scene_vs_blind"].holds and claims["fde_scene_vs_blind"].holds
    assert claims["cells_vs_regression_irregular"].holds
    metrics["tsc"] = {"all": {"minFDE": 9.0, "violation": 0.2}, "irregular": {"minFDE": 11.0}}
    claims = {c.name: c for c in evaluate(declared(BENCHMARK), metrics, BENCHMARK)}
    assert not any(claims[k].holds for k in ("tsc_vs_cvk20", "violations_scene_vs_blind", "fde_scene_vs_blind"))


def test_the_run_keeps_the_configured_thread_count(tmp_path):
    from dataclasses import replace

    import torch

    torch.set_num_threads(2)
    cfg = replace(SMALL, models=("tsc",), train_steps=1, max_test_peds=3, d_model=32, n_cvae=1, n_cell=2)
    report = reproduce.run("ci", tmp_path / "run", config=cfg)
    threads = report.environment["threads"]  # {"torch": n, "blas": n}: the threads the run is pinned to
    assert threads["torch"] == cfg.threads == 1  # resolving the device must not reset it
    assert "tsc_vs_cvk20" in {c.name for c in report.claims if not c.gated}


def test_full_preset_runs_the_official_behaviour_and_bench_trains_longer():
    """`full` is the official SDD setting, its quirks included (spec §3 subtle details); `bench` trains TSC-lite
    several epochs where `quick` stops before one."""
    from iclr25.tsc_net.workflows import arch_config

    full = arch_config(PRESETS["full"])
    assert full.keys_are_inputs and full.softmax_then_divide and full.ln_gain_normal and full.step_crop_at_target
    quick = arch_config(PRESETS["quick"])
    assert not (quick.keys_are_inputs or quick.softmax_then_divide or quick.ln_gain_normal)
    assert PRESETS["bench"].train_steps >= 5 * PRESETS["quick"].train_steps and "tsc" in PRESETS["bench"].models


def test_committed_claims_are_the_declared_claims():
    from iclr25.shared.claims import config_of, differences
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []
