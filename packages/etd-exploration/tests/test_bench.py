"""The overhead benchmark runs at toy sizes and reports consistent fractions."""

import pytest

from iclr25.etd_exploration import bench


def test_overhead_table_at_toy_sizes(monkeypatch):
    monkeypatch.setattr(bench, "ppo_iteration_seconds", lambda seed=0, repeats=1: 2.0)
    real = bench.etd_seconds
    monkeypatch.setattr(
        bench,
        "etd_seconds",
        lambda L, seed=0, repeats=1: real(L, n_envs=2, n_steps=8, batch_size=8, n_epochs=1, seed=seed, repeats=repeats),
    )
    table = bench.overhead_table((5, 20), repeats=2)
    assert set(table) == {"5", "20"}
    for row in table.values():
        assert row["repeats"] == 2
        assert row["score_s"] > 0 and row["train_s"] > 0 and row["ppo_s"] == 2.0
        assert row["reward_fraction"] == pytest.approx((row["score_s"] + row["refresh_s"]) / 2.0)
        assert row["total_fraction"] == pytest.approx(row["reward_fraction"] + row["train_s"] / 2.0)


def test_main_refuses_a_bad_path(capsys):
    assert bench.main(["table.txt"]) == 2
    assert "usage" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["etd", "deir", "none"])
def test_model_costs_count_ops_and_flops(method):
    costs = bench.model_costs(method, n_envs=2, batch_size=8, memory_len=3)
    assert set(costs) == {"policy_step", "ppo_minibatch", "intrinsic_step", "intrinsic_train"}
    assert costs["policy_step"]["ops"] > 10 and costs["ppo_minibatch"]["flops"] > costs["policy_step"]["flops"] > 0
    if method == "none":
        assert costs["intrinsic_step"]["ops"] == costs["intrinsic_train"]["ops"] == 0
    else:
        assert costs["intrinsic_step"]["flops"] > 0 and costs["intrinsic_train"]["ops"] > 0


def test_gpu_estimate_bookkeeping(monkeypatch):
    part = {"ops": 100.0, "flops": 2e9}
    costs = dict.fromkeys(("policy_step", "ppo_minibatch", "intrinsic_step", "intrinsic_train"), part)
    one = 100 * bench.GPU_OP_SECONDS + 2e9 / bench.GPU_FLOPS
    assert bench.gpu_iteration_seconds(costs, n_steps=3, n_updates=2) == pytest.approx(3 * 2 * one + 2 * 2 * one)
    monkeypatch.setattr(bench, "env_seconds", lambda env, n, T, seed: 1.0)
    cpu = {"env": 1.0, "policy": 1.0, "intrinsic_score": 0.0, "ppo_update": 2.0, "intrinsic_train": 0.0}
    cpu |= {"intrinsic_refresh": 0.0, "other": 0.5, "total": 4.5}
    monkeypatch.setattr(bench, "iteration_cpu_seconds", lambda env, m, seed: dict(cpu))
    monkeypatch.setattr(bench, "model_costs", lambda m, n, b, seed: costs)
    prof = bench.full_preset_profile()
    gpu_iter = bench.gpu_iteration_seconds(costs, 512, 64)
    run = prof["per_run_estimate"]["etd/MiniGrid-DoorKey-16x16-v0"]
    assert run["hours"] == pytest.approx(10_000_000 / 8192 * (1.0 + 0.5 + gpu_iter) / 3600)
    assert prof["runs"] == 7 * 6 * 3 and prof["gpu_hours_total"] == pytest.approx(
        sum(prof["gpu_hours_by_method"].values())
    )
    assert prof["cpu_core_hours_by_method"]["etd"] == pytest.approx(3 * 51_000_000 / 8192 * 4.5 / 3600)
