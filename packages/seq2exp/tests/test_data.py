"""Planted generator (spec §6a) and the GeneExp loaders on tiny generated files (spec §6c, §9 check 7)."""

from __future__ import annotations

import json
import pickle

import h5py
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


@pytest.fixture
def genome(tmp_path):
    """A 3-chromosome toy GeneExp layout (FASTA + .fai, chr lengths, CSVs, bedGraph tracks, Hi-C h5, blacklist)."""
    rng = np.random.default_rng(0)
    root = tmp_path / "GeneExp"
    (root / "hg38").mkdir(parents=True)
    chroms = {"chr1": 300, "chr2": 157, "chrX": 90}
    seqs = {c: "".join(rng.choice(list("ACGT"), n)) for c, n in chroms.items()}
    with open(root / "hg38" / "hg38.ml.fa", "w") as f:
        for c, s in seqs.items():
            f.write(f">{c} toy\n")
            for i in range(0, len(s), 60):
                f.write(s[i : i + 60] + "\n")
    (root / "chr_length.json").write_text(json.dumps({"hg38": chroms}))
    inter = root / "promo_enhan_inter"
    for assay in ("H3K27ac", "DNase-seq"):
        (inter / assay / "K562").mkdir(parents=True)
        (inter / assay / "K562" / "ENCFF000.bedGraph").write_text(
            "chr1\t0\t10\t2.5\nchr1\t10\t20\tnan\nchr2\t5\t8\t1.0\n"
        )
    (inter / "ABC" / "K562").mkdir(parents=True)
    (inter / "ABC" / "K562" / "GeneList.txt").write_text(
        "symbol\tchr\ttss\tstrand\tH3K27ac.RPM.TSS1Kb\tDHS.RPM.TSS1Kb\n"
        "G1\tchr1\t20\t+\t4\t9\nG2\tchr2\t100\t-\t1\t1\nG3\tchrX\t60\t+\t0\t2\nG4\tchr1\t250\t+\t1\t4\n"
    )
    feats = "UTR5LEN_log10zscore,CDSLEN_log10zscore,INTRONLEN_log10zscore,UTR3LEN_log10zscore,UTR5GC,CDSGC,UTR3GC,ORFEXONDENSITY_log10zscore"
    rows = [f"G{i},{','.join(str(i / 10) for _ in range(8))},{i * 10},{i * 5}" for i in range(1, 5)]
    (inter / "GM12878_K562_18377_gene_expr_fromXpresso.csv").write_text(
        f"ENSID,{feats},K562_CAGE_128*3_sum,GM12878_CAGE_128*3_sum\n" + "\n".join(rows) + "\n"
    )
    (inter / "leave_chrom_out_crossvalidation_split_18377genes.csv").write_text(
        "ENSID,Gene name,fold_1,fold_11\nG1,a,train,test\nG2,b,valid,train\nG3,c,test,train\nG4,d,train,valid\n"
    )
    (inter / "HiC" / "K562").mkdir(parents=True)
    with h5py.File(inter / "HiC" / "K562" / "hic_feat_chr1.h5", "w") as f:
        f["chr1_20"] = np.full(50, 9.0)  # covers [0, 70) of the window clipped at the chromosome start
        f["chr1_250"] = np.arange(100, dtype=float)
    with open(root / "hg38_blacklist_dict_v1.pkl", "wb") as f:
        bl = {c: np.zeros(n, bool) for c, n in chroms.items()}
        bl["chr1"][15:18] = True
        pickle.dump(bl, f)
    return root, seqs


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
