"""The benchmark's seeds and the score streams' seeds in worker processes give exactly the sequential values."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from iclr25.eci_conformal import experiments
from iclr25.eci_conformal.config import Config
from iclr25.eci_conformal.reproduce import load_grid, run

TINY = Config(settings=("changepoint",), seeds=2, n=600, mix1_seeds=1, validity_n=500, figures=False, c_values=())


def test_two_workers_give_the_sequential_results(tmp_path, monkeypatch):
    monkeypatch.setattr(experiments, "_throughput", lambda seed: {})  # timing only, and the slowest part
    one = run("quick", tmp_path / "one", config=TINY)
    two = run("quick", tmp_path / "two", config=replace(TINY, workers=2))
    # every summary, selection, score stream and validity value (as written: NaN, where a seed has none, is "NaN")
    assert json.dumps(two.metrics, sort_keys=True) == json.dumps(one.metrics, sort_keys=True)
    assert load_grid(tmp_path / "two") == load_grid(tmp_path / "one")  # every method at every lr
    assert [c.ours for c in two.claims] == [c.ours for c in one.claims]


@pytest.mark.parametrize("bad", [0, -2, 1025, 2.0, True])
def test_workers_bounds(bad):
    with pytest.raises(ValueError, match="workers"):
        Config(workers=bad)
