"""Shared fixtures for the Seq2Exp tests."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)
    return


@pytest.fixture
def tiny_config():
    """A small soft Seq2Exp config on the cnn backbone (L 256, promoter 32)."""
    from iclr25.seq2exp.config import Seq2ExpConfig

    return Seq2ExpConfig(d=8, backbone="cnn", n_layers=2, n_rna=3, center_len=32, max_len=256)


@pytest.fixture
def batch():
    """A random batch: seq (2, 256) codes, signals (2, 256, 3), rna (2, 3), blacklist (2, 256)."""
    g = torch.Generator().manual_seed(0)
    seq = torch.randint(0, 5, (2, 256), generator=g)
    signals = torch.rand(2, 256, 3, generator=g) * 3
    rna = torch.randn(2, 3, generator=g)
    blacklist = torch.zeros(2, 256, dtype=torch.bool)
    blacklist[:, 10:20] = True
    return seq, signals, rna, blacklist


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
    h5py = pytest.importorskip("h5py")
    with h5py.File(inter / "HiC" / "K562" / "hic_feat_chr1.h5", "w") as f:
        f["chr1_20"] = np.full(50, 9.0)  # covers [0, 70) of the window clipped at the chromosome start
        f["chr1_250"] = np.arange(100, dtype=float)
    with open(root / "hg38_blacklist_dict_v1.pkl", "wb") as f:
        bl = {c: np.zeros(n, bool) for c, n in chroms.items()}
        bl["chr1"][15:18] = True
        pickle.dump(bl, f)
    return root, seqs
