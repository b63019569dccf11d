"""S5 word problems (§5.2): config validation, sequence accuracy on hand-made models, a short training run."""

from __future__ import annotations

import numpy as np
import pytest
from torch import nn

from iclr25.lrnn_state_tracking.config import WordConfig
from iclr25.lrnn_state_tracking.data import permutations
from iclr25.lrnn_state_tracking.theory import s5_lrnn
from iclr25.lrnn_state_tracking.words import evaluate_words, sequence_accuracy, train_words


class Exact(nn.Module):
    """The Theorem-3 construction (reflection products) as logits: always right."""

    def forward(self, x):
        return nn.functional.one_hot(s5_lrnn(x, permutations()), 120).float()


class RightUntil(nn.Module):
    """Right on positions < k, wrong afterwards."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        logits = Exact()(x)
        logits[:, self.k :] = logits[:, self.k :].roll(1, dims=-1)
        return logits


def test_sequence_accuracy_hand_values():
    assert np.array_equal(sequence_accuracy(Exact(), "swaps", 20, 12), np.ones(12))
    curve = sequence_accuracy(RightUntil(5), "all", 20, 12)
    assert np.array_equal(curve, np.r_[np.ones(5), np.zeros(7)])


def test_train_words_runs_and_reports(monkeypatch):
    cfg = WordConfig(d_model=16, n_heads=2, train_len=8, test_len=16, steps=3, batch_size=8, eval_n=16)
    result = train_words(cfg, log_every=1)
    assert len(result.history) == 3 and result.tokens_per_s > 0
    out = evaluate_words(result)
    assert len(out["curve"]) == 16 and 0 <= out["seq_acc_test_len"] <= out["seq_acc_train_len"] <= 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"subset": "dihedral"}, "subset must be one of"),
        ({"model": "figure1"}, "model must be one of"),
        ({"test_len": 4, "train_len": 8}, "test_len"),
        ({"subset": "4tokens", "train_len": 10}, "divisible by 4"),
        ({"d_model": 10, "n_heads": 4}, "divisible"),
        ({"lr": 0.0}, "lr"),
    ],
)
def test_word_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WordConfig(**kwargs)
