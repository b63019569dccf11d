"""Probe Pruning: Accelerating LLMs through Dynamic Pruning via Model-Probing (Le et al., ICLR 2025).

Online, batch-wise structured pruning of LLaMA/OPT attention heads and MLP channels: a probe of the batch's own
largest-residual tokens runs a block's first stage, its statistics are fused with history, PPsp scores pick the
units and the batch runs on the sliced weights. Public names load lazily (importing the package imports no torch).
Modules: `model` (LLaMA/OPT blocks, HF names), `hf_io`, `pruning` (the method), `baselines` (Wanda-sp, FLAP),
`sharding` (a model split over several GPUs), `reference`, `data`, `training`, `config`, `experiments` (the
studies), `claims` (the claims as data), `reproduce` (the plan), `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.probe_pruning.baselines import StaticPruner
    from iclr25.probe_pruning.baselines import flap_global_ratios
    from iclr25.probe_pruning.baselines import flap_scores
    from iclr25.probe_pruning.baselines import wanda_sp_scores
    from iclr25.probe_pruning.config import PRESETS
    from iclr25.probe_pruning.config import Config
    from iclr25.probe_pruning.data import load_c4_windows
    from iclr25.probe_pruning.data import load_tokenizer
    from iclr25.probe_pruning.data import load_wikitext
    from iclr25.probe_pruning.hf_io import from_hf_state_dict
    from iclr25.probe_pruning.hf_io import from_pretrained_dir
    from iclr25.probe_pruning.hf_io import from_transformers
    from iclr25.probe_pruning.hf_io import save_pretrained
    from iclr25.probe_pruning.model import LMOutput
    from iclr25.probe_pruning.model import ModelConfig
    from iclr25.probe_pruning.model import TinyLlama
    from iclr25.probe_pruning.model import TinyOPT
    from iclr25.probe_pruning.model import build_model
    from iclr25.probe_pruning.pruning import PPConfig
    from iclr25.probe_pruning.pruning import ProbePruner
    from iclr25.probe_pruning.pruning import adjusted_ratio
    from iclr25.probe_pruning.pruning import collect_stats
    from iclr25.probe_pruning.pruning import evaluate_ppl
    from iclr25.probe_pruning.pruning import flops_report
    from iclr25.probe_pruning.pruning import importance_scaled_fusion
    from iclr25.probe_pruning.pruning import keep_count
    from iclr25.probe_pruning.pruning import ppsp_head_scores
    from iclr25.probe_pruning.pruning import ppsp_mlp_scores
    from iclr25.probe_pruning.pruning import select_probe
    from iclr25.probe_pruning.sharding import DevicePlan
    from iclr25.probe_pruning.sharding import plan_device_map
    from iclr25.probe_pruning.sharding import plan_model
    from iclr25.probe_pruning.sharding import shard_model
    from iclr25.probe_pruning.training import train_tiny

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
