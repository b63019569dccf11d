"""Redefining the Task of Bioactivity Prediction (SIU, ICLR 2025; arXiv 2406.08961).

SIU's formats (Uni-Mol / Atom3D LMDB, final_dic.pkl), the redefined metric (Pearson*/Spearman* computed within each
pocket and averaged), the complex-construction vote (>= 2 of 3 docking programs within 2 A), protein-identity
splits, pocket-only / pocket+ligand / ligand-only baselines and a generated SIU-like study.
Public names are exported lazily: importing this package imports neither numpy nor torch.
"""

from __future__ import annotations

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper(
    slug="siu-bioactivity",
    title="Redefining the Task of Bioactivity Prediction",
    authors="Yanwen Huang, Bowen Gao, Yinjun Jia, Hongbo Ma, Wei-Ying Ma, Ya-Qin Zhang, Yanyan Lan",
    arxiv="2406.08961",
    code="bowen-gao/SIU",
    cli="iclr25.siu_bioactivity.cli:main",
    reproduce="iclr25.siu_bioactivity.reproduce:run",
    summary="Bioactivity prediction evaluated within each pocket (Pearson*/Spearman*), which a pocket-only model "
    "cannot game; SIU's formats, the 2-of-3 docking vote and a generated SIU-like study.",
    scales=("ci", "quick", "full"),
)

_EXPORTS: dict[str, str] = {  # public name -> submodule
    "SIURecord": "formats",
    "LABEL_TYPES": "formats",
    "UNIMOL_ORDER": "formats",
    "ATOM3D_ORDER": "formats",
    "read_unimol_lmdb": "formats",
    "write_unimol_lmdb": "formats",
    "read_atom3d_lmdb": "formats",
    "write_atom3d_lmdb": "formats",
    "to_atom3d_item": "formats",
    "atom3d_to_record": "formats",
    "read_final_dic": "formats",
    "write_final_dic": "formats",
    "label_vector": "formats",
    "label_dict": "formats",
    "convert_order": "formats",
    "parse_source": "formats",
    "pocket_element": "formats",
    "ligand_element": "formats",
    "per_pocket_correlation": "metrics",
    "per_pocket_values": "metrics",
    "pooled_correlation": "metrics",
    "evaluate_bioactivity": "metrics",
    "masked_mse": "metrics",
    "rmsd": "vote",
    "majority_vote": "vote",
    "vote_batch": "vote",
    "VoteResult": "vote",
    "DockingProgram": "vote",
    "SimulatedDocking": "vote",
    "VinaDocking": "vote",
    "sequence_identity": "splits",
    "split_by_protein_identity": "splits",
    "tanimoto": "splits",
    "dedup_by_tanimoto": "splits",
    "generate_siu_like": "data",
    "make_world": "data",
    "ComplexSet": "data",
    "ComplexFeaturizer": "baselines",
    "PocketOnlyModel": "baselines",
    "PocketLigandModel": "baselines",
    "LigandOnlyModel": "baselines",
    "RidgeHeads": "baselines",
    "MLPHeads": "baselines",
    "DualEncoder": "networks",
    "DenseGCN": "networks",
    "Config": "config",
    "PRESETS": "config",
}

__all__ = ["PAPER", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
