"""CtD: Composition through Decomposition in Emergent Communication (ICLR 2025, arXiv 2601.10169).

Agents learn basic concepts (one feature-value pair each) as codebook words in a multi-target Decompose game, then
describe unseen combinations by emitting several words (Compose), zero-shot or fine-tuned. The paper body was not
available: games and agents are a reconstruction from the abstract, the reviews and the CBM code, each choice a
switch. Public names are exported lazily: importing this package imports neither numpy nor torch.
Modules: `concepts`, `data`, `games`, `codebook` (the CB channel), `baselines` (GS, QT), `agents`, `metrics`,
`reference` (slow forms), `training`, `config`, `experiments` (the runs and checks of the reproduction), `claims`
(its claims as data), `reproduce` (the plan), `cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.compose_decompose.agents import MultiTargetGame
    from iclr25.compose_decompose.agents import Receiver
    from iclr25.compose_decompose.agents import Sender
    from iclr25.compose_decompose.agents import make_encoder
    from iclr25.compose_decompose.baselines import GumbelChannel
    from iclr25.compose_decompose.baselines import QuantizedChannel
    from iclr25.compose_decompose.codebook import ChannelOutput
    from iclr25.compose_decompose.codebook import CodebookChannel
    from iclr25.compose_decompose.concepts import ConceptSpace
    from iclr25.compose_decompose.concepts import Phrase
    from iclr25.compose_decompose.concepts import latin_square_holdout
    from iclr25.compose_decompose.concepts import phrase_str
    from iclr25.compose_decompose.concepts import shape_space
    from iclr25.compose_decompose.config import PRESETS
    from iclr25.compose_decompose.config import Config
    from iclr25.compose_decompose.data import ConceptData
    from iclr25.compose_decompose.data import ShapeRenderer
    from iclr25.compose_decompose.data import load_cbm_jsonl
    from iclr25.compose_decompose.data import load_coco_instances
    from iclr25.compose_decompose.data import load_digits_pairs
    from iclr25.compose_decompose.data import load_mnist_idx
    from iclr25.compose_decompose.data import load_thing_csv
    from iclr25.compose_decompose.data import make_digit_pairs
    from iclr25.compose_decompose.data import make_shape_dataset
    from iclr25.compose_decompose.data import make_thing_dataset
    from iclr25.compose_decompose.data import write_cbm_jsonl
    from iclr25.compose_decompose.games import Games
    from iclr25.compose_decompose.games import GameSampler
    from iclr25.compose_decompose.metrics import ami
    from iclr25.compose_decompose.metrics import bosdis
    from iclr25.compose_decompose.metrics import concept_best_match
    from iclr25.compose_decompose.metrics import exact_word_set_rate
    from iclr25.compose_decompose.metrics import game_accuracy
    from iclr25.compose_decompose.metrics import posdis
    from iclr25.compose_decompose.metrics import topsim
    from iclr25.compose_decompose.training import build_game
    from iclr25.compose_decompose.training import decompose_then_compose
    from iclr25.compose_decompose.training import evaluate
    from iclr25.compose_decompose.training import train

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
