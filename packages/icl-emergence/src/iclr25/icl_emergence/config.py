"""Reproduction presets (standard library + shared validators only, so bad values fail before torch loads).

Paper: Gong, Hu, Tang, Liu, "Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from
Generalization", ICLR 2025 (arXiv 2502.17024). Recipe: spec §6a (quick) and §6b (full).
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr25.shared.validate import (
    check_each,
    check_in_range,
    check_int_at_least,
    check_nonempty,
    check_nonnegative,
    check_one_of,
    check_positive,
    check_probability,
)

PRIORS = ("orthogonal", "rotation2d", "gaussian")
N_EFF = ("token", "sequence")


@dataclass(frozen=True)
class Config:
    """Quick: `iclr25-icl-emergence reproduce --scale quick`: the spec §6a LDS study (rotation2d, d = 2,
    sigma = 0.05, T = 32; 2-layer d_model 64 transformer, AdamW 1e-3, 1 200 steps; K in {1, 4, 16, 64} at N = 64,
    seeds 0 and 1, plus fresh topics every batch) and the no-training GINC / least-squares / bound checks."""

    # LDS topics and corpus (spec §3.3 A, §6a)
    prior: str = "rotation2d"
    d: int = 2
    rho: float = 1.0
    sigma: float = 0.05
    T: int = 32
    Ks: tuple[int, ...] = (1, 4, 16, 64)
    N: int = 64
    fresh: bool = True  # also a "fresh topics every batch" run (K = infinity reference), first seed only
    seeds: tuple[int, ...] = (0, 1)  # added to --seed
    # model (spec §6a)
    n_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    # optimisation (spec §6a: AdamW, 100 warm-up steps, cosine decay, weight decay 0.01, batch 64)
    steps: int = 1200
    lr: float = 1e-3
    warmup: int = 100
    weight_decay: float = 0.01
    batch: int = 64
    # fixed evaluation sets (identical across K and seeds)
    eval_topics: int = 64
    eval_seqs: int = 256
    eval_seed: int = 20250217
    log_every: int = 200
    # PAC-Bayes report (spec §6a): Gaussian posterior/prior N(theta_hat, s^2 I) / N(theta_0, s^2 I),
    # s = sigma_frac * RMS(theta_0); squared loss clipped at loss_clip
    delta: float = 0.05
    sigma_frac: float = 0.01
    loss_clip: float = 10.0
    n_eff: str = "token"
    # no-training checks (spec §9.3-9.5)
    ginc_prompts: int = 500
    ginc_k: int = 3
    ginc_n_examples: tuple[int, ...] = (0, 1, 2, 4, 8, 16)
    ls_T: int = 64
    ls_seqs: int = 512
    # full-scale extras (spec §6b): GINC pre-training and SGLD
    ginc_Ks: tuple[int, ...] = ()  # ID HMMs (2K HMMs are generated, half ID); () = skip GINC training
    ginc_N: int = 0  # documents per HMM
    ginc_T: int = 0  # document length (tokens)
    ginc_layers: int = 4
    ginc_d_model: int = 256
    ginc_steps: int = 0
    ginc_lr: float = 8e-4
    sgld_beta: float = 0.0  # > 0: an extra SGLD run at the largest K with the Langevin KL (spec §3.2 item 4)
    workers: int = 0  # parallel training processes on CPU (0 = min(#runs, cores))

    def __post_init__(self) -> None:
        check_one_of("prior", self.prior, PRIORS)
        check_int_at_least("d", self.d, 1)
        if self.prior == "rotation2d" and self.d != 2:
            raise ValueError(f"prior rotation2d needs d = 2, got d = {self.d}")
        check_positive("rho", self.rho)
        check_positive("sigma", self.sigma)
        check_int_at_least("T", self.T, 3)
        check_nonempty("Ks", self.Ks)
        check_each("Ks", self.Ks, check_int_at_least, 1)
        if list(self.Ks) != sorted(set(self.Ks)):
            raise ValueError(f"Ks must be strictly increasing, got {self.Ks}")
        check_int_at_least("N", self.N, 1)
        check_nonempty("seeds", self.seeds)
        check_each("seeds", self.seeds, check_int_at_least, 0)
        check_int_at_least("n_layers", self.n_layers, 1)
        check_int_at_least("d_model", self.d_model, 1)
        check_int_at_least("n_heads", self.n_heads, 1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        check_int_at_least("steps", self.steps, 1)
        check_positive("lr", self.lr)
        check_int_at_least("warmup", self.warmup, 0)
        check_nonnegative("weight_decay", self.weight_decay)
        check_int_at_least("batch", self.batch, 1)
        check_int_at_least("eval_topics", self.eval_topics, 1)
        check_int_at_least("eval_seqs", self.eval_seqs, 1)
        check_int_at_least("eval_seed", self.eval_seed, 0)
        check_int_at_least("log_every", self.log_every, 1)
        check_probability("delta", self.delta)
        check_positive("sigma_frac", self.sigma_frac)
        check_positive("loss_clip", self.loss_clip)
        check_one_of("n_eff", self.n_eff, N_EFF)
        check_int_at_least("ginc_prompts", self.ginc_prompts, 0)
        check_int_at_least("ginc_k", self.ginc_k, 2)
        check_nonempty("ginc_n_examples", self.ginc_n_examples)
        check_each("ginc_n_examples", self.ginc_n_examples, check_int_at_least, 0)
        check_int_at_least("ls_T", self.ls_T, 17)
        check_int_at_least("ls_seqs", self.ls_seqs, 1)
        check_each("ginc_Ks", self.ginc_Ks, check_int_at_least, 1)
        if self.ginc_Ks:
            check_int_at_least("ginc_N", self.ginc_N, 1)
            check_int_at_least("ginc_T", self.ginc_T, 2)
            check_int_at_least("ginc_steps", self.ginc_steps, 1)
        check_int_at_least("ginc_layers", self.ginc_layers, 1)
        check_int_at_least("ginc_d_model", self.ginc_d_model, 8)
        check_positive("ginc_lr", self.ginc_lr)
        check_nonnegative("sgld_beta", self.sgld_beta)
        check_int_at_least("workers", self.workers, 0)


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
    ),
}


@dataclass(frozen=True)
class TrainConfig:
    """`iclr25-icl-emergence train --data lds|ginc`: one AR-NTP pre-training run on a K x N x T corpus."""

    data: str = "lds"
    topics: int = 64
    seqs: int = 64
    length: int = 32
    prior: str = "rotation2d"
    d: int = 2
    sigma: float = 0.05
    n_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    steps: int = 1200
    lr: float = 1e-3
    batch: int = 64
    trainer: str = "lightning"  # the shared Lightning trainer, or "loop" (the reproduction's plain loop)

    def __post_init__(self) -> None:
        check_one_of("data", self.data, ("lds", "ginc"))
        check_one_of("trainer", self.trainer, ("lightning", "loop"))
        check_int_at_least("topics", self.topics, 1)
        check_int_at_least("seqs", self.seqs, 1)
        check_int_at_least("length", self.length, 3)
        check_one_of("prior", self.prior, PRIORS)
        check_int_at_least("d", self.d, 1)
        if self.data == "lds" and self.prior == "rotation2d" and self.d != 2:
            raise ValueError(f"prior rotation2d needs d = 2, got d = {self.d}")
        check_positive("sigma", self.sigma)
        check_int_at_least("n_layers", self.n_layers, 1)
        check_int_at_least("d_model", self.d_model, 1)
        check_int_at_least("n_heads", self.n_heads, 1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        check_int_at_least("steps", self.steps, 1)
        check_positive("lr", self.lr)
        check_int_at_least("batch", self.batch, 1)


@dataclass(frozen=True)
class BoundConfig:
    """`iclr25-icl-emergence bound --report report.json`: two-level PAC-Bayes bound for a recorded run."""

    n_eff: str = "token"
    delta: float = 0.05
    c: float = 10.0

    def __post_init__(self) -> None:
        check_one_of("n_eff", self.n_eff, N_EFF)
        check_in_range("delta", self.delta, 0.0, 1.0, low_open=True, high_open=True)
        check_positive("c", self.c)
