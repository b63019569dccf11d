"""Seeds, WSC seeds and real-data splits in worker processes give exactly the values of the sequential run."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from iclr25.conditional_conformal.config import PRESETS, Config
from iclr25.conditional_conformal.reproduce import measure

TIMING = ("timing_s", "points_per_s", "train_s", "train_samples_per_s")


def _tiny(data_dir: str) -> Config:
    return replace(
        PRESETS["full"], parts=("synthetic", "qhat", "wsc", "mdn", "toy2d", "real"), seeds=3, n_samples=10,
        n_samples_tau=10, n_cal=100, n_test=150, hpd_length_points=20, qhat_n=200, wsc_n=200, wsc_dirs=20,
        wsc_seeds=2, n_train=200, mdn_components=2, mdn_hidden=(8,), mdn_epochs=2, cqr_hidden=(8,), cqr_epochs=2,
        toy_n_cal=100, toy_n_test=100, data_dir=data_dir, datasets=("bio", "rf1"), splits=2, real_n_cal=40,
        real_n_test=40, real_ms=(5,), real_wsc_dirs=10, real_mdn_epochs=2, real_mdn_components=2,
        real_mdn_hidden=(8,), multi_samples=10,
    )  # fmt: skip


def _write_data(folder) -> None:
    """Tiny generated bio (1-D target) and rf1 (8 targets) files in the PCP repository's formats."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 9))
    y = x[:, 0] + 0.3 * np.abs(x[:, 1]) * rng.standard_normal(200)
    rows = "\n".join(",".join(f"{v:.4f}" for v in (t, *r)) for t, r in zip(y, x, strict=True))
    (folder / "CASP.csv").write_text("RMSD," + ",".join(f"F{i}" for i in range(1, 10)) + "\n" + rows + "\n")
    lines = ["@relation rf1"] + [f"@attribute a{i} numeric" for i in range(12)] + ["@data"]
    lines += [",".join(f"{v:.3f}" for v in r) for r in rng.standard_normal((160, 12))]
    (folder / "rf1.arff").write_text("\n".join(lines) + "\n")


def _values(metrics: dict) -> str:
    """Every measured value, timings left out, as written (NaN as "NaN")."""

    def strip(v):
        return {k: strip(x) for k, x in v.items() if k not in TIMING} if isinstance(v, dict) else v

    return json.dumps(strip(metrics), sort_keys=True)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # a metric no split of the tiny data defines
def test_two_workers_give_the_sequential_results(tmp_path):
    _write_data(tmp_path)
    cfg = _tiny(str(tmp_path))
    one = measure(cfg)
    two = measure(replace(cfg, workers=2))
    assert _values(two) == _values(one)
    assert len(one["synthetic"]["sd_x1"]) == len(one["mdn"]["seeds"]) == len(one["toy2d"]["seeds"]) == 3
    assert len(one["wsc"]["iid"]) == 2 and one["real"]["missing"] == [] and "cp2_l@M5" in one["real"]["bio"]
    # each seed is its own draw (seed s does not depend on the seeds before it) ...
    assert one["synthetic"]["sd_x1"][0] != one["synthetic"]["sd_x1"][1]
    fewer = measure(replace(cfg, parts=("synthetic",), seeds=1))
    assert fewer["synthetic"]["sd_x1"] == one["synthetic"]["sd_x1"][:1]


@pytest.mark.parametrize("bad", [0, -1, 1025, 1.0, True])
def test_workers_bounds(bad):
    with pytest.raises(ValueError, match="workers"):
        Config(workers=bad)
