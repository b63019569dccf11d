"""Scale-out of the training loop (Lightning Fabric): 2 CPU processes (gloo), each training on its share of the whole
clips of every batch, equal 1 process on the whole batches; an interrupted run resumed from its checkpoint equals an
uninterrupted one; the full preset starts with `--devices 2 --device cpu`, trains, checkpoints, logs once and
continues with `--resume auto` to the same results; the models and seeds trained in worker processes (`workers=2`)
equal the sequential runs exactly; a bad flag combination is one line and exit 2."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.shared.fabric import Checkpointer, ScaleOut
from iclr25.shared.testing import InterruptAt, reproduce_full_preset, two_processes_equal_one
from iclr25.tsc_net import reproduce
from iclr25.tsc_net.cli import main
from iclr25.tsc_net.config import PRESETS, Config
from iclr25.tsc_net.data import build_clips, write_ynet
from iclr25.tsc_net.model import TSCConfig
from iclr25.tsc_net.training import AugmentedScenes, build_model, make_batches, rank_share, train_model

WORKER = """
import torch

from iclr25.shared.testing import finish_worker
from iclr25.tsc_net.data import build_clips, simulate_scenes
from iclr25.tsc_net.model import TSCConfig
from iclr25.tsc_net.training import AugmentedScenes, build_model, train_model


def run(fabric, cfg, out):
    torch.set_num_threads(1)
    df, masks, _ = simulate_scenes(2, seed=3, steps=60, max_clips=4)
    clips = build_clips(df)
    arch = TSCConfig.quick(d_model=16, goal_mode=cfg["goal_mode"])
    scenes = AugmentedScenes([masks[s] for s in clips.scene_ids], arch.n_classes, arch.map_scale, True)
    torch.manual_seed(0)
    model = build_model("tsc", arch)
    train_model(model, clips, scenes, cfg["steps"], 1e-2, 0, cfg["min_peds"], cfg["cap"], fabric=fabric)
    finish_worker(fabric, model, out)
