"""Models follow the protocol; training learns; image augmentation is a crop + flip; the model file round-trips."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.hd_explain import (
    MLP,
    Classifier,
    ResNet18,
    load_model,
    rectangular,
    save_model,
    train_classifier,
    train_new_classifier,
)
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


def test_train_new_classifier_and_the_model_file(tmp_path):
    X, y = rectangular()
    model, stats = train_new_classifier("mlp", X, y, 4, 3, hidden=(6,), epochs=2, lr=0.01, batch_size=100)
    torch.manual_seed(3)
    again = MLP(2, (6,), 4)
    assert set(stats) == {"train_acc", "final_loss", "train_samples_per_s"}
    train_classifier(again, X, y, epochs=2, lr=0.01, batch_size=100, seed=3)
    x = torch.as_tensor(X[:5])
    torch.testing.assert_close(again(x), model(x))  # the same seed: the same network
    save_model(model, tmp_path / "model.pt")
    loaded, n_classes = load_model(tmp_path / "model.pt")
    assert n_classes == 4 and not loaded.training
    torch.testing.assert_close(loaded(x), model(x))
    with pytest.raises(ValueError, match="ResNet-18 needs images"):
        train_new_classifier("resnet18", X, y, 4, epochs=1, lr=0.01, batch_size=10)
    images = np.zeros((4, 3, 8, 8), np.float32)
    net, _ = train_new_classifier("resnet18", images, np.arange(4) % 2, 2, width=2, epochs=1, lr=0.01, batch_size=4)
    assert net.arch["kind"] == "resnet18" and net.arch["width"] == 2
    state = torch.load(tmp_path / "model.pt", weights_only=True)
    torch.save({"arch": {**state["arch"], "in_dim": 3}, "state_dict": state["state_dict"]}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="does not match its architecture"):
        load_model(tmp_path / "other.pt")
