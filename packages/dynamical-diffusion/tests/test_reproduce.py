"""The claim gate: the `ci` preset runs end to end and every gated claim holds with its margin."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from iclr25.dynamical_diffusion.claims import declared
from iclr25.dynamical_diffusion.config import DDIM_BUGS, PRESETS, Config, model_variants
from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion
from iclr25.dynamical_diffusion.experiments import _metrics, exact_checks
from iclr25.dynamical_diffusion.reproduce import SLUG, run
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.cli import build_config
from iclr25.shared.results import Claim, Report
from iclr25.shared.run import rerun_command

RESULTS = Path(__file__).resolve().parents[1] / "results" / "quick"


def claims(metrics: dict, config: Config) -> list[Claim]:
    """The declared claims judged on `metrics`, as a run reports them."""
    return evaluate(declared(config), metrics, config)


@pytest.mark.claims
def test_ci_preset_gated_claims(tmp_path: Path) -> None:
    report = run("ci", tmp_path / "ci", seed=0, device="cpu")
    gated = {c.name: c for c in report.claims if c.gated}
    assert set(gated) == {
        "schedules",
        "dyn_invertible",
        "r0_equals_dpm",
        "ddim_step_exact",
        "ddim_sampler_exact",
        "ddim_bugs_detected",
    }
    assert gated["schedules"].ours <= 1e-5
    assert gated["r0_equals_dpm"].ours == 0.0
    assert gated["ddim_step_exact"].ours <= 1e-5
    assert gated["ddim_sampler_exact"].ours <= 1e-8
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
    assert report.figures == ["samples.png", "crps_lead.png"]
    for name in report.figures:
        assert (tmp_path / "ci" / name).stat().st_size > 1000


def test_exact_checks_values() -> None:
    checks = exact_checks(seed=1)
    assert checks["r0_max_abs_diff"] == 0.0
    assert checks["ddim_step_max_err"] <= 1e-5
    assert checks["sampler_drift_exact"] <= 1e-10
    assert checks["dyn_variance_err"] <= 0.02
    # The package's sampler with the bugs injected; the spec's sizes: ~0.08 (re-mix with theta_bar_t), ~0.04 (noise
    # carried over mixed).
    assert 0.02 < checks["ddim_remix_theta_t_err"] < 1.0
    assert 0.01 < checks["ddim_no_unmix_err"] < 0.2
    assert checks["ddim_double_mix_err"] > checks["ddim_no_unmix_err"]
    assert min(checks[f"sampler_drift_{bug}"] for bug in DDIM_BUGS) > 0.1


def _fake_metrics(checks: dict[str, float]) -> dict:
    row = {"seed": 0, "dpm": {"crps": 1.0}, "dydiff": {"crps": 1.0}}
    return {
        "exact_checks": checks,
        "crps_mean": {"dpm": 1.0, "dydiff": 1.0},
        "ens_mse_mean": {"dpm": 1.0, "dydiff": 1.0},
        "per_seed": [row],
        "persistence_mse_mean": 2.0,
    }


@pytest.mark.parametrize("bug", DDIM_BUGS)
def test_gate_fails_when_the_package_sampler_has_a_ddim_bug(bug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every DynamicalDiffusion made with the bug: the exactness gates fail (they test the package's sampler)."""
    original = DynamicalDiffusion.__init__

    def buggy_init(self: DynamicalDiffusion, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        if self.dependent_noise:
            self.ddim_bug = bug

    monkeypatch.setattr(DynamicalDiffusion, "__init__", buggy_init)
    result = {c.name: c for c in claims(_fake_metrics(exact_checks(seed=0)), PRESETS["ci"])}
    assert not result["ddim_step_exact"].holds
    assert not result["ddim_sampler_exact"].holds
    assert result["r0_equals_dpm"].holds  # with r = 0 every bug is invisible (theta_bar = 1): as it should be


def test_bugs_gate_fails_when_the_injected_bugs_do_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that could not see a bug would fail `ddim_bugs_detected` (the flag ignored: the sampler is exact)."""
    original = DynamicalDiffusion.__init__

    def ignore_bug(self: DynamicalDiffusion, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        self.ddim_bug = None

    monkeypatch.setattr(DynamicalDiffusion, "__init__", ignore_bug)
    result = {c.name: c for c in claims(_fake_metrics(exact_checks(seed=0)), PRESETS["ci"])}
    assert not result["ddim_bugs_detected"].holds
    assert result["ddim_step_exact"].holds and result["ddim_sampler_exact"].holds


def test_paired_claims_test_every_variant_against_dpm_and_the_ablations_against_dydiff() -> None:
    config = replace(PRESETS["bench"], seeds=7)
    names = [name for name, _, _ in model_variants(config)]
    assert names == ["dpm", "dydiff", "dydiff_r0.1", "dydiff_independent_noise"]
    # Each variant 0.1 below the one before on every seed: exact sign-flip p = 2/128 per comparison.
    per_seed = [
        {
            "seed": s,
            "persistence_mse": 1.0,
            **{n: {"crps": 1.0 + 0.01 * s - 0.1 * i, "ens_mse": 0.5} for i, n in enumerate(names)},
        }
        for s in range(7)
    ]
    metrics = _metrics(config, {}, per_seed)
    assert list(metrics["paired_vs_dpm"]) == names[1:]
    assert list(metrics["paired_vs_dydiff"]) == names[2:]
    assert metrics["paired_vs_dpm"]["dydiff"]["p_holm"] == pytest.approx(3 * 2 / 128)  # Holm over three
    assert metrics["paired_vs_dydiff"]["dydiff_r0.1"]["p_holm"] == pytest.approx(2 * 2 / 128)  # over two
    assert metrics["paired_vs_dydiff"]["dydiff_independent_noise"]["mean_diff"] == pytest.approx(0.2)
    paired = [c for c in claims(metrics, config) if c.name.startswith("paired_")]
    assert [c.name for c in paired] == [
        "paired_dydiff",
        "paired_dydiff_r0.1",
        "paired_dydiff_independent_noise",
        "paired_dydiff_r0.1_vs_dydiff",
        "paired_dydiff_independent_noise_vs_dydiff",
    ]
    assert all(c.holds and not c.gated for c in paired)
    for row in per_seed:  # the ablation now worse than DyDiff on every seed: its claim fails
        row["dydiff_r0.1"]["crps"] = row["dydiff"]["crps"] + 0.1
    worse = {c.name: c for c in claims(_metrics(config, {}, per_seed), config)}
    assert not worse["paired_dydiff_r0.1_vs_dydiff"].holds
    assert worse["paired_dydiff_independent_noise_vs_dydiff"].holds


def test_claims_exist_whatever_was_measured() -> None:
    """Which claims a run has depends on its config only: one seed has no paired claims, a missing metric is
    reported as not measured."""
    names = [d.name for d in declared(PRESETS["ci"])]
    assert not any(n.startswith("paired_") for n in names)
    assert [d.name for d in declared(PRESETS["quick"])][-2:] == ["paired_dydiff", "both_beat_persistence"]
    missing = claims({}, PRESETS["quick"])
    assert [c.name for c in missing] == [d.name for d in declared(PRESETS["quick"])]
    assert not any(c.holds for c in missing)


def test_committed_claims_are_the_declared_claims() -> None:
    report = Report.read(RESULTS)
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []


def test_presets_and_validation() -> None:
    assert set(PRESETS) == {"ci", "quick", "bench", "full"}
    quick = PRESETS["quick"]  # spec 6a
    assert (quick.steps, quick.batch_size, quick.seeds, quick.n_test, quick.ddim_steps) == (2000, 64, 5, 128, 20)
    assert PRESETS["full"].dataset == "ns2d"
    with pytest.raises(ValueError, match="gamma_ratio"):
        Config(gamma_ratio=2.0)
    with pytest.raises(ValueError, match="dataset"):
        Config(dataset="mnist")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 0"):
        Config(workers=0)
    with pytest.raises(ValueError, match="ablation_ratios"):
        Config(ablation_ratios=(0.5, 1.5))
    with pytest.raises(ValueError, match="same model twice"):
        Config(ablation_ratios=(0.1, 0.1000001))
    # Caught before any training: counts whose last DDIM timestep would be T, and values the run cannot use.
    for bad, match in (
        ({"ddim_steps": 1000}, "ddim_steps=1000"),
        ({"ddim_steps": 3}, "ddim_steps=3"),
        ({"ddim_steps": 2000}, "ddim_steps must be at most T=1000"),
        ({"n_samples": 1}, "n_samples must be an integer >= 2, got 1"),
        ({"n_test": 1}, "n_test must be an integer >= 2, got 1"),
        ({"clip_ablation": 0.0}, "clip_ablation must be > 0, got 0.0"),
        ({"weight_decay": -0.1}, "weight_decay must be >= 0, got -0.1"),
        ({"lr": float("nan")}, "lr must be a finite number"),
        ({"ch_mult": ()}, "ch_mult must not be empty"),
        ({"steps": 0}, "steps must be an integer >= 1"),
    ):
        with pytest.raises(ValueError, match=match):
            Config(**bad)
    with pytest.raises(ValueError, match="unknown scale"):
        run("huge")


def test_existing_run_folder_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text("{}")
    for overwrite in (False, True):  # a folder no run made is never replaced
        with pytest.raises(ValueError, match="no iclr25 run made"):
            run("ci", tmp_path / "r", overwrite=overwrite)
    assert (tmp_path / "r" / "results.json").read_text() == "{}"
    with pytest.raises(ValueError, match="device must be one of"):
        run("ci", tmp_path / "new", device="tpu")
    assert not (tmp_path / "new").exists()


def test_report_command_names_the_overrides() -> None:
    assert (
        rerun_command(SLUG, "quick", PRESETS["quick"], PRESETS) == "iclr25-dynamical-diffusion reproduce --scale quick"
    )
    changed = replace(PRESETS["quick"], seeds=1, ch_mult=(1, 2), clip_ablation=None)
    command = rerun_command(SLUG, "quick", changed, PRESETS)
    assert command == "iclr25-dynamical-diffusion reproduce --scale quick ch_mult=1,2 seeds=1 clip_ablation=None"
    assert build_config(PRESETS["quick"], None, command.split()[4:]) == changed  # the command reruns that config


def test_model_variants_name_the_ablations() -> None:
    assert model_variants(Config()) == [("dpm", 0.0, True), ("dydiff", 0.5, True)]
    variants = model_variants(Config(ablation_ratios=(0.1, 1.0), noise_ablation=True))
    assert variants[2:] == [
        ("dydiff_r0.1", 0.1, True),
        ("dydiff_r1", 1.0, True),
        ("dydiff_independent_noise", 0.5, False),
    ]
    flipped = model_variants(Config(dependent_noise=False, noise_ablation=True))
    assert flipped[-1] == ("dydiff_dependent_noise", 0.5, True)


def test_ablations_share_seeds_and_initial_weights_with_the_main_models(tmp_path: Path) -> None:
    tiny = replace(PRESETS["ci"], n_train=64, n_test=4, steps=3, width=8, ch_mult=(1,), ddim_steps=2, n_samples=2)
    report = run("ci", tmp_path, device="cpu", config=replace(tiny, ablation_ratios=(0.5, 0.0), noise_ablation=True))
    row = report.metrics["per_seed"][0]
    # An ablation identical to a main model reproduces it exactly: same data, weights, batches and noise.
    assert row["dydiff_r0.5"]["crps"] == row["dydiff"]["crps"]
    assert row["dydiff_r0"]["crps"] == row["dpm"]["crps"]
    assert row["dydiff_independent_noise"]["crps"] != row["dydiff"]["crps"]
    ablations = report.metrics["ablations"]
    assert set(ablations) == {"dydiff", "dydiff_r0.5", "dydiff_r0", "dydiff_independent_noise"}
    assert ablations["dydiff_r0"]["crps_vs_dpm"] == 1.0
    assert ablations["dydiff_independent_noise"]["dependent_noise"] is False


@pytest.mark.slow
def test_seeds_in_parallel_processes_give_the_same_numbers(tmp_path: Path) -> None:
    tiny = replace(
        PRESETS["ci"], n_train=64, n_test=4, steps=3, width=8, ch_mult=(1,), ddim_steps=2, n_samples=2, seeds=2
    )
    one = run("ci", tmp_path / "one", device="cpu", config=tiny)
    two = run("ci", tmp_path / "two", device="cpu", config=replace(tiny, workers=2))
    assert [row["seed"] for row in two.metrics["per_seed"]] == [0, 1]
    assert two.metrics["per_seed"] == one.metrics["per_seed"]  # every metric of every seed and model, exactly
    # The parent logs the workers' curves and metrics afterwards: the same rows as one process logs live.
    logged = {n: (tmp_path / n / "metrics.jsonl").read_text().splitlines() for n in ("one", "two")}
    assert sorted(logged["two"]) == sorted(logged["one"])
    assert any("seed1/dydiff/loss" in row for row in logged["two"])


def test_seeds_in_processes_refuse_checkpoints(tmp_path: Path) -> None:
    tiny = replace(PRESETS["ci"], n_train=16, n_test=2, steps=2, width=8, ch_mult=(1,), ddim_steps=2, seeds=2)
    with pytest.raises(ValueError, match="with --devices/checkpoints use workers=1"):
        run("ci", tmp_path, device="cpu", config=replace(tiny, workers=2, checkpoint_every=1))


def test_two_channel_turbulence_runs_end_to_end(tmp_path: Path) -> None:
    tiny = replace(PRESETS["ci"], n_train=16, n_test=2, steps=2, width=8, ch_mult=(1,), ddim_steps=2, n_samples=2)
    ns = replace(tiny, dataset="ns2d", size=16, n_context=2, n_future=2)
    report = run("ci", tmp_path, device="cpu", config=ns)
    assert len(report.metrics["per_seed"][0]["dydiff"]["crps_per_lead"]) == 2
    assert (tmp_path / "samples.png").stat().st_size > 1000
