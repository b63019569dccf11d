"""Tasks of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues" (ICLR 2025,
arXiv 2411.12537): the Chomsky-hierarchy tasks of §5.1 (parity, modular arithmetic without and with brackets, in the
official token layouts), the S5 word problems of §5.2, the mask-and-shift transform, the scaled-accuracy metric of
Table 3, independent evaluators, and a loader for word-problem CSV files (Merrill et al. format).

Every generator returns `(tokens int64 [B, context], mask bool [B, context])` with exactly one supervised position per
sequence (the answer). Sequences are drawn with a NumPy generator; the official per-sample seeding (`base_seed + i`) is
not reproduced bit for bit (see the README); the bracket sampler takes its random integers from blocks of
uniforms, which keeps the per-sample recursion fast.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

PAD = 0
PARITY_VOCAB = 3  # 0 pad, 1, 2
MOD_VOCAB = 10  # 0 pad, 1 '+', 2 '-', 3 '*', 4 '=', 5..9 digits 0..4
MOD_OPS = {1: "+", 2: "-", 3: "*"}
BRA_VOCAB = 12  # digits 0..4 = ids 0..4, '+' 5, '-' 6, '*' 7, '(' 8, ')' 9, '=' 10, pad 11
BRA_SYMBOLS = {5: "+", 6: "-", 7: "*", 8: "(", 9: ")"}
BRA_EQ, BRA_PAD = 10, 11


def _rng(seed: int | np.random.Generator) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _check_lengths(min_len: int, max_len: int, context_length: int, least: int) -> None:
    if not least <= min_len <= max_len <= context_length:
        raise ValueError(
            f"need {least} <= min_len <= max_len <= context_length, got min_len={min_len}, max_len={max_len}, "
            f"context_length={context_length}"
        )


def parity(
    batch_size: int, min_len: int = 3, max_len: int = 40, context_length: int = 256, seed: int | np.random.Generator = 0
) -> tuple[Tensor, Tensor]:
    """Parity (vocab 3): L ~ U{min..max}; tokens 0..L-2 in {1, 2}; answer at L-1 = 1 + (#2s mod 2); pad 0 after."""
    _check_lengths(min_len, max_len, context_length, 2)
    rng = _rng(seed)
    tokens = rng.integers(1, 3, size=(batch_size, context_length))
    lengths = rng.integers(min_len, max_len + 1, size=batch_size)
    pos = np.arange(context_length)[None]
    body = pos < (lengths[:, None] - 1)
    tokens = np.where(body, tokens, PAD)
    answer = 1 + ((tokens == 2).sum(1) % 2)
    tokens[np.arange(batch_size), lengths - 1] = answer
    mask = pos == (lengths[:, None] - 1)
    return torch.from_numpy(tokens).long(), torch.from_numpy(mask)


def modular_arithmetic(
    batch_size: int, min_len: int = 3, max_len: int = 40, context_length: int = 256, seed: int | np.random.Generator = 0
) -> tuple[Tensor, Tensor]:
    """Modular arithmetic without brackets (vocab 10): d op d op ... d = answer, '*' binds tighter, mod 5.

    Odd length L = 2r - 1 with r ~ U{(min+1)//2 .. (max+1)//2}; '=' at L-2, answer 5 + value at L-1.
    """
    _check_lengths(min_len, max_len, context_length, 3)
    rng = _rng(seed)
    digits = rng.integers(0, 5, size=(batch_size, context_length))
    ops = rng.integers(1, 4, size=(batch_size, context_length))
    r = rng.integers((min_len + 1) // 2, (max_len + 1) // 2 + 1, size=batch_size)
    r = np.maximum(r, 2)
    lengths = 2 * r - 1
    n_digits = r - 1
    pos = np.arange(context_length)[None]
    tokens = np.where(pos % 2 == 0, digits + 5, ops)
    # evaluate left to right with precedence: state (sum of finished terms, current product term), all mod 5
    total = np.zeros(batch_size, dtype=np.int64)
    term = digits[:, 0].copy()
    for j in range(1, int(n_digits.max())):
        active = j < n_digits
        op, d = ops[:, 2 * j - 1], digits[:, 2 * j]
        is_mul = op == 3
        new_total = np.where(is_mul, total, (total + term) % 5)
        new_term = np.where(is_mul, (term * d) % 5, np.where(op == 1, d, (-d) % 5))
        total, term = np.where(active, new_total, total), np.where(active, new_term, term)
    value = (total + term) % 5
    tokens = np.where(pos < lengths[:, None] - 2, tokens, PAD)
    rows = np.arange(batch_size)
    tokens[rows, lengths - 2] = 4  # '='
    tokens[rows, lengths - 1] = 5 + value
    mask = pos == (lengths[:, None] - 1)
    return torch.from_numpy(tokens).long(), torch.from_numpy(mask)


def _bracket_expression(n: int, draw: Callable[[int], int], mult: bool) -> tuple[list[int], int]:
    """A random bracketed expression of exactly n tokens and its value mod 5; draw(k) is uniform on {0..k-1}."""
    if n < 5:
        d = draw(5)
        return [[d], [6, d], [8, d, 9], [8, 6, d, 9]][n - 1], (d if n in (1, 3) else (-d) % 5)
    left = 1 + draw(n - 4)  # U{1..n-4}
    lt, lv = _bracket_expression(left, draw, mult)
    rt, rv = _bracket_expression(n - left - 3, draw, mult)
    op = draw(3 if mult else 2)
    value = [(lv + rv) % 5, (lv - rv) % 5, (lv * rv) % 5][op]
    return [8, *lt, 5 + op, *rt, 9], value


def _uniform_ints(rng: np.random.Generator, block: int = 4_096) -> Callable[[int], int]:
    """draw(k) uniform on {0..k-1} from uniforms drawn in blocks (scalar NumPy calls dominate the bracket sampler)."""
    buffer: list[float] = []

    def draw(k: int) -> int:
        if not buffer:
            buffer.extend(rng.random(block).tolist()[::-1])
        return min(int(buffer.pop() * k), k - 1)

    return draw


def modular_arithmetic_brackets(
    batch_size: int,
    min_len: int = 3,
    max_len: int = 40,
    context_length: int = 256,
    seed: int | np.random.Generator = 0,
    mult: bool = True,
) -> tuple[Tensor, Tensor]:
    """Modular arithmetic with brackets (vocab 12): expression of length L-3, '=' at L-3, answer at L-2, pad 11."""
    _check_lengths(min_len, max_len, context_length, 1)
    if max_len < 5 or context_length < 5:
        raise ValueError(f"brackets need max_len >= 5 and context_length >= 5, got {max_len}, {context_length}")
    rng = _rng(seed)
    lengths = np.maximum(rng.integers(min_len, max_len + 1, size=batch_size), 5)  # L = max(U{min..max}, 5)
    draw = _uniform_ints(rng)
    tokens = np.full((batch_size, context_length), BRA_PAD, dtype=np.int64)
    mask = np.zeros((batch_size, context_length), dtype=bool)
    for i, L in enumerate(lengths.tolist()):
        expr, value = _bracket_expression(L - 3, draw, mult)
        tokens[i, : L - 1] = [*expr, BRA_EQ, value]
        mask[i, L - 2] = True
    return torch.from_numpy(tokens), torch.from_numpy(mask)


def to_io(tokens: Tensor, mask: Tensor, pad_id: int = PAD) -> tuple[Tensor, Tensor]:
    """Official mask-and-shift: input = tokens with the answer replaced by pad, target = answer else -1; shift by one."""
    inputs = torch.where(mask, torch.full_like(tokens, pad_id), tokens)
    targets = torch.where(mask, tokens, torch.full_like(tokens, -1))
    return inputs[:, :-1], targets[:, 1:]


def crop(inputs: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    """Drop the positions after the last supervised one (causal models never see them)."""
    supervised = (targets != -1).any(0).nonzero()
    end = int(supervised.max()) + 1 if len(supervised) else inputs.shape[1]
    return inputs[:, :end], targets[:, :end]


def scaled_accuracy(logits: Tensor, targets: Tensor, num_answers: int) -> float:
    """(acc - 1/C) / (1 - 1/C) over supervised positions (target != -1), argmax over the whole vocabulary."""
    if num_answers < 2:
        raise ValueError(f"num_answers must be >= 2, got {num_answers}")
    sel = targets != -1
    if not sel.any():
        raise ValueError("no supervised positions (every target is -1)")
    acc = (logits.argmax(-1)[sel] == targets[sel]).float().mean().item()
    return (acc - 1 / num_answers) / (1 - 1 / num_answers)


# ---------------------------------------------------------------------------------------------------------------------
# Independent evaluators (used by the tests to check the generators): they read the tokens, not the generator state.


def evaluate_parity(tokens: list[int]) -> int:
    """Answer token of a parity body (tokens in {1, 2}): 1 + (number of 2s mod 2)."""
    return 1 + sum(t == 2 for t in tokens) % 2


def evaluate_mod_arith(tokens: list[int]) -> int:
    """Answer token of a bracket-free expression (ids of `MOD_VOCAB`), via Python's own precedence rules, mod 5."""
    text = "".join(str(t - 5) if t >= 5 else MOD_OPS[t] for t in tokens)
    return 5 + eval(text, {"__builtins__": {}}) % 5  # only digits and + - * reach eval


def evaluate_brackets(tokens: list[int]) -> int:
    """Answer token (the digit id) of a bracketed expression (ids of `BRA_VOCAB`), evaluated by a recursive parser."""
    pos = 0

    def atom() -> int:
        nonlocal pos
        t = tokens[pos]
        pos += 1
        if t == 6:  # unary minus
            return -atom() % 5
        if t == 8:
            value = expr()
            if tokens[pos] != 9:
                raise ValueError("unbalanced brackets")
            pos += 1
            return value
        if 0 <= t <= 4:
            return t
        raise ValueError(f"unexpected token {t} at {pos - 1}")

    def expr() -> int:
        nonlocal pos
        value = atom()
        if pos < len(tokens) and tokens[pos] in (5, 6, 7):
            op = tokens[pos]
            pos += 1
            rhs = atom()
            value = {5: value + rhs, 6: value - rhs, 7: value * rhs}[op] % 5
        return value

    value = expr()
    if pos != len(tokens):
        raise ValueError("trailing tokens after the expression")
    return value


# ---------------------------------------------------------------------------------------------------------------------
# S5 word problems (§5.2): tokens are group elements, the target at each position is the prefix product.


def permutations(n: int = 5) -> np.ndarray:
    """All n! permutations as rows (index 0 is the identity)."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64)


def composition_table(perms: np.ndarray) -> np.ndarray:
    """table[i, j] = index of "apply perm j, then perm i" (i ∘ j)."""
    index = {tuple(p): i for i, p in enumerate(perms)}
    return np.array([[index[tuple(pi[pj])] for pj in perms] for pi in perms], dtype=np.int64)


def _moved(perms: np.ndarray) -> np.ndarray:
    return (perms != np.arange(perms.shape[1])[None]).sum(1)


WORD_SUBSETS = ("all", "swaps", "swaps3", "4tokens")


def word_problem(
    n: int, length: int, subset: str = "all", seed: int | np.random.Generator = 0, group: str = "S5"
) -> tuple[Tensor, Tensor]:
    """S5 word problem: inputs (n, length) element ids, targets (n, length) prefix products p_t = g_t ∘ p_{t-1}.

    subset: "all" (S5), "swaps" (identity + transpositions), "swaps3" (+ 3-cycles), "4tokens" (each uniform S5 element
    written as 4 tokens: its decomposition into transpositions, padded with the identity; `length` counts tokens).
    """
    if group != "S5":
        raise ValueError(f"group must be 'S5', got {group!r}")
    if subset not in WORD_SUBSETS:
        raise ValueError(f"subset must be one of {', '.join(WORD_SUBSETS)}; got {subset!r}")
    if n < 1 or length < 1:
        raise ValueError(f"n and length must be >= 1, got n={n}, length={length}")
    rng = _rng(seed)
    perms = permutations(5)
    table = composition_table(perms)
    moved = _moved(perms)
    if subset == "4tokens":
        if length % 4:
            raise ValueError(f"with subset '4tokens' the length must be a multiple of 4, got {length}")
        decomp = _transposition_words(perms)
        elements = rng.integers(0, len(perms), size=(n, length // 4))
        inputs = decomp[elements].reshape(n, length)
    else:
        allowed = {"all": moved >= 0, "swaps": moved <= 2, "swaps3": moved <= 3}[subset]
        alphabet = np.flatnonzero(allowed)
        inputs = alphabet[rng.integers(0, len(alphabet), size=(n, length))]
    targets = np.empty_like(inputs)
    state = np.zeros(n, dtype=np.int64)
    for t in range(length):
        state = table[inputs[:, t], state]
        targets[:, t] = state
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def _transposition_words(perms: np.ndarray) -> np.ndarray:
    """For each permutation, 4 element ids (transpositions or identity) whose product (left to right) equals it."""
    index = {tuple(p): i for i, p in enumerate(perms)}
    table = composition_table(perms)
    words = np.zeros((len(perms), 4), dtype=np.int64)
    for i, p in enumerate(perms):
        current, swaps = list(p), []
        for pos in range(5):  # selection sort: p = s_1 ∘ ... ∘ s_k with at most 4 swaps
            j = current.index(pos) if current[pos] != pos else pos
            if j != pos:
                current[pos], current[j] = current[j], current[pos]
                s = list(range(5))
                s[pos], s[j] = s[j], s[pos]
                swaps.append(index[tuple(s)])
        word = [0] * (4 - len(swaps)) + swaps[::-1]
        state = 0
        for g in word:
            state = table[g, state]
        if state != i:  # fall back on the other composition order
            word = [0] * (4 - len(swaps)) + swaps
        words[i] = word
    return words


def load_word_problem_csv(path: str | Path) -> tuple[Tensor, Tensor]:
    """Read a Merrill et al. word-problem CSV (`length|seed,input,target`; space-separated ints).

    Returns inputs (B, T) and targets (B, T) for prefix-scan targets or (B,) for final-product targets.
    """
    path = Path(path)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        if "input" not in fields or "target" not in fields:
            raise ValueError(f"{path}: need 'input' and 'target' columns, found {fields}")
        rows = [(r["input"], r["target"]) for r in reader]
    if not rows:
        raise ValueError(f"{path}: no rows")
    try:
        inputs = [[int(x) for x in a.split()] for a, _ in rows]
        targets = [[int(x) for x in b.split()] for _, b in rows]
    except ValueError as e:
        raise ValueError(f"{path}: input and target must be space-separated integers ({e})") from None
    if len({len(x) for x in inputs}) != 1:
        raise ValueError(f"{path}: every input must have the same length")
    if all(len(t) == 1 for t in targets):
        return torch.tensor(inputs), torch.tensor([t[0] for t in targets])
    if any(len(t) != len(x) for t, x in zip(targets, inputs, strict=True)):
        raise ValueError(f"{path}: targets must be one integer or as long as the input")
    return torch.tensor(inputs), torch.tensor(targets)


# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """A Chomsky-hierarchy task: vocabulary, number of answer classes C (for scaled accuracy), lengths."""

    name: str
    vocab_size: int
    num_answers: int
    train_lengths: tuple[int, int] = (3, 40)
    test_lengths: tuple[int, int] = (40, 256)
    context_length: int = 256

    def sample(
        self, batch_size: int, lengths: tuple[int, int], seed: int | np.random.Generator, mult: bool = True
    ) -> tuple[Tensor, Tensor]:
        """(inputs, targets) after `to_io`, cropped to the last supervised position."""
        lo, hi = lengths
        if self.name == "parity":
            tokens, mask = parity(batch_size, lo, hi, self.context_length, seed)
        elif self.name == "mod":
            tokens, mask = modular_arithmetic(batch_size, lo, hi, self.context_length, seed)
        else:
            tokens, mask = modular_arithmetic_brackets(batch_size, lo, hi, self.context_length, seed, mult)
        return crop(*to_io(tokens, mask))


TASKS = {
    "parity": Task("parity", PARITY_VOCAB, 2),
    "mod": Task("mod", MOD_VOCAB, 5),
    "modbra": Task("modbra", BRA_VOCAB, 5),
}


def get_task(name: str) -> Task:
    """The task called `name` (parity, mod, modbra)."""
    if name not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {name!r}")
    return TASKS[name]
