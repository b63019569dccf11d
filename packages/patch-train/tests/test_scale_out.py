"""Scale-out of the Lightning Trainer: the full preset (with tiny overrides) trains on 2 CPU processes (gloo, DDP)
with the micro-batches of every step split over the processes, checkpoints every stage, and ends with the same
validation numbers as one process; `--resume auto` continues from the stages' last.ckpt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = ["corpus=stdlib", "tokenizer=byte", "valid_corpus=", "model=tiny", "T=16", "tokens_per_step=256",
        "token_steps=4", "micro_batch=2", "eval_windows=8", "chunk=0", "threads=1", "bench_tokens_per_step=0",
        "bench_steps=1"]  # fmt: skip


def _reproduce(cwd: Path, out: str, *flags: str) -> subprocess.CompletedProcess:
    cli = Path(sys.executable).parent / "iclr25-patch-train"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK")}
    return subprocess.run(
        [str(cli), "reproduce", "--scale", "full", "--device", "cpu", "--out", out, "--quiet", *flags, *TINY],
        capture_output=True, text=True, cwd=cwd, env={**env, "ICLR25_QUIET": "1"}, timeout=600,
    )  # fmt: skip


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_full_preset_on_two_cpu_processes_checkpoints_and_equals_one(tmp_path: Path) -> None:
    two = _reproduce(tmp_path, "two", "--devices", "2", "--checkpoint-every", "2")
    assert two.returncode in (0, 1), two.stderr[-3000:]  # 1: a timing claim need not hold on a busy machine
    assert json.loads((tmp_path / "two" / ".iclr25-run.json").read_text())["status"] == "complete"
    saved = sorted(p.relative_to(tmp_path / "two").as_posix() for p in (tmp_path / "two").rglob("last.ckpt"))
    assert saved == [
        "seed0/patch/stage1-patch/checkpoints/last.ckpt", "seed0/patch/stage2-token/checkpoints/last.ckpt",
        "seed0/token/stage1-token/checkpoints/last.ckpt",
    ]  # fmt: skip
    one = _reproduce(tmp_path, "one")
    assert one.returncode in (0, 1), one.stderr[-3000:]
    a = json.loads((tmp_path / "one" / "results.json").read_text())["claims"]
    b = json.loads((tmp_path / "two" / "results.json").read_text())["claims"]
    for name in ("token_nll_after_patch_stage", "patch_equal_compute_vs_token", "patch_loss_falls"):
        ours = [next(c["ours"] for c in claims if c["name"] == name) for claims in (a, b)]
        assert ours[0] == pytest.approx(ours[1], abs=1e-4), name  # float32: sums over the shares differ slightly
    # an interrupted run in `two` continues: every stage resumes from its last.ckpt (finished ones train nothing)
    marker = tmp_path / "two" / ".iclr25-run.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "status": "interrupted"}))
    again = _reproduce(tmp_path, "two", "--devices", "2", "--resume", "auto")
    assert again.returncode in (0, 1), again.stderr[-3000:]
    c = json.loads((tmp_path / "two" / "results.json").read_text())["claims"]
    for name in ("token_nll_after_patch_stage", "patch_equal_compute_vs_token"):
        ours = [next(x["ours"] for x in claims if x["name"] == name) for claims in (b, c)]
        assert ours[0] == ours[1], name
