"""The claim gate: the `ci` preset runs end to end and every gated claim holds with its margin."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from iclr25.dynamical_diffusion.reproduce import PRESETS, Config, _command, exact_checks, run
from iclr25.shared.cli import build_config
from iclr25.shared.results import Report


@pytest.mark.claims
def test_ci_preset_gated_claims(tmp_path: Path) -> None:
    report = run("ci", tmp_path / "ci", seed=0, device="cpu")
    gated = {c.name: c for c in report.claims if c.gated}
    assert set(gated) == {"schedules", "dyn_invertible", "r0_equals_dpm", "ddim_step_exact", "ddim_bugs_detected"}
    assert gated["schedules"].ours <= 1e-5
    assert gated["r0_equals_dpm"].ours == 0.0
    assert gated["ddim_step_exact"].ours <= 1e-5
    assert gated["ddim_bugs_detected"].ours >= 0.01
    assert not report.failed_gated
    reported = {c.name for c in report.claims if not c.gated}
    assert reported == {"crps_dydiff_vs_dpm", "both_beat_persistence"}
    # The smoke benchmark produced finite metrics and throughput for both models.
    for model in ("dpm", "dydiff"):
        assert math.isfinite(report.metrics["crps_mean"][model])
    assert report.throughput["train_steps_per_s"] > 0
    assert report.throughput["sampled_frames_per_s"] > 0
    back = Report.read(tmp_path / "ci")
    assert [c.name for c in back.claims] == [c.name for c in report.claims]
    for name in report.figures:
        assert (tmp_path / "ci" / name).stat().st_size > 1000


def test_exact_checks_values() -> None:
    checks = exact_checks(seed=1)
    assert checks["r0_max_abs_diff"] == 0.0
    assert checks["ddim_step_max_err"] <= 1e-5
    assert checks["dyn_variance_err"] <= 0.02
    assert 0.02 < checks["ddim_wrong_remix_err"] < 1.0
    # The spec's sizes: ~0.08 for re-mixing with theta_bar_t, ~0.04 for not unmixing the noise.
    assert 0.01 < checks["ddim_wrong_unmix_err"] < 0.2
    assert checks["ddim_double_mix_err"] > checks["ddim_wrong_unmix_err"]


def test_presets_and_validation() -> None:
    assert set(PRESETS) == {"ci", "quick", "bench", "full"}
    bench = PRESETS["bench"]
    assert (bench.steps, bench.batch_size, bench.seeds, bench.n_test, bench.ddim_steps) == (2000, 64, 5, 128, 20)
    assert PRESETS["full"].dataset == "pde2d"
    with pytest.raises(ValueError, match="gamma_ratio"):
        Config(gamma_ratio=2.0)
    with pytest.raises(ValueError, match="dataset"):
        Config(dataset="mnist")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown scale"):
        run("huge")


def test_existing_run_folder_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text("{}")
    with pytest.raises(FileExistsError, match="overwrite"):
        run("ci", tmp_path / "r")


def test_report_command_names_the_overrides() -> None:
    assert _command("quick", PRESETS["quick"]) == "iclr25-dynamical-diffusion reproduce --scale quick"
    changed = replace(PRESETS["bench"], seeds=1, ch_mult=(1, 2))
    command = _command("bench", changed)
    assert command == "iclr25-dynamical-diffusion reproduce --scale bench ch_mult=1,2 seeds=1"
    assert build_config(PRESETS["bench"], None, command.split()[4:]) == changed  # the command reruns that config
