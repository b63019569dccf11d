"""The real-data reproduction (`reproduce --scale full`) on a tiny SDD-format folder: it trains the official
architecture, evaluates and writes the real-data claims; a missing or incomplete data_dir is refused before any
work; the training loop's checkpoints continue a run exactly."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from iclr25.shared.claims import evaluate
from iclr25.shared.fabric import Checkpointer
from iclr25.tsc_net.claims import declared
from iclr25.tsc_net.cli import main
from iclr25.tsc_net.config import PRESETS
from iclr25.tsc_net.data import build_clips, write_ynet

# the full preset, shrunk to seconds on a CPU: official architecture (d 256) with one layer per block, a 3 x 3 goal
# grid, 2 training steps, K = 1 x 2, TSC-Net only
TINY = ["train_steps=2", "layers=1", "latent=8", "goal_cells=3", "n_cvae=1", "n_cell=2", "batch_peds=4",
        "batch_cap=8", "max_test_peds=4", "models=tsc", "plot=false"]  # fmt: skip


@pytest.fixture
def sdd_folder(tmp_path, tiny_sim):
    """A Y-Net SDD-format folder: train.pkl, test.pkl (frame, trackId, x, y, sceneId, metaId) + <sceneId>_mask.png."""
    df, masks, _ = tiny_sim
    df = df.drop(columns="irregular")
    for split in ("train", "test"):
        write_ynet(tmp_path / "sdd", split, df, masks)
    return tmp_path / "sdd"


def test_full_runs_on_real_format_data_and_writes_the_real_data_claims(sdd_folder, tmp_path, capsys):
    out = tmp_path / "full"
    code = main(["reproduce", "--scale", "full", "--out", str(out), "--quiet", f"data_dir={sdd_folder}", *TINY])
    assert code in (0, 1)  # 1: a gated claim does not hold (with K = 2 and 2 steps nothing is expected to)
    results = json.loads((out / "results.json").read_text())
    claims = {c["name"]: c for c in results["claims"]}
    assert {"sdd_cvk20_beats_cv", "sdd_tsc_minADE20", "sdd_tsc_minFDE20"} <= set(claims)
    assert all(isinstance(claims[k]["ours"], float) for k in ("sdd_tsc_minADE20", "sdd_tsc_minFDE20"))
    assert claims["sdd_cvk20_beats_cv"]["gated"] and not claims["sdd_tsc_minFDE20"]["gated"]  # 2 steps: not paper scale
    assert all(c["paper"] is None for c in claims.values())  # the paper's SDD table was not found
    m = results["metrics"]
    assert m["data"]["train_peds"] > 0 and set(m["tsc"]["per_scene"]) <= {"sim000", "sim001"}
    assert np.isfinite(m["tsc"]["all"]["minFDE"]) and m["tsc"]["train"]["train_peds"] > 0
    assert (out / "checkpoints" / "tsc-seed0" / "step-2.ckpt").is_file()
    assert "sdd_tsc_minFDE20" in capsys.readouterr().out


def test_learned_claims_are_gated_only_at_paper_scale():
    row = {"all": {"minADE": 7.0, "minFDE": 11.0, "violation": 0.01}}
    metrics = {"cv": {"all": {"minFDE": 40.0}}, "cv_k20": {"all": {"minADE": 10.0, "minFDE": 20.0}}, "tsc": row}
    paper = {c.name: c for c in evaluate(declared(PRESETS["full"]), metrics, PRESETS["full"])}
    assert paper["sdd_tsc_minFDE20"].gated and paper["sdd_tsc_minFDE20"].holds and paper["sdd_tsc_minADE20"].holds
    short_cfg = replace(PRESETS["full"], train_steps=2)
    short = {c.name: c for c in evaluate(declared(short_cfg), metrics, short_cfg)}
    assert not short["sdd_tsc_minFDE20"].gated and short["sdd_cvk20_beats_cv"].gated


@pytest.mark.parametrize("what", ["folder", "test_pickle", "mask"])
def test_missing_data_is_refused_in_one_line_before_any_work(what, sdd_folder, tmp_path, capsys):
    folder = tmp_path / "nowhere" if what == "folder" else sdd_folder
    if what == "test_pickle":
        (sdd_folder / "test.pkl").unlink()
    if what == "mask":
        (sdd_folder / "sim001_mask.png").unlink()
    out = tmp_path / "full"
    assert main(["reproduce", "--scale", "full", "--out", str(out), f"data_dir={folder}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and not out.exists()
    assert str(folder) in err and "Human-Path-Prediction" in err  # where it looked, where to get the data
    assert {"folder": "is not a folder", "test_pickle": "lacks test.pkl", "mask": "sim001_mask.png"}[what] in err


def test_resume_is_refused_on_the_simulated_presets(tmp_path, capsys):
    assert main(["reproduce", "--scale", "ci", "--out", str(tmp_path / "ci"), "--checkpoint-every", "5"]) == 2
    assert "real-data" in capsys.readouterr().err and not (tmp_path / "ci").exists()


def test_training_continues_exactly_from_a_checkpoint(tmp_path, tiny_sim):
    from iclr25.tsc_net.model import TSCConfig
    from iclr25.tsc_net.training import AugmentedScenes, build_model, train_model

    df, masks, _ = tiny_sim
    clips = build_clips(df)
    arch = TSCConfig.quick(d_model=32)
    scenes = AugmentedScenes([masks[s] for s in clips.scene_ids], arch.n_classes, arch.map_scale, True)

    def trained(steps, folder, resume=None, init=0):
        torch.manual_seed(init)
        model = build_model("tsc", arch)
        ckpt = None if folder is None else Checkpointer(folder, every=2)
        info = train_model(model, clips, scenes, steps, 1e-3, 0, 4, 8, checkpointer=ckpt, resume=resume)
        return model.state_dict(), info

    straight, info = trained(5, None)
    trained(3, tmp_path / "ck")  # saves step 2 and the last step (3)
    assert sorted(p.name for p in (tmp_path / "ck").glob("*.ckpt")) == ["step-2.ckpt", "step-3.ckpt"]
    (tmp_path / "ck" / "step-3.ckpt").unlink()  # continue from the periodic checkpoint, mid-epoch
    resumed, rest = trained(5, tmp_path / "ck", resume="auto", init=1)  # another init: only the checkpoint can match
    assert all(torch.equal(straight[k], resumed[k]) for k in straight)
    assert 0 < rest["train_peds"] < info["train_peds"] and rest["total"] == info["total"]  # steps 3-5 only
