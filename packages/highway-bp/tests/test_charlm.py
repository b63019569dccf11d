"""Character-level RNN language model (intermediate losses) and the speed table (Table 3)."""

import math

import numpy as np
import pytest
import torch

from iclr25.highway_bp.charlm import (
    CharLM,
    bits_per_char,
    load_char_corpus,
    random_windows,
    shipped_corpus,
    train_char_lm,
    write_wikitext_files,
)
from iclr25.highway_bp.highway import flat_grad
from iclr25.highway_bp.speed import format_speed_table, speed_table


def test_corpus_goes_through_the_wikitext_loader(tmp_path):
    text = "abcab" * 40 + "zz"
    write_wikitext_files(text, tmp_path, valid_fraction=0.25)
    train, valid, vocab = load_char_corpus(str(tmp_path), vocab_size=2)
    assert vocab[1:] == ["a", "b"] and train.dtype == np.int64  # top-2 characters plus unk at 0
    assert len(train) + len(valid) == len(text) and valid[-1] == 0  # "z" is outside the vocabulary
    assert len(shipped_corpus()) > 100_000  # the Python docs shipped with the interpreter
    with pytest.raises(ValueError, match="valid_fraction"):
        write_wikitext_files(text, tmp_path, valid_fraction=1.0)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_lm_step_exact_at_k_ge_T_and_approximate_below(cell):
    """A loss at every step: Highway-BP and FPI at k ≥ T give BPTT's gradient (embedding and head included)."""
    torch.manual_seed(0)
    model = CharLM(7, 5, cell).double()
    ids, targets = torch.randint(0, 7, (6, 3)), torch.randint(0, 7, (6, 3))

    def grad(algo, k=0):
        model.zero_grad(set_to_none=True)
        model.step(ids, targets, k=k, algo=algo)
        return flat_grad(model).clone()

    exact = grad("bptt")
    for algo in ("hbp", "fpi"):
        assert (grad(algo, 6) - exact).norm() / exact.norm() < 1e-6
        assert (grad(algo, 1) - exact).norm() / exact.norm() > 1e-6
    with pytest.raises(ValueError, match="algo"):
        model.step(ids, targets, algo="bp")


def test_bits_per_char_of_a_uniform_model_is_log2_vocab():
    model = CharLM(8, 4)
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
    ids = torch.randint(0, 8, (101,))
    assert bits_per_char(model, ids, length=10) == pytest.approx(math.log2(8), rel=1e-6)
    x, y = random_windows(ids, 10, 4, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (10, 4) and torch.equal(x[1:], y[:-1])
    with pytest.raises(ValueError, match="shorter"):
        bits_per_char(model, ids[:5], length=10)


def test_train_char_lm_learns():
    text = "the cat sat on the mat. " * 200
    ids = np.array([ord(c) % 32 for c in text], dtype=np.int64)
    res = train_char_lm(ids, ids[:500], 32, algo="hbp", k=2, hidden=16, length=16, batch=8, steps=60, lr=1e-2)
    assert res.valid_bpc < 0.8 * math.log2(32) and res.step_ms > 0 and res.steps == 60


def test_speed_table():
    rows = speed_table(["gru"], [8], hidden=4, batch=2, vocab=5, hbp_ks=(0, 2), fpi_ks=(1,), steps=1, warmup=0)
    assert list(rows[0].wall_ms) == ["bp", "fpi_k1", "hbp_k0", "hbp_k2"]
    table = format_speed_table(rows)
    assert "| GRUx1 L=8 |" in table and "HBP k=2" in table and table.count("\n") == 2
    with pytest.raises(ValueError, match="cell"):
        speed_table(["rnn"], [8])
    with pytest.raises(ValueError, match="lengths"):
        speed_table(["gru"], [0])
