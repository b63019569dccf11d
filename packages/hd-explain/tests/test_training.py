"""Models follow the protocol; training learns; image augmentation is a crop + flip."""

from __future__ import annotations

import torch

from iclr25.hd_explain import MLP, Classifier, ResNet18, rectangular, train_classifier
from iclr25.hd_explain.models import build_model
from iclr25.hd_explain.training import _augment


def test_models_follow_the_protocol():
    for model, x, m in ((MLP(4, (8, 6), 3), torch.randn(5, 4), 6), (ResNet18(3, 3, 2), torch.randn(5, 3, 8, 8), 16)):
        assert isinstance(model, Classifier)
        model.eval()
        assert model.representation(x).shape == (5, m)
        torch.testing.assert_close(model.predict_proba(x).sum(1), torch.ones(5))
        torch.testing.assert_close(model(x), model.head(model.representation(x)))
        clone = build_model(model.arch)
        clone.load_state_dict(model.state_dict())
        clone.eval()
        torch.testing.assert_close(clone(x), model(x))


def test_training_learns_rectangular():
    X, y = rectangular()
    torch.manual_seed(0)
    model = MLP(2, (10, 10), 4)
    stats = train_classifier(model, X, y, epochs=60, lr=0.01, batch_size=100, seed=0)
    assert stats["train_acc"] > 0.9 and stats["train_samples_per_s"] > 0


def test_augment_is_a_crop_and_flip():
    x = torch.arange(2 * 1 * 8 * 8, dtype=torch.float32).reshape(2, 1, 8, 8)
    gen = torch.Generator().manual_seed(0)
    out = _augment(x, gen)
    assert out.shape == x.shape
    padded = torch.nn.functional.pad(x, (4, 4, 4, 4), mode="reflect")
    for i in range(2):  # every output is some 8 x 8 window of the padded image, possibly mirrored
        windows = padded[i, 0].unfold(0, 8, 1).unfold(1, 8, 1).reshape(-1, 8, 8)
        assert any(torch.equal(out[i, 0], w) or torch.equal(out[i, 0], w.flip(-1)) for w in windows)
