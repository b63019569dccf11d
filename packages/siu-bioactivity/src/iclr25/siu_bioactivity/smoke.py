"""`iclr25 smoke`: one training step of the full preset's Uni-Mol-like dual encoder (molecule and pocket encoders of
15 layers, 512-d, 64 heads, distance-kernel attention bias; 5-output head) on synthetic complexes of 48 ligand
and 256 pocket heavy atoms (the pocket crop), batch 96, Adam 1e-4 with clipping 1 on the masked multi-task MSE,
through the package's own `training.build` and `metrics.masked_mse`, as `training.train_network` runs it (the
per-batch featurisation on the CPU is not timed). `reduced` (the CPU run of CI, where a 96 M-parameter step of 96
complexes takes minutes) trains the preset's 4 x 128 x 8 stand-in encoder on one complex, in one thread."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from iclr25.siu_bioactivity.config import PRESETS
from iclr25.siu_bioactivity.formats import LABEL_TYPES
from iclr25.siu_bioactivity.metrics import masked_mse
from iclr25.siu_bioactivity.networks import LIGAND_ELEMENTS, PROTEIN_ELEMENTS
from iclr25.siu_bioactivity.training import Vocab
from iclr25.siu_bioactivity.training import build as build_network

LIGAND_ATOMS = 48  # heavy atoms of a typical SIU ligand (the batch's padded length)
CPU_BATCH, CPU_ENCODER = 1, {"full_layers": 4, "full_dim": 128, "full_heads": 8}


def build(device: str, reduced: bool) -> Callable[[], int]:
    cfg = PRESETS["full"]
    if reduced:  # the CI run on busy cores, in one thread (two are slower there)
        cfg = dataclasses.replace(cfg, **CPU_ENCODER)
        torch.set_num_threads(1)
    batch = CPU_BATCH if reduced else cfg.full_batch
    mol, pocket = Vocab(list(LIGAND_ELEMENTS)), Vocab(list(PROTEIN_ELEMENTS))
    model = build_network("unimol", cfg, mol, pocket, pocket_only=False).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.full_lr)
    nl, npk = LIGAND_ATOMS, cfg.full_pocket_atoms
    b = {
        "mol_tokens": torch.randint(1, len(mol), (batch, nl), device=device),
        "mol_coords": 4.0 * torch.randn(batch, nl, 3, device=device),
        "pocket_tokens": torch.randint(1, len(pocket), (batch, npk), device=device),
        "pocket_coords": 8.0 * torch.randn(batch, npk, 3, device=device),
    }
    labels = torch.rand(batch, len(LABEL_TYPES), device=device)
    labels[:, 1:] = -1.0  # one labelled activity type per complex, as in SIU

    def step() -> int:
        loss = masked_mse(model(b), labels)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.full_clip)
        opt.step()
        return batch

    return step
