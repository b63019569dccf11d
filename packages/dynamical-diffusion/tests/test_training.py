"""The model.pt of a trained model: `save_model` -> `load_model` rebuilds the same network; foreign files are refused."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from iclr25.dynamical_diffusion.config import Config
from iclr25.dynamical_diffusion.training import MODEL_FILE, load_model, make_model, save_model

NOT_A_MODEL = re.escape(f"is not a {MODEL_FILE}")


def test_save_load_model_round_trip(tmp_path: Path) -> None:
    config = Config(dataset="pde1d", width=8, ch_mult=(1, 2), gamma_ratio=0.25)
    torch.manual_seed(0)
    model = make_model(config, config.gamma_ratio)
    save_model(model, config, 7, tmp_path / "model.pt")
    loaded, loaded_config, seed = load_model(tmp_path / "model.pt")
    assert loaded_config == config and seed == 7
    assert loaded.gamma_ratio == config.gamma_ratio
    for (name, a), (_, b) in zip(model.net.state_dict().items(), loaded.net.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_load_model_refuses_a_foreign_file(tmp_path: Path) -> None:
    (tmp_path / "text.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match=re.escape(MODEL_FILE)):
        load_model(tmp_path / "text.pt")
    config = Config(dataset="pde1d", width=8, ch_mult=(1,))
    torch.save({"config": {"width": "wide"}, "seed": 0, "state_dict": {}}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match=NOT_A_MODEL):
        load_model(tmp_path / "other.pt")
    state = {
        "config": asdict(config) | {"width": 16},
        "seed": 0,
        "state_dict": make_model(config, 0.5).net.state_dict(),
    }
    torch.save(state, tmp_path / "mismatch.pt")  # weights of another width
    with pytest.raises(ValueError, match=NOT_A_MODEL):
        load_model(tmp_path / "mismatch.pt")
