"""Training paths: every ablation of the full preset and every channel runs end to end (tiny budgets), Compose
fine-tuning runs, and checkpoints round-trip."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from iclr25.compose_decompose.config import PRESETS
from iclr25.compose_decompose.data import make_thing_dataset
from iclr25.compose_decompose.experiments import experiments
from iclr25.compose_decompose.training import (
    build_game,
    decompose_then_compose,
    evaluate,
    load_checkpoint_game,
    save_checkpoint,
)


@pytest.fixture(scope="module")
def data():
    return make_thing_dataset(5, seed=0)


ABLATION_RUNS = {name.split("/")[3]: s for name, s in experiments(PRESETS["full"]) if name.count("/") == 4}


@pytest.mark.parametrize("name", sorted(ABLATION_RUNS))
def test_every_ablation_runs(data, name):
    s = {k: v for k, v in ABLATION_RUNS[name].items() if k != "dataset"}
    with torch.random.fork_rng():
        res = decompose_then_compose(data, steps=15, eval_games=20, compose_steps=3, **s)
    for key in ("decompose_cand_acc", "compose_zero_shot_game_acc", "compose_finetuned_game_acc", "decompose_cbm"):
        assert 0.0 <= res[key] <= 1.0, key
    assert np.isfinite(res["bosdis"]) and res["games_per_s"] > 0


def test_ablation_plan_covers_the_spec():
    assert set(ABLATION_RUNS) == {"qt", "single_target", "no_decompose", "uniform_init", "slots", "sum", "gru", "k24"}
    assert ABLATION_RUNS["no_decompose"]["train_phrase_size"] == 2
    assert ABLATION_RUNS["single_target"]["decompose_targets"] == 1


def test_checkpoint_roundtrip(data, tmp_path):
    settings = {
        "dataset": "thing",
        "seed": 0,
        "noise": 0.3,
        "thing_per_combo": 50,
        "n_per_combo": 10,
        "image_size": 32,
        "channel": "gs",
        "K": 12,
        "dim": 16,
        "hidden": 64,
        "sender": "single",
        "combine": "and",
        "beta1": 1.0,
        "beta2": 0.25,
        "init": "kmeans",
        "dead_after": 200,
    }
    full = make_thing_dataset(50, 0.3, seed=0)
    game = build_game(full, **{k: settings[k] for k in ("channel", "K", "dim", "hidden")}, seed=3)
    path = save_checkpoint(tmp_path / "c.pt", game, settings)
    game2, data2, s2 = load_checkpoint_game(path)
    assert s2 == settings and np.array_equal(data2.inputs, full.inputs)
    a, b = evaluate(game, full, 50, 1, "train"), evaluate(game2, data2, 50, 1, "train")
    assert np.array_equal(a["words"], b["words"]) and a["cand_acc"] == b["cand_acc"]
    torch.save({"state_dict": {}, "settings": {"dataset": "thing"}}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="lack"):
        load_checkpoint_game(tmp_path / "bad.pt")


def test_training_is_seeded(data):
    cfg = dataclasses.replace(PRESETS["ci"], steps=10)
    r1 = decompose_then_compose(data, steps=cfg.steps, eval_games=20, seed=1)
    r2 = decompose_then_compose(data, steps=cfg.steps, eval_games=20, seed=1)
    assert r1["decompose_cand_acc"] == r2["decompose_cand_acc"] and r1["decompose_cbm"] == r2["decompose_cbm"]


def test_extended_shapes_run_end_to_end():
    from iclr25.compose_decompose.data import make_dataset

    data = make_dataset("shapes", n_per_combo=1, extended=True)
    res = decompose_then_compose(data, steps=5, eval_games=20, seed=0)
    assert 0 <= res["compose_zero_shot_game_acc"] <= 1 and np.isfinite(res["posdis"])


def test_gs_word_layer_starts_as_the_reference_symbol_embedding(data):
    """The GS Receiver embeds words as the reference GS game does (EGG's RelaxedEmbedding = nn.Embedding, N(0, 1));
    `gs_word_init="linear"` (the earlier, weaker start) keeps nn.Linear's U(+-1/sqrt(vocab)); CB is untouched."""
    import math

    w = build_game(data, channel="gs", K=48, seed=0).receiver.W.weight.detach()  # (h, vocab)
    assert abs(float(w.std()) - 1.0) < 0.05 and abs(float(w.mean())) < 0.05
    lin = build_game(data, channel="gs", K=48, gs_word_init="linear", seed=0).receiver.W.weight.detach()
    assert float(lin.abs().max()) <= 1 / math.sqrt(48) and float(lin.std()) < 0.1
    cb = build_game(data, channel="cb", K=48, dim=16, seed=0).receiver.W.weight.detach()
    assert float(cb.abs().max()) <= 1 / math.sqrt(16)
    with pytest.raises(ValueError, match="gs_word_init"):
        build_game(data, channel="gs", gs_word_init="xavier")
