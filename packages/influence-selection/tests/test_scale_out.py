"""Scale-out of the CNN retraining (Lightning Fabric): 2 CPU processes (gloo) equal 1 process with the whole batch,
dropout included; an interrupted training resumed from its mid-epoch checkpoint equals an uninterrupted one; a
`--precision` reaches the feature passes; the full preset starts with `--device cpu --devices 2`, checkpoints, logs
once and continues with `--resume auto`; flags no loop would apply are one line and exit code 2."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from iclr25.influence_selection.cli import main
from iclr25.influence_selection.config import PRESETS
from iclr25.influence_selection.training import image_active_learning, train_cnn
from iclr25.shared.fabric import Checkpointer, ScaleOut, make_fabric
from iclr25.shared.progress import Progress
from iclr25.shared.testing import InterruptAt, flat_parameters, reproduce_full_preset, two_processes_equal_one

WORKER = """
import numpy as np
import torch

from iclr25.influence_selection.training import train_cnn
from iclr25.shared.testing import finish_worker


class Rows:
    def __init__(self):
        self.losses = []

    def log(self, row, step):
        self.losses.append(row["cnn/loss"])


def run(fabric, cfg, out):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X, y = rng.random((cfg["n"], 28, 28)), rng.integers(0, 10, cfg["n"])
    rows = Rows()
    net = train_cnn(X, y, epochs=2, device="cpu", seed=3, batch_size=cfg["batch"], fabric=fabric, logger=rows,
                    prefix="cnn/")
    logged = torch.tensor(rows.losses, dtype=torch.float64)
    finish_worker(fabric, torch.cat([torch.cat([p.detach().flatten() for p in net.parameters()]), logged]), out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_two_processes_equal_one_with_the_whole_batch(tmp_path: Path) -> None:
    # 21 images in batches of 8: the last batch (5) splits 3/2, so the shares' loss weights are checked; the dropout
    # masks are the whole batch's on every process, so the paper's CNN is compared with its dropout on
    one, _ = two_processes_equal_one(WORKER, tmp_path, {"n": 21, "batch": 8})
    assert torch.isfinite(one).all() and one[-2:].gt(0).all()  # two logged epoch losses, the whole batch's


class _Rows:
    """A logger recording (step, row)."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, dict[str, Any]]] = []

    def log(self, row: dict[str, Any], step: int) -> None:
        self.rows.append((step, row))


def _train(folder: Path, logger: Any = None, **kwargs) -> torch.nn.Module:
    rng = np.random.default_rng(1)
    X, y = rng.random((40, 28, 28)), rng.integers(0, 10, 40)  # batches of 16: 16, 16, 8; 3 steps an epoch
    checkpointer = Checkpointer(folder, every=4)
    return train_cnn(X, y, epochs=3, device="cpu", seed=5, batch_size=16, checkpointer=checkpointer, logger=logger,
                     **kwargs)  # fmt: skip


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    straight_rows = _Rows()
    straight = _train(tmp_path / "a", straight_rows)
    after_straight = torch.get_rng_state()
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b", InterruptAt(6))  # at the end of epoch 2; the newest checkpoint is inside it
    assert [p.name for p in Checkpointer(tmp_path / "b", 4).checkpoints()] == ["step-4.ckpt"]
    resumed_rows = _Rows()
    resumed = _train(tmp_path / "b", resumed_rows, resume="auto")
    assert torch.equal(flat_parameters(straight), flat_parameters(resumed))
    assert torch.equal(torch.get_rng_state(), after_straight)  # the MC-dropout passes after it draw the same
    assert [s for s, _ in resumed_rows.rows] == [6, 9]  # epoch 2 from its second batch on, then epoch 3
    assert resumed_rows.rows[-1][1]["loss"] == straight_rows.rows[-1][1]["loss"]
    # a finished training keeps the network alone (no Adam moments), and resuming it trains nothing
    saved = Checkpointer(tmp_path / "a", 4).checkpoints()
    assert [p.name for p in saved] == ["step-8.ckpt", "step-9.ckpt"]
    assert "optimizer" in torch.load(saved[0])["state"] and "optimizer" not in torch.load(saved[1])["state"]
    done_rows = _Rows()
    done = _train(tmp_path / "a", done_rows, resume="auto")
    assert torch.equal(flat_parameters(straight), flat_parameters(done)) and done_rows.rows == []
    assert torch.equal(torch.get_rng_state(), after_straight)


class _Run:
    """What `image_active_learning` reads of a run, with a one-process Fabric in float64."""

    seed = 0
    logger = None

    def __init__(self) -> None:
        self.scale_out = ScaleOut(precision="64-true")
        self.fabric = make_fabric("cpu", precision="64-true")

    def progress(self, *a, **k):
        return Progress(*a, quiet=True, **k)


def test_a_precision_reaches_the_feature_passes() -> None:
    cfg = dataclasses.replace(
        PRESETS["full"], image_runs=1, image_strategies=("fi", "bald"), image_rounds=1, image_epochs=1,
        image_init=20, image_pool=40, image_acquire=5, al_sub=10,
    )  # fmt: skip
    res = image_active_learning(cfg, _Run())  # features and MC-dropout passes in the weights' float64
    assert len(res["bald"]["curve"]) == 2 and 0 <= res["fi"]["auc"] <= 1


TINY = ["linear_seeds=1", "noise_seeds=1", "moons_seeds=0", "al_seeds=1", "al_rounds=1", "al_pool=100",
        "al_strategies=fi,iv,random", "image_runs=1", "image_strategies=fi,random", "image_rounds=1",
        "image_epochs=2", "image_init=70", "image_pool=40", "image_acquire=5", "al_sub=10",
        "image_checkpoint_every=3", "figures=false"]  # fmt: skip
TRAININGS = ["r0-fi-round0", "r0-fi-round1", "r0-random-round0", "r0-random-round1"]


def _loss_rows(run_dir: Path, strategy: str) -> list[int]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row["step"] for row in rows if f"image/r0/{strategy}/loss" in row]


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_checkpoints_and_resumes(tmp_path: Path) -> None:
    # 70 then 75 labelled images in batches of 64: 2 steps an epoch, 4 a training; a checkpoint at step 3 (inside
    # epoch 2), then the finished network at step 4, the one kept
    result, run_dir, saved = reproduce_full_preset("influence-selection", TINY, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold on one seed
    assert saved == [f"{name}/step-4.ckpt" for name in TRAININGS]
    first = json.loads((run_dir / "results.json").read_text())["metrics"]["image_al"]
    assert first["fi"]["curve"] and first["random"]["curve"]
    assert _loss_rows(run_dir, "fi") == _loss_rows(run_dir, "random") == [2, 4, 2, 4]  # by rank 0 alone
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert {"image/r0/fi/lr", "image/r0/fi/throughput", "image/r0/fi/epoch"} <= set().union(*rows)
    # a run killed in its last training: the marker still says running, that training has no checkpoint yet
    marker = run_dir / ".iclr25-run.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "status": "running"}))
    (run_dir / "checkpoints" / TRAININGS[-1] / "step-4.ckpt").unlink()
    again, _, saved = reproduce_full_preset("influence-selection", TINY, tmp_path, "--devices", "2", "--resume", "auto")
    assert again.returncode in (0, 1), again.stderr[-3000:]
    assert saved == [f"{name}/step-4.ckpt" for name in TRAININGS]
    second = json.loads((run_dir / "results.json").read_text())["metrics"]["image_al"]
    for name in ("fi", "random"):
        assert (second[name]["curve"], second[name]["auc"]) == (first[name]["curve"], first[name]["auc"])
    assert _loss_rows(run_dir, "fi") == [2, 4, 2, 4]  # the finished trainings were loaded, not logged again
    assert _loss_rows(run_dir, "random") == [2, 4, 2, 4, 2, 4]  # the last one was trained again


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--scale", "quick", "--devices", "2"], "trains no network"),
        (["--scale", "ci", "--precision", "64-true"], "trains no network"),
        (["--scale", "quick", "--checkpoint-every", "10"], "trains no network"),
        (["--scale", "full", "--devices", "2", "--strategy", "fsdp"], "fsdp"),
        (["--scale", "full", "--devices", "0"], "--devices"),
        (["--scale", "full", "--precision", "8-true"], "--precision"),
    ],
)
def test_bad_scale_out_flags_are_one_line_and_exit_2(flags: list[str], says: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["reproduce", "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err and not out.exists()
