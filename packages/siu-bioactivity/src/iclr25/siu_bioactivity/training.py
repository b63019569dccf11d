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
from iclr25.shared.global_batch import batch_share, set_batch_rows
from iclr25.siu_bioactivity.formats import LABEL_TYPES, label_vector, ligand_element, parse_source, pocket_element
from iclr25.siu_bioactivity.metrics import evaluate_bioactivity, masked_mse
from iclr25.siu_bioactivity.networks import LIGAND_ELEMENTS, PROTEIN_ELEMENTS, DenseGCN, DualEncoder, for_global_batch


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
    records: list[dict[str, Any]],
    confs: np.ndarray,
    cfg: Any,
    mol_vocab: Vocab,
    pocket_vocab: Vocab,
    rows: tuple[int, int] | None = None,
) -> dict[str, torch.Tensor]:
    """One padded batch with both networks' inputs and the (B, 5) canonical label vectors. `rows` = (start, stop):
    those records alone, padded as the whole batch is (exactly those rows of the whole batch's tensors)."""
    parts = [_clean(r, int(c), cfg.full_pocket_atoms) for r, c in zip(records, confs, strict=True)]
    nl = max(len(p[0]) for p in parts)
    npk = max(len(p[2]) for p in parts)
    if rows is not None:
        if not 0 <= rows[0] <= rows[1] <= len(records):
            raise ValueError(f"rows must satisfy 0 <= start <= stop <= {len(records)} (the batch), got {rows}")
        records, parts = records[rows[0] : rows[1]], parts[rows[0] : rows[1]]
    B = len(parts)
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
    labels = torch.tensor(np.reshape([_labels(r) for r in records], (B, len(LABEL_TYPES))), dtype=torch.float32)
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
    *,
    logger: Any = None,
    prefix: str = "",
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Adam + warm-up/linear decay + clipping on masked MSE; one random conformation per complex and epoch. With
    `valid` records, the masked MSE on them after every epoch picks the weights the model keeps (the best epoch).
    With `logger`, every epoch logs the shared training names (`loss`: the epoch's mean masked MSE, `lr`,
    `throughput` in complexes/s, `epoch`) and `valid_mse` under `prefix`.

    With `fabric` (several processes, `iclr25.shared.fabric`), every process draws the same permutation and
    conformations, so the same global batch of `full_batch` complexes, and trains on its own contiguous share,
    padded as the whole batch; its masked MSE is weighted by its share of the batch's labelled entries, so the
    averaged gradients are those of the whole batch's masked MSE. The network is made `for_global_batch` first: the
    GCN's BatchNorm normalises with the whole batch's statistics, and every dropout (the GCN's 0.25, the dual
    encoder's 0.1, its attention probabilities' included) draws the whole batch's mask, so N processes take the
    steps of one process with Fabric (whose masks differ from those of the loop without Fabric).
    Validation runs whole on every process. With `checkpointer`, the network, optimiser, schedule, step, the data
    generator's state, the current epoch's order and the best weights so far are saved every `checkpointer.every`
    steps and at the end; `resume` ("auto" or a checkpoint file) continues from one, ending as an uninterrupted run.
    """
    from iclr25.shared.logging import training_row

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    raw = model
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if fabric is not None:
        device = fabric.device
        for_global_batch(model)
    else:
        model.to(device)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.full_lr)
    steps_per_epoch = max(1, -(-len(records) // cfg.full_batch))
    total = steps_per_epoch * cfg.full_epochs
    warm = max(1, int(cfg.full_warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm))
    )
    if fabric is not None:
        model, opt = fabric.setup(model, opt)
    state: dict[str, Any] = {
        "model": model,
        "optimizer": opt,
        "scheduler": sched,
        "step": 0,
        "epoch": 0,  # epochs trained and validated
        "pos": 0,  # complexes of the current epoch already trained on
        "order": torch.zeros(0, dtype=torch.long),  # the current epoch's order (when pos > 0)
        "data_rng": json.dumps(rng.bit_generator.state),
        "seen": 0,
        "last": float("nan"),
        "epoch_losses": [],
        "train_s": 0.0,
        "t_valid": 0.0,
        "valid_mse": [],
        "best": None,
        "best_epoch": 0,
        "best_mse": float("inf"),
    }
    if checkpointer is not None:
        checkpointer.resume(resume, state, fabric)
        rng.bit_generator.state = json.loads(state["data_rng"])
    seen, last, t_valid, train_s = int(state["seen"]), float(state["last"]), float(state["t_valid"]), state["train_s"]
    valid_mse: list[float] = list(state["valid_mse"])
    best: dict[str, torch.Tensor] | None = state["best"]
    best_epoch, best_mse, step = int(state["best_epoch"]), float(state["best_mse"]), int(state["step"])
    epochs = (
        range(cfg.full_epochs) if progress is None else progress(range(cfg.full_epochs), desc="epochs", unit="epoch")
    )
    for epoch in epochs:
        if epoch < state["epoch"]:
            continue  # trained before the checkpoint this run resumed from
        t0 = time.perf_counter()
        first = int(state["pos"]) if epoch == state["epoch"] else 0
        order = state["order"].numpy() if first else rng.permutation(len(records))
        losses = list(state["epoch_losses"]) if first else []
        for s in range(first, len(order), cfg.full_batch):
            idx = order[s : s + cfg.full_batch]
            batch = [records[i] for i in idx]
            confs = np.array(
                [rng.integers(len(r["coordinates"])) if isinstance(r["coordinates"], list) else 0 for r in batch]
            )
            if fabric is None:
                b = {k: v.to(device) for k, v in collate(batch, confs, cfg, *vocabs).items()}
                loss = masked_mse(model(b), b["labels"])
            else:
                loss = _share_loss(model, batch, confs, cfg, vocabs, device, rank, world)
            opt.zero_grad()
            if fabric is not None:
                fabric.backward(loss)
                fabric.clip_gradients(model, opt, max_norm=cfg.full_clip)
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.full_clip)
            opt.step()
            sched.step()
            seen += len(idx)
            last = loss.item() if fabric is None else _batch_loss(fabric, loss)
            losses.append(last)
            step += 1
            if checkpointer is not None:
                elapsed = train_s + time.perf_counter() - t0
                state.update(step=step, pos=s + len(idx), order=torch.from_numpy(np.asarray(order, dtype=np.int64)))
                state.update(data_rng=json.dumps(rng.bit_generator.state), seen=seen, last=last, train_s=elapsed)
                state["epoch_losses"] = losses
                checkpointer.maybe_save(state, fabric)
        train_s += time.perf_counter() - t0
        if valid:
            tv = time.perf_counter()
            valid_mse.append(valid_loss(raw, valid, cfg, vocabs, device))
            if valid_mse[-1] < best_mse:  # NaN (no labelled valid entry) never wins: the last epoch is kept
                best_epoch, best_mse = len(valid_mse), valid_mse[-1]
                best = {k: v.detach().to("cpu", copy=True) for k, v in raw.state_dict().items()}
            model.train()
            t_valid += time.perf_counter() - tv
        if logger is not None and losses:
            rate = len(order) / max(time.perf_counter() - t0, 1e-9)
            row = training_row(float(np.mean(losses)), lr=sched.get_last_lr()[0], throughput=rate, epoch=epoch)
            logger.log({f"{prefix}{k}": v for k, v in row.items()} | _valid_row(prefix, valid_mse), step=epoch)
        state.update(epoch=epoch + 1, pos=0, order=torch.zeros(0, dtype=torch.long), epoch_losses=[])
        state.update(valid_mse=valid_mse, best=best, best_epoch=best_epoch, best_mse=best_mse, t_valid=t_valid)
    if checkpointer is not None:  # the end, so a resumed run goes straight to testing
        state.update(step=step, data_rng=json.dumps(rng.bit_generator.state), seen=seen, last=last, train_s=train_s)
        checkpointer.save(state, fabric)
    set_batch_rows(raw, None)
    elapsed = train_s
    if best is not None:
        raw.load_state_dict(best)
    out: dict[str, Any] = {
        "final_loss": last,
        "train_samples_per_s": seen / elapsed,
        "train_s": elapsed,
        "valid_s": t_valid,
    }
    if valid_mse:
        out |= {"valid_mse": valid_mse, "best_epoch": best_epoch or len(valid_mse)}
    return out


def _valid_row(prefix: str, valid_mse: list[float]) -> dict[str, float]:
    return {f"{prefix}valid_mse": valid_mse[-1]} if valid_mse and np.isfinite(valid_mse[-1]) else {}


def _share_loss(
    model: torch.nn.Module,
    batch: list[dict[str, Any]],
    confs: np.ndarray,
    cfg: Any,
    vocabs: tuple[Vocab, Vocab],
    device: Any,
    rank: int,
    world: int,
) -> torch.Tensor:
    """This process's share of a global batch (rows `batch_share(n, rank, world)`, padded as the whole batch, the
    network's dropouts told which rows they hold): its masked MSE weighted by world x its labelled entries / the
    batch's, so that the mean of the processes' gradients is the gradient of the whole batch's masked MSE. A process
    left without records runs the network on zero rows (weight 0): every process takes part in the gradient average
    and the batch statistics."""
    n = len(batch)
    lo, hi = batch_share(n, rank, world)
    labelled = [int((_labels(r) >= 0).sum()) for r in batch]
    total, mine = max(sum(labelled), 1), sum(labelled[lo:hi])
    set_batch_rows(model, (lo, hi), n)
    b = {k: v.to(device) for k, v in collate(batch, confs, cfg, *vocabs, rows=(lo, hi)).items()}
    return masked_mse(model(b), b["labels"]) * (world * mine / total)


def _batch_loss(fabric: Any, loss: torch.Tensor) -> float:
    """The whole batch's masked MSE: the sum over processes of the weighted shares, divided by their number."""
    from iclr25.shared.fabric import all_reduce_mean

    return all_reduce_mean(fabric, loss.detach())


