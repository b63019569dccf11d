"""Error-quantified Conformal Inference for Time Series (ICLR 2025, arXiv 2502.00818).

Online conformal intervals for time series whose threshold update quantifies past error with a smooth feedback term.
Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `methods` (ECI), `baselines`, `intervals` (registry + interval wrapper), `metrics`, `data`,
`forecast` (AR/Theta forecasters, Theta scorecaster), `reference` (slow loop forms), `selection` (the lr
selection rule); the harness: `experiments` (the measurements), `claims` (the claims as data), `reproduce` (the
plan), `tables` (the paper's real-data tables, `iclr25-eci-conformal tables`), `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.eci_conformal.baselines import ACI
    from iclr25.eci_conformal.baselines import OGD
    from iclr25.eci_conformal.baselines import SFOGD
    from iclr25.eci_conformal.baselines import ConformalPID
    from iclr25.eci_conformal.baselines import DecayOGD
    from iclr25.eci_conformal.baselines import DtACI
    from iclr25.eci_conformal.baselines import ThetaScorecaster
    from iclr25.eci_conformal.baselines import TrailingWindow
    from iclr25.eci_conformal.baselines import aci
    from iclr25.eci_conformal.baselines import conformal_pid
    from iclr25.eci_conformal.baselines import decay_ogd
    from iclr25.eci_conformal.baselines import dtaci
    from iclr25.eci_conformal.baselines import ogd
    from iclr25.eci_conformal.baselines import sf_ogd
    from iclr25.eci_conformal.baselines import trailing_window
    from iclr25.eci_conformal.forecast import ReplayScorecaster
    from iclr25.eci_conformal.forecast import ThetaModelScorecaster
    from iclr25.eci_conformal.forecast import ar_forecasts
    from iclr25.eci_conformal.forecast import theta_forecasts
    from iclr25.eci_conformal.intervals import METHODS
    from iclr25.eci_conformal.intervals import OnlineIntervals
    from iclr25.eci_conformal.intervals import interval_from_scores
    from iclr25.eci_conformal.intervals import make_method
    from iclr25.eci_conformal.methods import ECI
    from iclr25.eci_conformal.methods import eci
    from iclr25.eci_conformal.methods import eci_cutoff
    from iclr25.eci_conformal.methods import eci_integral
    from iclr25.eci_conformal.methods import run_online

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
