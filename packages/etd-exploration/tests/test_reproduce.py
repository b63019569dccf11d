"""The claim gate: the `ci` preset (maze temporal distance, clean and noisy walls) and its gated claims."""

import pytest

from iclr25.etd_exploration.reproduce import PRESETS, run


@pytest.fixture(scope="module")
def ci_report(tmp_path_factory):
    return run("ci", tmp_path_factory.mktemp("ci"), seed=0, device="cpu")


@pytest.mark.claims
def test_ci_gated_claims_hold(ci_report):
    claims = {c.name: c for c in ci_report.claims}
    assert claims["maze_rho_pairs_clean"].ours >= 0.90
    assert claims["maze_rho_pairs_noisy"].ours >= 0.80
    assert claims["maze_rho_goal20_clean"].ours >= 0.90
    assert claims["maze_rho_goal20_noisy"].ours >= 0.75
    assert claims["maze_pixel_rho_pairs"].ours <= 0.3
    assert not claims["maze_rho_global_clean"].gated  # reported only
    assert ci_report.failed_gated == []


@pytest.mark.claims
def test_ci_report_is_complete(ci_report, tmp_path):
    assert ci_report.command == "iclr25-etd-exploration reproduce --scale ci"
    assert "maze_critic_steps_per_s" in ci_report.throughput
    assert "maze_distance.png" in ci_report.figures


def test_presets_are_consistent():
    assert set(PRESETS) == {"ci", "quick", "full"}
    assert PRESETS["ci"].ppo_frames == 0 and PRESETS["quick"].ppo_frames > 0
    assert PRESETS["full"].full_envs and PRESETS["full"].full_frames >= 1_000_000
    with pytest.raises(ValueError, match="scale must be one of"):
        run("huge")
