"""Configs of Seq2Exp (spec §3, §6): the model's `Seq2ExpConfig` and the reproduction presets.

Standard library + `iclr25.shared.validate` only, so bad values are refused before torch or numpy load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    ClosedProbability,
    Each,
    Finite,
    Flag,
    NonNegative,
    NonNegativeFloat,
    OneOf,
    OpenProbability,
    PositiveFloat,
    PositiveInt,
    Text,
    Validated,
)

BACKBONES = ("cnn", "gru", "mamba")
MODES = ("soft", "hard")
MODELS = ("seq2exp-soft", "seq2exp-hard", "seq", "seq-signal", "macs-mask", "generator-off", "seq2exp-retrain")
TRUTHS = ("motif", "bump")
DATA = ("planted", "generated")


def _softmax(values: tuple[float, ...]) -> tuple[float, ...]:
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    return tuple(e / sum(exps) for e in exps)


# official `prior_weights`: softmax(log([2, 2, 1] / 5)) = (0.4, 0.4, 0.2) over (H3K27ac, DNase, Hi-C)
OFFICIAL_SIGNAL_WEIGHTS = _softmax(tuple(math.log(v / 5) for v in (2.0, 2.0, 1.0)))


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset: 2 000 genes of 200 000 bp, width 128, 4 layers, 24 epochs of batch 32, 100 000-bp caller tracks.
MAX_WIDTH = 8192  # embedding widths, the peak window
MAX_LAYERS = 256
MAX_FEATURES = 1024  # signal tracks, RNA features, motifs
MAX_LEN = 10_000_000  # sequence lengths in bp (hg38 chr1 is 248 956 422 bp: ten times a 1 Mbp window)
MAX_CHUNK = 65_536  # scan chunk length
MAX_GENES = 1_000_000
MAX_SEEDS = 1000
MAX_EPOCHS = 100_000
MAX_BATCH = 65_536
MAX_THREADS = 1024  # threads and worker processes


@dataclass(frozen=True)
class Seq2ExpConfig(Validated):
    """The Seq2Exp model (spec §3). Defaults are the official soft setting; `.soft()` / `.hard()` give both."""

    d: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 128  # embedding width
    # cnn (quick), gru, mamba (pure-torch bidirectional selective scan; full)
    backbone: Annotated[str, OneOf(BACKBONES)] = "mamba"
    # backbone layers of the generator and of the predictor
    n_layers: Annotated[int, AtLeast(1), AtMost(MAX_LAYERS)] = 4
    n_signals: Annotated[int, AtLeast(1), AtMost(MAX_FEATURES)] = 3  # [H3K27ac, DNase, Hi-C]
    n_rna: Annotated[int, AtLeast(0), AtMost(MAX_FEATURES)] = 9  # 8 mRNA features + promoter activity
    # soft: E[m] at eval; hard: straight-through 1[m >= threshold] + compaction
    mode: Annotated[str, OneOf(MODES)] = "soft"
    beta_min: NonNegativeFloat = 1.0  # floor of every Beta parameter (softplus + beta_min)
    prior_scale: NonNegativeFloat = 10.0  # c: signal Beta scale (alpha2 = c (s + beta_min))
    signal_b: Annotated[tuple[float, ...], Each(Finite())] = (1.5, 0.2, 1.0)  # b_i: beta2 = c (b_i + beta_min)
    # parameter averaging weights w_i
    signal_w: Annotated[tuple[float, ...], Each(NonNegative())] = OFFICIAL_SIGNAL_WEIGHTS
    z_scale: PositiveFloat = 1.0  # z: Beta(z (a1 + a2), z (b1 + b2))
    lam: NonNegativeFloat = 0.01  # lambda: KL weight
    mu: OpenProbability = 0.1  # prior mean of the sparse Beta(alpha3, beta3)
    marginal_scale: PositiveFloat = 10.0  # alpha3 = s, beta3 = s (1 - mu) / mu
    # promoter window forced to 1 and pooled by the predictor
    center_len: Annotated[int, AtLeast(1), AtMost(MAX_LEN)] = 2000
    threshold: OpenProbability = 0.5  # hard mask threshold
    generator_off: Flag = False  # logits fixed at 0: the mask is the signal Beta alone (ablation)
    use_signal_prior: Flag = True  # add the signal Beta (decouple_x)
    continuity: NonNegativeFloat = 0.0  # weight of mean |m_t - m_{t-1}| (0 in the official runs)
    # length of the learned position table (hard mode: pos_enc, zero-initialised)
    max_len: Annotated[int, AtLeast(1), AtMost(MAX_LEN)] = 200_000
    # hard: multiply the straight-through mask into the embeddings before packing (a gradient path from the
    # prediction loss to the generator); the official code packs the kept positions without multiplying
    hard_mask_multiply: Flag = False
    chunk: Annotated[int, AtLeast(1), AtMost(MAX_CHUNK)] = 64  # chunk length of the selective scan

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.signal_b) != self.n_signals or len(self.signal_w) != self.n_signals:
            raise ValueError(f"signal_b and signal_w need n_signals={self.n_signals} entries each")
        if self.beta_min == 0 and self.mode == "soft" and not self.use_signal_prior:
            raise ValueError("beta_min=0 without the signal prior lets a Beta parameter reach 0; use beta_min > 0")

    @classmethod
    def soft(cls, **kw: object) -> Seq2ExpConfig:
        """Official soft setting: lambda 0.01, mu 0.1, prior Beta(10, 90), c 10, beta_min 1 (spec §3)."""
        return replace(cls(), **kw)  # type: ignore[arg-type]

    @classmethod
    def hard(cls, **kw: object) -> Seq2ExpConfig:
        """Official hard setting: c 1, beta_min 0, mu 0.45, marginal scale 0.1, threshold 0.5 (spec §3)."""
        base = cls(mode="hard", prior_scale=1.0, beta_min=0.0, mu=0.45, marginal_scale=0.1, threshold=0.5)
        return replace(base, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Config(Validated):
    """One reproduction preset. Quick: spec §6a (planted data); full: GeneExp fold 11 (spec §6b, one GPU)."""

    # without GeneExp files: "planted" (spec §6a: the planted set in memory, the untrained checks, seeds) or
    # "generated" (the full preset: GeneExp-shaped windows from the planted generator, made one at a time)
    data: Annotated[str, OneOf(DATA)] = "planted"
    # data (spec §6a)
    n_genes: Annotated[int, AtLeast(20), AtMost(MAX_GENES)] = 2000  # split 70/15/15 into train/val/test
    length: Annotated[int, AtLeast(256), AtMost(MAX_LEN)] = 2048
    center_len: Annotated[int, AtLeast(1), AtMost(MAX_LEN)] = 128
    n_motifs: Annotated[int, AtLeast(1), AtMost(MAX_FEATURES)] = 3
    # functional truth: the 10 motif bases of accessible sites ("bump": whole bump, a pitfall)
    truth: Annotated[str, OneOf(TRUTHS)] = "motif"
    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 3
    # model (quick backbone: dilated CNN; spec §6a)
    backbone: Annotated[str, OneOf(BACKBONES)] = "cnn"
    d: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 32
    n_layers: Annotated[int, AtLeast(1), AtMost(MAX_LAYERS)] = 4
    prior_scale: NonNegativeFloat = 1.0  # c = 1 for the generated signal scale (spec §6a, §10.3)
    beta_min: NonNegativeFloat = 1.0
    mu: OpenProbability = 0.1
    marginal_scale: PositiveFloat = 10.0
    lam: NonNegativeFloat = 0.01
    hard_mu: OpenProbability = 0.45  # official hard setting (spec §3)
    hard_marginal_scale: PositiveFloat = 0.1
    hard_prior_scale: NonNegativeFloat = 1.0
    hard_beta_min: NonNegativeFloat = 0.0
    hard_mask_multiply: Flag = False  # official: the hard mask selects positions, it is not multiplied in
    # training (spec §6a: Adam lr 1e-3, ~15 epochs, batch 32)
    epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 15
    batch_size: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 32
    lr: PositiveFloat = 1e-3
    models: Annotated[tuple[str, ...], Each(OneOf(MODELS))] = (
        "seq",
        "seq-signal",
        "macs-mask",
        "seq2exp-soft",
        "seq2exp-hard",
    )
    # seeds on which the models are trained (the untrained checks use all `seeds`)
    learn_seeds: Annotated[int, AtLeast(0), AtMost(MAX_SEEDS)] = 3
    # genes (first ones, their splits kept) the models are trained/tested on; 0: all
    learn_genes: Annotated[int, AtLeast(0), AtMost(MAX_GENES)] = 0
    retrain_top: OpenProbability = 0.1  # Seq2Exp-retrain keeps the top 10% of E[m]
    # MACS-style caller (spec §4)
    peak_d: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 200
    count_scale: NonNegativeFloat = 0.0  # 0: count_scale = peak_d (window sums, the default); 1 is the pitfall
    qvalue: OpenProbability = 0.05
    # caller check (spec §9.5)
    caller_track_len: Annotated[int, AtLeast(20_000), AtMost(MAX_LEN)] = 100_000
    caller_seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 3
    # gates (spec §6a claims; learned-model gates provisional)
    gate_off_auprc: ClosedProbability = 0.2
    gate_macs_precision: ClosedProbability = 0.1
    gate_mse_reduction: ClosedProbability = 0.2
    gate_soft_vs_signal: PositiveFloat = 1.05
    gate_auprc_gain: ClosedProbability = 0.1
    learned_gates: Flag = False  # the provisional learned-model claims are gated only when True
    # full scale (spec §6b): the GeneExp files (HF dataset xingyusu/GeneExp). An empty path means the official name
    # under data_root; data_root and every path empty: generated data (the `data` key says which)
    data_root: Text = ""
    fasta: Text = ""  # hg38/hg38.ml.fa (+ .fai)
    chr_length: Text = ""  # chr_length.json
    expression_csv: Text = ""  # promo_enhan_inter/GM12878_K562_18377_gene_expr_fromXpresso.csv
    split_csv: Text = ""  # promo_enhan_inter/leave_chrom_out_crossvalidation_split_18377genes.csv
    gene_list: Text = ""  # promo_enhan_inter/ABC/<cell>/GeneList.txt
    h3k27ac: Text = ""  # bigWig or bedGraph; default: the first one in promo_enhan_inter/H3K27ac/<cell>/
    dnase: Text = ""  # bigWig or bedGraph; default: the first one in promo_enhan_inter/DNase-seq/<cell>/
    hic_dir: Text = ""  # folder of hic_feat_<chr>.h5; default promo_enhan_inter/HiC/<cell>/
    blacklist: Text = ""  # optional: hg38_blacklist_dict_v1.pkl
    peaks: Text = ""  # optional MACS3 peak bigWig (else the MACS-style caller on each DNase window)
    cell_type: Annotated[str, OneOf(("K562", "GM12878"))] = "K562"
    fold: PositiveInt = 11
    max_genes: Annotated[int, AtLeast(0), AtMost(MAX_GENES)] = 0  # GeneExp genes per split (first ones; 0: all)
    # mRNA features + promoter activity given to the head (GeneExp: 9; planted: 0)
    n_rna: Annotated[int, AtLeast(0), AtMost(MAX_FEATURES)] = 0
    official_schedule: Flag = False  # AdamW (0.9, 0.95), wd 1e-6, warmup + cosine, grad clip 1 (official)
    threads: Annotated[int, AtLeast(0), AtMost(MAX_THREADS)] = 0  # torch threads (0: leave the default)
    # processes training the models of a seed in parallel (CPU)
    workers: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    # training steps between checkpoints of each model (0: none unless --checkpoint-every or --resume asks)
    checkpoint_every: Annotated[int, AtLeast(0), AtMost(10**9)] = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.center_len >= self.length // 2:
            raise ValueError(f"center_len must be < length/2 = {self.length // 2}, got {self.center_len}")

    @property
    def files_given(self) -> bool:
        """True when GeneExp files are given (data_root or any file path): they are read (and checked first)."""
        return any(getattr(self, k) for k in ("data_root", *GENEEXP_FILES))

    @property
    def real_data(self) -> bool:
        """True on the GeneExp path of the full reproduction (spec §6b): its files given, or, without them,
        `data="generated"` windows of its sizes; False: the planted study of spec §6a."""
        return self.files_given or self.data == "generated"


# the GeneExp file fields of Config (an empty one: the official name under data_root)
GENEEXP_FILES = (
    "fasta", "chr_length", "expression_csv", "split_csv", "gene_list", "h3k27ac", "dnase", "hic_dir", "blacklist",
    "peaks",
)  # fmt: skip


PRESETS: dict[str, Config] = {
    # claim gate (<= 120 s on 2 idle cores): one seed, 800 genes, fewer epochs; untrained claims on 3 seeds
    # claim gate (<= 120 s on 2 idle cores): the untrained checks on 3 seeds of 800 genes; no training
    "ci": Config(n_genes=800, models=()),
    # spec §6a data and untrained checks as written (N 2000, L 2048, 3 seeds); the trained models shrunk to the
    # CPU budget of a shared 2-core machine: seed 0 only, its first 1000 genes, d 16, 3 layers, 24 epochs, batch 16
    "quick": Config(learn_seeds=1, learn_genes=1000, d=16, n_layers=3, epochs=24, batch_size=16, workers=5),
    # spec §6b: GeneExp K562 fold 11, L = 200 kb, d 128, 4 + 4 layers, official soft/hard settings, one GPU.
    # data_root=DIR (or each file's path) reads the GeneExp files; without them, generated windows of the same
    # sizes (18,377 genes split 70/15/15, 200 kb, 9 RNA features), stated in the run's notes
    "full": Config(
        data="generated",
        n_genes=18_377,
        length=200_000,
        center_len=2000,
        seeds=1,
        learn_seeds=1,
        backbone="mamba",
        d=128,
        n_layers=4,
        prior_scale=10.0,
        epochs=22,  # ~50k steps of batch 8 over ~12.8k training genes
        batch_size=8,
        lr=5e-4,
        official_schedule=True,
        n_rna=9,
        models=("seq", "seq-signal", "macs-mask", "seq2exp-soft", "seq2exp-hard", "seq2exp-retrain"),
        checkpoint_every=2000,
    ),
}


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.seq2exp.smoke:build",
    full_steps=211_200,
    what="Seq2Exp-soft: BiMamba generator + predictor (d 128, 4 layers each) on 200 kb windows, batch 8",
    steps_note=(
        "estimate: 6 models x 22 epochs x 1,600 batches (~12.8k training genes of fold 11 / 8), one seed;"
        " each counted at the timed Seq2Exp-soft step (the one-backbone models are cheaper)"
    ),
    cpu_scale="one 128-base window, one thread",
)
