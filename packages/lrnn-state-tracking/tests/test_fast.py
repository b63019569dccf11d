"""Fast paths: torch.compile of a training step equals eager (CPU, slow: compiling takes a while), the full-preset step
count and time estimate, and on a GPU the compiled DeltaNet step against eager."""

from __future__ import annotations

import pytest

from iclr25.lrnn_state_tracking.config import PRESETS
from iclr25.lrnn_state_tracking.fast import compile_speedup, estimate_hours, full_preset_steps
from iclr25.shared.device import requires_gpu


def test_full_preset_step_count():
    counts = full_preset_steps()
    # 3 seeds × (DeltaNet, Mamba × 2 ranges + LSTM + Transformer) × (20k parity + 2 × 100k modular arithmetic)
    assert counts["grid_steps"] == 3 * 6 * (20_000 + 2 * 100_000)
    assert counts["runs"] == 3 * 6 * 3 + 2 * 3 and counts["fig1_steps"] == 2 * 3 * 20_000
    assert estimate_hours(0.01) == pytest.approx(counts["grid_steps"] * 0.01 / 3600)
    assert estimate_hours(0.01, gpus=4) == pytest.approx(estimate_hours(0.01) / 4)
    with pytest.raises(ValueError, match="gpus"):
        estimate_hours(0.01, gpus=0)
    assert full_preset_steps(PRESETS["ci"])["grid_steps"] == 0


@pytest.mark.slow
def test_compiled_step_equals_eager_on_cpu(tmp_path, monkeypatch):
    pytest.importorskip("torch._inductor")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # a private cache: no race with other processes
    out = compile_speedup("figure1", d_model=4, n_layers=1, batch_size=4, seq_len=8, reps=2)
    assert out["max_abs_diff"] <= 1e-5
    assert out["eager_tokens_per_s"] > 0 and out["compiled_tokens_per_s"] > 0


@pytest.mark.gpu
@requires_gpu
def test_compiled_deltanet_step_on_gpu():
    out = compile_speedup("deltanet", d_model=128, n_layers=2, n_heads=4, batch_size=256, seq_len=40, device="cuda")
    assert out["max_abs_diff"] <= 1e-3  # the speed-up itself is measured and reported, not asserted
    assert out["compiled_tokens_per_s"] > 0
