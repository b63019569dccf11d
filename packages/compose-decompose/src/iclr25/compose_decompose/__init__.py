"""CtD: Composition through Decomposition in Emergent Communication (ICLR 2025, arXiv 2601.10169).

Agents learn basic concepts (one feature-value pair each) as codebook words in a multi-target Decompose game, then
describe unseen combinations by emitting several words (Compose), zero-shot or fine-tuned. The paper body was not
available: games and agents are a reconstruction from the abstract, the reviews and the CBM code, each choice a
switch. Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `concepts`, `data`, `games`, `codebook` (the CB channel), `baselines` (GS, QT), `agents`, `metrics`,
`reference` (slow forms), `training`, `config`, `reproduce`, `cli`.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="compose-decompose",
    title="CtD: Composition through Decomposition in Emergent Communication",
    authors="Boaz Carmeli, Ron Meir, Yonatan Belinkov",
    arxiv="2601.10169",
    code="",
    cli="iclr25.compose_decompose.cli:main",
    reproduce="iclr25.compose_decompose.reproduce:run",
    summary="Emergent communication through a discrete codebook: learn one word per basic concept in a multi-target "
    "game (Decompose), then describe unseen combinations with several words (Compose).",
    scales=("ci", "quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "ConceptSpace": "concepts",
    "Phrase": "concepts",
    "phrase_str": "concepts",
    "shape_space": "concepts",
    "latin_square_holdout": "concepts",
    "ConceptData": "data",
    "ShapeRenderer": "data",
    "make_shape_dataset": "data",
    "make_thing_dataset": "data",
    "make_digit_pairs": "data",
    "load_digits_pairs": "data",
    "load_mnist_idx": "data",
    "load_coco_instances": "data",
    "load_thing_csv": "data",
    "load_cbm_jsonl": "data",
    "write_cbm_jsonl": "data",
    "GameSampler": "games",
    "Games": "games",
    "CodebookChannel": "codebook",
    "ChannelOutput": "codebook",
    "GumbelChannel": "baselines",
    "QuantizedChannel": "baselines",
    "Sender": "agents",
    "Receiver": "agents",
    "MultiTargetGame": "agents",
    "make_encoder": "agents",
    "concept_best_match": "metrics",
    "ami": "metrics",
    "posdis": "metrics",
    "bosdis": "metrics",
    "topsim": "metrics",
    "game_accuracy": "metrics",
    "exact_word_set_rate": "metrics",
    "build_game": "training",
    "train": "training",
    "evaluate": "training",
    "decompose_then_compose": "training",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
