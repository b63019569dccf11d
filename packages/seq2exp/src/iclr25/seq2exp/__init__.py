"""Learning to Discover Regulatory Elements for Gene Expression Prediction (Seq2Exp; ICLR 2025, arXiv 2502.13991).

A per-base Beta mask, combining a sequence Beta from a learned generator with a fixed Beta from epigenomic signals
and kept sparse by a KL information bottleneck, selects the regulatory elements a predictor reads.
The reproduction: `experiments` (the planted-data and GeneExp studies and their metrics), `claims` (the claims as
data, with the paper's numbers), `reproduce` (the plan: preset, experiments, figures, claims evaluated).
Public names are exported lazily: importing this package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.seq2exp.backbones import BiGRU
    from iclr25.seq2exp.backbones import BiMamba
    from iclr25.seq2exp.backbones import DilatedCNN
    from iclr25.seq2exp.backbones import selective_scan
    from iclr25.seq2exp.baselines import BaselineSeqOnly
    from iclr25.seq2exp.baselines import BaselineSeqSignal
    from iclr25.seq2exp.baselines import MaskedPredictor
    from iclr25.seq2exp.config import PRESETS
    from iclr25.seq2exp.config import Config
    from iclr25.seq2exp.config import Seq2ExpConfig
    from iclr25.seq2exp.data import Fasta
    from iclr25.seq2exp.data import GeneWindowDataset
    from iclr25.seq2exp.data import generate_planted_dataset
    from iclr25.seq2exp.data import load_dataset
    from iclr25.seq2exp.data import save_dataset
    from iclr25.seq2exp.metrics import mask_metrics
    from iclr25.seq2exp.metrics import regression_metrics
    from iclr25.seq2exp.metrics import top_fraction_mask
    from iclr25.seq2exp.peaks import call_peaks_macs_style
    from iclr25.seq2exp.peaks import read_bed
    from iclr25.seq2exp.peaks import write_bed
    from iclr25.seq2exp.seq2exp import BetaMaskGenerator
    from iclr25.seq2exp.seq2exp import Seq2Exp
    from iclr25.seq2exp.seq2exp import SignalBeta
    from iclr25.seq2exp.seq2exp import beta_kl
    from iclr25.seq2exp.seq2exp import seq2exp_loss
    from iclr25.seq2exp.training import build_model
    from iclr25.seq2exp.training import fit
    from iclr25.seq2exp.training import predict
    from iclr25.seq2exp.training import train_and_test

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
