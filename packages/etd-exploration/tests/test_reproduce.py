"""The claim gate: the `ci` preset (maze temporal distance, clean and noisy walls) and its gated claims."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from iclr25.etd_exploration.claims import declared
from iclr25.etd_exploration.config import PRESETS, Config, MazeConfig, PPOConfig
from iclr25.etd_exploration.reproduce import run
from iclr25.shared.claims import config_of, differences, evaluate
from iclr25.shared.results import Report

RESULTS = Path(__file__).resolve().parents[1] / "results"


def claims_of(metrics, cfg):
    """The declared claims of `cfg` evaluated on `metrics`."""
    return evaluate(declared(cfg), metrics, cfg)


@pytest.fixture(scope="module")
def ci_report(tmp_path_factory):
    return run("ci", tmp_path_factory.mktemp("ci"), seed=0, device="cpu")


@pytest.mark.claims
def test_ci_gated_claims_hold(ci_report):
    claims = {c.name: c for c in ci_report.claims}
    assert claims["maze_rho_pairs_clean"].ours >= 0.90
    assert claims["maze_rho_pairs_noisy"].ours >= 0.80
    assert claims["maze_rho_goal20_clean"].ours >= 0.90
    assert claims["maze_rho_goal20_noisy"].ours >= 0.75
    assert claims["maze_pixel_rho_pairs"].ours <= 0.3
    assert not claims["maze_rho_global_clean"].gated  # reported only
    assert ci_report.failed_gated == []


@pytest.mark.claims
def test_ci_report_is_complete(ci_report, tmp_path):
    assert ci_report.command == "iclr25-etd-exploration reproduce --scale ci"
    assert "maze_critic_steps_per_s" in ci_report.throughput
    assert "maze_distance.png" in ci_report.figures


def test_presets_are_consistent():
    assert set(PRESETS) == {"ci", "quick", "bench", "noisy", "full"}
    bench = PRESETS["bench"]
    assert bench.gate_exploration and bench.ppo_seeds >= 5 and {"etd", "none", "etd-random"} <= set(bench.ppo_methods)
    assert PRESETS["noisy"].ppo_noise > 0 and {"etd", "count"} <= set(PRESETS["noisy"].ppo_methods)
    assert PRESETS["ci"].ppo_frames == 0 and PRESETS["quick"].ppo_frames > 0
    assert PRESETS["full"].full_envs and PRESETS["full"].full_frames >= 1_000_000
    with pytest.raises(ValueError, match="scale must be one of"):
        run("huge")


@pytest.mark.parametrize(
    ("cls", "changes", "message"),
    [
        (Config, {"maze_steps": 0}, "maze_steps must be an integer >= 1"),
        (Config, {"maze_lr": -1.0}, "maze_lr must be > 0"),
        (Config, {"ppo_seeds": 0}, "ppo_seeds must be an integer >= 1"),
        (Config, {"ext_coef": float("nan")}, "ext_coef must be a finite number"),
        (Config, {"ppo_methods": ()}, "ppo_methods must not be empty"),
        (Config, {"full_envs": ("MiniGrid-DoorKey-16x16-v0",)}, "full_frames must be an integer >= 1"),
        (Config, {"threads": 0}, "threads must be an integer >= 1"),
        (PPOConfig, {"lr": float("inf")}, "lr must be a finite number"),
        (PPOConfig, {"n_envs": 0}, "n_envs must be an integer >= 1"),
        (PPOConfig, {"intrinsic": "ngu"}, "intrinsic must be one of"),
        (MazeConfig, {"energy": "l1"}, "energy must be one of"),
        (MazeConfig, {"data_steps": 10}, "data_steps must be an integer >= 50"),
    ],
)
def test_configs_reject_bad_values(cls, changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        cls(**changes)


def test_a_bad_scale_or_device_is_refused_before_the_run_folder_is_made(tmp_path):
    with pytest.raises(ValueError, match="scale must be one of"):
        run("huge", tmp_path / "r")
    with pytest.raises(ValueError, match="device must be one of"):
        run("ci", tmp_path / "r", device="tpu")
    assert not (tmp_path / "r").exists()
    assert replace(PRESETS["ci"], maze_steps=1).maze_steps == 1


def test_the_maze_gate_fails_on_a_critic_that_learns_nothing(monkeypatch, tmp_path):
    """A critic whose distance is the same for every pair (the bug of a broken potential/encoder) fails the gate."""
    import iclr25.etd_exploration.maze as maze

    train = maze.train_maze_critic

    def untrained(cfg, seed, device):
        return train(replace(cfg, steps=1, lr=1e-9), seed, device)

    monkeypatch.setattr(maze, "train_maze_critic", untrained)
    report = run("ci", tmp_path / "broken", seed=0, device="cpu", config=replace(PRESETS["ci"], maze_clean_seeds=1))
    failed = {c.name for c in report.failed_gated}
    assert {"maze_rho_pairs_clean", "maze_rho_goal20_clean"} <= failed


def _bench_summary(cells):
    return {
        m: {"late_unique_cells": v, "intrinsic_fraction": 0.5, "seeds_late_unique_cells": [v]} for m, v in cells.items()
    }


def test_the_coverage_gate_reads_the_ratio_to_no_bonus():
    cfg = PRESETS["bench"]
    tag = "FourRooms-rewardfree"
    good = {"ppo": {tag: _bench_summary({"etd": 20.0, "none": 10.0, "etd-mean": 15.0, "etd-random": 8.0})}}
    claims = {c.name: c for c in claims_of(good, cfg)}
    assert claims["rewardfree_coverage_ratio"].holds and claims["rewardfree_coverage_ratio"].gated
    assert claims["rewardfree_gate_rejects_etd_random"].holds and claims["rewardfree_gate_rejects_etd_random"].gated
    assert not claims["rewardfree_gate_rejects_etd_mean"].holds and not claims["rewardfree_gate_rejects_etd_mean"].gated
    flat = {"ppo": {tag: _bench_summary({"etd": 11.0, "none": 10.0, "etd-random": 12.5})}}
    failed = {c.name for c in claims_of(flat, cfg) if c.gated and not c.holds}
    assert failed == {"rewardfree_coverage_ratio", "rewardfree_gate_rejects_etd_random"}


def test_committed_bench_gate_holds_and_fails_with_a_broken_reward_in_place_of_etd():
    """The bench scale (5 seeds, too long for the test suite) is the exploration gate: its committed metrics pass it,
    and the measured numbers of ETD with random distances put in ETD's place fail it."""
    path = RESULTS / "bench" / "results.json"
    metrics = json.loads(path.read_text())["metrics"]
    cfg = PRESETS["bench"]
    gated = [c for c in claims_of(metrics, cfg) if c.gated]
    assert gated and all(c.holds for c in gated), [(c.name, c.ours) for c in gated]
    summary = metrics["ppo"]["FourRooms-rewardfree"]
    assert len(summary["etd"]["seeds_late_unique_cells"]) == 5
    summary["etd"] = summary["etd-random"]
    ratio = {c.name: c for c in claims_of(metrics, cfg)}["rewardfree_coverage_ratio"]
    assert ratio.gated and not ratio.holds


