"""The full preset's networks: shapes, SE(3) invariance, pocket-only ablation, the explicit encoder layers of
the global-batch path against torch's, a share of a collated batch, the real-data loop on a tiny generated Uni-Mol
LMDB, and `reproduce --scale full` on a tiny generated SIU folder (and its refusals)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from iclr25.shared.global_batch import GlobalBatchDropout, GlobalBatchNorm1d
from iclr25.siu_bioactivity.config import PRESETS, SPLIT_FILES
from iclr25.siu_bioactivity.data import make_world
from iclr25.siu_bioactivity.formats import write_unimol_lmdb
from iclr25.siu_bioactivity.networks import DenseGCN, DualEncoder, explicit_layer, for_global_batch
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_explicit_encoder_layers_equal_torchs(dtype: torch.dtype):
    """The global-batch path's encoder layers (attention computed from the same parameters) give torch's layers'
    output to float precision: without dropout in training mode, and with dropout in eval mode."""
    torch.manual_seed(0)
    _, mol, pkt, b = _batch()
    b = {k: v.to(dtype) if v.is_floating_point() else v for k, v in b.items()}
    for dropout, train in ((0.0, True), (0.1, False)):
        net = DualEncoder(len(mol), len(pkt), dim=16, layers=2, heads=2, dropout=dropout).to(dtype).train(train)
        torch_layers = net(b)
        for_global_batch(net)
        assert net.pocket.explicit_attention and type(net.pocket.attention_dropout) is GlobalBatchDropout
        tol = 1e-5 if dtype == torch.float32 else 1e-12
        assert torch.allclose(net(b), torch_layers, atol=tol, rtol=0), (net(b) - torch_layers).abs().max()


def test_explicit_layer_drops_attention_probabilities():
    """With every other dropout off, the attention dropout alone changes the training output; at p = 0 it does not."""
    torch.manual_seed(0)
    _, mol, pkt, b = _batch()
    net = for_global_batch(DualEncoder(len(mol), len(pkt), dim=16, layers=1, heads=2, dropout=0.0))
    clean = net(b)
    net.pocket.attention_dropout.p = net.mol.attention_dropout.p = 0.5
    assert not torch.allclose(net(b), clean)
    net.eval()
    assert torch.equal(net(b), clean)
    post_norm = torch.nn.TransformerEncoderLayer(16, 2, batch_first=True)
    with pytest.raises(ValueError, match="pre-norm"):
        explicit_layer(post_norm, torch.zeros(1, 3, 16), torch.zeros(1, 2, 3, 3), torch.nn.Dropout(0.1))


def test_gcn_for_global_batch_keeps_its_parameters():
    torch.manual_seed(0)
    _, _, _, b = _batch()
    net = DenseGCN().eval()
    y = net(b)
    for_global_batch(net)
    assert all(type(n) is GlobalBatchNorm1d for n in net.norms) and type(net.drop) is GlobalBatchDropout
    assert torch.equal(net(b), y)


def test_a_share_of_a_collated_batch_is_its_rows():
    """`collate(..., rows=(start, stop))` is exactly those rows of the whole batch (padded as the whole batch is)."""
    recs, mol, pkt, whole = _batch()
    confs = np.zeros(len(recs), int)
    for rows in [(0, 4), (4, 6), (5, 5)]:
        share = collate(recs, confs, TINY, mol, pkt, rows=rows)
        assert all(torch.equal(share[k], v[rows[0] : rows[1]]) for k, v in whole.items())
    with pytest.raises(ValueError, match="rows must satisfy"):
        collate(recs, confs, TINY, mol, pkt, rows=(4, 7))


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


def write_tiny_siu(root, splits=("split_60",), seed=1):
    """A tiny SIU folder: `<split>/{train,valid,test}.lmdb` in the Uni-Mol format, from the generator's records
    (whole pockets on each side: train and test from one world, valid = the test pockets of another)."""
    for k, split in enumerate(splits):
        w = make_world(TINY, seed + k)
        valid = make_world(replace(TINY, test_pockets=2), seed + 100 + k).test
        write_unimol_lmdb(w.siu.to_records(), root / split / "train.lmdb")
        write_unimol_lmdb(valid.to_records(), root / split / "valid.lmdb")
        write_unimol_lmdb(w.test.to_records(), root / split / "test.lmdb")
    return root


def test_run_real_on_tiny_lmdb(tmp_path):
    write_tiny_siu(tmp_path / "siu")
    out = tmp_path / "out"
    out.mkdir()
    res = run_real(replace(TINY, data_dir=str(tmp_path / "siu")), out, "cpu", 0)
    assert set(res) == {"split_60/unimol", "split_60/unimol-pocket", "split_60/gcn", "split_60/gcn-pocket"}
    for r in res.values():
        assert len(r["train"]["valid_mse"]) == TINY.full_epochs and r["train"]["best_epoch"] >= 1
        assert r["sizes"]["valid"] > 0
    for name in ("split_60/unimol-pocket", "split_60/gcn-pocket"):
        assert all(np.isnan(v["pearson_star"]) for t, v in res[name]["test"].items() if v["n"])
    assert json.loads((out / "real_results.json").read_text()).keys() == res.keys()
    assert (out / "pred_split_60_gcn.npz").is_file()


# tiny overrides of the full preset (the synthetic study at one small seed, one-epoch small networks)
TINY_FULL = [
    "seeds=0",
    "train_pockets=6",
    "test_pockets=3",
    "ligands_per_pocket=6",
    "test_ligands_per_pocket=6",
    "matched_pockets=0",
    "diagnostics=false",
    "figures=false",
    "splits=split_60",
    "full_epochs=1",
    "full_batch=8",
    "full_dim=16",
    "full_heads=2",
    "full_layers=1",
]


def test_full_preset_config_is_paper_scale():
    full, quick = PRESETS["full"], PRESETS["quick"]
    assert full != quick and full.data_dir == ""
    assert (full.full_layers, full.full_dim, full.full_heads) == (15, 512, 64)
    assert (full.full_epochs, full.full_batch, full.full_lr, full.full_pocket_atoms) == (50, 96, 1e-4, 256)
    assert full.splits == ("split_60", "split_90") and full.full_max_train == 0
    # the synthetic study of `full` is the quick one (`full` runs its seeds in 3 processes: the same numbers)
    synthetic = {k: v for k, v in vars(full).items() if not k.startswith("full_") and k != "workers"}
    assert synthetic == {k: v for k, v in vars(quick).items() if not k.startswith("full_") and k != "workers"}
    assert (full.workers, quick.workers, full.full_checkpoint_every) == (3, 1, 1000)


def test_reproduce_full_on_tiny_siu_folder(tmp_path, capsys):
    from iclr25.siu_bioactivity.cli import main

    data = write_tiny_siu(tmp_path / "siu")
    out = tmp_path / "run"
    rc = main(["reproduce", "--scale", "full", "--out", str(out), "--device", "cpu", f"data_dir={data}", *TINY_FULL])
    assert rc in (0, 1)
    saved = json.loads((out / "results.json").read_text())
    assert saved["scale"] == "full" and saved["config"]["full_layers"] == 1
    names = {c["name"]: c for c in saved["claims"]}
    for net in ("unimol", "gcn"):
        assert f"real_split_60_{net}_pearson_star" in names and f"real_split_60_{net}_global_gap" in names
    po = names["real_split_60_pocket_only_star_undefined"]
    assert po["gated"] and po["holds"]
    assert "pocket_only_star_undefined" in names  # the synthetic study ran too
    assert set(saved["metrics"]["real"]) == {f"split_60/{k}" for k in ("unimol", "unimol-pocket", "gcn", "gcn-pocket")}
    assert (out / "real_results.json").is_file() and (out / "pred_split_60_unimol.npz").is_file()
    assert "real_split_60_unimol_pearson_star" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (None, "pass data_dir="),
        ("nothing", "is not a folder"),
        ("empty", "missing split_60/train.lmdb, split_60/valid.lmdb, split_60/test.lmdb, split_90/train.lmdb"),
        ("no_valid", "missing split_60/valid.lmdb, split_90/valid.lmdb"),
    ],
)
def test_reproduce_full_refuses_missing_data_before_any_work(tmp_path, capsys, make, needle):
    from iclr25.siu_bioactivity.cli import main

    argv = ["reproduce", "--scale", "full", "--out", str(tmp_path / "run")]
    data = tmp_path / "siu"
    if make == "empty":
        data.mkdir()
    elif make == "no_valid":
        for split in ("split_60", "split_90"):
            (data / split).mkdir(parents=True)
            for name in SPLIT_FILES:
                if name != "valid.lmdb":
                    (data / split / name).write_bytes(b"")
    if make is not None:
        argv.append(f"data_dir={data}")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "bgao95/SIU" in err[0], err
    assert not (tmp_path / "run").exists()  # refused before the run folder (and the synthetic study)


def test_dual_encoder_predicts_finite_values_in_eval_mode():
    """torch's fused inference kernel returns NaN with the encoder's -inf padding mask; evaluation must not use it."""
    _, mol, pkt, b = _batch()
    net = DualEncoder(len(mol), len(pkt), 16, 1, 2).eval()
    with torch.no_grad():
        assert torch.isfinite(net(b)).all()
    assert torch.backends.mha.get_fastpath_enabled()  # the switch is restored
