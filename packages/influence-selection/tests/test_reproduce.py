"""The claim gate on the ci preset, and proof that it fails on deliberately broken variants of FI."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from iclr25.influence_selection import experiments, reproduce
from iclr25.influence_selection import fi as F
from iclr25.influence_selection.claims import declared
from iclr25.influence_selection.config import PRESETS
from iclr25.shared.claims import evaluate

GATED = {
    "linear_fi_minus_iv_b20_pp",
    "linear_fi_wins_b20",
    "linear_fi_near_untrimmed_b20_pp",
    "noise_fi_top10_flipped",
    "noise_fi_bottom10_flipped",
    "al_auc_fi_minus_iv",
    "al_auc_fi_minus_random",
}


def _with_threads(n: int, fn):
    """fn() with n BLAS threads and n torch threads in the environment (restored afterwards)."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n):
            return fn()
    finally:
        torch.set_num_threads(before)


_TIMINGS = {"speed", "score_s", "pool_points_per_s", "exact_s", "kfsvd_s"}


def _numbers(report) -> tuple[list, dict]:
    """Every claim (name, value, verdict) and every metric except wall-clock timings."""

    def strip(x):
        return {k: strip(v) for k, v in x.items() if k not in _TIMINGS} if isinstance(x, dict) else x

    return [(c.name, c.ours, c.holds) for c in report.claims], strip(report.metrics)


@pytest.fixture(scope="module")
def ci_one_thread(tmp_path_factory: pytest.TempPathFactory):
    t = time.process_time()
    report = _with_threads(1, lambda: reproduce.run("ci", tmp_path_factory.mktemp("ci1") / "run"))
    print(f"ci gate: {time.process_time() - t:.1f} s of CPU")
    return report


@pytest.mark.claims
def test_gated_claims_hold(ci_one_thread) -> None:
    report = ci_one_thread
    assert {c.name for c in report.claims if c.gated} == GATED
    assert report.failed_gated == [], [(c.name, c.ours) for c in report.failed_gated]
    al = report.metrics["al"]
    assert all(al[s]["duplicates"] == 0 and al[s]["grew_by_acquire"] for s in ("fi", "iv", "random"))


@pytest.mark.claims
def test_ci_numbers_do_not_depend_on_the_thread_count(ci_one_thread, tmp_path: Path) -> None:
    """Two BLAS / torch threads in the environment give bitwise the same claims and metrics as one."""
    two = _with_threads(2, lambda: reproduce.run("ci", tmp_path / "run"))
    assert _numbers(two) == _numbers(ci_one_thread)


class _Plain:
    """What `measure` needs from a run (seed, progress, a logger), without the run layer's thread pinning."""

    seed = 0

    def progress(self, iterable, **_):
        return iterable

    def log_scalars(self, *_, **__) -> None:
        """Log nothing."""


def _measured(n: int) -> tuple[list, dict]:
    """Claims and metrics of a small ci configuration measured with n BLAS / torch threads and no thread guard."""
    cfg = _small(linear_seeds=2, noise_seeds=2, al_seeds=1, al_rounds=4)
    metrics = _with_threads(n, lambda: experiments.measure(cfg, _Plain()))
    return _numbers(SimpleNamespace(claims=evaluate(declared(cfg), metrics, cfg), metrics=metrics))


def test_rounding_alone_makes_the_numbers_independent_of_the_thread_count() -> None:
    """Unguarded (two real BLAS threads), the rounded rankings still give bitwise the same numbers."""
    assert _measured(1) == _measured(2)


def test_the_thread_check_fails_when_a_score_depends_on_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """An IV whose value moves with the BLAS thread count (beyond the rounding) moves the numbers: the check sees it."""
    import numpy as np
    from threadpoolctl import threadpool_info

    from iclr25.influence_selection import baselines

    real = baselines.iv_scores

    def thread_dependent(*a, **k):  # a reduction split per thread, exaggerated far above the rounding grid
        n = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        v = real(*a, **k)
        return v + 0.5 * (n - 1) * np.std(v) * np.random.default_rng(len(v)).standard_normal(v.shape)

    monkeypatch.setattr(baselines, "iv_scores", thread_dependent)  # the active-learning arm
    monkeypatch.setattr(experiments, "iv_scores", thread_dependent)  # the trimming arms
    assert _measured(1) != _measured(2)


def _small(**kw):
    base = dict(linear_seeds=10, noise_seeds=10, al_seeds=2)
    return dataclasses.replace(PRESETS["ci"], **{**base, **kw})


def test_the_noise_gate_fails_without_the_1_over_n_in_g(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping 1/n from J inside G (the pitfall of spec 9) ranks the flipped points last."""
    real = F.fi_util

    def broken(*a, **k):
        return real(*a, **{**k, "metric_form": "drop_n"})

    monkeypatch.setattr(experiments, "fi_util", broken)
    report = reproduce.run("ci", tmp_path / "run", config=_small(al_rounds=1))
    failed = {c.name for c in report.failed_gated}
    assert "noise_fi_top10_flipped" in failed


def test_the_al_gate_fails_when_fi_picks_the_smallest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = F.fi_active
    monkeypatch.setattr(F, "fi_active", lambda *a, **k: -real(*a, **k))
    report = reproduce.run("ci", tmp_path / "run", config=_small())
    failed = {c.name for c in report.failed_gated}
    assert {"al_auc_fi_minus_iv", "al_auc_fi_minus_random"} <= failed
    assert "noise_fi_top10_flipped" not in failed  # the trimming part is untouched by this bug


def test_committed_claims_are_the_declared_claims() -> None:
    from iclr25.shared.claims import config_of, differences
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []


def test_image_claims_and_figure_from_the_committed_quick_metrics(tmp_path: Path) -> None:
    """Image-AL runs add reported claims (one per strategy besides FI); the figure draws the committed metrics."""
    from iclr25.shared.results import Report

    committed = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = dataclasses.replace(PRESETS["quick"], image_runs=1, image_strategies=("fi", "random"))
    fake = {"strategies": ["fi", "random"], "data": "x", "fi": {"auc": 0.9}, "random": {"auc": 0.95}}
    extra = evaluate(declared(cfg), {**committed.metrics, "image_al": fake}, cfg)
    img = [c for c in extra if c.name.startswith("image_al")]
    assert [(c.name, c.holds, c.gated) for c in img] == [("image_al_auc_fi_minus_random", False, False)]
    assert reproduce.plot(committed.metrics, PRESETS["quick"], tmp_path) == ["summary.png"]
    assert (tmp_path / "summary.png").stat().st_size > 1000
