"""The CLI verbs of the evaluation protocols and the paired comparison, on tiny generated files, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.dynamical_diffusion.cli import main
from iclr25.dynamical_diffusion.config import Config
from iclr25.dynamical_diffusion.training import make_model, save_model


def _checkpoint(path: Path, n_context: int = 4) -> Path:
    config = Config(dataset="ns2d", size=16, n_context=n_context, n_future=15 - n_context, width=8, ch_mult=(1,))
    torch.manual_seed(0)
    save_model(make_model(config, 0.5), config, 0, path)
    return path


def test_eval_turbulence_verb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "test.npy", np.random.default_rng(0).standard_normal((3, 15, 2, 16, 16)).astype(np.float32))
    ckpt = ["--checkpoint", str(_checkpoint(tmp_path / "model.pt")), "--data", str(tmp_path / "test.npy")]
    assert main(["eval-turbulence", *ckpt, "--n-samples", "2", "--ddim-steps", "2", "--device", "cpu"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["n_cases"] == 3 and np.isfinite(metrics["crps_pwm"]) and 0 <= metrics["csi_0"] <= 1
    with pytest.raises(SystemExit) as refused:  # argparse: the fair CRPS needs two members
        main(["eval-turbulence", *ckpt, "--n-samples", "1"])
    assert refused.value.code == 2
    assert "expected an integer >= 2" in capsys.readouterr().err
    missing = ["--checkpoint", str(tmp_path / "model.pt"), "--data", str(tmp_path / "none.npy")]
    assert main(["eval-turbulence", *missing]) == 2
    assert "data file" in capsys.readouterr().err
    three = ["--checkpoint", str(_checkpoint(tmp_path / "m3.pt", n_context=3)), "--data", str(tmp_path / "test.npy")]
    assert main(["eval-turbulence", *three, "--n-samples", "2", "--ddim-steps", "2", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "4 context frames" in err and len(err.strip().splitlines()) == 1


def test_paired_verb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, seeds in (("a", [0, 1, 2]), ("b", [3, 4])):
        rows = [{"seed": s, "dpm": {"crps": 1.0 + s}, "dydiff": {"crps": 0.9 + s}} for s in seeds]
        doc = {"config": {"steps": 10, "seeds": len(seeds)}, "metrics": {"per_seed": rows}, "command": name}
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(doc))
    runs = ["--runs", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "p")]
    assert main(["paired", *runs]) == 0
    assert "| dydiff | 5 |" in capsys.readouterr().out
    assert json.loads((tmp_path / "p" / "paired.json").read_text())["vs_dpm"]["dydiff"]["p_sign_flip"] == 2 / 32
    assert main(["paired", *runs]) == 2  # an earlier result is replaced only with --overwrite
    assert "already exists" in capsys.readouterr().err
    assert main(["paired", *runs, "--overwrite", "--models", "dydiff_r9"]) == 2
    assert "no run has ['dydiff_r9']" in capsys.readouterr().err
    assert main(["paired", *runs, "--overwrite", "--models", "dydiff"]) == 0  # its own earlier files: replaced
    capsys.readouterr()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "paired.md").write_text("my notes")
    for extra in ([], ["--overwrite"]):  # a user's file is never replaced
        assert main(["paired", *runs[:-1], str(mine), *extra]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
        assert (mine / "paired.md").read_text() == "my notes" and not (mine / "paired.json").exists()


def test_ts_bench_verb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = np.arange(60)
    rows = "".join(f"2020-01-01 {i},{np.sin(i / 3):.4f},{np.cos(i / 5):.4f}\n" for i in t)
    (tmp_path / "x.csv").write_text("time,a,b\n" + rows)
    args = ["ts-bench", "--data", str(tmp_path / "x.csv"), "--context", "8", "--horizon", "3", "--n-windows", "2"]
    small = ["--steps", "2", "--width", "8", "--n-samples", "3", "--ddim-steps", "2", "--device", "cpu"]
    assert main([*args, *small]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["models"]) == {"r0", "r0.5"} and out["horizon"] == 3
    assert main(["ts-bench", "--data", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([*args, "--n-windows", "40", *small]) == 2  # 40 windows do not fit into 60 steps
    assert "too short" in capsys.readouterr().err
