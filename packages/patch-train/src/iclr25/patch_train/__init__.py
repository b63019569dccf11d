"""Beyond Next Token Prediction: Patch-Level Training for Large Language Models (ICLR 2025, arXiv 2407.12665).

Train an LLM first on patches of K averaged token embeddings with a next-patch loss, then on tokens, at about half the cost.
Public names are exported lazily: importing this package does not import torch.
Modules: `config` (presets, validated), `patch` (Eqs. 1-2, cost, models), `plan` (two-stage schedule), `reference` (loop forms),
`baselines` (the compared runs), `data`, `evaluate`, `llama` (plain-torch LLaMA), `stage` (the plain stage loop, its
optimizer and in-run probe), `lit` + `train` (Lightning stages, two-stage runs), `estimate` (scale-out plan); the harness:
`experiments` (the exact checks, the runs and their probes), `claims` (the claims as data), `reproduce` (the plan),
`sweep` (the data-size sweep, `iclr25-patch-train sweep`), `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.patch_train.baselines import comparison_plans
    from iclr25.patch_train.config import MODEL_SIZES
    from iclr25.patch_train.config import PRESETS
    from iclr25.patch_train.config import Config
    from iclr25.patch_train.config import TrainConfig
    from iclr25.patch_train.data import ByteTokenizer
    from iclr25.patch_train.data import HFTokenizer
    from iclr25.patch_train.data import TokenStream
    from iclr25.patch_train.data import encode_documents
    from iclr25.patch_train.data import load_jsonl_texts
    from iclr25.patch_train.data import load_wikitext_document_level
    from iclr25.patch_train.data import load_wikitext_raw
    from iclr25.patch_train.data import pack_blocks
    from iclr25.patch_train.data import shakespeare_texts
    from iclr25.patch_train.data import split_long_documents
    from iclr25.patch_train.data import stdlib_texts
    from iclr25.patch_train.data import topic_phrase_texts
    from iclr25.patch_train.data import train_bpe
    from iclr25.patch_train.evaluate import evaluate_nll
    from iclr25.patch_train.evaluate import load_mc_task
    from iclr25.patch_train.evaluate import score_multiple_choice
    from iclr25.patch_train.estimate import scale_plan
    from iclr25.patch_train.lit import StageModule
    from iclr25.patch_train.llama import FastLlama
    from iclr25.patch_train.llama import from_hf
    from iclr25.patch_train.llama import to_hf
    from iclr25.patch_train.patch import flops_per_position
    from iclr25.patch_train.patch import make_llama
    from iclr25.patch_train.patch import patch_forward
    from iclr25.patch_train.patch import patch_lm_loss
    from iclr25.patch_train.patch import patch_position_ids
    from iclr25.patch_train.patch import patchify
    from iclr25.patch_train.patch import token_lm_loss
    from iclr25.patch_train.patch import training_cost
    from iclr25.patch_train.plan import StagePlan
    from iclr25.patch_train.plan import hf_cosine_lr
    from iclr25.patch_train.plan import plan_flops
    from iclr25.patch_train.plan import plan_token_only
    from iclr25.patch_train.plan import plan_two_stage
    from iclr25.patch_train.reproduce import run
    from iclr25.patch_train.stage import StageProbe
    from iclr25.patch_train.train import OptimConfig
    from iclr25.patch_train.train import TwoStageLoop
    from iclr25.patch_train.train import train_stage
    from iclr25.patch_train.train import train_two_stage
    from iclr25.patch_train.train import run_interleaved

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