def _moved(batch: dict[str, torch.Tensor], device: Any, model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A collated batch on `device`, its float tensors in the network's dtype (float32; float64 under a Fabric's
    64-true precision)."""
    dtype = next(model.parameters()).dtype
    return {k: v.to(device, dtype) if v.is_floating_point() else v.to(device) for k, v in batch.items()}


@torch.no_grad()
def valid_loss(
    model: torch.nn.Module, records: list[dict[str, Any]], cfg: Any, vocabs: tuple[Vocab, Vocab], device: str
) -> float:
    """Masked MSE over `records` (first conformation; mean over every labelled entry)."""
    model.to(device).eval()
    total, count = 0.0, 0
    for s in range(0, len(records), cfg.full_batch):
        batch = records[s : s + cfg.full_batch]
        b = _moved(collate(batch, np.zeros(len(batch), int), cfg, *vocabs), device, model)
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
        b = _moved(collate(batch, np.zeros(len(batch), int), cfg, *vocabs), device, model)
        out.append(model(b).float().cpu().numpy())
    return np.concatenate(out).astype(np.float64)


def run_real(
    cfg: Any,
    folder: Path,
    device: str,
    seed: int,
    progress: Callable[..., Any] | None = None,
    *,
    logger: Any = None,
    scale: Callable[[str], dict[str, Any]] | None = None,
    write: bool = True,
) -> dict[str, Any]:
    """Per split: train unimol / gcn and their pocket-only ablations on train.lmdb (best epoch on valid.lmdb),
    evaluate per pocket on test.lmdb. `logger`: each network's epochs under "<split>/<network>/"; `scale(name)`:
    `train_network`'s fabric/checkpointer/resume for the network `name` (e.g. "split_60-unimol-pocket"); `write`:
    whether this process writes the predictions and real_results.json (rank 0 of a multi-process run alone)."""
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
                options = scale(name.replace("/", "-")) if scale is not None else {}
                on = options["fabric"].device if "fabric" in options else device
                stats = train_network(
                    net, train, cfg, (mol, pkt), device, seed, progress, valid, logger=logger, prefix=f"{name}/",
                    **options,
                )  # fmt: skip
                pred = predict(net, test, cfg, (mol, pkt), on, pocket_only)
                results[name] = {
                    "train": stats,
                    "test": evaluate_bioactivity(pred, target, ids),
                    "sizes": {"train": len(train), "valid": len(valid), "test": len(test)},
                }
                arrays = {"pred": pred, "target": target, "pocket_ids": ids}
                if write:
                    save_arrays(folder / f"pred_{name.replace('/', '_')}.npz", arrays)
        if write:
            write_text(folder / "real_results.json", json.dumps(results, indent=1, default=float))
    return results