"""


def _tiny():
    from iclr25.tsc_net.data import simulate_scenes

    df, masks, _ = simulate_scenes(2, seed=3, steps=60, max_clips=4)
    return df, masks


@pytest.mark.enable_socket  # gloo talks over the loopback interface
@pytest.mark.parametrize("goal_mode", ["cell", "regression"])
def test_two_processes_equal_one_on_the_whole_batches(tmp_path: Path, goal_mode: str) -> None:
    df, _ = _tiny()
    clips = build_clips(df)
    batches = make_batches(clips, np.random.default_rng(0), 4, 8)
    splits = [rank_share(torch.as_tensor(clips.group[b]), 0, 2)[1] for b in batches]
    # uneven shares (an unweighted loss would differ) and a batch of one clip (trained whole on both ranks)
    assert any(abs(w - 1) > 0.05 for w in splits) and any(len(np.unique(clips.group[b])) == 1 for b in batches)
    two_processes_equal_one(WORKER, tmp_path, {"steps": 6, "min_peds": 4, "cap": 8, "goal_mode": goal_mode})


def test_rank_share_splits_whole_clips_and_weights_them_by_pedestrians() -> None:
    group = torch.tensor([4, 4, 4, 4, 4, 9, 2, 2, 7, 7])  # clips of 5, 1, 2 and 2 pedestrians
    (a, wa), (b, wb) = rank_share(group, 0, 2), rank_share(group, 1, 2)
    assert a.tolist() == [True] * 5 + [False] * 5 and b.tolist() == [False] * 5 + [True] * 5
    assert (wa, wb) == (1.0, 1.0)
    parts = [rank_share(group, r, 3) for r in range(3)]
    assert [p.sum().item() for p, _ in parts] == [5, 1, 4]  # cuts nearest 1/3 and 2/3, a clip per rank
    x = torch.arange(10.0) ** 2  # per-pedestrian losses: DDP's mean over ranks of the weighted means is their mean
    assert float(sum(w * x[p].mean() for p, w in parts) / 3) == pytest.approx(float(x.mean()), rel=1e-6)
    whole, w = rank_share(torch.tensor([3, 3, 3]), 1, 2)  # one clip, two processes: both take it whole
    assert whole.all() and w == 1.0


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    df, masks = _tiny()
    clips = build_clips(df)
    arch = TSCConfig.quick(d_model=16)
    scenes = AugmentedScenes([masks[s] for s in clips.scene_ids], arch.n_classes, arch.map_scale, True)

    def trained(folder: Path, **kwargs):
        torch.manual_seed(0)
        model = build_model("tsc", arch)
        rows: list = []
        log = kwargs.pop("log", lambda row, step: rows.append((step, row)))
        ckpt = Checkpointer(folder, every=4)
        info = train_model(model, clips, scenes, 10, 1e-3, 0, 4, 8, log=log, checkpointer=ckpt, **kwargs)
        return model, info, rows

    straight, info, rows = trained(tmp_path / "a")
    with pytest.raises(KeyboardInterrupt):
        trained(tmp_path / "b", log=InterruptAt(9).log)  # the last step logs: stopped after the step-8 checkpoint
    assert [p.name for p in Checkpointer(tmp_path / "b", every=4).checkpoints()] == ["step-4.ckpt", "step-8.ckpt"]
    (tmp_path / "b" / "step-8.ckpt").unlink()  # continue from step 4, mid-epoch
    resumed, rest, _ = trained(tmp_path / "b", resume="auto")
    assert all(torch.equal(p, q) for p, q in zip(straight.parameters(), resumed.parameters(), strict=True))
    assert rest["total"] == info["total"] and 0 < rest["train_peds"] < info["train_peds"]
    step, row = rows[-1]
    assert step == 9 and {"loss", "lr", "throughput", "epoch", "loss/kl"} <= set(row) and row["loss"] == info["total"]


@pytest.fixture
def sdd_folder(tmp_path: Path) -> Path:
    df, masks = _tiny()
    for split in ("train", "test"):
        write_ynet(tmp_path / "sdd", split, df.drop(columns="irregular"), masks)
    return tmp_path / "sdd"


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_checkpoints_and_resumes(tmp_path: Path, sdd_folder: Path) -> None:
    tiny = [f"data_dir={sdd_folder}", "train_steps=2", "layers=1", "latent=8", "goal_cells=3", "n_cvae=1",
            "n_cell=2", "batch_peds=4", "batch_cap=8", "max_test_peds=4", "models=tsc", "plot=false"]  # fmt: skip
    flags = ("--devices", "2", "--checkpoint-every", "1")
    result, run_dir, saved = reproduce_full_preset("tsc-net", tiny, tmp_path, *flags)
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold after 2 steps
    assert saved == ["tsc-seed0/step-1.ckpt", "tsc-seed0/step-2.ckpt"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows if "tsc/seed0/loss" in row] == [0, 1]  # logged once, by rank 0
    first = json.loads((run_dir / "results.json").read_text())["metrics"]
    # as a run stopped after its first step leaves its folder: marked interrupted, the step-1 checkpoint the newest
    marker = json.loads((run_dir / ".iclr25-run.json").read_text())
    (run_dir / ".iclr25-run.json").write_text(json.dumps({**marker, "status": "interrupted"}))
    (run_dir / "checkpoints" / "tsc-seed0" / "step-2.ckpt").unlink()
    again, _, saved = reproduce_full_preset("tsc-net", tiny, tmp_path, *flags, "--resume", "auto")
    assert again.returncode in (0, 1), again.stderr[-3000:]
    assert saved == ["tsc-seed0/step-1.ckpt", "tsc-seed0/step-2.ckpt"]
    second = json.loads((run_dir / "results.json").read_text())["metrics"]
    assert second["tsc"]["train"]["train_peds"] < first["tsc"]["train"]["train_peds"]  # only step 2 was trained
    assert (
        second["tsc"]["all"] == first["tsc"]["all"]
        and second["tsc"]["train"]["total"] == first["tsc"]["train"]["total"]
    )


def test_bad_scale_out_flags_are_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["reproduce", "--scale", "quick", "--out", str(out), "--devices", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--devices" in err and "Traceback" not in err and not out.exists()
    assert main(["reproduce", "--scale", "quick", "--out", str(out), "--strategy", "fsdp", "--devices", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fsdp" in err and not out.exists()
    # the quick preset trains its two models in 2 worker processes: with several processes per model, one at a time
    args = ["reproduce", "--scale", "quick", "--out", str(out), "--devices", "2"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "workers=1" in err and not out.exists()


def _untimed(value):
    """A metrics tree without its timings (keys ending in `_s`: seconds and rates)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_models_and_seeds_in_worker_processes_equal_the_sequential_runs(tmp_path: Path) -> None:
    tiny = replace(PRESETS["ci"], train_scenes=2, test_scenes=2, test_clips_per_scene=3, sim_steps=60,
                   models=("tsc", "blind"), seeds=2, train_steps=3, d_model=16, latent=8, n_cvae=1, n_cell=2,
                   batch_peds=4, batch_cap=8, max_test_peds=6, plot=True)  # fmt: skip
    one = reproduce.run("ci", tmp_path / "one", config=tiny, device="cpu")
    two = reproduce.run("ci", tmp_path / "two", config=replace(tiny, workers=2), device="cpu")
    assert len(one.metrics["tsc"]["per_seed"]) == 2 and one.metrics["tsc"]["train"]["train_peds"] > 0
    assert _untimed(one.metrics) == _untimed(two.metrics)
    assert set(one.throughput) == set(two.throughput)
    assert (tmp_path / "one" / "samples.png").read_bytes() == (tmp_path / "two" / "samples.png").read_bytes()
    rows = [(tmp_path / f / "metrics.jsonl").read_text().splitlines() for f in ("one", "two")]
    drop = lambda row: {k: v for k, v in json.loads(row).items() if not k.endswith("/throughput")}  # noqa: E731
    assert len(rows[0]) == 8 and [drop(r) for r in rows[0]] == [drop(r) for r in rows[1]]  # same rows, same order


def test_workers_are_refused_with_fabric_and_on_real_data(tmp_path: Path) -> None:
    cfg = replace(PRESETS["ci"], train_scenes=1, test_scenes=1, workers=2)
    with pytest.raises(ValueError, match="workers=1"):
        reproduce.run("ci", tmp_path / "run", config=cfg, scale_out=ScaleOut(precision="64-true"))
    with pytest.raises(ValueError, match=r"dataset=sdd.*use workers=1"):
        Config(dataset="sdd", data_dir="data/sdd", workers=2)
    for bad in (0, 1025, 1.5):
        with pytest.raises(ValueError, match="workers"):
            Config(workers=bad)
