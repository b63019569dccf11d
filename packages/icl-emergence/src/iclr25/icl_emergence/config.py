"""Reproduction presets (standard library + shared validators only, so bad values fail before torch loads).

Paper: Gong, Hu, Tang, Liu, "Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from
Generalization", ICLR 2025 (arXiv 2502.17024). Recipe: spec §6a (quick) and §6b (full).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Flag,
    Increasing,
    InRange,
    IsInt,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    OpenProbability,
    PositiveFloat,
    PositiveInt,
    Validated,
    check_int_at_least,
)

PRIORS = ("orthogonal", "rotation2d", "gaussian")
N_EFF = ("token", "sequence")

# Size limits, refused before any work (past them a run would exhaust memory or run for days). The paper's
# largest settings (spec §6b): K = 256 topics of N = 1 000 sequences, T = 1 024 tokens, d = 5, 6 layers of
# d_model 256, 20 000 steps of batch 128; each limit leaves room above that.
MAX_TOPICS = 4096  # K
MAX_SEQS = 65_536  # N, evaluation sequences
MAX_LENGTH = 8192  # T (tokens per sequence)
MAX_DIM = 256  # d, the LDS state dimension
MAX_LAYERS = 48
MAX_WIDTH = 4096  # d_model
MAX_HEADS = 64
MAX_STEPS = 1_000_000
MAX_BATCH = 4096

Topics = Annotated[int, AtLeast(1), AtMost(MAX_TOPICS)]
Seqs = Annotated[int, AtLeast(1), AtMost(MAX_SEQS)]
Dim = Annotated[int, AtLeast(1), AtMost(MAX_DIM)]
Layers = Annotated[int, AtLeast(1), AtMost(MAX_LAYERS)]
Width = Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)]
Heads = Annotated[int, AtLeast(1), AtMost(MAX_HEADS)]
Steps = Annotated[int, AtLeast(1), AtMost(MAX_STEPS)]
Batch = Annotated[int, AtLeast(1), AtMost(MAX_BATCH)]


# More limits: the GINC checks and worker processes (GINC's N, T and steps share MAX_SEQS, MAX_LENGTH, MAX_STEPS).
MAX_PROMPTS = 1_000_000  # GINC prompts
MAX_GINC_K = 1024  # GINC example length k
MAX_EXAMPLES = 4096  # in-context examples per prompt
MAX_WORKERS = 1024


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-icl-emergence reproduce --scale quick`: the spec §6a LDS study (rotation2d, d = 2,
    sigma = 0.05, T = 32; 2-layer d_model 64 transformer, AdamW 1e-3, 1 200 steps; K in {1, 4, 16, 64} at N = 64,
    seeds 0 and 1, plus fresh topics every batch) and the no-training GINC / least-squares / bound checks."""

    # LDS topics and corpus (spec §3.3 A, §6a)
    prior: Annotated[str, OneOf(PRIORS)] = "rotation2d"
    d: Dim = 2
    rho: PositiveFloat = 1.0
    sigma: PositiveFloat = 0.05
    T: Annotated[int, AtLeast(3), AtMost(MAX_LENGTH)] = 32
    Ks: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1), AtMost(MAX_TOPICS)), Increasing()] = (1, 4, 16, 64)
    N: Seqs = 64
    fresh: Flag = True  # also a "fresh topics every batch" run (K = infinity reference), first seed only
    seeds: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(0))] = (0, 1)  # added to --seed
    # model (spec §6a)
    n_layers: Layers = 2
    d_model: Width = 64
    n_heads: Heads = 4
    # optimisation (spec §6a: AdamW, 100 warm-up steps, cosine decay, weight decay 0.01, batch 64)
    steps: Steps = 1200
    lr: PositiveFloat = 1e-3
    warmup: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 100
    weight_decay: NonNegativeFloat = 0.01
    batch: Batch = 64
    # fixed evaluation sets (identical across K and seeds)
    eval_topics: Topics = 64
    eval_seqs: Seqs = 256
    eval_seed: NonNegativeInt = 20250217
    log_every: PositiveInt = 200
    # PAC-Bayes report (spec §6a): Gaussian posterior/prior N(theta_hat, s^2 I) / N(theta_0, s^2 I),
    # s = sigma_frac * RMS(theta_0); squared loss clipped at loss_clip
    delta: OpenProbability = 0.05
    sigma_frac: PositiveFloat = 0.01
    loss_clip: PositiveFloat = 10.0
    n_eff: Annotated[str, OneOf(N_EFF)] = "token"
    # no-training checks (spec §9.3-9.5)
    ginc_prompts: Annotated[int, AtLeast(0), AtMost(MAX_PROMPTS)] = 500
    ginc_k: Annotated[int, AtLeast(2), AtMost(MAX_GINC_K)] = 3
    ginc_n_examples: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(0), AtMost(MAX_EXAMPLES))] = (
        0,
        1,
        2,
        4,
        8,
        16,
    )
    ls_T: Annotated[int, AtLeast(17), AtMost(MAX_LENGTH)] = 64
    ls_seqs: Seqs = 512
    # full-scale extras (spec §6b): GINC pre-training and SGLD
    # ID HMMs (2K HMMs are generated, half ID); () = skip GINC training
    ginc_Ks: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(MAX_TOPICS))] = ()
    ginc_N: Annotated[int, IsInt(), AtMost(MAX_SEQS)] = 0  # documents per HMM
    ginc_T: Annotated[int, IsInt(), AtMost(MAX_LENGTH)] = 0  # document length (tokens)
    ginc_layers: Layers = 4
    ginc_d_model: Annotated[int, AtLeast(8), AtMost(MAX_WIDTH)] = 256
    ginc_steps: Annotated[int, IsInt(), AtMost(MAX_STEPS)] = 0
    ginc_lr: PositiveFloat = 8e-4
    # > 0: an extra SGLD run at the largest K with the Langevin KL (spec §3.2 item 4)
    sgld_beta: NonNegativeFloat = 0.0
    # parallel training processes on CPU (0 = min(#runs, cores); 1 when the run scales out or checkpoints)
    workers: Annotated[int, AtLeast(0), AtMost(MAX_WORKERS)] = 0
    # steps between checkpoints of each pre-training run (0: none unless --checkpoint-every or --resume)
    checkpoint_every: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.prior == "rotation2d" and self.d != 2:
            raise ValueError(f"prior rotation2d needs d = 2, got d = {self.d}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.ginc_Ks:
            check_int_at_least("ginc_N", self.ginc_N, 1)
            check_int_at_least("ginc_T", self.ginc_T, 2)
            check_int_at_least("ginc_steps", self.ginc_steps, 1)
        for name, value, most in (
            ("ginc_N", self.ginc_N, MAX_SEQS),
            ("ginc_T", self.ginc_T, MAX_LENGTH),
            ("ginc_steps", self.ginc_steps, MAX_STEPS),
        ):
            if value > most:
                raise ValueError(f"{name} must be <= {most}, got {value}")


PRESETS: dict[str, Config] = {
    # the claim gate: K in {1, 64} x seeds {0, 1}, the full 1 200-step recipe (pytest -m claims)
    "ci": Config(Ks=(1, 64), fresh=False, ginc_prompts=300),
    "quick": Config(),
    # spec §6b on one GPU: LDS orthogonal d = 5, sigma = 0.1, T = 64, 6 layers d_model 256, K up to 256; GINC with
    # K in {5, 10, 20, 50} ID HMMs (about 10M tokens), 4-layer GPT; an SGLD run with the Langevin KL
    "full": Config(
        prior="orthogonal",
        d=5,
        sigma=0.1,
        T=64,
        Ks=(1, 2, 4, 8, 16, 32, 64, 128, 256),
        N=512,
        seeds=(0, 1, 2),
        n_layers=6,
        d_model=256,
        n_heads=8,
        steps=20_000,
        batch=128,
        warmup=1000,
        eval_topics=256,
        eval_seqs=1024,
        ginc_prompts=2500,
        ginc_Ks=(5, 10, 20, 50),
        ginc_N=1000,
        ginc_T=1024,
        ginc_steps=20_000,
        sgld_beta=1e5,
        checkpoint_every=2000,
    ),
}


@dataclass(frozen=True)
class TrainConfig(Validated):
    """`iclr25-icl-emergence train --data lds|ginc`: one AR-NTP pre-training run on a K x N x T corpus."""

    data: Annotated[str, OneOf(("lds", "ginc"))] = "lds"
    topics: Topics = 64
    seqs: Seqs = 64
    length: Annotated[int, AtLeast(3), AtMost(MAX_LENGTH)] = 32
    prior: Annotated[str, OneOf(PRIORS)] = "rotation2d"
    d: Dim = 2
    sigma: PositiveFloat = 0.05
    n_layers: Layers = 2
    d_model: Width = 64
    n_heads: Heads = 4
    steps: Steps = 1200
    lr: PositiveFloat = 1e-3
    batch: Batch = 64
    # the shared Lightning trainer, or "loop" (the reproduction's plain loop)
    trainer: Annotated[str, OneOf(("lightning", "loop"))] = "lightning"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.data == "lds" and self.prior == "rotation2d" and self.d != 2:
            raise ValueError(f"prior rotation2d needs d = 2, got d = {self.d}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")


@dataclass(frozen=True)
class BoundConfig(Validated):
    """`iclr25-icl-emergence bound --report report.json`: two-level PAC-Bayes bound for a recorded run."""

    n_eff: Annotated[str, OneOf(N_EFF)] = "token"
    delta: Annotated[float, InRange(0.0, 1.0, low_open=True, high_open=True)] = 0.05
    c: PositiveFloat = 10.0


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.icl_emergence.smoke:build",
    full_steps=620_000,
    what="AR transformer 6 layers, d_model 256, 8 heads, T 64 vectors in R^5, batch 128",
    steps_note="9 topic counts x 3 seeds x 20,000 steps + 4 GINC runs x 20,000 (4 layers, counted alike)",
    cpu_scale="batch 16 of 128",
)
