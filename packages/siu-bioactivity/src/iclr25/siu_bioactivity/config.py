"""The reproduction's config and presets: standard library + shared validators only (no numpy/torch)."""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_each,
    check_in_range,
    check_int_at_least,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_probability,
    check_text,
)

MODELS: tuple[str, ...] = ("ridge", "mlp")
STAR_METRICS: tuple[str, ...] = ("per_pocket", "pooled")  # "pooled" = a deliberately broken Pearson* (gate test)


@dataclass(frozen=True)
class Config:
    """Spec §6(a): generated SIU-like data, three simulated dockers + 2-of-3 vote, ridge per label type.

    `ci` (the claim gate, about 20-40 s on 2 cores): seeds 0, 1, 2 without the PDBbind-matched regime.
    `quick`: the same plus the reported PDBbind-matched regime (6,000 pockets x 1 ligand).
    `full`: the real Uni-Mol LMDBs (set `data_dir`), from-scratch dual encoder + dense GCN (GPU).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    # generator (spec §6a)
    train_pockets: int = 150
    test_pockets: int = 30
    ligands_per_pocket: int = 40  # SIU-like regime
    test_ligands_per_pocket: int = 40
    pdbbind_ligands_per_pocket: int = 1  # PDBbind-like regime: same 150 pockets, 1 ligand each
    matched_pockets: int = 6000  # PDBbind-matched regime (reported); 0 = skip
    offset_std: float = 1.2  # between-pocket std of b_p (pX)
    offset_noise: float = 0.3  # N(0, 0.3^2) part of b_p
    interaction_std: float = 0.6  # within-pocket std of gamma * phi (pX)
    label_noise: float = 0.3  # eps_t std
    # docking (spec §6a): sigma = expected RMSD of a successful top pose; p_fail
    dock_sigma: tuple[float, ...] = (0.5, 0.7, 1.0)
    dock_p_fail: tuple[float, ...] = (0.1, 0.2, 0.3)
    fail_box: float = 6.0  # a failure = random rotation + uniform shift in +-fail_box
    rmsd_threshold: float = 2.0  # vote: agreement within 2 A (spec §3.4)
    min_agree: int = 2
    # models
    model: str = "ridge"  # "mlp": optional 2-hidden-layer torch MLP (masked MSE, 4 heads)
    ridge_penalty: float = 0.01  # lambda = ridge_penalty * n_train on standardised features
    mlp_hidden: int = 64
    mlp_epochs: int = 200
    mlp_lr: float = 1e-3
    mlp_weight_decay: float = 1e-4
    star_metric: str = "per_pocket"  # "pooled" computes Pearson* on pooled data: the broken variant
    figures: bool = True
    # full preset: real data (Uni-Mol LMDB folder with train/valid/test.lmdb), networks
    data_dir: str = ""
    splits: tuple[str, ...] = ("split_60", "split_90")
    full_epochs: int = 50
    full_batch: int = 96
    full_lr: float = 1e-4
    full_warmup: float = 0.06
    full_clip: float = 1.0
    full_layers: int = 4
    full_dim: int = 128
    full_heads: int = 8
    full_pocket_atoms: int = 256
    full_max_train: int = 0  # 0 = every training complex

    def __post_init__(self) -> None:
        check_each("seeds", self.seeds, check_int_at_least, 0)
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        check_int_at_least("train_pockets", self.train_pockets, 4)
        check_int_at_least("test_pockets", self.test_pockets, 2)
        check_int_at_least("ligands_per_pocket", self.ligands_per_pocket, 2)
        check_int_at_least("test_ligands_per_pocket", self.test_ligands_per_pocket, 2)
        check_int_at_least("pdbbind_ligands_per_pocket", self.pdbbind_ligands_per_pocket, 1)
        if self.pdbbind_ligands_per_pocket > self.ligands_per_pocket:
            raise ValueError("pdbbind_ligands_per_pocket must be <= ligands_per_pocket")
        check_int_at_least("matched_pockets", self.matched_pockets, 0)
        check_positive("offset_std", self.offset_std)
        check_nonnegative("offset_noise", self.offset_noise)
        if self.offset_noise >= self.offset_std:
            raise ValueError("offset_noise must be < offset_std")
        check_positive("interaction_std", self.interaction_std)
        check_nonnegative("label_noise", self.label_noise)
        check_each("dock_sigma", self.dock_sigma, check_positive)
        check_each("dock_p_fail", self.dock_p_fail, check_probability, closed=True)
        if len(self.dock_sigma) != len(self.dock_p_fail) or len(self.dock_sigma) < 2:
            raise ValueError("dock_sigma and dock_p_fail must have the same length (>= 2 programs)")
        check_positive("fail_box", self.fail_box)
        check_positive("rmsd_threshold", self.rmsd_threshold)
        check_int_at_least("min_agree", self.min_agree, 1)
        if self.min_agree > len(self.dock_sigma):
            raise ValueError("min_agree must be <= the number of docking programs")
        check_one_of("model", self.model, MODELS)
        check_positive("ridge_penalty", self.ridge_penalty)
        check_int_at_least("mlp_hidden", self.mlp_hidden, 1)
        check_int_at_least("mlp_epochs", self.mlp_epochs, 1)
        check_positive("mlp_lr", self.mlp_lr)
        check_nonnegative("mlp_weight_decay", self.mlp_weight_decay)
        check_one_of("star_metric", self.star_metric, STAR_METRICS)
        check_one_of("figures", self.figures, (True, False))
        check_text("data_dir", self.data_dir, "a folder path (text)")
        check_each("splits", self.splits, check_one_of, ("split_60", "split_90"))
        check_int_at_least("full_epochs", self.full_epochs, 1)
        check_int_at_least("full_batch", self.full_batch, 1)
        check_positive("full_lr", self.full_lr)
        check_in_range("full_warmup", self.full_warmup, 0.0, 1.0, high_open=True)
        check_positive("full_clip", self.full_clip)
        check_int_at_least("full_layers", self.full_layers, 1)
        check_int_at_least("full_dim", self.full_dim, 8)
        check_int_at_least("full_heads", self.full_heads, 1)
        if self.full_dim % self.full_heads:
            raise ValueError("full_dim must be divisible by full_heads")
        check_int_at_least("full_pocket_atoms", self.full_pocket_atoms, 8)
        check_int_at_least("full_max_train", self.full_max_train, 0)


PRESETS: dict[str, Config] = {
    "ci": Config(matched_pockets=0, figures=False),
    "quick": Config(),
    # full: `iclr25-siu-bioactivity reproduce --scale full data_dir=<SIU folder holding split_60/, split_90/>
    # --device cuda`: the quick synthetic study plus, per split, a from-scratch Uni-Mol-like dual encoder and an
    # Atom3D-style dense GCN (5 heads, masked MSE) and the pocket-only ablation, evaluated per pocket on test.lmdb.
    "full": Config(),
}
