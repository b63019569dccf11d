"""The claim gate: the `ci` preset (spec 6a / 9.7, 3 seeds, RRT protocol) asserts every gated claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclr25.dist_loss.claims import declared
from iclr25.dist_loss.reproduce import PRESETS, Config, run
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.results import Report

RESULTS = Path(__file__).resolve().parents[1] / "results" / "quick"


@pytest.mark.claims
def test_ci_preset_gated_claims(tmp_path: Path) -> None:
    report = run("ci", tmp_path / "ci", device="cpu")
    gated = {c.name: c for c in report.claims if c.gated}
    assert set(gated) == {"few_shot_mae_ratio", "many_shot_mae_ratio", "prediction_spread_ratio", "w1_ratio"}
    assert gated["few_shot_mae_ratio"].ours <= 0.92
    assert gated["many_shot_mae_ratio"].ours <= 1.10
    assert gated["prediction_spread_ratio"].ours >= 1.05
    assert gated["w1_ratio"].ours <= 0.95
    assert not report.failed_gated
    back = Report.read(tmp_path / "ci")
    assert back.claims == report.claims and back.scale == "ci"
    assert set(report.metrics["test"]) == {"e2e_l1", "rrt_l1", "rrt_dist"}


def test_presets_share_the_gated_setting() -> None:
    ci, quick = PRESETS["ci"], PRESETS["quick"]
    for field in ("seeds", "label_noise", "batch_size", "lam", "eps", "bw", "epochs_stage1", "epochs_stage2"):
        assert getattr(ci, field) == getattr(quick, field)
    assert {"l1", "dist"} <= set(PRESETS["full"].methods)
    with pytest.raises(ValueError, match="methods must include"):
        Config(methods=("l1",))
    with pytest.raises(ValueError, match=r"methods\[2\] must be one of"):
        Config(methods=("l1", "dist", "magic"))


def test_committed_claims_are_the_declared_claims() -> None:
    """The declared claims, evaluated again on the committed quick metrics, are the committed claims."""
    report = Report.read(RESULTS)
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg, throughput=report.throughput)) == []


def test_claims_fail_on_a_broken_measurement() -> None:
    report = Report.read(RESULTS)
    test = {k: dict(v) for k, v in report.metrics["test"].items()}
    test["rrt_dist"] = test["rrt_l1"]  # a "Dist" head no different from L1
    claims = evaluate(declared(PRESETS["quick"]), {"test": test}, PRESETS["quick"])
    failed = {c.name for c in claims if c.gated and not c.holds}
    assert failed == {"few_shot_mae_ratio", "prediction_spread_ratio", "w1_ratio"}


def test_run_refuses_existing_folder(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "results.json").write_text("{}")
    with pytest.raises(ValueError, match="no iclr25 run made"):
        run("ci", tmp_path / "x")
    with pytest.raises(ValueError, match="scale"):
        run("medium", tmp_path / "y")


def test_rrt_head_inits() -> None:
    import torch

    from iclr25.dist_loss.train import MLP

    torch.manual_seed(0)
    model = MLP(4, hidden=8, bias_init=45.0)
    assert model.head.bias.item() == 45.0
    model.reset_head(45.0, zero_weight=True)  # "zero"
    assert model.head.bias.item() == 45.0 and torch.count_nonzero(model.head.weight) == 0
    model.reset_head(45.0)  # "default": random weights, bias at the label mean
    assert model.head.bias.item() == 45.0 and torch.count_nonzero(model.head.weight) == 8
    model.reset_head(None)  # "official": PyTorch's random weights and bias
    assert abs(model.head.bias.item()) <= 8**-0.5 and torch.count_nonzero(model.head.weight) == 8
    with pytest.raises(ValueError, match="rrt_head_init"):
        Config(rrt_head_init="ones")
