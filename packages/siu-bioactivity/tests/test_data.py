"""The spec §6a generator: geometry, offsets from composition, label model, records in the official format."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from iclr25.siu_bioactivity.baselines import ComplexFeaturizer
from iclr25.siu_bioactivity.config import PRESETS
from iclr25.siu_bioactivity.data import TYPE_OFFSETS, generate_siu_like, make_ligands, make_pockets, make_world
from iclr25.siu_bioactivity.formats import LABEL_TYPES, read_unimol_lmdb, write_unimol_lmdb

CFG = replace(PRESETS["ci"], train_pockets=20, test_pockets=4, ligands_per_pocket=10, test_ligands_per_pocket=10)


def test_pocket_geometry_and_offsets():
    rng = np.random.default_rng(0)
    pk = make_pockets(3000, rng, "tr", 1.2, 0.3)
    m = pk.elements >= 0
    r = np.linalg.norm(pk.coords - pk.centres[:, None], axis=-1)[m]
    assert r.min() >= 4.0 - 1e-9 and r.max() <= 10.0 + 1e-9
    assert pk.sizes.min() >= 60 and pk.sizes.max() <= 120
    assert abs(pk.offsets.std() - 1.2) < 0.08 and abs(pk.offsets.mean() - 6.0) < 0.08
    frac = np.stack([(pk.elements == k).sum(1) / pk.sizes for k in (1, 2, 3)], 1)
    X = np.c_[np.ones(len(frac)), frac]
    resid = pk.offsets - X @ np.linalg.lstsq(X, pk.offsets, rcond=None)[0]
    assert abs(resid.std() - 0.3) < 0.03  # the offset is the realised composition + N(0, 0.3^2)


def test_ligands():
    el, xyz, n = make_ligands(500, np.random.default_rng(1))
    assert n.min() >= 10 and n.max() <= 30
    m = el >= 0
    assert (m.sum(1) == n).all() and set(np.unique(el[m])) <= set(range(5))
    r = np.linalg.norm(xyz, axis=-1)
    assert (r[m] <= 1.3 * np.cbrt(np.repeat(n, m.sum(1))) * 2 + 1e-9).all()


def test_labels_follow_the_model():
    cs, lm = generate_siu_like(30, 20, seed=0, cfg=CFG)
    assert 0.4 < lm.gamma < 1.2
    present = cs.labels >= 0
    assert present[:, LABEL_TYPES.index("potency")].sum() == 0
    assert set(present.sum(1)) <= {1, 2}
    b = cs.pockets.offsets[cs.pocket_index]
    for j, t in enumerate(LABEL_TYPES[:4]):
        m = present[:, j]
        eps = cs.labels[m, j] - (b[m] + lm.gamma * cs.phi[m] + TYPE_OFFSETS[t])
        assert abs(eps.std() - 0.3) < 0.06 and abs(eps.mean()) < 0.08
    within = np.mean([(lm.gamma * cs.phi[cs.pocket_index == p]).std() ** 2 for p in range(30)]) ** 0.5
    assert within == pytest.approx(0.6, rel=0.1)


def test_world_regimes_and_vote_stats():
    w = make_world(CFG, 0)
    assert len(np.unique(w.pdbbind.pocket_index)) == len(w.pdbbind) == len(np.unique(w.siu.pocket_index))
    assert set(w.test.pocket_ids).isdisjoint(set(w.siu.pocket_ids))
    assert w.siu.agreeing.sum(1).min() >= 2
    assert w.siu.vote["accept_rate_two_successful"] >= 0.9


def test_records_roundtrip_and_features(tmp_path):
    w = make_world(CFG, 1)
    recs = w.test.to_records()
    assert len(recs) == len(w.test)
    r0 = recs[0]
    assert r0["source_data"].split(",")[1] == w.test.pocket_ids[0]
    assert len(r0["coordinates"]) == w.test.agreeing[0].sum()
    write_unimol_lmdb(recs, tmp_path / "test.lmdb")
    back = read_unimol_lmdb(tmp_path / "test.lmdb")
    feat = ComplexFeaturizer()
    a, b = feat.transform(w.test), feat.transform_records(back)
    for k in a:
        assert np.allclose(a[k], b[k], atol=1e-4), k  # float32 storage
