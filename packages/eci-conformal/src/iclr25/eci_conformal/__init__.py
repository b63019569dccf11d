"""Error-quantified Conformal Inference for Time Series (ICLR 2025, arXiv 2502.00818).

Online conformal intervals for time series whose threshold update quantifies past error with a smooth feedback term.
Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `methods` (ECI), `baselines`, `intervals` (registry + interval wrapper), `metrics`, `data`,
`reference` (slow loop forms), `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="eci-conformal",
    title="Error-quantified Conformal Inference for Time Series",
    authors="Junxi Wu, Dongjian Hu, Yajie Bao, Shu-Tao Xia, Changliang Zou",
    arxiv="2502.00818",
    code="creator-xi/Error-quantified-Conformal-Inference",
    cli="iclr25.eci_conformal.cli:main",
    reproduce="iclr25.eci_conformal.reproduce:run",
    summary="Online conformal intervals for time series whose threshold update quantifies past error with a smooth feedback term.",
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "ECI": "methods",
    "eci": "methods",
    "eci_cutoff": "methods",
    "eci_integral": "methods",
    "run_online": "methods",
    "ACI": "baselines",
    "OGD": "baselines",
    "SFOGD": "baselines",
    "DecayOGD": "baselines",
    "ConformalPID": "baselines",
    "DtACI": "baselines",
    "TrailingWindow": "baselines",
    "ThetaScorecaster": "baselines",
    "aci": "baselines",
    "ogd": "baselines",
    "sf_ogd": "baselines",
    "decay_ogd": "baselines",
    "conformal_pid": "baselines",
    "trailing_window": "baselines",
    "dtaci": "baselines",
    "make_method": "intervals",
    "interval_from_scores": "intervals",
    "OnlineIntervals": "intervals",
    "METHODS": "intervals",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
