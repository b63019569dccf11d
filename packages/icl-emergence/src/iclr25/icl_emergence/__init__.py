"""Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from Generalization (ICLR 2025,
arXiv 2502.17024).

Pre-training by auto-regressive next-token prediction on a two-level corpus (K topics x N sequences x T tokens)
generalises to new sequences (G_seq) and to new topics (G_top); ICL on prompts of unseen topics is exactly that
generalisation. Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `lds`, `ginc` (topic families), `corpus`, `model` (ARTransformer), `training` (AR-NTP, SGLD), `lit` (the same with the shared Lightning trainer),
`evaluation`, `baselines`, `bounds` (PAC-Bayes), `data` (loaders), `reference`, `config`, `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="icl-emergence",
    title="Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from Generalization",
    authors="Zixuan Gong, Xiaolin Hu, Huayi Tang, Yong Liu",
    arxiv="2502.17024",
    code="zx-gong/ICL-Emerge",
    cli="iclr25.icl_emergence.cli:main",
    reproduce="iclr25.icl_emergence.reproduce:run",
    summary=(
        "AR-NTP pre-training on K topics x N sequences: unseen-topic (ICL) error falls with K, the topic gap "
        "G_top shrinks, ICL improves with prompt length; PAC-Bayes two-level bounds; GINC Bayes-ICL references."
    ),
    scales=("ci", "quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "LDSTopicPrior": "lds",
    "haar_orthogonal": "lds",
    "GINCConfig": "ginc",
    "GINC": "ginc",
    "HMM": "ginc",
    "forward": "ginc",
    "hmm_next_token_probs": "ginc",
    "mixture_next_token_probs": "ginc",
    "letter_vocab": "ginc",
    "split_prompts": "ginc",
    "TwoLevelCorpus": "corpus",
    "lds_corpus": "corpus",
    "seen_topic_eval": "corpus",
    "ARTransformer": "model",
    "ARNTPModule": "lit",
    "fit_ar": "lit",
    "ar_loss": "training",
    "train_ar": "training",
    "train_sgld": "training",
    "lr_at": "training",
    "generalization_report": "evaluation",
    "loss_curve": "evaluation",
    "icl_accuracy": "evaluation",
    "lds_least_squares_predictor": "baselines",
    "oracle_predictor": "baselines",
    "zero_predictor": "baselines",
    "last_value_predictor": "baselines",
    "bayes_icl_probs": "baselines",
    "true_hmm_query_probs": "baselines",
    "gaussian_kl": "bounds",
    "isotropic_gaussian_kl": "bounds",
    "pac_bayes_term": "bounds",
    "two_level_bound": "bounds",
    "data_dependent_bound": "bounds",
    "langevin_kl": "bounds",
    "clip_loss": "bounds",
    "WordLevelTokenizer": "data",
    "ByteTokenizer": "data",
    "load_ginc_dir": "data",
    "write_ginc_dir": "data",
    "load_metaicl_jsonl": "data",
    "build_icl_prompt": "data",
    "load_classification": "data",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
