"""Concept space, phrases and the held-out split of CtD (arXiv 2601.10169, spec section 3.2).

An image has one value per attribute; a basic concept is a feature-value pair (FVP) `(attribute, value)`; a
phrase is a set of FVPs with distinct attributes; an image satisfies a phrase iff it has all its FVPs.
FVPs are numbered globally: attribute `a`, value `v` -> `offset[a] + v`. Numpy only.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

Phrase = frozenset  # a frozenset of (attribute, value) string pairs, e.g. frozenset({("color", "red")})


def phrase_str(phrase: Iterable[tuple[str, str]]) -> str:
    """Canonical text of a phrase: `attr=value` pairs sorted by attribute, joined by `.` (the CBM log format)."""
    return ".".join(f"{a}={v}" for a, v in sorted(phrase))


@dataclass(frozen=True)
class ConceptSpace:
    """Attributes with finite value sets; combos (one value index per attribute) and global FVP indices."""

    attributes: dict[str, list[str]]
    _offsets: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.attributes:
            raise ValueError("a concept space needs at least one attribute")
        for name, values in self.attributes.items():
            if len(values) < 2 or len(set(values)) != len(values):
                raise ValueError(f"attribute {name!r} needs >= 2 distinct values, got {values!r}")
        sizes = [len(v) for v in self.attributes.values()]
        object.__setattr__(self, "_offsets", tuple(int(x) for x in np.cumsum([0, *sizes[:-1]])))

    @property
    def names(self) -> list[str]:
        """Attribute names, in order."""
        return list(self.attributes)

    @property
    def n_attributes(self) -> int:
        """m, the number of attributes."""
        return len(self.attributes)

    @property
    def sizes(self) -> list[int]:
        """|V_a| per attribute."""
        return [len(v) for v in self.attributes.values()]

    @property
    def n_fvp(self) -> int:
        """Number of basic concepts (FVPs), sum of |V_a|."""
        return sum(self.sizes)

    def combos(self) -> np.ndarray:
        """All value-index combinations, (prod |V_a|, m) int64, in lexicographic order."""
        return np.array(list(itertools.product(*[range(s) for s in self.sizes])), dtype=np.int64)

    def fvp_index(self, attribute: int, value: int) -> int:
        """Global index of FVP (attribute index, value index)."""
        return self._offsets[attribute] + value

    def fvps_of(self, combos: np.ndarray) -> np.ndarray:
        """Global FVP indices of each combo, (..., m)."""
        return np.asarray(combos) + np.asarray(self._offsets)

    def fvp_attribute(self, fvp: np.ndarray | int) -> np.ndarray:
        """Attribute index of each global FVP index."""
        return np.searchsorted(np.asarray(self._offsets), np.asarray(fvp), side="right") - 1

    def fvp_name(self, fvp: int) -> str:
        """`attr=value` text of a global FVP index."""
        a = int(self.fvp_attribute(fvp))
        return f"{self.names[a]}={self.attributes[self.names[a]][fvp - self._offsets[a]]}"

    def phrase(self, fvps: Sequence[int]) -> Phrase:
        """The Phrase (frozenset of name pairs) of global FVP indices."""
        out = []
        for f in fvps:
            a = int(self.fvp_attribute(f))
            out.append((self.names[a], self.attributes[self.names[a]][int(f) - self._offsets[a]]))
        if len({a for a, _ in out}) != len(out):
            raise ValueError("a phrase holds at most one value per attribute")
        return frozenset(out)

    def satisfies(self, combos: np.ndarray, fvps: Sequence[int]) -> np.ndarray:
        """Whether each combo (..., m) has every FVP in `fvps` (global indices)."""
        have = self.fvps_of(combos)
        ok = np.ones(have.shape[:-1], dtype=bool)
        for f in fvps:
            ok &= have[..., int(self.fvp_attribute(f))] == f
        return ok


SHAPE_SPACE = {
    "shape": ["circle", "square", "triangle", "cross"],
    "color": ["red", "green", "blue", "yellow"],
    "position": ["top_left", "top_right", "bottom_left", "bottom_right"],
}  # spec 6a: 4 x 4 x 4 = 64 combinations, 12 FVPs


GRID = [f"r{r}c{c}" for r in range(3) for c in range(3)]  # 3 x 3 position grid (spec 6b)


def shape_space(extended: bool = False) -> ConceptSpace:
    """The quick SHAPE/THING concept space: shape x color x position quadrant; `extended` (spec 6b, full): shape x
    color x size {small, large} x position on a 3 x 3 grid (288 combinations, 19 FVPs)."""
    if not extended:
        return ConceptSpace({k: list(v) for k, v in SHAPE_SPACE.items()})
    return ConceptSpace(
        {
            "shape": list(SHAPE_SPACE["shape"]),
            "color": list(SHAPE_SPACE["color"]),
            "size": ["small", "large"],
            "position": list(GRID),
        }
    )


def latin_square_holdout(space: ConceptSpace) -> np.ndarray:
    """Boolean mask over `space.combos()`: combos with (sum of the first m-1 value indices) mod |V| == last index.

    For 3 attributes of 4 values this holds out 16 of 64 combos, a Latin square: every pair of FVPs of two
    attributes occurs in exactly one held-out combo, so every FVP stays in 12 training combos (spec 6a).
    """
    sizes = space.sizes
    if len(set(sizes)) != 1 or space.n_attributes < 2:
        raise ValueError("the Latin-square hold-out needs >= 2 attributes with equal numbers of values")
    combos = space.combos()
    return (combos[:, :-1].sum(axis=1) % sizes[0]) == combos[:, -1]


def sum_mod_holdout(space: ConceptSpace, q: int = 4) -> np.ndarray:
    """Boolean mask over `space.combos()`: combos whose value indices sum to 0 mod q (1/q of them).

    For spaces with unequal value counts. Every FVP stays in training, and every FVP pair occurs in some held-out
    combination as long as another attribute has >= q values.
    """
    if q < 2:
        raise ValueError(f"q must be >= 2, got {q}")
    return space.combos().sum(axis=1) % q == 0
