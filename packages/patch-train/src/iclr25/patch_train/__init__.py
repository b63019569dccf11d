"""Beyond Next Token Prediction: Patch-Level Training for Large Language Models (ICLR 2025, arXiv 2407.12665).

Train an LLM first on patches of K averaged token embeddings with a next-patch loss, then on tokens, at about half the cost.
Public names are exported lazily: importing this package does not import torch.
Modules: `config` (presets, validated), `patch` (Eqs. 1-2, cost, models), `plan` (two-stage schedule), `reference` (loop forms),
`baselines` (the compared runs), `data`, `evaluate`, `lit` + `train` (Lightning stages), `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="patch-train",
    title="Beyond Next Token Prediction: Patch-Level Training for Large Language Models",
    authors="Chenze Shao, Fandong Meng, Jie Zhou",
    arxiv="2407.12665",
    code="shaochenze/PatchTrain",
    cli="iclr25.patch_train.cli:main",
    reproduce="iclr25.patch_train.reproduce:run",
    summary="Train an LLM first on patches of K averaged token embeddings with a next-patch loss, then on tokens, at about half the cost.",
    scales=("ci", "quick", "full", "full-125m"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "training_cost": "patch",
    "patchify": "patch",
    "patch_position_ids": "patch",
    "patch_lm_loss": "patch",
    "token_lm_loss": "patch",
    "patch_forward": "patch",
    "make_llama": "patch",
    "MODEL_SIZES": "config",
    "flops_per_position": "patch",
    "StagePlan": "plan",
    "plan_two_stage": "plan",
    "plan_token_only": "plan",
    "plan_flops": "plan",
    "hf_cosine_lr": "plan",
    "comparison_plans": "baselines",
    "OptimConfig": "train",
    "train_stage": "train",
    "train_two_stage": "train",
    "StageModule": "lit",
    "evaluate_nll": "evaluate",
    "load_mc_task": "evaluate",
    "score_multiple_choice": "evaluate",
    "ByteTokenizer": "data",
    "HFTokenizer": "data",
    "train_bpe": "data",
    "TokenStream": "data",
    "load_jsonl_texts": "data",
    "load_wikitext_document_level": "data",
    "load_wikitext_raw": "data",
    "split_long_documents": "data",
    "stdlib_texts": "data",
    "shakespeare_texts": "data",
    "topic_phrase_texts": "data",
    "encode_documents": "data",
    "pack_blocks": "data",
    "Config": "config",
    "PRESETS": "config",
    "TrainConfig": "config",
    "run": "reproduce",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
