"""Environments of SA-GFN (Madan et al., "Towards Improving Exploration through Sibling Augmented GFlowNets", ICLR 2025).

HyperGrid (Bengio et al. 2021) with the standard reward and the sparse GAFN reward (Pan et al. 2023), and an
autoregressive bit-sequence task (Malkin et al. 2022), spec §5 and §6b. Every method works on a whole batch of
states as one integer tensor; nothing loops over trajectories in Python.

Interface shared by the environments (the GFlowNet code relies only on it):
    s0(n) -> (n, D) long            initial states
    forward_mask(x) -> (n, A) bool  valid forward actions; the last action, index A - 1, is "stop"
    backward_mask(x) -> (n, A - 1)  valid backward actions (the forward action that led to x from each parent)
    step(x, a) -> (n, D)            apply non-stop forward actions
    log_n_parents(x) -> (n,)        log of the number of parents (uniform P_B = -log_n_parents)
    encode(x) -> (n, input_dim)     network input (K-hot / one-hot)
    log_reward(x) -> (n,)           extrinsic log-reward of terminal states
"""

from __future__ import annotations

import math

import torch

_MARGIN = 1e-12  # strict-inequality margin of the standard reward (torchgfn convention, spec §5)


class HyperGrid:
    """The D-dimensional grid {0..H-1}^D; actions increment one coordinate or stop (spec §5)."""

    def __init__(
        self,
        ndim: int = 2,
        height: int = 8,
        reward: str = "standard",
        R0: float = 1e-3,
        R1: float = 0.5,
        R2: float = 2.0,
        eps: float = 1e-6,
        device: str | torch.device = "cpu",
    ) -> None:
        if ndim < 1:
            raise ValueError(f"ndim must be >= 1, got {ndim}")
        if height < 3:
            raise ValueError(f"height must be >= 3, got {height}")
        if reward not in ("standard", "sparse"):
            raise ValueError(f"reward must be 'standard' or 'sparse', got {reward!r}")
        if reward == "standard" and R0 <= 0:
            raise ValueError(f"R0 must be > 0 (log-rewards), got {R0}")
        if reward == "sparse" and not 0 < eps < 1:
            raise ValueError(f"eps must be in (0, 1), got {eps}")
        self.ndim, self.height, self.reward_kind = ndim, height, reward
        self.R0, self.R1, self.R2, self.eps = R0, R1, R2, eps
        self.device = torch.device(device)
        self.n_actions = ndim + 1  # increments + stop
        self.state_dim = ndim
        self.input_dim = ndim * height
        self.max_len = ndim * (height - 1) + 1  # longest trajectory, in actions (stop included)
        self.n_states = height**ndim
        self.strides = torch.tensor([height ** (ndim - 1 - d) for d in range(ndim)], device=self.device)
        self._eye = torch.eye(height, device=self.device)  # lookup table for the K-hot encoding
        self._unit = torch.eye(ndim, dtype=torch.long, device=self.device)  # increments

    def __repr__(self) -> str:
        return f"HyperGrid(ndim={self.ndim}, height={self.height}, reward={self.reward_kind!r})"

    # ----------------------------------------------------------------------------------------- dynamics
    def s0(self, n: int) -> torch.Tensor:
        """`n` copies of the origin."""
        return torch.zeros(n, self.ndim, dtype=torch.long, device=self.device)

    def forward_mask(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D + 1) bool: increment d allowed below the border; stop always allowed."""
        stop = torch.ones(*x.shape[:-1], 1, dtype=torch.bool, device=x.device)
        return torch.cat([x < self.height - 1, stop], dim=-1)

    def backward_mask(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) bool: x came from decrementing coordinate d only if x_d > 0."""
        return x > 0

    def step(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """Increment coordinate `a` (< D) of each state."""
        return x + self._unit[a]

    def log_n_parents(self, x: torch.Tensor) -> torch.Tensor:
        """log(number of non-zero coordinates); -inf at the origin (never used there)."""
        return (x > 0).sum(-1).double().log().to(torch.get_default_dtype())

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """K-hot encoding: one one-hot of size H per coordinate, concatenated."""
        return self._eye.to(torch.get_default_dtype())[x].flatten(-2)

    # ----------------------------------------------------------------------------------------- rewards
    def reward(self, x: torch.Tensor) -> torch.Tensor:
        """Extrinsic reward R(x) (standard: Bengio et al. 2021; sparse: GAFN targets)."""
        if self.reward_kind == "standard":
            a = (x.double() / (self.height - 1) - 0.5).abs()
            r1 = (a > 0.25 + _MARGIN).all(-1)
            r2 = ((a > 0.3 + _MARGIN) & (a < 0.4 - _MARGIN)).all(-1)
            r = self.R0 + self.R1 * r1.double() + self.R2 * r2.double()
        else:
            r = torch.where(self.mode_mask(x), 1.0, self.eps).double()
        return r.to(torch.get_default_dtype())

    def log_reward(self, x: torch.Tensor) -> torch.Tensor:
        """log R(x)."""
        return self.reward(x).log()

    # ----------------------------------------------------------------------------------------- enumeration
    def all_states(self) -> torch.Tensor:
        """(H^D, D) every state, in row-major order (index = sum_d x_d H^(D-1-d))."""
        grids = torch.meshgrid(*[torch.arange(self.height, device=self.device)] * self.ndim, indexing="ij")
        return torch.stack([g.reshape(-1) for g in grids], dim=-1)

    def to_index(self, x: torch.Tensor) -> torch.Tensor:
        """Row-major flat index of each state."""
        return (x * self.strides).sum(-1)

    def true_distribution(self) -> torch.Tensor:
        """R(x) / Z over `all_states()`, float64."""
        r = self.reward(self.all_states()).double()
        return r / r.sum()

    @property
    def log_partition(self) -> float:
        """log Z = log sum_x R(x)."""
        return math.log(self.reward(self.all_states()).double().sum().item())

    # ----------------------------------------------------------------------------------------- modes
    def mode_mask(self, x: torch.Tensor) -> torch.Tensor:
        """True on mode states: R >= R0 + R1 + R2 (standard) or the 2^D - 1 targets (sparse)."""
        if self.reward_kind == "standard":
            return self.reward(x) >= self.R0 + self.R1 + self.R2 - 1e-9
        edge = (x == 1) | (x == self.height - 2)
        return edge.all(-1) & ~(x == 1).all(-1)

    def mode_region(self, x: torch.Tensor) -> torch.Tensor:
        """Which mode region each state lies in (corner bits, 0 .. 2^D - 1); meaningful on mode states."""
        bits = (x > (self.height - 1) / 2).long()
        return (bits * (2 ** torch.arange(self.ndim - 1, -1, -1, device=x.device))).sum(-1)

    @property
    def n_modes(self) -> int:
        """2^D mode regions (standard) or 2^D - 1 targets (sparse)."""
        return 2**self.ndim if self.reward_kind == "standard" else 2**self.ndim - 1


class BitSequence:
    """Bit strings of `length` bits built left to right one `word_size`-bit word at a time (a tree DAG).

    Reward exp(-beta * min Hamming distance to the modes) (spec §6b). A state is the vector of word ids,
    with `2**word_size` marking an empty slot; stop is allowed (and forced) only when every slot is full.
    """

    def __init__(
        self, length: int = 120, word_size: int = 8, modes: torch.Tensor | None = None, beta: float = 1.0, **kw: int
    ) -> None:
        if length <= 0 or word_size <= 0 or length % word_size:
            raise ValueError(f"length ({length}) must be a positive multiple of word_size ({word_size})")
        self.length, self.word_size, self.beta = length, word_size, beta
        self.n_words = length // word_size
        self.vocab = 2**word_size
        self.device = torch.device("cpu")
        if modes is None:
            gen = torch.Generator().manual_seed(kw.get("mode_seed", 0))
            modes = torch.randint(0, 2, (kw.get("n_modes", 60), length), generator=gen)
        modes = torch.as_tensor(modes, dtype=torch.long)
        if modes.ndim != 2 or modes.shape[1] != length or not ((modes == 0) | (modes == 1)).all():
            raise ValueError(f"modes must be a (M, {length}) tensor of 0/1 bits")
        self.modes = modes
        self.n_actions = self.vocab + 1
        self.state_dim = self.n_words
        self.input_dim = self.n_words * (self.vocab + 1)
        self.max_len = self.n_words + 1
        self._pow = 2 ** torch.arange(word_size - 1, -1, -1)

    def s0(self, n: int) -> torch.Tensor:
        """`n` empty sequences."""
        return torch.full((n, self.n_words), self.vocab, dtype=torch.long)

    def n_filled(self, x: torch.Tensor) -> torch.Tensor:
        """Number of words placed so far."""
        return (x < self.vocab).sum(-1)

    def forward_mask(self, x: torch.Tensor) -> torch.Tensor:
        """Any word while not full; only stop when full."""
        full = (self.n_filled(x) == self.n_words).unsqueeze(-1)
        words = (~full).expand(*x.shape[:-1], self.vocab)
        return torch.cat([words, full], dim=-1)

    def backward_mask(self, x: torch.Tensor) -> torch.Tensor:
        """The single parent removes the last word: one valid backward action (that word)."""
        k = (self.n_filled(x) - 1).clamp(min=0)
        last = x.gather(-1, k.unsqueeze(-1)).clamp(max=self.vocab - 1)
        return torch.nn.functional.one_hot(last.squeeze(-1), self.vocab).bool()

    def step(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """Write word `a` in the first empty slot (full rows are returned unchanged)."""
        pos = self.n_filled(x).clamp(max=self.n_words - 1).unsqueeze(-1)
        full = (self.n_filled(x) == self.n_words).unsqueeze(-1)
        return torch.where(full, x, x.scatter(-1, pos, a.unsqueeze(-1)))

    def log_n_parents(self, x: torch.Tensor) -> torch.Tensor:
        """A tree: one parent."""
        return torch.zeros(x.shape[:-1], device=x.device)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """One-hot of each slot over vocab + empty."""
        return torch.nn.functional.one_hot(x, self.vocab + 1).flatten(-2).to(torch.get_default_dtype())

    def to_bits(self, x: torch.Tensor) -> torch.Tensor:
        """(n, length) bits of complete sequences."""
        return ((x.unsqueeze(-1) // self._pow) % 2).flatten(-2)

    def min_distance(self, x: torch.Tensor) -> torch.Tensor:
        """Minimum Hamming distance of each complete sequence to the mode set."""
        bits = self.to_bits(x)
        return (bits.unsqueeze(-2) != self.modes).sum(-1).min(-1).values

    def log_reward(self, x: torch.Tensor) -> torch.Tensor:
        """log R(x) = -beta * min Hamming distance."""
        return -self.beta * self.min_distance(x).to(torch.get_default_dtype())

    def modes_found(self, x: torch.Tensor, threshold: int) -> int:
        """Number of modes with a sample within Hamming distance `threshold`."""
        bits = self.to_bits(x)
        d = (bits.unsqueeze(-2) != self.modes).sum(-1)  # (n, M)
        return int((d <= threshold).any(0).sum())
