"""Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from Generalization (ICLR 2025,
arXiv 2502.17024).

Pre-training by auto-regressive next-token prediction on a two-level corpus (K topics x N sequences x T tokens)
generalises to new sequences (G_seq) and to new topics (G_top); ICL on prompts of unseen topics is exactly that
generalisation. Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `lds`, `ginc` (topic families), `corpus`, `model` (ARTransformer), `training` (AR-NTP, SGLD), `lit` (the same with the shared Lightning trainer),
`evaluation`, `baselines`, `bounds` (PAC-Bayes), `data` (loaders), `reference`, `config`, `experiments` (the
reproduction's measurements), `claims` (its claims, as data), `reproduce`, `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.icl_emergence.baselines import bayes_icl_probs
    from iclr25.icl_emergence.baselines import last_value_predictor
    from iclr25.icl_emergence.baselines import lds_least_squares_predictor
    from iclr25.icl_emergence.baselines import oracle_predictor
    from iclr25.icl_emergence.baselines import true_hmm_query_probs
    from iclr25.icl_emergence.baselines import zero_predictor
    from iclr25.icl_emergence.bounds import clip_loss
    from iclr25.icl_emergence.bounds import data_dependent_bound
    from iclr25.icl_emergence.bounds import gaussian_kl
    from iclr25.icl_emergence.bounds import isotropic_gaussian_kl
    from iclr25.icl_emergence.bounds import langevin_kl
    from iclr25.icl_emergence.bounds import pac_bayes_term
    from iclr25.icl_emergence.bounds import two_level_bound
    from iclr25.icl_emergence.config import PRESETS
    from iclr25.icl_emergence.config import Config
    from iclr25.icl_emergence.corpus import TwoLevelCorpus
    from iclr25.icl_emergence.corpus import lds_corpus
    from iclr25.icl_emergence.corpus import seen_topic_eval
    from iclr25.icl_emergence.data import ByteTokenizer
    from iclr25.icl_emergence.data import WordLevelTokenizer
    from iclr25.icl_emergence.data import build_icl_prompt
    from iclr25.icl_emergence.data import load_classification
    from iclr25.icl_emergence.data import load_ginc_dir
    from iclr25.icl_emergence.data import load_metaicl_jsonl
    from iclr25.icl_emergence.data import write_ginc_dir
    from iclr25.icl_emergence.evaluation import generalization_report
    from iclr25.icl_emergence.evaluation import icl_accuracy
    from iclr25.icl_emergence.evaluation import loss_curve
    from iclr25.icl_emergence.ginc import GINC
    from iclr25.icl_emergence.ginc import HMM
    from iclr25.icl_emergence.ginc import GINCConfig
    from iclr25.icl_emergence.ginc import forward
    from iclr25.icl_emergence.ginc import hmm_next_token_probs
    from iclr25.icl_emergence.ginc import letter_vocab
    from iclr25.icl_emergence.ginc import mixture_next_token_probs
    from iclr25.icl_emergence.ginc import split_prompts
    from iclr25.icl_emergence.lds import LDSTopicPrior
    from iclr25.icl_emergence.lds import haar_orthogonal
    from iclr25.icl_emergence.lit import ARNTPModule
    from iclr25.icl_emergence.lit import fit_ar
    from iclr25.icl_emergence.model import ARTransformer
    from iclr25.icl_emergence.training import ar_loss
    from iclr25.icl_emergence.training import lr_at
    from iclr25.icl_emergence.training import train_ar
    from iclr25.icl_emergence.training import train_sgld

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
