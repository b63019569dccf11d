"""CP²: Probabilistic Conformal Prediction with Approximate Conditional Validity (ICLR 2025, arXiv 2407.01794).

CP²-PCP (Alg. 1) and CP²-HPD (Alg. 2), the paper's baselines (split CP, PCP/HD-PCP, Π-only, CQR, CQR2), an
MDN and oracle mixture estimators, the metrics (coverage, x-bin coverage, worst-slab coverage, size) and the
reproduction. Public names load lazily, so importing the package does not import torch.
"""

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="conditional-conformal",
    title="Probabilistic Conformal Prediction with Approximate Conditional Validity",
    authors="Vincent Plassier, Alexander Fishkov, Mohsen Guizani, Maxim Panov, Eric Moulines",
    arxiv="2407.01794",
    code="stat-ml/conditional_cp",
    cli="iclr25.conditional_conformal.cli:main",
    reproduce="iclr25.conditional_conformal.reproduce:run",
    summary=(
        "CP²: conformal sets from a conditional generative model whose per-x size is set under the model and "
        "whose global adjustment is calibrated; approximately conditionally valid (CP²-PCP, CP²-HPD)."
    ),
    scales=("ci", "quick", "full"),
)

_EXPORTS = {
    "CP2PCP": "cp2",
    "CP2HPD": "cp2",
    "Draws": "cp2",
    "draw": "cp2",
    "conformal_quantile": "cp2",
    "PCP": "baselines",
    "SplitCP": "baselines",
    "PiOnly": "baselines",
    "CQR": "baselines",
    "CQR2": "baselines",
    "QuantileNet": "baselines",
    "MDN": "estimators",
    "OracleMixtureSampler": "estimators",
    "GaussianMixtureConditional": "estimators",
    "UnionOfBalls": "sets",
    "Box": "sets",
    "LevelSet": "sets",
    "coverage": "metrics",
    "binned_coverage": "metrics",
    "wsc": "metrics",
    "set_size": "metrics",
    "bimodal_hetero": "data",
    "bimodal_hetero_law": "data",
    "ring2d": "data",
    "ring2d_law": "data",
    "rosenbrock10d": "data",
    "load_real": "data",
    "Config": "config",
    "PRESETS": "config",
    "run": "reproduce",
    "claims": "reproduce",
}
__all__ = ["PAPER", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
