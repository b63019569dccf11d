"""Sample-log and mode-set loaders on tiny generated files (spec §6c)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.sa_gfn.data import load_mode_set, load_sample_log, sample_log_metrics, save_sample_log
from iclr25.sa_gfn.envs import HyperGrid


def test_sample_log_roundtrip_and_metrics(tmp_path):
    env = HyperGrid(2, 16, "sparse")
    rng = np.random.default_rng(0)
    states = np.concatenate([np.array([[14, 14]] * 25 + [[1, 14]] * 5), rng.integers(0, 16, size=(20, 2))])
    path = save_sample_log(tmp_path / "log.npz", states, np.arange(50), log_reward=np.zeros(50))
    log = load_sample_log(path)
    assert log["states"].shape == (50, 2) and log["iteration"].dtype == np.int64
    m = sample_log_metrics(log, env)
    assert m["n"] == 50
    assert m["modes_found"] >= 2
    assert 0.0 < m["tv"] < 1.0
    assert m["distinct_states"] <= 22


def test_sample_log_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, states=np.zeros((5, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="iteration"):
        load_sample_log(bad)
    np.savez(bad, states=np.zeros((5, 2)), iteration=np.arange(5))
    with pytest.raises(ValueError, match="integer"):
        load_sample_log(bad)
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="readable"):
        load_sample_log(tmp_path / "junk.npz")
    with pytest.raises(FileNotFoundError):
        load_sample_log(tmp_path / "missing.npz")
    path = save_sample_log(tmp_path / "big.npz", np.full((3, 2), 20), np.arange(3))
    with pytest.raises(ValueError, match="fit"):
        sample_log_metrics(load_sample_log(path), HyperGrid(2, 16))


def test_mode_set(tmp_path):
    p = tmp_path / "modes.txt"
    p.write_text("0101\n\n1111\n")
    modes = load_mode_set(p, length=4)
    assert modes.tolist() == [[0, 1, 0, 1], [1, 1, 1, 1]]
    p.write_text("0102\n")
    with pytest.raises(ValueError, match="only 0 and 1"):
        load_mode_set(p)
    p.write_text("010\n")
    with pytest.raises(ValueError, match="4 bits"):
        load_mode_set(p, length=4)
    p.write_text("\n")
    with pytest.raises(ValueError, match="no modes"):
        load_mode_set(p)
