"""`iclr25 smoke`: the full preset's image game (Sender + codebook channel + Receiver on 64x64 shapes, batch 64),
trained by the package's own `training.train` one step per call (its Adam and codebook update)."""

from __future__ import annotations

from collections.abc import Callable

from iclr25.compose_decompose.config import PRESETS
from iclr25.compose_decompose.data import make_dataset
from iclr25.compose_decompose.training import build_game, train


def build(device: str, reduced: bool) -> Callable[[], int]:
    cfg = PRESETS["full"]
    data = make_dataset(
        "shapes", 0, cfg.noise, cfg.thing_per_combo, cfg.n_per_combo, cfg.image_size, cfg.shape_extended
    )
    game = build_game(data, "cb", cfg.K, cfg.dim, cfg.hidden, cfg.sender, cfg.combine, cfg.beta1, cfg.beta2, cfg.init)
    game.to(device)
    calls = [0]

    def step() -> int:
        calls[0] += 1
        train(
            game,
            data,
            steps=1,
            batch=cfg.batch,
            lr=cfg.lr,
            n_targets=cfg.n_targets,
            n_distractors=cfg.n_distractors,
            seed=calls[0],
            device=device,
        )
        return cfg.batch

    return step
