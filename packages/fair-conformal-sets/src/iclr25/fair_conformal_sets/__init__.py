"""Conformal Prediction Sets Can Cause Disparate Impact (ICLR 2025, arXiv 2410.01888).

Conformal sets shown to people raise decision accuracy unequally across groups; Equalized Coverage (Mondrian)
sets can widen the gap, so the paper recommends equalizing set size. Public names are exported lazily:
importing this package imports neither numpy nor torch. Modules: `scores` (LAC, APS, RAPS, SAPS), `calibrate`
(marginal, Mondrian, Equalized Set Size), `sets` (Top-k, Average-k), `predictor` (fit / predict_set),
`metrics`, `decision` (simulated decision-maker and study), `fcpd` (human-study re-analysis), `gee` (clustered
logistic GEE), `validity` (one ESS validity repetition), `tuning` (real-task hyperparameters), `data`, `reference`,
`experiments` (the measurements), `claims` (the claims, as data), `config`, `reproduce` (the plan), `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.fair_conformal_sets.calibrate import conformal_quantile
    from iclr25.fair_conformal_sets.calibrate import equalized_set_size
    from iclr25.fair_conformal_sets.calibrate import fill_empty_with_top1
    from iclr25.fair_conformal_sets.calibrate import fit_equalized_set_size
    from iclr25.fair_conformal_sets.calibrate import marginal
    from iclr25.fair_conformal_sets.calibrate import mondrian
    from iclr25.fair_conformal_sets.config import PRESETS
    from iclr25.fair_conformal_sets.config import Config
    from iclr25.fair_conformal_sets.data import ModelOutputs
    from iclr25.fair_conformal_sets.data import load_npz
    from iclr25.fair_conformal_sets.data import synthetic
    from iclr25.fair_conformal_sets.decision import SimulatedDecisionMaker
    from iclr25.fair_conformal_sets.gee import gee_logistic
    from iclr25.fair_conformal_sets.gee import treatment_group_odds_ratios
    from iclr25.fair_conformal_sets.metrics import bootstrap_disparate_impact
    from iclr25.fair_conformal_sets.metrics import disparate_impact
    from iclr25.fair_conformal_sets.metrics import group_report
    from iclr25.fair_conformal_sets.predictor import ConformalSets
    from iclr25.fair_conformal_sets.scores import aps
    from iclr25.fair_conformal_sets.scores import lac
    from iclr25.fair_conformal_sets.scores import raps
    from iclr25.fair_conformal_sets.scores import saps
    from iclr25.fair_conformal_sets.scores import score_matrix
    from iclr25.fair_conformal_sets.scores import softmax
    from iclr25.fair_conformal_sets.scores import true_label
    from iclr25.fair_conformal_sets.sets import average_k
    from iclr25.fair_conformal_sets.sets import search_average_k
    from iclr25.fair_conformal_sets.sets import top_k

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
