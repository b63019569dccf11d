"""The claim gate: the `ci` preset asserts every gated claim with its margin; the gate fails on broken variants."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from iclr25.compose_decompose import games as games_module
from iclr25.compose_decompose import metrics as metrics_module
from iclr25.compose_decompose.claims import declared
from iclr25.compose_decompose.config import PRESETS
from iclr25.compose_decompose.experiments import experiments, mechanics
from iclr25.compose_decompose.reproduce import run
from iclr25.shared.claims import evaluate

MECHANICS = {"cbm_reference_fixture", "ami_bounds", "straight_through_vq", "hard_distractors"}


def claims(m, cfg):
    """The declared claims evaluated on metrics `m`."""
    return evaluate(declared(cfg), m, cfg)


@pytest.mark.claims
def test_ci_claims(tmp_path):
    cfg = PRESETS["ci"]
    report = run("ci", tmp_path / "ci")
    assert not report.failed_gated, [c.name for c in report.failed_gated]
    s = report.metrics["summary"]
    for ch in ("cb", "gs"):
        g = s[f"thing/{ch}/K12"]
        assert g["n_seeds"] == 3
        assert g["decompose_cand_acc_mean"] >= cfg.gate_min_acc  # spec 9.6
        assert g["decompose_cand_acc_zero_message_mean"] <= cfg.gate_max_zero_acc
    m = report.metrics["mechanics"]
    assert (round(m["cbm_fixture_match"], 3), round(m["cbm_fixture_precision"], 3)) == (1.0, 0.9)
    assert m["hard_distractor_exact_one"] == 1.0 and m["vq_grad_err"] < 1e-5
    gated = {c.name for c in report.claims if c.gated}
    assert gated == {
        "decompose_uses_message_cb",
        "decompose_uses_message_gs",
        "cbm_reference_fixture",
        "ami_bounds",
        "straight_through_vq",
        "hard_distractors",
    }
    reported = {c.name for c in report.claims if not c.gated}
    assert {"compose_zero_shot_cb", "cb_beats_gs_compose", "exact_word_set_cb"} <= reported
    assert report.throughput["thing_train_games_per_s"] > 0


def test_gate_fails_when_the_message_is_not_learned(tmp_path):
    """Broken variant: agents trained with the message zeroed. Accuracy stays at chance and the gate fails."""
    cfg = dataclasses.replace(PRESETS["ci"], break_message=True, seeds=1, eval_games=200)
    report = run("ci", tmp_path / "broken", config=cfg)
    failed = {c.name for c in report.failed_gated}
    assert {"decompose_uses_message_cb", "decompose_uses_message_gs"} <= failed
    assert report.claim("decompose_uses_message_cb").ours < 0.6


def test_mechanics_gates_fail_on_broken_code(monkeypatch):
    good = mechanics(0)
    base = {"summary": {}, "runs": {}, "mechanics": good}
    judged = claims(base, PRESETS["ci"])
    assert all(c.holds for c in judged if c.name in MECHANICS)
    assert not any(c.measured for c in judged if c.name not in MECHANICS)  # no runs: reported as not measured
    real_cbm = metrics_module.concept_best_match
    monkeypatch.setattr(metrics_module, "concept_best_match", lambda s, words_eos=False: real_cbm(s, False))
    bad = claims({"summary": {}, "mechanics": mechanics(0)}, PRESETS["ci"])
    assert not next(c for c in bad if c.name == "cbm_reference_fixture").holds  # EOS switch ignored
    monkeypatch.undo()

    class UniformSampler(games_module.GameSampler):  # broken: ignores the request for hard distractors
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.distractors = "uniform"

    monkeypatch.setattr(games_module, "GameSampler", UniformSampler)
    bad = claims({"summary": {}, "mechanics": mechanics(0)}, PRESETS["ci"])
    assert not next(c for c in bad if c.name == "hard_distractors").holds


def test_claims_judge_the_zero_message_control():
    m = {
        "summary": {
            "thing/cb/K12": {"decompose_cand_acc_mean": 0.8, "decompose_cand_acc_zero_message_mean": 0.7, "n_seeds": 3},
            "thing/gs/K12": {"decompose_cand_acc_mean": 0.6, "decompose_cand_acc_zero_message_mean": 0.5, "n_seeds": 3},
        },
        "mechanics": mechanics(0),
    }
    out = {c.name: c.holds for c in claims(m, PRESETS["ci"])}
    assert not out["decompose_uses_message_cb"] and not out["decompose_uses_message_gs"]


def test_experiment_plan_and_presets():
    names = [n for n, _ in experiments(PRESETS["quick"])]
    assert names[:2] == ["thing/cb/K12/s0", "thing/gs/K12/s0"] and "thing/cb/K48/s2" in names
    assert "shapes/cb/K12/s0" in names and "thing/qt/K12/qt/s0" in names
    assert len(experiments(PRESETS["ci"])) == 6
    full = PRESETS["full"]
    assert (
        full.steps == 20000
        and full.compose_steps == 10000
        and full.seeds == 5
        and set(full.channels) == {"cb", "gs", "qt"}
    )
    with pytest.raises(ValueError, match="channels"):
        dataclasses.replace(PRESETS["ci"], channels=("vq",))
    with pytest.raises(ValueError, match="K must be"):
        dataclasses.replace(PRESETS["ci"], K=0)
    with pytest.raises(ValueError, match="ablations"):
        dataclasses.replace(PRESETS["ci"], ablations=("magic",))


def test_committed_claims_are_the_declared_claims():
    from iclr25.shared.claims import config_of, differences
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []
