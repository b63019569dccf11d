"""The claim gate: the `ci` preset reproduces every gated claim with its margin."""

from __future__ import annotations

import pytest

from iclr25.lrnn_state_tracking.reproduce import PRESETS, Config, run


@pytest.mark.claims
def test_ci_preset_gated_claims(tmp_path):
    report = run("ci", tmp_path / "ci", seed=0, device="cpu")
    names = {c.name for c in report.claims}
    assert {"fig1_parity_tanh", "fig1_parity_sigmoid", "theory_constructions"} <= names
    tanh, sigmoid = report.claim("fig1_parity_tanh"), report.claim("fig1_parity_sigmoid")
    assert tanh.gated and sigmoid.gated
    assert tanh.ours >= 0.9  # paper: 1.0 (Figure 1)
    assert sigmoid.ours <= 0.1  # paper: chance
    assert report.claim("theory_constructions").holds
    assert report.claim("speed_delta_rule_fwd_bwd").ours >= 5.0
    assert report.claim("speed_diag_scan_fwd_bwd").ours >= 5.0
    assert not report.failed_gated
    assert (tmp_path / "ci" / "results.json").is_file()
    assert (tmp_path / "ci" / "parity_accuracy_vs_length.png").is_file()


def test_presets_and_bad_scale(tmp_path):
    assert set(PRESETS) == {"ci", "quick", "full"}
    assert PRESETS["full"].grid_steps_parity == 20_000 and PRESETS["full"].grid_seeds == 3
    assert PRESETS["quick"].grid_tasks == ("parity",) and not PRESETS["ci"].grid_tasks
    with pytest.raises(ValueError, match="scale must be one of"):
        run("huge", tmp_path / "x")
    with pytest.raises(ValueError, match="grid_tasks"):
        Config(grid_tasks=("dyck",))
    with pytest.raises(ValueError, match="eval_min_len"):
        Config(eval_min_len=300)


def test_tiny_run_writes_report(tmp_path):
    cfg = Config(fig1_steps=2, fig1_seeds=1, eval_n=16, theory=False, speed_T=0)
    report = run("tiny", tmp_path / "r", device="cpu", config=cfg)
    assert [c.name for c in report.claims] == ["fig1_parity_tanh", "fig1_parity_sigmoid"]
    assert (tmp_path / "r" / "report.md").read_text().startswith("# lrnn-state-tracking")