def test_committed_claims_are_the_declared_claims():
    """The declared claims, evaluated again on the committed quick metrics, are the committed claims."""
    report = Report.read(RESULTS / "quick")
    cfg = config_of(PRESETS, report.scale, report.config)
    assert differences(report.claims, evaluate(declared(cfg), report.metrics, cfg)) == []


class _Rows:
    """A logger that keeps what it is given."""

    def __init__(self) -> None:
        self.rows: list[tuple[dict, int]] = []

    def log(self, row: dict, step: int) -> None:
        self.rows.append((row, step))


def _timeless(value):
    """`value` as JSON without its timings (frames per second, the intrinsic bonus's share of the time)."""

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k.rsplit("/", 1)[-1] not in ("fps", "intrinsic_fraction")}
        return [strip(x) for x in v] if isinstance(v, list | tuple) else v

    # arrays (visit counts) as lists; NaN (no episode ended yet) compares equal as text
    return json.dumps(strip(value), sort_keys=True, default=lambda a: a.tolist())


@pytest.mark.slow
def test_ppo_runs_in_processes_give_the_same_numbers_and_log_the_same_curves():
    from iclr25.etd_exploration.experiments import _ppo_runs

    tiny = replace(
        PRESETS["quick"], ppo_methods=("etd", "none"), ppo_seeds=2, ppo_envs=2, ppo_steps=32, ppo_batch=32, ppo_epochs=1
    )
    runs, logged = {}, {}
    for workers in (1, 2):
        log = _Rows()
        runs[workers] = _ppo_runs(replace(tiny, workers=workers), "MiniGrid-Empty-5x5-v0", 128, 0.0, 0, "cpu", log)
        logged[workers] = log.rows
    assert [len(r) for r in runs[2].values()] == [2, 2] and len(logged[2]) == 8  # 4 runs x 2 rollouts
    assert runs[2]["etd"][0]["curve"] != runs[2]["etd"][1]["curve"]  # the seeds differ
    assert _timeless(runs[2]) == _timeless(runs[1])
    assert _timeless(logged[2]) == _timeless(logged[1])  # the workers' curves, logged here in run order
