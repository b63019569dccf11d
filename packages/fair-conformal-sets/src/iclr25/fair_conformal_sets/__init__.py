"""Conformal Prediction Sets Can Cause Disparate Impact (ICLR 2025, arXiv 2410.01888).

Conformal sets shown to people raise decision accuracy unequally across groups; Equalized Coverage (Mondrian)
sets can widen the gap, so the paper recommends equalizing set size. Public names are exported lazily:
importing this package imports neither numpy nor torch. Modules: `scores` (LAC, APS, RAPS, SAPS), `calibrate`
(marginal, Mondrian, Equalized Set Size), `sets` (Top-k, Average-k), `predictor` (fit / predict_set),
`metrics`, `decision` (simulated decision-maker), `fcpd` (human-study re-analysis), `gee` (clustered logistic
GEE), `data`, `reference`,
`config`, `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="fair-conformal-sets",
    title="Conformal Prediction Sets Can Cause Disparate Impact",
    authors="Jesse C. Cresswell, Bhargava Kumar, Yi Sui, Mouloud Belbahri",
    arxiv="2410.01888",
    code="layer6ai-labs/conformal-prediction-fairness",
    cli="iclr25.fair_conformal_sets.cli:main",
    reproduce="iclr25.fair_conformal_sets.reproduce:run",
    summary=(
        "Prediction sets raise human accuracy unequally across groups; Equalized Coverage widens the gap, "
        "equalizing set size narrows it (simulated decision-maker + human-study re-analysis)."
    ),
    scales=("quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "softmax": "scores",
    "lac": "scores",
    "aps": "scores",
    "raps": "scores",
    "saps": "scores",
    "score_matrix": "scores",
    "true_label": "scores",
    "conformal_quantile": "calibrate",
    "marginal": "calibrate",
    "mondrian": "calibrate",
    "equalized_set_size": "calibrate",
    "fit_equalized_set_size": "calibrate",
    "fill_empty_with_top1": "calibrate",
    "top_k": "sets",
    "average_k": "sets",
    "search_average_k": "sets",
    "ConformalSets": "predictor",
    "group_report": "metrics",
    "disparate_impact": "metrics",
    "bootstrap_disparate_impact": "metrics",
    "SimulatedDecisionMaker": "decision",
    "gee_logistic": "gee",
    "treatment_group_odds_ratios": "gee",
    "ModelOutputs": "data",
    "synthetic": "data",
    "load_npz": "data",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
