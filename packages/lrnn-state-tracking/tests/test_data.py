"""Task generators against independent evaluators, mask-and-shift, scaled accuracy, the CSV loader (spec §9.5)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.lrnn_state_tracking import data


def test_parity_generator():
    for lo, hi in ((3, 40), (40, 256)):
        tokens, mask = data.parity(2000, lo, hi, 256, seed=1)
        assert (mask.sum(1) == 1).all()
        L = mask.float().argmax(1) + 1
        assert L.min() >= lo and L.max() <= hi
        for i in range(2000):
            n = int(L[i])
            assert data.evaluate_parity(tokens[i, : n - 1].tolist()) == tokens[i, n - 1]
            assert (tokens[i, n:] == 0).all()


def test_mod_arith_generator_uses_precedence():
    tokens, mask = data.modular_arithmetic(2000, 3, 40, 256, seed=2)
    L = mask.float().argmax(1) + 1
    assert (L % 2 == 1).all() and L.min() >= 3 and L.max() <= 39
    left_to_right_agrees = 0
    for i in range(2000):
        n = int(L[i])
        expr = tokens[i, : n - 2].tolist()
        assert tokens[i, n - 2] == 4  # '='
        assert data.evaluate_mod_arith(expr) == tokens[i, n - 1]
        value = expr[0] - 5  # a left-to-right evaluator must disagree on some samples
        for op, d in zip(expr[1::2], expr[2::2], strict=True):
            value = {1: value + d - 5, 2: value - d + 5, 3: value * (d - 5)}[op] % 5
        left_to_right_agrees += 5 + value == tokens[i, n - 1]
    assert left_to_right_agrees < 1900
    _, mask = data.modular_arithmetic(500, 40, 256, 256, seed=3)
    L = mask.float().argmax(1) + 1
    assert L.min() >= 39 and L.max() <= 255 and (L % 2 == 1).all()


def test_brackets_generator():
    for lo, hi in ((3, 40), (40, 256)):
        tokens, mask = data.modular_arithmetic_brackets(500 if hi > 40 else 2000, lo, hi, 256, seed=4)
        assert (mask.sum(1) == 1).all()
        A = mask.float().argmax(1)  # answer at L - 2
        assert A.min() + 2 >= max(lo, 5) and A.max() + 2 <= hi
        for i in range(len(tokens)):
            a = int(A[i])
            assert tokens[i, a - 1] == data.BRA_EQ and tokens[i, a + 1] == data.BRA_PAD
            assert data.evaluate_brackets(tokens[i, : a - 1].tolist()) == tokens[i, a]
    tokens, mask = data.modular_arithmetic_brackets(300, 5, 40, 256, seed=5, mult=False)
    assert not (tokens == 7).any()


def test_to_io_layout():
    tokens, mask = data.parity(64, 3, 40, 256, seed=6)
    inputs, targets = data.to_io(tokens, mask)
    assert inputs.shape == targets.shape == (64, 255)
    answer_pos = mask.float().argmax(1)
    rows = torch.arange(64)
    assert (targets[rows, answer_pos - 1] == tokens[rows, answer_pos]).all()
    assert ((targets != -1).sum(1) == 1).all()
    assert (inputs[rows, answer_pos] == 0).all()  # lengths <= 40: the answer is inside the input window, masked
    cropped_in, cropped_t = data.crop(inputs, targets)
    assert cropped_in.shape[1] == int(answer_pos.max()) == cropped_t.shape[1]
    assert ((cropped_t != -1).sum(1) == 1).all()


def test_scaled_accuracy():
    g = torch.Generator().manual_seed(0)
    targets = torch.randint(0, 5, (10_000,), generator=g)
    assert abs(data.scaled_accuracy(torch.randn(10_000, 5, generator=g), targets, 5)) <= 0.05
    assert data.scaled_accuracy(torch.nn.functional.one_hot(targets, 5).float(), targets, 5) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="supervised"):
        data.scaled_accuracy(torch.zeros(3, 5), torch.full((3,), -1), 5)


def test_bad_lengths_rejected():
    with pytest.raises(ValueError, match="min_len"):
        data.parity(4, 50, 40)
    with pytest.raises(ValueError, match="task must be one of"):
        data.get_task("dyck")


@pytest.mark.parametrize("subset", ["all", "swaps", "swaps3", "4tokens"])
def test_word_problem_prefix_products(subset):
    perms = data.permutations(5)
    x, y = data.word_problem(50, 24, subset, seed=7)
    sizes = {"all": 120, "swaps": 11, "swaps3": 31, "4tokens": 11}
    assert x.unique().numel() <= sizes[subset]
    for i in range(50):  # independent check: compose the permutation arrays directly
        state = np.arange(5)
        for t in range(24):
            state = perms[x[i, t]][state]
            assert tuple(perms[y[i, t]]) == tuple(state)
    with pytest.raises(ValueError, match="subset"):
        data.word_problem(2, 4, "dihedral")


def test_load_word_problem_csv(tmp_path):
    path = tmp_path / "S5.csv"
    path.write_text("length,input,target\n3,0 5 7,0 5 9\n3,1 2 3,1 4 8\n")
    x, y = data.load_word_problem_csv(path)
    assert x.tolist() == [[0, 5, 7], [1, 2, 3]] and y.shape == (2, 3)
    final = tmp_path / "final.csv"
    final.write_text("seed,input,target\n0,1 2,7\n1,3 4,9\n")
    x, y = data.load_word_problem_csv(final)
    assert y.tolist() == [7, 9]
    bad = tmp_path / "bad.csv"
    bad.write_text("length,input\n3,0 1 2\n")
    with pytest.raises(ValueError, match="'input' and 'target'"):
        data.load_word_problem_csv(bad)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("length,input,target\n3,0 1 2,1\n2,0 1,1\n")
    with pytest.raises(ValueError, match="same length"):
        data.load_word_problem_csv(ragged)
