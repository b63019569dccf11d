"""Scale-out of the training loop (Lightning Fabric): 2 CPU processes (gloo), each playing half of every batch of
games, equal 1 process on the whole batches (the GS noise drawn for the whole batch, the codebook's re-seeding fed
every process's Sender outputs); an interrupted run resumed from its checkpoint equals an uninterrupted one; the full
preset starts with `--devices 2 --device cpu`, trains, checkpoints, logs once and continues with `--resume auto` to
the same results; bad scale-out flags are one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from iclr25.compose_decompose.cli import main
from iclr25.compose_decompose.data import make_dataset
from iclr25.compose_decompose.training import build_game, train
from iclr25.shared.fabric import Checkpointer
from iclr25.shared.testing import InterruptAt, flat_parameters, reproduce_full_preset, two_processes_equal_one

WORKER = """
import torch

from iclr25.compose_decompose.data import make_dataset
from iclr25.compose_decompose.training import build_game, train
from iclr25.shared.testing import finish_worker


def run(fabric, cfg, out):
    torch.set_num_threads(1)
    data = make_dataset("thing", 0, 0.3, 10)
    game = build_game(data, channel=cfg["channel"], sender=cfg["sender"], dead_after=3, seed=0)
    train(game, data, 8, 16, 1e-2, seed=0, fabric=fabric)
    finish_worker(fabric, game, out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
@pytest.mark.parametrize(("channel", "sender"), [("cb", "single"), ("gs", "slots")])
def test_two_processes_equal_one_on_the_whole_batches(tmp_path: Path, channel: str, sender: str) -> None:
    data = make_dataset("thing", 0, 0.3, 10)
    game = build_game(data, channel=channel, sender=sender, dead_after=3, seed=0)
    if channel == "cb":  # the re-seeding happens within the 8 steps: the gathered Sender outputs matter
        assert train(game, data, 8, 16, 1e-2, seed=0)["reseeded"] > 0
    two_processes_equal_one(WORKER, tmp_path, {"channel": channel, "sender": sender})
    fake = type("TwoProcesses", (), {"global_rank": 0, "world_size": 2})
    with pytest.raises(ValueError, match="multiple of the 2 processes"):
        train(game, data, 1, 15, fabric=fake)


@pytest.mark.parametrize("channel", ["cb", "gs"])
def test_resume_equals_an_uninterrupted_run(tmp_path: Path, channel: str) -> None:
    data = make_dataset("thing", 0, 0.3, 10)

    def trained(folder: Path, **kwargs):
        game = build_game(data, channel=channel, dead_after=3, seed=0)
        rows: list = []
        log = kwargs.pop("log", lambda row, step: rows.append((step, row)))
        hist = train(
            game, data, 10, 16, 1e-2, seed=0, log=log, log_every=3, checkpointer=Checkpointer(folder, 4), **kwargs
        )
        return game, hist, rows

    straight, hist, rows = trained(tmp_path / "a")
    with pytest.raises(KeyboardInterrupt):
        trained(tmp_path / "b", log=InterruptAt(9).log)
    assert [p.name for p in Checkpointer(tmp_path / "b", 4).checkpoints()] == ["step-4.ckpt", "step-8.ckpt"]
    (tmp_path / "b" / "step-8.ckpt").unlink()  # continue from step 4, between two logged rows
    resumed, rest, _ = trained(tmp_path / "b", resume="auto")
    assert torch.equal(flat_parameters(straight), flat_parameters(resumed))
    assert all(torch.equal(a, b) for a, b in zip(straight.buffers(), resumed.buffers(), strict=True))
    assert rest["curve"] == hist["curve"] and rest["reseeded"] == hist["reseeded"]
    assert [p.name for p in Checkpointer(tmp_path / "a", 4).checkpoints()] == ["step-8.ckpt", "step-10.ckpt"]
    step, row = rows[-1]
    assert step == 10 and {"loss", "lr", "throughput", "train_game_acc"} <= set(row)
    assert row["loss"] == hist["curve"][-1]["game_loss"]


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_checkpoints_and_resumes(tmp_path: Path) -> None:
    tiny = ["steps=4", "compose_steps=2", "batch=8", "seeds=1", "channels=cb,gs", "k_large=0", "image_datasets=",
            "image_seeds=0", "ablations=", "thing_per_combo=4", "eval_games=10", "checkpoint_every=2"]  # fmt: skip
    result, run_dir, saved = reproduce_full_preset("compose-decompose", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold after 4 steps
    assert saved == [
        f"thing/{ch}/K12/s0/{phase}" for ch in ("cb", "gs") for phase in ("compose/step-2.ckpt", "decompose/step-2.ckpt",
                                                                          "decompose/step-4.ckpt")
    ]  # fmt: skip
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "thing/cb/K12/s0/decompose/loss" in r] == [4]  # logged once, by rank 0
    assert [r["step"] for r in rows if "thing/gs/K12/s0/compose/loss" in r] == [2]
    first = json.loads((run_dir / "results.json").read_text())["metrics"]
    # as a run stopped during the GS Decompose leaves its folder: marked interrupted, GS's first checkpoint the newest
    marker = json.loads((run_dir / ".iclr25-run.json").read_text())
    (run_dir / ".iclr25-run.json").write_text(json.dumps({**marker, "status": "interrupted"}))
    for later in ("decompose/step-4.ckpt", "compose/step-2.ckpt"):
        (run_dir / "checkpoints" / "thing/gs/K12/s0" / later).unlink()
    again, _, resaved = reproduce_full_preset("compose-decompose", tiny, tmp_path, "--devices", "2", "--resume", "auto")
    assert again.returncode in (0, 1), again.stderr[-3000:]
    assert resaved == saved
    second = json.loads((run_dir / "results.json").read_text())["metrics"]
    for name in ("thing/cb/K12/s0", "thing/gs/K12/s0"):
        assert {k: v for k, v in second["runs"][name].items() if "seconds" not in k and "per_s" not in k} == {
            k: v for k, v in first["runs"][name].items() if "seconds" not in k and "per_s" not in k
        }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "--scale", "ci", "--devices", "0"], "--devices"),
        (["reproduce", "--scale", "ci", "--devices", "2", "--strategy", "fsdp"], "fsdp"),
        (["train", "--devices", "2", "--strategy", "fsdp"], "fsdp"),
        (["train", "--resume", "auto"], "--out"),
        (["reproduce", "--scale", "ci", "workers=2", "--devices", "2"], "workers=1"),
    ],
)
def test_bad_scale_out_flags_are_one_line_and_exit_2(tmp_path: Path, capsys, monkeypatch, argv, message) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing written


