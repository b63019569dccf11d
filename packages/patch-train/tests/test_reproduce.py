"""The claim gate: the `ci` preset (two runs, one seed) and every gated claim with its margin."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from iclr25.patch_train.claims import declared
from iclr25.patch_train.config import PRESETS, Config, TrainConfig
from iclr25.patch_train.reproduce import run


@pytest.mark.claims
def test_ci_claims(tmp_path):
    report = run("ci", tmp_path / "ci", device="cpu")
    gated = {c.name: c for c in report.claims if c.gated}
    assert set(gated) == {
        "cost_lam2/3_K4",
        "official_step_counts",
        "equal_compute_flops_ratio",
        "patch_loss_K1_is_ce",
        "patch_loss_eq2",
        "patch_forward_parity",
        "patch_loss_falls",
        "token_nll_after_patch_stage",
        "stage_switch",
    }
    assert abs(gated["cost_lam2/3_K4"].ours - 0.5) <= 1e-12
    assert gated["official_step_counts"].ours == "90000+45000; 180000+90000"
    assert abs(gated["equal_compute_flops_ratio"].ours - 1.0) <= 0.02
    assert gated["patch_loss_K1_is_ce"].ours <= 1e-6
    assert gated["patch_loss_eq2"].ours <= 1e-5
    assert gated["patch_forward_parity"].ours <= 1e-5
    assert gated["patch_loss_falls"].ours < 0
    assert gated["token_nll_after_patch_stage"].ours < math.log(256)
    assert gated["stage_switch"].holds
    assert not report.failed_gated
    # reported claims exist and carry a measured value, whatever their direction
    reported = {c.name: c for c in report.claims if not c.gated}
    assert {"patch_equal_compute_vs_token", "patch_step_speedup", "equal_compute_wall_time"} <= set(reported)
    assert math.isfinite(reported["patch_equal_compute_vs_token"].ours)
    assert report.throughput["patch_step_tokens_per_s"] > 0 and report.throughput["token_step_tokens_per_s"] > 0
    data = json.loads((tmp_path / "ci" / "results.json").read_text())
    assert data["paper"] == "patch-train" and data["scale"] == "ci"
    assert (tmp_path / "ci" / "report.md").is_file()
    assert report.metrics["tokens_read"]["patch"] == 2 * report.metrics["tokens_read"]["token"]


def test_presets_are_consistent():
    assert set(PRESETS) == {"ci", "quick", "full", "full-125m"}
    quick = PRESETS["quick"]
    assert quick.seeds == 3 and set(quick.runs) == {"token", "patch", "scratch", "patch_equal_data"}
    full = PRESETS["full"]
    assert (full.model, full.T, full.K, full.tokens_per_step) == ("370m", 2048, 4, 2**21)
    assert full.lam == pytest.approx(2 / 3)
    # the CPU presets run forward passes of 4 sequences in both stages (the official per-device batch)
    assert quick.micro_batch == PRESETS["ci"].micro_batch == 4
    with pytest.raises(ValueError, match="micro_batch=3 must divide the sequences per step of both stages"):
        Config(micro_batch=3)
    with pytest.raises(ValueError, match="micro_batch=8 must divide"):
        Config(micro_batch=8)  # the patch stage has only 4 sequences per step


def test_run_rejects_unknown_scale(tmp_path):
    with pytest.raises(ValueError, match="unknown scale"):
        run("huge", tmp_path)


@pytest.mark.parametrize(
    ("cls", "changes", "message"),
    [
        (Config, {"lr": -1.0}, "lr must be > 0"),
        (Config, {"lr": float("nan")}, "lr must be a finite number"),
        (Config, {"lam": 1.0}, "lam must lie in (0, 1)"),
        (Config, {"warmup": float("inf")}, "warmup must be a finite number"),
        (Config, {"token_steps": 1}, "token_steps must be an integer >= 2"),
        (Config, {"tokens_per_step": 100}, "must be a multiple of K*T=256"),
        (Config, {"runs": ("token",)}, "runs must include 'patch'"),
        (Config, {"extra": {"n_layerz": 4}}, "extra key must be one of"),
        (Config, {"extra": {"n_layers": 0}}, "extra['n_layers'] must be an integer >= 1"),
        (Config, {"corpus": ""}, "corpus must be a name or a path"),
        (TrainConfig, {"stage": "both"}, "stage must be one of"),
        (TrainConfig, {"lam": 1.5}, "lam must lie in [0, 1]"),
        (TrainConfig, {"threads": -1}, "threads must be an integer >= 0"),
    ],
)
def test_configs_reject_bad_values(cls, changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        cls(**changes)


def test_a_bad_device_is_refused_before_the_run_folder_is_made(tmp_path):
    with pytest.raises(ValueError, match="device must be one of"):
        run("ci", tmp_path / "r", device="tpu")
    assert not (tmp_path / "r").exists()


def test_committed_claims_are_the_declared_claims():
    from iclr25.shared.claims import config_of, differences, evaluate
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []
