"""Spec §9.7: the identity split keeps homologs and pockets on one side; identity == the textbook DP."""

from __future__ import annotations

import numpy as np

from iclr25.siu_bioactivity.reference import lcs_identity_loop
from iclr25.siu_bioactivity.splits import dedup_by_tanimoto, sequence_identity, split_by_protein_identity, tanimoto

AA = "ACDEFGHIKLMNPQRSTVWY"


def _mutate(seq, rate, rng):
    return "".join(rng.choice(list(AA)) if rng.random() < rate else c for c in seq)


def test_identity_equals_dp():
    rng = np.random.default_rng(0)
    for _ in range(30):
        a = "".join(rng.choice(list(AA), size=int(rng.integers(1, 40))))
        b = _mutate(a, 0.4, rng)[: int(rng.integers(1, 45))]
        assert sequence_identity(a, b) == lcs_identity_loop(a, b)
    assert sequence_identity("ABC", "ABC") == 1.0 and sequence_identity("", "A") == 0.0


def test_split_has_no_homolog_leak_and_whole_pockets():
    rng = np.random.default_rng(1)
    families = ["".join(rng.choice(list(AA), size=80)) for _ in range(12)]
    seqs = {}
    for f, base in enumerate(families):
        for k in range(3):
            seqs[f"U{f:02d}{k}"] = _mutate(base, 0.1, rng)  # ~90 % identical within a family
    records = []
    for u in seqs:
        for p in range(2):
            records += [{"source_data": f"{u},{u}p{p}"} for _ in range(int(rng.integers(3, 8)))]
    for thr in (0.6, 0.9):
        tr, va, te = split_by_protein_identity(records, seqs, thr, test_fraction=0.2, seed=3)
        assert sorted(tr + va + te) == list(range(len(records))) and te and tr
        prot = lambda idx: {records[i]["source_data"].split(",")[0] for i in idx}  # noqa: E731
        for t in prot(te) | prot(va):
            for s in prot(tr):
                assert sequence_identity(seqs[t], seqs[s]) < thr
        pockets = lambda idx: {records[i]["source_data"].split(",")[1] for i in idx}  # noqa: E731
        assert not (pockets(tr) & pockets(te)) and not (pockets(tr) & pockets(va)) and not (pockets(va) & pockets(te))


def test_dedup_by_tanimoto():
    rng = np.random.default_rng(0)
    base = rng.random((5, 256)) < 0.2
    near = base.copy()
    near[:, :3] = ~near[:, :3]  # a few flipped bits: Tanimoto well above 0.8
    fps = np.concatenate([base, near])
    assert (tanimoto(base, near).diagonal() >= 0.8).all()
    kept = dedup_by_tanimoto(fps, 0.8)
    assert kept.tolist() == [0, 1, 2, 3, 4]
