"""Layers over the global batch: with batch norm, two gloo processes, each with half the batch, train as one process
with all of it, and plain per-process batch norm does not (the check can fail); dropout gives each share the rows of
the whole batch's mask; batch shares cover the batch."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
from torch import nn

from iclr25.shared.global_batch import (
    GlobalBatchDropout,
    GlobalBatchNorm1d,
    GlobalBatchNorm2d,
    batch_share,
    set_batch_rows,
    to_global_batch_dropout,
    to_global_batch_norm,
)
from iclr25.shared.testing import two_processes_equal_one

WORKER = """
import torch
from torch import nn

from iclr25.shared.global_batch import to_global_batch_norm
from iclr25.shared.testing import finish_worker


def run(fabric, cfg, out):
    global_bn, dims = cfg
    torch.manual_seed(0)
    if dims == 2:
        model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 1))
    else:  # (N, C) features, as a graph network's node features
        model = nn.Sequential(nn.Flatten(), nn.Linear(72, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
    if global_bn and fabric.world_size > 1:
        to_global_batch_norm(model)
    model, optimizer = fabric.setup(model, torch.optim.SGD(model.parameters(), lr=0.1))
    x = torch.randn(8, 2, 6, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = x.mean((1, 2, 3)).unsqueeze(1) * 3
    share = 8 // fabric.world_size
    rows = slice(fabric.global_rank * share, (fabric.global_rank + 1) * share)
    for _ in range(3):
        optimizer.zero_grad()
        fabric.backward(((model(x[rows]) - y[rows]) ** 2).mean())  # DDP averages: the whole batch's mean
        optimizer.step()
    norm = model.module[1] if dims == 2 else model.module[2]
    finish_worker(fabric, torch.cat([model.module[-1].weight.detach().flatten(), norm.running_var]), out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
@pytest.mark.parametrize("dims", [1, 2])
def test_two_processes_with_global_batch_norm_equal_one(tmp_path: Path, dims: int) -> None:
    two_processes_equal_one(WORKER, tmp_path, (True, dims))
    with pytest.raises(AssertionError, match="two processes differ from one"):
        two_processes_equal_one(WORKER, tmp_path, (False, dims))  # per-process statistics: not the whole batch's


def test_one_process_and_eval_mode_are_plain_batch_norm() -> None:
    torch.manual_seed(0)
    plain = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Flatten(), nn.BatchNorm1d(48))
    converted = to_global_batch_norm(
        nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Flatten(), nn.BatchNorm1d(48))
    )
    converted.load_state_dict(plain.state_dict())
    assert type(converted[1]) is GlobalBatchNorm2d and type(converted[0]) is nn.Conv2d
    assert type(converted[3]) is GlobalBatchNorm1d
    x = torch.randn(5, 2, 4, 4)
    assert torch.equal(plain(x), converted(x))
    assert torch.equal(plain[1].running_mean, converted[1].running_mean)
    assert torch.equal(plain[3].running_var, converted[3].running_var)
    plain.eval(), converted.eval()
    assert torch.equal(plain(x), converted(x))


def test_batch_shares_cover_the_batch_in_order() -> None:
    for size, world in [(7, 2), (8, 2), (5, 3), (2, 4), (0, 2)]:
        shares = [batch_share(size, rank, world) for rank in range(world)]
        assert shares[0][0] == 0 and shares[-1][1] == size
        assert all(a[1] == b[0] for a, b in itertools.pairwise(shares))
        lengths = [stop - start for start, stop in shares]
        assert max(lengths) - min(lengths) <= 1 and lengths == sorted(lengths, reverse=True)
    for bad in [(4, 2, 2), (4, -1, 2), (4, 0, 0), (-1, 0, 1)]:
        with pytest.raises(ValueError, match="rank < world"):
            batch_share(*bad)


def test_dropout_gives_every_row_the_mask_of_the_whole_batch() -> None:
    """Two shares drawn from equal RNG states get the rows of the one-process mask; plain dropout does not."""
    x = torch.randn(7, 3, 4)
    model = to_global_batch_dropout(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)))
    assert type(model[1]) is GlobalBatchDropout and model[1].p == 0.5

    def shares(net: nn.Module, rows: bool) -> torch.Tensor:
        out = []
        for rank in range(2):
            start, stop = batch_share(7, rank, 2)
            set_batch_rows(net, (start, stop) if rows else None, 7)
            torch.manual_seed(5)  # every process seeded alike
            out.append(net(x[start:stop]))
        return torch.cat(out)

    set_batch_rows(model, (0, 7), 7)
    torch.manual_seed(5)
    whole = model(x)
    assert torch.equal(shares(model, rows=True), whole)
    assert not torch.equal(shares(model, rows=False), whole)  # per-process masks: not the whole batch's
    set_batch_rows(model, (0, 4), 7)
    with pytest.raises(ValueError, match="dropout input has 3 rows"):
        model(x[:3])


def test_dropout_without_rows_and_in_eval_mode_is_plain_dropout() -> None:
    x = torch.randn(6, 5)
    plain, converted = nn.Dropout(0.3), to_global_batch_dropout(nn.Sequential(nn.Dropout(0.3)))
    torch.manual_seed(1)
    expected = plain(x)
    torch.manual_seed(1)
    assert torch.equal(converted(x), expected)
    set_batch_rows(converted, (0, 6), 6)
    converted.eval()
    assert torch.equal(converted(x), x)
