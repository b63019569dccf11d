"""Training loop of the `full` preset on the real SIU Uni-Mol LMDBs (spec §6b): from-scratch dual encoder and
Atom3D-style GCN, multi-task 5 heads with masked MSE, and their pocket-only ablations; evaluated per pocket.

Harness as in the official Uni-Mol fine-tuning: Adam, linear warm-up over 6 % of the steps then polynomial (linear)
decay, gradient clipping at 1.0, one conformation drawn uniformly per complex and epoch (the first at evaluation),
hydrogens removed, pocket cropped to the `full_pocket_atoms` atoms nearest the ligand, coordinates centred; the
weights of the epoch with the lowest masked MSE on `valid.lmdb` are the ones tested (Uni-Core's checkpoint_best).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclr25.shared.files import save_arrays, write_text
from iclr25.siu_bioactivity.formats import LABEL_TYPES, label_vector, ligand_element, parse_source, pocket_element
from iclr25.siu_bioactivity.metrics import evaluate_bioactivity, masked_mse
from iclr25.siu_bioactivity.networks import LIGAND_ELEMENTS, PROTEIN_ELEMENTS, DenseGCN, DualEncoder


def _clean(rec: dict[str, Any], conf: int, max_pocket: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """Ligand/pocket elements and coordinates of one conformation: H removed, pocket cropped, centred on the pocket."""
    coords = rec["coordinates"]
    lig = np.asarray(coords[conf % len(coords)] if isinstance(coords, list) else coords, dtype=np.float32)
    le = [ligand_element(a).upper() for a in rec["atoms"]]
    keep = [i for i, e in enumerate(le) if e != "H"]
    le, lig = [le[i] for i in keep], lig[keep]
    pe = [pocket_element(a).upper() for a in rec["pocket_atoms"]]
    pxyz = np.asarray(rec["pocket_coordinates"], dtype=np.float32)
    keep = [i for i, e in enumerate(pe) if e != "H"]
    pe, pxyz = [pe[i] for i in keep], pxyz[keep]
    if len(pe) > max_pocket:
        near = np.argsort(np.linalg.norm(pxyz - lig.mean(0), axis=1), kind="stable")[:max_pocket]
        near.sort()
        pe, pxyz = [pe[i] for i in near], pxyz[near]
    centre = pxyz.mean(0) if len(pxyz) else lig.mean(0)
    return le, lig - centre, pe, pxyz - centre


class Vocab:
    """Element token ids (0 = padding), built from the training records (Uni-Mol's dict_mol / dict_pkt role)."""

    def __init__(self, symbols: list[str]) -> None:
        self.ids = {s: i + 1 for i, s in enumerate([*sorted(set(symbols)), "[UNK]"])}

    def __len__(self) -> int:
        return len(self.ids) + 1

    def __call__(self, s: str) -> int:
        return self.ids.get(s, self.ids["[UNK]"])


def collate(
    records: list[dict[str, Any]], confs: np.ndarray, cfg: Any, mol_vocab: Vocab, pocket_vocab: Vocab
) -> dict[str, torch.Tensor]:
    """One padded batch with both networks' inputs and the (B, 5) canonical label vectors."""
    parts = [_clean(r, int(c), cfg.full_pocket_atoms) for r, c in zip(records, confs, strict=True)]
    B = len(parts)
    nl = max(len(p[0]) for p in parts)
    npk = max(len(p[2]) for p in parts)
    mt, mc = torch.zeros(B, nl, dtype=torch.long), torch.zeros(B, nl, 3)
    pt, pc = torch.zeros(B, npk, dtype=torch.long), torch.zeros(B, npk, 3)
    n = nl + npk
    feats, xyz, mask, is_pocket = torch.zeros(B, n, 61), torch.zeros(B, n, 3), torch.zeros(B, n), torch.zeros(B, n)
    for i, (le, lx, pe, px) in enumerate(parts):
        mt[i, : len(le)] = torch.tensor([mol_vocab(e) for e in le])
        mc[i, : len(le)] = torch.from_numpy(lx)
        pt[i, : len(pe)] = torch.tensor([pocket_vocab(e) for e in pe], dtype=torch.long)
        pc[i, : len(pe)] = torch.from_numpy(px)
        # GCN nodes: pocket atoms first, then ligand atoms
        for j, e in enumerate(pe):
            feats[i, j, PROTEIN_ELEMENTS.index(e) if e in PROTEIN_ELEMENTS else len(PROTEIN_ELEMENTS) - 1] = 1
        for j, e in enumerate(le):
            k = LIGAND_ELEMENTS.index(e) if e in LIGAND_ELEMENTS else len(LIGAND_ELEMENTS) - 1
            feats[i, len(pe) + j, len(PROTEIN_ELEMENTS) + k] = 1
        xyz[i, : len(pe)] = torch.from_numpy(px)
        xyz[i, len(pe) : len(pe) + len(le)] = torch.from_numpy(lx)
        mask[i, : len(pe) + len(le)] = 1
        is_pocket[i, : len(pe)] = 1
    labels = torch.tensor(np.stack([_labels(r) for r in records]), dtype=torch.float32)
    return {
        "mol_tokens": mt,
        "mol_coords": mc,
        "pocket_tokens": pt,
        "pocket_coords": pc,
        "features": feats,
        "coords": xyz,
        "mask": mask,
        "is_pocket": is_pocket,
        "labels": labels,
    }


def _labels(rec: dict[str, Any]) -> np.ndarray:
    label = rec["label"]
    return label_vector(label) if isinstance(label, dict) else np.full(len(LABEL_TYPES), -1.0)


def build(kind: str, cfg: Any, mol_vocab: Vocab, pocket_vocab: Vocab, pocket_only: bool) -> torch.nn.Module:
    """A `unimol` (dual encoder) or `gcn` network."""
    if kind == "unimol":
        return DualEncoder(
            len(mol_vocab), len(pocket_vocab), cfg.full_dim, cfg.full_layers, cfg.full_heads, pocket_only=pocket_only
        )
    if kind == "gcn":
        return DenseGCN(pocket_only=pocket_only)
    raise ValueError(f"network must be one of unimol, gcn; got {kind!r}")


def train_network(
    model: torch.nn.Module,
    records: list[dict[str, Any]],
    cfg: Any,
    vocabs: tuple[Vocab, Vocab],
    device: str,
    seed: int,
    progress: Callable[..., Any] | None = None,
    valid: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Adam + warm-up/linear decay + clipping on masked MSE; one random conformation per complex and epoch. With
    `valid` records, the masked MSE on them after every epoch picks the weights the model keeps (the best epoch)."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.full_lr)
    steps_per_epoch = max(1, -(-len(records) // cfg.full_batch))
    total = steps_per_epoch * cfg.full_epochs
    warm = max(1, int(cfg.full_warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm))
    )
    t0, seen, last, t_valid = time.perf_counter(), 0, float("nan"), 0.0
    valid_mse: list[float] = []
    best: dict[str, torch.Tensor] | None = None
    best_epoch, best_mse = 0, float("inf")
    epochs = (
        range(cfg.full_epochs) if progress is None else progress(range(cfg.full_epochs), desc="epochs", unit="epoch")
    )
    for _ in epochs:
        order = rng.permutation(len(records))
        for s in range(0, len(order), cfg.full_batch):
            idx = order[s : s + cfg.full_batch]
            batch = [records[i] for i in idx]
            confs = np.array(
                [rng.integers(len(r["coordinates"])) if isinstance(r["coordinates"], list) else 0 for r in batch]
            )
            b = {k: v.to(device) for k, v in collate(batch, confs, cfg, *vocabs).items()}
            loss = masked_mse(model(b), b["labels"])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.full_clip)
            opt.step()
            sched.step()
            seen += len(idx)
            last = loss.item()
        if valid:
            tv = time.perf_counter()
            valid_mse.append(valid_loss(model, valid, cfg, vocabs, device))
            if valid_mse[-1] < best_mse:  # NaN (no labelled valid entry) never wins: the last epoch is kept
                best_epoch, best_mse = len(valid_mse), valid_mse[-1]
                best = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            model.train()
            t_valid += time.perf_counter() - tv
    elapsed = time.perf_counter() - t0 - t_valid
    if best is not None:
        model.load_state_dict(best)
    out: dict[str, Any] = {
        "final_loss": last,
        "train_samples_per_s": seen / elapsed,
        "train_s": elapsed,
        "valid_s": t_valid,
    }
    if valid_mse:
        out |= {"valid_mse": valid_mse, "best_epoch": best_epoch or len(valid_mse)}
    return out


@torch.no_grad()
def valid_loss(
    model: torch.nn.Module, records: list[dict[str, Any]], cfg: Any, vocabs: tuple[Vocab, Vocab], device: str
) -> float:
    """Masked MSE over `records` (first conformation; mean over every labelled entry)."""
    model.to(device).eval()
    total, count = 0.0, 0
    for s in range(0, len(records), cfg.full_batch):
        batch = records[s : s + cfg.full_batch]
        b = {k: v.to(device) for k, v in collate(batch, np.zeros(len(batch), int), cfg, *vocabs).items()}
        mask = b["labels"] >= 0
        total += float((((model(b).float() - b["labels"]) ** 2) * mask).sum())
        count += int(mask.sum())
    return total / count if count else float("nan")


@torch.no_grad()
def predict(
    model: torch.nn.Module,
    records: list[dict[str, Any]],
    cfg: Any,
    vocabs: tuple[Vocab, Vocab],
    device: str,
    pocket_only: bool = False,
) -> np.ndarray:
    """(N, 5) predictions with the first conformation; a pocket-only network predicts once per pocket and
    broadcasts (so padding in different batches can never turn its constant prediction into noise)."""
    model.to(device).eval()
    ids = np.asarray([parse_source(r["source_data"])[1] for r in records])
    if pocket_only:
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        return predict(model, [records[i] for i in first], cfg, vocabs, device)[inverse]
    out = []
    for s in range(0, len(records), cfg.full_batch):
        batch = records[s : s + cfg.full_batch]
        b = {k: v.to(device) for k, v in collate(batch, np.zeros(len(batch), int), cfg, *vocabs).items()}
        out.append(model(b).float().cpu().numpy())
    return np.concatenate(out).astype(np.float64)


def run_real(
    cfg: Any, folder: Path, device: str, seed: int, progress: Callable[..., Any] | None = None
) -> dict[str, Any]:
    """Per split: train unimol / gcn and their pocket-only ablations on train.lmdb (best epoch on valid.lmdb),
    evaluate per pocket on test.lmdb."""
    from iclr25.siu_bioactivity.formats import read_unimol_lmdb

    results: dict[str, Any] = {}
    for split in cfg.splits:
        root = Path(cfg.data_dir) / split
        train = read_unimol_lmdb(root / "train.lmdb")
        if cfg.full_max_train:
            train = [train[i] for i in np.random.default_rng(seed).permutation(len(train))[: cfg.full_max_train]]
        valid = read_unimol_lmdb(root / "valid.lmdb")
        test = read_unimol_lmdb(root / "test.lmdb")
        mol = Vocab([ligand_element(a).upper() for r in train for a in r["atoms"]])
        pkt = Vocab([pocket_element(a).upper() for r in train for a in r["pocket_atoms"]])
        ids = np.asarray([parse_source(r["source_data"])[1] for r in test])
        target = np.stack([_labels(r) for r in test])
        for kind in ("unimol", "gcn"):
            for pocket_only in (False, True):
                name = f"{split}/{kind}" + ("-pocket" if pocket_only else "")
                net = build(kind, cfg, mol, pkt, pocket_only)
                stats = train_network(net, train, cfg, (mol, pkt), device, seed, progress, valid)
                pred = predict(net, test, cfg, (mol, pkt), device, pocket_only)
                results[name] = {
                    "train": stats,
                    "test": evaluate_bioactivity(pred, target, ids),
                    "sizes": {"train": len(train), "valid": len(valid), "test": len(test)},
                }
                arrays = {"pred": pred, "target": target, "pocket_ids": ids}
                save_arrays(folder / f"pred_{name.replace('/', '_')}.npz", arrays)
        write_text(folder / "real_results.json", json.dumps(results, indent=1, default=float))
    return results
