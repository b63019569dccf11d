"""`iclr25 smoke`: one training step of the full preset's TSC-Net (the official SDD architecture: goal grid 15 x 80
px, step grid 3 x 20 px, scene maps resized by 0.25, cell features of 256, 8 heads, 2 layers per block, latent 64,
the official quirks on), Adam 1e-4 on the five losses, as `training.train_model` runs it, through the package's own
`arch_config`, `build_model`, `AugmentedScenes` and `to_batch`. A batch is whole clips of at least 32 pedestrians
(`batch_peds`): here 4 clips of 8 random-walk pedestrians, 8 + 12 frames, on one synthetic 6-class SDD-sized label map
(1,400 x 1,900 px) with its 8 augmented transforms. `reduced` (the CPU run of CI, where a step of 32 takes
a minute) trains on one clip of 2 pedestrians, in one thread."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from iclr25.tsc_net.config import PRESETS
from iclr25.tsc_net.data import Clips
from iclr25.tsc_net.model import OBS, PRED
from iclr25.tsc_net.training import AugmentedScenes, build_model, to_batch
from iclr25.tsc_net.workflows import arch_config

MAP_HW = (1400, 1900)  # an SDD scene's size in pixels
CLIPS, PEDS = 4, 8  # 32 pedestrians: the preset's batch_peds
CPU_CLIPS, CPU_PEDS = 1, 2  # reduced: one clip of 2 pedestrians


def build(device: str, reduced: bool) -> Callable[[], int]:
    cfg = PRESETS["full"]
    arch = arch_config(cfg)
    n_clips, peds = (CPU_CLIPS, CPU_PEDS) if reduced else (CLIPS, PEDS)
    if reduced:  # the CI run on busy cores: the many small crops and ops slow down badly with two threads
        torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    h, w = MAP_HW
    mask = rng.integers(0, arch.n_classes, (h // 50, w // 50)).repeat(50, 0).repeat(50, 1).astype(np.uint8)
    scenes = AugmentedScenes([mask], arch.n_classes, arch.map_scale, cfg.augment)
    n = n_clips * peds
    start = rng.uniform((300, 300), (w - 300, h - 300), (n, 1, 2))
    pos = start + np.cumsum(rng.normal(0.0, 4.0, (n, OBS + PRED, 2)), 1)
    clips = Clips(
        pos, np.zeros(n, dtype=np.int64), np.repeat(np.arange(n_clips), peds), np.zeros(n, bool), ["synthetic"]
    )
    model = build_model("tsc", arch).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    idx = np.arange(n)

    def step() -> int:
        losses = model(to_batch(clips, idx, scenes, rng, device))
        opt.zero_grad(set_to_none=True)
        losses["total"].backward()
        opt.step()
        return n

    return step
