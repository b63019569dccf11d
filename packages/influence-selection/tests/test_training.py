"""The image active-learning path of the full preset (paper CNN, last-layer FI), on a tiny CPU setting."""

from __future__ import annotations

import dataclasses

import numpy as np

from iclr25.influence_selection.config import PRESETS
from iclr25.influence_selection.fi import fi_util
from iclr25.influence_selection.training import features, head_model, image_active_learning, make_cnn, train_cnn
from iclr25.shared.fabric import ScaleOut
from iclr25.shared.progress import Progress


class _Run:
    device = "cpu"
    seed = 0
    logger = None
    scale_out = ScaleOut()

    def progress(self, *a, **k):
        return Progress(*a, quiet=True, **k)


def test_cnn_shapes_and_last_layer_head() -> None:
    net = make_cnn(10)
    X = np.random.default_rng(0).random((12, 28, 28))
    y = np.arange(12) % 10
    net = train_cnn(X, y, epochs=1, device="cpu", seed=0)
    F = features(net, X, "cpu")
    assert F.shape == (12, 256) and np.all(F >= 0)
    head = head_model(net)
    import torch

    with torch.no_grad():
        logits = net(torch.as_tensor(X, dtype=torch.float32)[:, None]).double().numpy()
    np.testing.assert_allclose(head.predict_proba(F), torch.softmax(torch.as_tensor(logits), -1).numpy(), atol=1e-5)
    fi = fi_util(head, F, y, F[:4], y[:4])
    assert fi.shape == (12,) and np.all(fi >= 0)


def test_image_active_learning_runs_on_cpu() -> None:
    cfg = dataclasses.replace(
        PRESETS["full"],
        image_runs=1,
        image_strategies=("fi", "entropy"),
        image_rounds=1,
        image_epochs=1,
        image_init=20,
        image_pool=40,
        image_acquire=5,
        al_sub=10,
    )
    res = image_active_learning(cfg, _Run())
    assert res["data"] == "digits upsampled to 28x28"
    assert len(res["fi"]["curve"]) == 2 and 0 <= res["fi"]["auc"] <= 1
