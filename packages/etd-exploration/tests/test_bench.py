"""The overhead benchmark runs at toy sizes and reports consistent fractions."""

import pytest

from iclr25.etd_exploration import bench


def test_overhead_table_at_toy_sizes(monkeypatch):
    monkeypatch.setattr(bench, "ppo_iteration_seconds", lambda seed=0: 2.0)
    real = bench.etd_seconds
    monkeypatch.setattr(
        bench, "etd_seconds", lambda L, seed=0: real(L, n_envs=2, n_steps=8, batch_size=8, n_epochs=1, seed=seed)
    )
    table = bench.overhead_table((5, 20))
    assert set(table) == {"5", "20"}
    for row in table.values():
        assert row["score_s"] > 0 and row["train_s"] > 0 and row["ppo_s"] == 2.0
        assert row["reward_fraction"] == pytest.approx((row["score_s"] + row["refresh_s"]) / 2.0)
        assert row["total_fraction"] == pytest.approx(row["reward_fraction"] + row["train_s"] / 2.0)


def test_main_refuses_a_bad_path(capsys):
    assert bench.main(["table.txt"]) == 2
    assert "usage" in capsys.readouterr().err
