"""Probe Pruning: Accelerating LLMs through Dynamic Pruning via Model-Probing (Le et al., ICLR 2025).

Online, batch-wise structured pruning of LLaMA/OPT attention heads and MLP channels: a probe of the batch's own
largest-residual tokens runs a block's first stage, its statistics are fused with history, PPsp scores pick the
units and the batch runs on the sliced weights. Public names load lazily (importing the package imports no torch).
Modules: `model` (LLaMA/OPT blocks, HF names), `hf_io`, `pruning` (the method), `baselines` (Wanda-sp, FLAP),
`reference`, `data`, `training`, `config`, `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="probe-pruning",
    title="Probe Pruning: Accelerating LLMs through Dynamic Pruning via Model-Probing",
    authors="Qi Le, Enmao Diao, Ziyan Wang, Xinran Wang, Jie Ding, Li Yang, Ali Anwar",
    arxiv="2502.15618",
    code="Qi-Le1/Probe_Pruning",
    cli="iclr25.probe_pruning.cli:main",
    reproduce="iclr25.probe_pruning.reproduce:run",
    summary=(
        "Dynamic batch-wise structured pruning of LLMs: a residual-norm probe plus history picks heads and MLP "
        "channels per batch (PPsp), then the batch runs on sliced weights; tiny byte-level LLaMA on CPU."
    ),
    scales=("ci", "quick", "full"),
)

_EXPORTS: dict[str, str] = {
    "ModelConfig": "model",
    "TinyLlama": "model",
    "TinyOPT": "model",
    "LMOutput": "model",
    "build_model": "model",
    "from_hf_state_dict": "hf_io",
    "from_pretrained_dir": "hf_io",
    "from_transformers": "hf_io",
    "save_pretrained": "hf_io",
    "PPConfig": "pruning",
    "ProbePruner": "pruning",
    "adjusted_ratio": "pruning",
    "keep_count": "pruning",
    "select_probe": "pruning",
    "importance_scaled_fusion": "pruning",
    "ppsp_mlp_scores": "pruning",
    "ppsp_head_scores": "pruning",
    "collect_stats": "pruning",
    "evaluate_ppl": "pruning",
    "flops_report": "pruning",
    "StaticPruner": "baselines",
    "wanda_sp_scores": "baselines",
    "flap_scores": "baselines",
    "flap_global_ratios": "baselines",
    "train_tiny": "training",
    "load_wikitext": "data",
    "load_c4_windows": "data",
    "load_tokenizer": "data",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
