"""Featuriser == pair-by-pair loops; ridge == scikit-learn; pocket-only is exactly constant per pocket."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sklearn.linear_model import Ridge

from iclr25.siu_bioactivity.baselines import (
    ComplexFeaturizer,
    LigandOnlyModel,
    PocketLigandModel,
    PocketOnlyModel,
    RidgeHeads,
)
from iclr25.siu_bioactivity.config import PRESETS
from iclr25.siu_bioactivity.data import contact_score, make_world
from iclr25.siu_bioactivity.metrics import per_pocket_values
from iclr25.siu_bioactivity.reference import contact_score_loop, interaction_loop

CFG = replace(PRESETS["ci"], train_pockets=12, test_pockets=4, ligands_per_pocket=8, test_ligands_per_pocket=8)


def test_interaction_and_contact_equal_loops():
    w = make_world(CFG, 0)
    cs = w.test
    pk = cs.pockets
    pose = cs.pose(None)
    idx = cs.pocket_index
    fast = ComplexFeaturizer().interaction(pk.elements[idx], pk.coords[idx], cs.lig_el, pose)
    score = contact_score(pk.elements[idx], pk.coords[idx], cs.lig_el, cs.true_pose)
    for i in range(0, len(cs), 3):
        p = idx[i]
        assert np.array_equal(fast[i], interaction_loop(pk.elements[p], pk.coords[p], cs.lig_el[i], pose[i]))
        assert np.isclose(score[i], contact_score_loop(pk.elements[p], pk.coords[p], cs.lig_el[i], cs.true_pose[i]))


def test_ridge_equals_sklearn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7)) * rng.uniform(0.1, 5, 7)
    Y = np.full((300, 5), -1.0)
    Y[:200, 1] = X[:200] @ rng.normal(size=7) * 0.2 + 30  # all positive (labelled)
    heads = RidgeHeads(0.01).fit(X, Y)
    pred = heads.predict(X, 5)
    z = (X[:200] - X[:200].mean(0)) / X[:200].std(0)
    sk = Ridge(alpha=0.01 * 200).fit(z, Y[:200, 1])
    assert np.allclose(pred[:, 1], sk.predict((X - X[:200].mean(0)) / X[:200].std(0)), atol=1e-10)
    assert np.isnan(pred[:, 0]).all()


def test_models_and_exact_pocket_constancy():
    w = make_world(CFG, 2)
    feat = ComplexFeaturizer()
    ftr = feat.transform(w.siu, np.random.default_rng(0))
    fte = feat.transform(w.test)
    ids = w.test.pocket_ids
    po = PocketOnlyModel().fit(ftr, w.siu.labels).predict(fte, ids)
    for p in np.unique(ids):
        rows = po[ids == p]
        assert (rows[:, :4] == rows[0, :4]).all()  # bitwise equal: the metric sees a constant
    _, vals, _ = per_pocket_values(po[:, 0], w.test.labels[:, 0] + np.arange(len(ids)) * 0.01, ids)
    assert np.isnan(vals).all()
    for cls in (PocketLigandModel, LigandOnlyModel):
        pred = cls().fit(ftr, w.siu.labels).predict(fte, ids)
        assert pred.shape == (len(ids), 5) and np.isfinite(pred[:, :4]).all() and np.isnan(pred[:, 4]).all()


def test_mlp_heads_learn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    Y = np.full((400, 5), -1.0)
    Y[:, 0] = 6 + X @ rng.normal(size=6) * 0.5
    Y[::2, 2] = 7 + X[::2, 0]
    m = PocketLigandModel("mlp", mlp={"hidden": 32, "epochs": 300, "lr": 1e-2})
    feats = {"pocket": X[:, :2], "ligand": X[:, 2:4], "interaction": X[:, 4:]}
    pred = m.fit(feats, Y).predict(feats)
    assert np.corrcoef(pred[:, 0], Y[:, 0])[0, 1] > 0.95
    assert np.corrcoef(pred[::2, 2], Y[::2, 2])[0, 1] > 0.95
    assert np.isnan(pred[:, 1]).all()
