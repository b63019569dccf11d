"""Configuration of the CtD reproduction: one frozen dataclass, three presets. Standard library only, so bad
values are refused before torch or any data is loaded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Flag,
    NonEmpty,
    NonNegativeFloat,
    OneOf,
    PositiveFloat,
    Satisfies,
    Validated,
    ZeroOrAtLeast,
)

CHANNELS = ("cb", "gs", "qt")
IMAGE_DATASETS = ("shapes", "digits")
ABLATIONS = ("qt", "single_target", "no_decompose", "uniform_init", "slots", "sum", "gru", "k24")


def _check_even(name: str, value: int) -> None:
    """`value` is even."""
    if value % 2:
        raise ValueError(f"{name} must be even, got {value}")


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset (full): 20 000 Decompose steps of 64 games, codebooks of 48, 64-pixel images, 5 000 evaluation games.
MAX_STEPS = 10_000_000  # training steps, and the dead-code window
MAX_BATCH = 65_536  # games per step
MAX_CODES = 4096  # codebook sizes (K, k_large)
MAX_WIDTH = 4096  # vector and hidden sizes
MAX_CANDIDATES = 1024  # targets and distractors per game
MAX_SEEDS = 1000
MAX_DRAWS = 100_000  # draws and renders per attribute combination
MAX_IMAGE = 1024  # image side, pixels
MAX_GAMES = 10_000_000  # evaluation games
MAX_THREADS = 1024


@dataclass(frozen=True)
class Config(Validated):
    """One reproduction: Decompose then zero-shot Compose (spec 6a), on the symbolic THING-like data for `seeds`
    seeds (the gate) and on rendered images for `image_seeds` seeds (reported); CBM at K and `k_large`.

    quick: `iclr25-compose-decompose reproduce --scale quick` (about 4.5 min of CPU): CB and GS Decompose
    per-candidate accuracy about 0.72 and 0.84 (gate: >= 0.65), both 0.5 with the message zeroed.
    """

    steps: Annotated[int, AtLeast(1), AtMost(MAX_STEPS)] = 1500  # Decompose steps (spec 6a)
    # Compose fine-tuning steps on training combinations after the zero-shot evaluation (0: zero-shot only)
    compose_steps: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 0
    batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 64  # games per step (spec 3.3)
    lr: PositiveFloat = 1e-3  # Adam (spec 3.3)
    K: Annotated[int, AtLeast(1), AtMost(MAX_CODES)] = 12  # codebook size / GS vocabulary = #FVP (spec 3.3 default)
    # the CBM comparison size (spec 6a: with K = #FVP any perfect channel has CBM = 1); 0: skip
    k_large: Annotated[int, ZeroOrAtLeast(2), AtMost(MAX_CODES)] = 48
    dim: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 16  # d, the Sender vector / codeword dimension (spec 6a)
    hidden: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64  # encoder output size h
    n_targets: Annotated[int, AtLeast(1), AtMost(MAX_CANDIDATES)] = 3  # spec 3.2
    n_distractors: Annotated[int, AtLeast(1), AtMost(MAX_CANDIDATES)] = 3  # spec 3.2
    # |p| of the Compose phrases (spec 6a: 2-FVP phrases)
    compose_size: Annotated[int, AtLeast(1), AtMost(3)] = 2
    beta1: PositiveFloat = 1.0  # codebook loss weight (paper tried 0.1-1.0)
    beta2: PositiveFloat = 0.25  # commitment loss weight (VQ-VAE's)
    init: Literal["kmeans", "uniform"] = "kmeans"  # codebook initialisation (spec 3.3)
    dead_after: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 200  # re-seed codes unused this many steps (spec 3.3)
    # GS Receiver word layer: N(0, 1) as the reference GS game's symbol embedding (nn.Embedding), or nn.Linear's
    gs_word_init: Literal["normal", "linear"] = "normal"
    sender: Literal["single", "slots"] = "single"
    combine: Literal["and", "sum", "gru"] = "and"
    channels: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(CHANNELS))] = ("cb", "gs")
    # symbolic THING-like runs per channel (spec 6a gate: seeds 0-2)
    seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 3
    noise: NonNegativeFloat = 0.3  # N(0, noise^2) added to the one-hots (spec 6a pilot)
    thing_per_combo: Annotated[int, AtLeast(1), AtMost(MAX_DRAWS)] = 50  # noisy draws per combination
    image_datasets: Annotated[tuple[str, ...], Each(OneOf(IMAGE_DATASETS))] = ("shapes",)
    image_seeds: Annotated[int, AtLeast(0), AtMost(MAX_SEEDS)] = 1
    # spec 6a: 32 x 32
    image_size: Annotated[int, AtLeast(16), Satisfies(_check_even, "even", 17), AtMost(MAX_IMAGE)] = 32
    shape_extended: Flag = False  # spec 6b: SHAPE with size and a 3 x 3 position grid (288 combinations)
    n_per_combo: Annotated[int, AtLeast(1), AtMost(MAX_DRAWS)] = 10  # renders per combination (spec 6a)
    # run on the symbolic data, first seed: see ABLATIONS
    ablations: Annotated[tuple[str, ...], Each(OneOf(ABLATIONS))] = ()
    eval_games: Annotated[int, AtLeast(10), AtMost(MAX_GAMES)] = 1000
    gate_min_acc: PositiveFloat = 0.65  # spec 9.6
    gate_max_zero_acc: PositiveFloat = 0.55  # spec 9.6
    break_message: Flag = False  # train with the message zeroed (a deliberately broken variant for the gate test)
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1  # torch CPU threads (per worker)
    # training runs in parallel processes (independent runs: the sequential results; 1: one after another here)
    workers: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    # training steps between checkpoints of every loop (0: none unless `--checkpoint-every` or `--resume` asks)
    checkpoint_every: Annotated[int, AtLeast(0), AtMost(MAX_STEPS)] = 0


PRESETS: dict[str, Config] = {
    # the claim gate: symbolic data only, seeds 0-2, CB and GS (about 60 s of CPU on 2 cores)
    "ci": Config(image_datasets=(), k_large=0),
    # spec 6a: + the SHAPE images, K = 48 comparison, cheap ablations, and Compose fine-tuning (750 steps: the full
    # preset's 2:1 ratio of Decompose to Compose steps) after the zero-shot evaluation (about 4.5 min of CPU)
    "quick": Config(compose_steps=750, ablations=("qt", "single_target", "no_decompose", "uniform_init")),
    # spec 6b on one GPU: 20k Decompose + 10k Compose steps, 5 seeds, every channel and ablation, 64 x 64 images;
    # `iclr25-compose-decompose reproduce --scale full --device cuda`, about 4 h (projected in the README, not run)
    "full": Config(
        steps=20000,
        compose_steps=10000,
        seeds=5,
        image_seeds=5,
        channels=CHANNELS,
        image_datasets=IMAGE_DATASETS,
        image_size=64,
        shape_extended=True,
        ablations=ABLATIONS,
        eval_games=5000,
        checkpoint_every=2000,
    ),
}


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.compose_decompose.smoke:build",
    full_steps=1_350_000,
    what="image game on 64x64 shapes: CNN Sender + codebook (K 12, dim 16) + Receiver, batch 64",
    steps_note="estimate: 3 data sets x 3 channels x 5 seeds x (20,000 + 10,000 compose) steps; ablations not counted",
)
