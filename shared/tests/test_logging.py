"""The shared training-metric names: every loop logs loss, lr, throughput and epoch under the same keys."""

from __future__ import annotations

import pytest
import torch

from iclr25.shared.logging import TRAINING_METRICS, training_row


def test_training_row_uses_the_shared_names_behind_a_prefix() -> None:
    row = training_row(torch.tensor(0.5), lr=1e-3, throughput=120.0, epoch=2, prefix="seed0/tsc/", kl=0.1)
    assert row == {"seed0/tsc/loss": 0.5, "seed0/tsc/lr": 1e-3, "seed0/tsc/throughput": 120.0,
                   "seed0/tsc/epoch": 2, "seed0/tsc/kl": 0.1}  # fmt: skip
    assert isinstance(row["seed0/tsc/loss"], float)
    assert list(training_row(1.0)) == ["loss"]  # names left as None are not logged
    assert TRAINING_METRICS == ("loss", "lr", "throughput", "epoch")


def test_training_row_refuses_a_prefix_without_its_slash() -> None:
    with pytest.raises(ValueError, match="ends with '/'"):
        training_row(1.0, prefix="seed0")
