"""Planted generator (spec §6a) and the GeneExp loaders on tiny generated files (spec §6c, §9 check 7)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from iclr25.seq2exp import Fasta, GeneWindowDataset, generate_planted_dataset, load_dataset, save_dataset
from iclr25.seq2exp.data import (
    build_fai,
    encode_bases,
    fold_split,
    read_bedgraph,
    read_bool_dict,
    read_hic,
    window_sequence,
)
from iclr25.shared.safeload import UnsafeFileError


def test_planted_dataset_truth_and_structure():
    d = generate_planted_dataset(200, 2048, 3, seed=0)
    n, L = d["seq"].shape
    assert (n, L) == (200, 2048) and d["signals"].shape == (200, 2048, 3) and d["rna"].shape == (200, 0)
    assert 0.010 < d["true_mask"].mean() < 0.020  # 10 motif bases of ~3 accessible sites per window (~1.5%)
    assert d["true_mask"].sum(1).max() <= 60 and np.all(d["true_mask"].sum(1) % 10 == 0)
    assert d["bump_mask"].mean() > 5 * d["true_mask"].mean()
    c0, c1 = d["center"]
    assert not d["true_mask"][:, c0:c1].any()
    assert (d["true_mask"] <= d["bump_mask"]).all()  # motif bases lie inside their bumps
    assert np.bincount(d["split"]).tolist() == [140, 30, 30]
    assert 0.25 < d["y"].var() < 0.6
    # accessible sites carry signal: DNase at truth bases is far above background
    assert d["signals"][..., 1][d["true_mask"]].mean() > 5 * np.median(d["signals"][..., 1])
    again = generate_planted_dataset(200, 2048, 3, seed=0)
    assert np.array_equal(again["seq"], d["seq"]) and np.array_equal(again["y"], d["y"])


def test_dataset_roundtrip_and_refusals(tmp_path):
    d = generate_planted_dataset(30, 512, 3, seed=1, center_len=32)
    path = save_dataset(tmp_path / "d.npz", d)
    back = load_dataset(path)
    assert np.array_equal(back["seq"], d["seq"]) and np.allclose(back["signals"], d["signals"])
    np.savez(tmp_path / "bad.npz", seq=np.zeros((3, 4)))
    with pytest.raises(UnsafeFileError, match="lacks"):
        load_dataset(tmp_path / "bad.npz")


def test_fasta_index_and_fetch(genome):
    root, seqs = genome
    fa = Fasta(root / "hg38" / "hg38.ml.fa")
    assert fa.fetch("chr1", 55, 130) == seqs["chr1"][55:130]
    assert fa.fetch("chrX", 80, 200) == seqs["chrX"][80:]
    assert [r[:2] for r in build_fai(root / "hg38" / "hg38.ml.fa")] == [("chr1", 300), ("chr2", 157), ("chrX", 90)]
    assert encode_bases("ACGTNa").tolist() == [0, 1, 2, 3, 4, 0]


def test_window_padding_at_chromosome_ends(genome):
    root, seqs = genome
    fa = Fasta(root / "hg38" / "hg38.ml.fa")
    w = window_sequence(fa, "chr1", 20, 100)  # [-30, 70): 30 N on the left
    assert w.shape == (100,) and (w[:30] == 4).all()
    assert np.array_equal(w[30:], encode_bases(seqs["chr1"][:70]))
    right = window_sequence(fa, "chrX", 60, 100)  # [10, 110): 20 N on the right
    assert (right[80:] == 4).all() and np.array_equal(right[:80], encode_bases(seqs["chrX"][10:]))


def test_tracks_hic_blacklist(genome):
    root, _ = genome
    g = read_bedgraph(root / "promo_enhan_inter" / "H3K27ac" / "K562" / "ENCFF000.bedGraph", "chr1", 5, 25)
    assert np.allclose(g, [2.5] * 5 + [0.0] * 15)  # NaN -> 0
    h = read_hic(root / "promo_enhan_inter" / "HiC" / "K562" / "hic_feat_chr1.h5", "chr1", 20, 300, 100)
    assert h.shape == (100,) and (h[:30] == 0).all() and np.allclose(h[30:80], 1.0) and (h[80:] == 0).all()
    bl = read_bool_dict(root / "hg38_blacklist_dict_v1.pkl")
    assert bl["chr1"][15:18].all() and bl["chr1"].sum() == 3


def test_crafted_pickle_is_refused(tmp_path):
    class Boom:
        def __reduce__(self):
            return (print, ("ran",))

    (tmp_path / "bl.pkl").write_bytes(pickle.dumps({"chr1": Boom()}))
    with pytest.raises(UnsafeFileError, match="refused"):
        read_bool_dict(tmp_path / "bl.pkl")


def test_fold_selection_and_dataset(genome):
    root, _ = genome
    split_csv = root / "promo_enhan_inter" / "leave_chrom_out_crossvalidation_split_18377genes.csv"
    folds = fold_split(split_csv, 11)
    assert folds == {"train": ["G2", "G3"], "valid": ["G4"], "test": ["G1"]}
    assert not set(folds["train"]) & set(folds["test"])
    with pytest.raises(ValueError, match="fold_5"):
        fold_split(split_csv, 5)
    ds = GeneWindowDataset(root, "K562", fold=11, seq_range=100, split="test")
    assert len(ds) == 1
    item = ds[0]
    assert item["ensid"] == "G1" and item["seq"].shape == (100,) and item["signals"].shape == (100, 3)
    assert (item["seq"][:30] == 4).all()
    assert np.allclose(item["signals"][30:40, 0], 2.5) and (item["signals"][40:50, 0] == 0).all()
    assert np.allclose(item["signals"][30:80, 2], 1.0)  # Hi-C log10(1 + 9)
    assert item["blacklist"][45:48].all() and item["blacklist"].sum() == 3
    assert item["rna_feat"].shape == (9,) and item["rna_feat"][-1] == pytest.approx(6.0)  # sqrt(4 * 9)
    assert item["y"] == pytest.approx(np.log10(11.0))
    train = GeneWindowDataset(root, "K562", fold=11, seq_range=100, split="train")
    assert [train[i]["ensid"] for i in range(len(train))] == ["G2", "G3"]
    assert not train[1]["signals"][:, 2].any()  # no Hi-C file for chrX: zeros


def test_bigwig_track_equals_its_bedgraph(tmp_path):
    """A bigWig written with pyBigWig (the [genomics] extra) reads as the same per-base values as the bedGraph."""
    pyBigWig = pytest.importorskip("pyBigWig")
    from iclr25.seq2exp.data import read_track

    intervals = [("chr1", 2, 6, 1.5), ("chr1", 10, 14, 3.0)]
    (tmp_path / "t.bedGraph").write_text("".join(f"{c}\t{s}\t{e}\t{v}\n" for c, s, e, v in intervals))
    with pyBigWig.open(str(tmp_path / "t.bw"), "w") as bw:
        bw.addHeader([("chr1", 40)])
        bw.addEntries(*map(list, zip(*[(c, s, e) for c, s, e, _ in intervals], strict=True)),
                      values=[v for *_, v in intervals])  # fmt: skip
    big = read_track(tmp_path / "t.bw", "chr1", 0, 20)
    assert np.array_equal(big, read_track(tmp_path / "t.bedGraph", "chr1", 0, 20))
    assert np.allclose(big, [0, 0, 1.5, 1.5, 1.5, 1.5, 0, 0, 0, 0, 3, 3, 3, 3, 0, 0, 0, 0, 0, 0])
