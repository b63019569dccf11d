"""Redefining the Task of Bioactivity Prediction (SIU, ICLR 2025; arXiv 2406.08961).

SIU's formats (Uni-Mol / Atom3D LMDB, final_dic.pkl), the redefined metric (Pearson*/Spearman* computed within each
pocket and averaged), the complex-construction vote (>= 2 of 3 docking programs within 2 A), protein-identity
splits, pocket-only / pocket+ligand / ligand-only baselines and a generated SIU-like study.
The reproduction: `experiments` (the generated study and its metrics), `claims` (the claims as data, with what
the paper shows and where), `reproduce` (the plan: preset, experiments, figure, claims evaluated).
Public names are exported lazily: importing this package imports neither numpy nor torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.siu_bioactivity.baselines import ComplexFeaturizer
    from iclr25.siu_bioactivity.baselines import LigandOnlyModel
    from iclr25.siu_bioactivity.baselines import MLPHeads
    from iclr25.siu_bioactivity.baselines import PocketLigandModel
    from iclr25.siu_bioactivity.baselines import PocketOnlyModel
    from iclr25.siu_bioactivity.baselines import RidgeHeads
    from iclr25.siu_bioactivity.config import PRESETS
    from iclr25.siu_bioactivity.config import Config
    from iclr25.siu_bioactivity.data import ComplexSet
    from iclr25.siu_bioactivity.data import generate_siu_like
    from iclr25.siu_bioactivity.data import make_world
    from iclr25.siu_bioactivity.formats import ATOM3D_ORDER
    from iclr25.siu_bioactivity.formats import LABEL_TYPES
    from iclr25.siu_bioactivity.formats import UNIMOL_ORDER
    from iclr25.siu_bioactivity.formats import SIURecord
    from iclr25.siu_bioactivity.formats import atom3d_to_record
    from iclr25.siu_bioactivity.formats import convert_order
    from iclr25.siu_bioactivity.formats import label_dict
    from iclr25.siu_bioactivity.formats import label_vector
    from iclr25.siu_bioactivity.formats import ligand_element
    from iclr25.siu_bioactivity.formats import parse_source
    from iclr25.siu_bioactivity.formats import pocket_element
    from iclr25.siu_bioactivity.formats import read_atom3d_lmdb
    from iclr25.siu_bioactivity.formats import read_final_dic
    from iclr25.siu_bioactivity.formats import read_unimol_lmdb
    from iclr25.siu_bioactivity.formats import to_atom3d_item
    from iclr25.siu_bioactivity.formats import write_atom3d_lmdb
    from iclr25.siu_bioactivity.formats import write_final_dic
    from iclr25.siu_bioactivity.formats import write_unimol_lmdb
    from iclr25.siu_bioactivity.metrics import evaluate_bioactivity
    from iclr25.siu_bioactivity.metrics import masked_mse
    from iclr25.siu_bioactivity.metrics import per_pocket_correlation
    from iclr25.siu_bioactivity.metrics import per_pocket_values
    from iclr25.siu_bioactivity.metrics import pooled_correlation
    from iclr25.siu_bioactivity.networks import DenseGCN
    from iclr25.siu_bioactivity.networks import DualEncoder
    from iclr25.siu_bioactivity.splits import dedup_by_tanimoto
    from iclr25.siu_bioactivity.splits import sequence_identity
    from iclr25.siu_bioactivity.splits import split_by_protein_identity
    from iclr25.siu_bioactivity.splits import tanimoto
    from iclr25.siu_bioactivity.vote import DockingProgram
    from iclr25.siu_bioactivity.vote import SimulatedDocking
    from iclr25.siu_bioactivity.vote import VinaDocking
    from iclr25.siu_bioactivity.vote import VoteResult
    from iclr25.siu_bioactivity.vote import majority_vote
    from iclr25.siu_bioactivity.vote import rmsd
    from iclr25.siu_bioactivity.vote import vote_batch

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
