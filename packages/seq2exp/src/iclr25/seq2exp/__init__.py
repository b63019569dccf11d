"""Learning to Discover Regulatory Elements for Gene Expression Prediction (Seq2Exp; ICLR 2025, arXiv 2502.13991).

A per-base Beta mask, combining a sequence Beta from a learned generator with a fixed Beta from epigenomic signals
and kept sparse by a KL information bottleneck, selects the regulatory elements a predictor reads.
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="seq2exp",
    title="Learning to Discover Regulatory Elements for Gene Expression Prediction",
    authors="Xingyu Su, Haiyang Yu, Degui Zhi, Shuiwang Ji",
    arxiv="2502.13991",
    code="divelab/AIRS",
    cli="iclr25.seq2exp.cli:main",
    reproduce="iclr25.seq2exp.reproduce:run",
    scales=("ci", "quick", "full"),
    summary="A learned Beta mask over bases (sequence generator + fixed signal prior + KL bottleneck) selects the "
    "regulatory elements a gene-expression predictor reads.",
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "GeneWindowDataset": "data",
    "generate_planted_dataset": "data",
    "save_dataset": "data",
    "load_dataset": "data",
    "Fasta": "data",
    "SignalBeta": "seq2exp",
    "BetaMaskGenerator": "seq2exp",
    "Seq2Exp": "seq2exp",
    "beta_kl": "seq2exp",
    "seq2exp_loss": "seq2exp",
    "Seq2ExpConfig": "config",
    "Config": "config",
    "PRESETS": "config",
    "call_peaks_macs_style": "peaks",
    "read_bed": "peaks",
    "write_bed": "peaks",
    "BaselineSeqOnly": "baselines",
    "BaselineSeqSignal": "baselines",
    "MaskedPredictor": "baselines",
    "BiMamba": "backbones",
    "DilatedCNN": "backbones",
    "BiGRU": "backbones",
    "selective_scan": "backbones",
    "mask_metrics": "metrics",
    "regression_metrics": "metrics",
    "top_fraction_mask": "metrics",
    "fit": "training",
    "predict": "training",
    "build_model": "training",
    "train_and_test": "training",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
