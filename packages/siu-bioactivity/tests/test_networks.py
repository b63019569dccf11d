"""The full preset's networks: shapes, SE(3) invariance, pocket-only ablation, and the real-data loop on a tiny
generated Uni-Mol LMDB."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import torch

from iclr25.siu_bioactivity.config import PRESETS
from iclr25.siu_bioactivity.data import make_world
from iclr25.siu_bioactivity.formats import write_unimol_lmdb
from iclr25.siu_bioactivity.networks import DenseGCN, DualEncoder
from iclr25.siu_bioactivity.training import Vocab, collate, run_real
from iclr25.siu_bioactivity.vote import random_rotations

TINY = replace(
    PRESETS["ci"],
    train_pockets=6,
    test_pockets=3,
    ligands_per_pocket=6,
    test_ligands_per_pocket=6,
    full_epochs=1,
    full_batch=8,
    full_dim=16,
    full_heads=2,
    full_layers=1,
    splits=("split_60",),
)


def _batch():
    w = make_world(TINY, 0)
    recs = w.test.to_records()[:6]
    mol = Vocab([a.rstrip("0123456789").upper() for r in recs for a in r["atoms"]])
    pkt = Vocab([a[0] for r in recs for a in r["pocket_atoms"]])
    return recs, mol, pkt, collate(recs, np.zeros(len(recs), int), TINY, mol, pkt)


def _rotated(b):
    R = torch.tensor(random_rotations(1, np.random.default_rng(0))[0], dtype=torch.float32)
    t = torch.tensor([3.0, -2.0, 5.0])
    out = dict(b)
    for k in ("mol_coords", "pocket_coords", "coords"):
        out[k] = b[k] @ R.T + t
    return out


def test_dual_encoder_shapes_invariance_and_pocket_only():
    torch.manual_seed(0)
    _, mol, pkt, b = _batch()
    net = DualEncoder(len(mol), len(pkt), dim=16, layers=2, heads=2).eval()
    y = net(b)
    assert y.shape == (6, 5) and torch.isfinite(y).all()
    assert torch.allclose(net(_rotated(b)), y, atol=1e-4)
    po = DualEncoder(len(mol), len(pkt), dim=16, layers=1, heads=2, pocket_only=True).eval()
    b2 = dict(b, mol_tokens=torch.flip(b["mol_tokens"], [0]))
    assert torch.equal(po(b), po(b2))
    y.sum().backward()
    assert net.mol.embed.weight.grad is not None and net.pocket.embed.weight.grad is not None


def test_gcn_shapes_invariance_and_pocket_only():
    torch.manual_seed(0)
    _, _, _, b = _batch()
    net = DenseGCN().eval()
    y = net(b)
    assert y.shape == (6, 5) and torch.isfinite(y).all()
    assert torch.allclose(net(_rotated(b)), y, atol=1e-4)
    po = DenseGCN(pocket_only=True).eval()
    lig = (b["mask"] > 0) & (b["is_pocket"] == 0)
    feats = b["features"].clone()
    feats[lig] = feats[lig].roll(1, dims=-1)
    assert torch.allclose(po(dict(b, features=feats)), po(b))
    assert not torch.allclose(net(dict(b, features=feats)), y)


def test_run_real_on_tiny_lmdb(tmp_path):
    w = make_world(TINY, 1)
    root = tmp_path / "siu" / "split_60"
    write_unimol_lmdb(w.siu.to_records(), root / "train.lmdb")
    write_unimol_lmdb(w.test.to_records(), root / "test.lmdb")
    out = tmp_path / "out"
    out.mkdir()
    res = run_real(replace(TINY, data_dir=str(tmp_path / "siu")), out, "cpu", 0)
    assert set(res) == {"split_60/unimol", "split_60/unimol-pocket", "split_60/gcn", "split_60/gcn-pocket"}
    for name in ("split_60/unimol-pocket", "split_60/gcn-pocket"):
        assert all(np.isnan(v["pearson_star"]) for t, v in res[name]["test"].items() if v["n"])
    assert json.loads((out / "real_results.json").read_text()).keys() == res.keys()
    assert (out / "pred_split_60_gcn.npz").is_file()