def test_runs_in_worker_processes_equal_the_sequential_runs(tmp_path: Path) -> None:
    from dataclasses import replace

    from iclr25.compose_decompose.reproduce import PRESETS, run

    tiny = replace(PRESETS["ci"], steps=6, batch=8, seeds=2, thing_per_combo=4, eval_games=10)
    one = run("ci", tmp_path / "one", config=tiny, device="cpu")
    two = run("ci", tmp_path / "two", config=replace(tiny, workers=2), device="cpu")
    timing = ("seconds", "per_s")
    strip = lambda r: {k: v for k, v in r.items() if not any(t in k for t in timing)}  # noqa: E731
    assert list(one.metrics["runs"]) == list(two.metrics["runs"]) and len(one.metrics["runs"]) == 4
    assert all(strip(one.metrics["runs"][n]) == strip(two.metrics["runs"][n]) for n in one.metrics["runs"])
    lines = [(tmp_path / f / "metrics.jsonl").read_text().splitlines() for f in ("one", "two")]
    drop = lambda row: {k: v for k, v in json.loads(row).items() if not k.endswith("/throughput")}  # noqa: E731
    assert [drop(r) for r in lines[0]] == [drop(r) for r in lines[1]]  # the same rows, logged in the same order
    assert (tmp_path / "one" / "messages.jsonl").read_text() == (tmp_path / "two" / "messages.jsonl").read_text()
