"""Claim gate (spec §9.6): the `ci` preset (seeds 0, 1, 2, no PDBbind-matched regime) asserts every gated claim
with its margin; deliberately broken variants make the gate fail for the bug each claim names."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from iclr25.shared.claims import evaluate
from iclr25.siu_bioactivity import experiments
from iclr25.siu_bioactivity.baselines import PocketOnlyModel
from iclr25.siu_bioactivity.claims import declared
from iclr25.siu_bioactivity.config import PRESETS, Config
from iclr25.siu_bioactivity.experiments import measure
from iclr25.siu_bioactivity.reproduce import run

GATED = {
    "pocket_only_star_undefined",
    "pocket_only_global_pearson",
    "complex_pearson_star",
    "complex_vs_pocket_star",
    "new_metric_separates",
    "siu_beats_pdbbind_like",
    "vote_accepts",
    "vote_poses_better",
}
ONE_SEED = replace(PRESETS["ci"], seeds=(0,))


def _holds(cfg: Config) -> dict[str, bool]:
    return {c.name: c.holds for c in evaluate(declared(cfg), measure(cfg), cfg)}


@pytest.mark.claims
def test_ci_claims(tmp_path):
    t0 = time.process_time()
    report = run("ci", tmp_path / "ci", device="cpu")
    cpu = time.process_time() - t0
    assert cpu < 120, f"the ci gate took {cpu:.0f} s of CPU"
    assert {c.name for c in report.claims if c.gated} == GATED
    for s, m in report.metrics["seeds"].items():
        po, cx, pdb = m["siu/pocket"], m["siu/complex"], m["pdbbind/complex"]
        assert po["star_nan_every_type"] and po["pearson_star_nan0"] == 0.0, s
        assert po["pearson_all"] >= 0.5, s
        assert cx["pearson_star"] >= 0.3 and cx["pearson_star"] - po["pearson_star_nan0"] >= 0.3, s
        gap_star = cx["pearson_star"] - po["pearson_star_nan0"]
        gap_glob = cx["pearson_all"] - po["pearson_all"]
        assert gap_star - gap_glob >= 0.3, s
        assert cx["pearson_star"] - pdb["pearson_star"] >= 0.15, s
        v = m["vote"]
        assert v["accept_rate_two_successful"] >= 0.9, s
        assert all(v["agreeing_rmsd"] < r for r in v["program_rmsd_on_accepted"].values()), s
    assert not report.failed_gated, [c.name for c in report.failed_gated]
    saved = json.loads((tmp_path / "ci" / "results.json").read_text())
    assert {c["name"] for c in saved["claims"]} == {c.name for c in report.claims}


def test_pooled_pearson_star_fails_the_gap_claim():
    """A "Pearson*" computed on pooled data instead of per pocket must fail claim 3 (spec §9.6)."""
    holds = _holds(replace(ONE_SEED, star_metric="pooled"))
    assert not holds["new_metric_separates"]
    assert not holds["pocket_only_star_undefined"]


def test_pocket_only_as_zero_without_nan_fails(monkeypatch):
    """Evaluating pocket-only as 0 with no NaN field must fail claim 1 (spec §9.6)."""
    real = experiments.evaluate_bioactivity

    def zeroed(pred, target, ids):
        ev = real(pred, target, ids)
        return {t: {k: (0.0 if k.endswith("star") and np.isnan(v) else v) for k, v in m.items()} for t, m in ev.items()}

    monkeypatch.setattr(experiments, "evaluate_bioactivity", zeroed)
    holds = _holds(ONE_SEED)
    assert not holds["pocket_only_star_undefined"]


def test_row_wise_pocket_only_fails(monkeypatch):
    """The pitfall of spec §10.1: a pocket-only model predicted row by row, off by rounding noise, is not constant,
    so Pearson* turns into a (meaningless) number and the gate fails."""
    rng = np.random.default_rng(0)

    def noisy(self, feats, pocket_ids=None):
        pred = self.heads.predict(self._x(feats), self.n_types)
        return pred + rng.choice([0.0, 9e-16], size=pred.shape)

    monkeypatch.setattr(PocketOnlyModel, "predict", noisy)
    assert not _holds(ONE_SEED)["pocket_only_star_undefined"]


def test_vote_gate_can_fail():
    """A 0.5 A agreement threshold rejects good complexes: the acceptance gate fails."""
    holds = _holds(replace(ONE_SEED, rmsd_threshold=0.5))
    assert not holds["vote_accepts"]


def test_no_pdbbind_gap_when_regimes_match():
    """With as many ligands per pocket in the "PDBbind-like" regime as in SIU-like, claim 4 fails."""
    holds = _holds(replace(ONE_SEED, pdbbind_ligands_per_pocket=ONE_SEED.ligands_per_pocket))
    assert not holds["siu_beats_pdbbind_like"]


def test_presets_and_bad_scale(tmp_path):
    assert set(PRESETS) == {"ci", "quick", "full"}
    assert PRESETS["ci"].seeds == (0, 1, 2) and PRESETS["ci"].matched_pockets == 0
    assert PRESETS["quick"].matched_pockets == 6000
    with pytest.raises(ValueError, match="scale"):
        run("medium", tmp_path / "x")
    with pytest.raises(ValueError, match="data_dir"):
        run("full", tmp_path / "y")
    with pytest.raises(ValueError, match="dock_sigma"):
        Config(dock_sigma=(0.5,), dock_p_fail=(0.1,))


@pytest.mark.claims
def test_mlp_passes_the_same_gates():
    """The optional torch MLP (2 hidden layers, masked MSE, one head per type) must pass the same gates."""
    cfg = replace(PRESETS["ci"], model="mlp")
    failed = [c.name for c in evaluate(declared(cfg), measure(cfg), cfg) if c.gated and not c.holds]
    assert not failed, failed


def test_diagnostics_see_overfitting_when_there_is_some():
    """The reported diagnostics: on a tiny training set with almost no penalty the pocket+ligand ridge overfits
    (77 features, ~60 complexes) and `complex_not_overfit` says so; the generator-binned fingerprint has 80 pair
    counts; the contact-score ceiling on the true pose is at least the one on the docked pose."""
    from dataclasses import replace

    from iclr25.siu_bioactivity.baselines import ComplexFeaturizer
    from iclr25.siu_bioactivity.config import PRESETS
    from iclr25.siu_bioactivity.experiments import GENERATOR_EDGES, run_seed

    assert ComplexFeaturizer(GENERATOR_EDGES).n_inter == 80 and ComplexFeaturizer().n_inter == 60
    with pytest.raises(ValueError, match="contact_edges"):
        ComplexFeaturizer((0.0, 3.5, 3.5))
    cfg = replace(
        PRESETS["ci"],
        seeds=(0,),
        train_pockets=8,
        test_pockets=4,
        ligands_per_pocket=8,
        test_ligands_per_pocket=10,
        ridge_penalty=1e-6,
        diagnostics=True,
    )
    result = run_seed(cfg, 0)
    d = result["diagnostics"]
    assert d["train_pearson_star"] - d["test_pearson_star"] > 0.05, d
    assert d["ceiling_true_pose"] >= d["ceiling_docked_pose"] - 0.05
    verdict = {c.name: c for c in evaluate(declared(cfg), {"seeds": {"0": result}}, cfg)}
    assert not verdict["complex_not_overfit"].holds and not verdict["complex_not_overfit"].gated


def test_committed_claims_are_the_declared_claims():
    from iclr25.shared.claims import config_of, differences
    from iclr25.shared.results import Report

    report = Report.read(Path(__file__).resolve().parents[1] / "results" / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []
