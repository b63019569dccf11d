"""CP²: Probabilistic Conformal Prediction with Approximate Conditional Validity (ICLR 2025, arXiv 2407.01794).

CP²-PCP (Alg. 1) and CP²-HPD (Alg. 2), the paper's baselines (split CP, PCP/HD-PCP, Π-only, CQR, CQR2), an
MDN and oracle mixture estimators, the metrics (coverage, x-bin coverage, worst-slab coverage, size), the
experiments (`experiments`), the claims declared as data (`claims`) and the reproduction plan (`reproduce`).
Public names load lazily, so importing the package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.conditional_conformal.baselines import CQR
    from iclr25.conditional_conformal.baselines import CQR2
    from iclr25.conditional_conformal.baselines import PCP
    from iclr25.conditional_conformal.baselines import PiOnly
    from iclr25.conditional_conformal.baselines import QuantileNet
    from iclr25.conditional_conformal.baselines import SplitCP
    from iclr25.conditional_conformal.claims import declared
    from iclr25.conditional_conformal.config import PRESETS
    from iclr25.conditional_conformal.config import Config
    from iclr25.conditional_conformal.cp2 import CP2HPD
    from iclr25.conditional_conformal.cp2 import CP2PCP
    from iclr25.conditional_conformal.cp2 import Draws
    from iclr25.conditional_conformal.cp2 import conformal_quantile
    from iclr25.conditional_conformal.cp2 import draw
    from iclr25.conditional_conformal.data import bimodal_hetero
    from iclr25.conditional_conformal.data import bimodal_hetero_law
    from iclr25.conditional_conformal.data import load_real
    from iclr25.conditional_conformal.data import ring2d
    from iclr25.conditional_conformal.data import ring2d_law
    from iclr25.conditional_conformal.data import rosenbrock10d
    from iclr25.conditional_conformal.estimators import MDN
    from iclr25.conditional_conformal.estimators import GaussianMixtureConditional
    from iclr25.conditional_conformal.estimators import OracleMixtureSampler
    from iclr25.conditional_conformal.metrics import binned_coverage
    from iclr25.conditional_conformal.metrics import coverage
    from iclr25.conditional_conformal.metrics import set_size
    from iclr25.conditional_conformal.metrics import wsc
    from iclr25.conditional_conformal.reproduce import run
    from iclr25.conditional_conformal.sets import Box
    from iclr25.conditional_conformal.sets import LevelSet
    from iclr25.conditional_conformal.sets import UnionOfBalls

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
