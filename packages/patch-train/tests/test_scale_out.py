"""Scale-out of the Lightning Trainer: the full preset (with tiny overrides) trains on 2 CPU processes (gloo, DDP)
with the micro-batches of every step split over the processes, checkpoints every stage, and ends with the same
validation numbers as one process; `--resume auto` continues from the stages' last.ckpt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclr25.shared.testing import reproduce_full_preset

TINY = ["corpus=stdlib", "tokenizer=byte", "valid_corpus=", "model=tiny", "T=16", "tokens_per_step=256",
        "token_steps=4", "micro_batch=2", "eval_windows=8", "chunk=0", "threads=1", "bench_tokens_per_step=0",
        "bench_steps=1"]  # fmt: skip


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_full_preset_on_two_cpu_processes_checkpoints_and_equals_one(tmp_path: Path) -> None:
    two, _, saved = reproduce_full_preset(
        "patch-train", TINY, tmp_path, "--devices", "2", "--checkpoint-every", "2", out="two", checkpoints_under=""
    )
    assert two.returncode in (0, 1), two.stderr[-3000:]  # 1: a timing claim need not hold on a busy machine
    assert [path for path in saved if path.endswith("last.ckpt")] == [
        "seed0/patch/stage1-patch/checkpoints/last.ckpt", "seed0/patch/stage2-token/checkpoints/last.ckpt",
        "seed0/token/stage1-token/checkpoints/last.ckpt",
    ]  # fmt: skip
    one, _, _ = reproduce_full_preset("patch-train", TINY, tmp_path, out="one")
    assert one.returncode in (0, 1), one.stderr[-3000:]
    a = json.loads((tmp_path / "one" / "results.json").read_text())["claims"]
    b = json.loads((tmp_path / "two" / "results.json").read_text())["claims"]
    for name in ("token_nll_after_patch_stage", "patch_equal_compute_vs_token", "patch_loss_falls"):
        ours = [next(c["ours"] for c in claims if c["name"] == name) for claims in (a, b)]
        assert ours[0] == pytest.approx(ours[1], abs=1e-4), name  # float32: sums over the shares differ slightly
    # an interrupted run in `two` continues: every stage resumes from its last.ckpt (finished ones train nothing)
    marker = tmp_path / "two" / ".iclr25-run.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "status": "interrupted"}))
    again, _, _ = reproduce_full_preset(
        "patch-train", TINY, tmp_path, "--devices", "2", "--resume", "auto", out="two", checkpoints_under=""
    )
    assert again.returncode in (0, 1), again.stderr[-3000:]
    c = json.loads((tmp_path / "two" / "results.json").read_text())["claims"]
    for name in ("token_nll_after_patch_stage", "patch_equal_compute_vs_token"):
        ours = [next(x["ours"] for x in claims if x["name"] == name) for claims in (b, c)]
        assert ours[0] == ours[1], name
