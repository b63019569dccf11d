"""A simulated decision-maker that replaces the human study (our design, spec §3.6).

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
The paper measures real people; this model only reproduces the mechanism it proposes (gains depend on set
size and singleton frequency). Per trial with true y, group g and shown set C (None = control):
  knows the answer w.p. kappa_g; adopts the set w.p. a(|C|) = clip(1 - beta (|C| - 1), 0, 1);
  adopted & knows: y if y in C, else y w.p. `override` and a uniform member of C otherwise;
  adopted & uncertain: a uniform member of C;  not adopted / control: y if knows, else uniform over K.
Closed form per item (c = 1{y in C}, s = |C| >= 1, a = a(s)):
  A = a [kappa (c + (1 - c) o) + (1 - kappa) c / s] + (1 - a) [kappa + (1 - kappa) / K].
`simulate_study` runs the human study's design (participants x trials per treatment) with this model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass
class SimulatedDecisionMaker:
    """Defaults: kappa = 0.56 (control accuracy ~0.60, like BiosBias control 0.61), o = 0.5, beta = 0.15."""

    K: int
    skill: float | Mapping = 0.56  # kappa, or {group: kappa_g} to model human-side bias
    override: float = 0.5
    adopt_slope: float = 0.15
    _skill: dict = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.K < 2:
            raise ValueError(f"K must be >= 2, got {self.K}")
        values = self.skill.values() if isinstance(self.skill, Mapping) else [self.skill]
        for name, v in [*(("skill", v) for v in values), ("override", self.override)]:
            if not 0 <= v <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {v}")
        if self.adopt_slope < 0:
            raise ValueError(f"adopt_slope must be >= 0, got {self.adopt_slope}")

    def kappa(self, groups: np.ndarray) -> np.ndarray:
        """kappa_{g_i} per item."""
        groups = np.asarray(groups)
        if not isinstance(self.skill, Mapping):
            return np.full(len(groups), float(self.skill))
        missing = set(np.unique(groups).tolist()) - set(self.skill)
        if missing:
            raise ValueError(f"no skill given for groups {sorted(missing)}")
        return np.array([self.skill[g] for g in groups.tolist()], dtype=np.float64)

    def adoption(self, sizes: np.ndarray) -> np.ndarray:
        """a(|C|) = clip(1 - beta (|C| - 1), 0, 1)."""
        return np.clip(1 - self.adopt_slope * (np.asarray(sizes, dtype=np.float64) - 1), 0, 1)

    def _check(self, sets: np.ndarray | None, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if sets is None:
            return None
        sets = np.asarray(sets, dtype=bool)
        if sets.ndim != 2 or sets.shape[1] != self.K or len(sets) != len(labels):
            raise ValueError(f"sets must be (n, {self.K}) for n = {len(labels)} items, got {sets.shape}")
        size = sets.sum(axis=1)
        if (size == 0).any():
            raise ValueError("the decision model needs non-empty sets: fill empty sets with top-1 first")
        return sets, size

    def expected_accuracy(self, sets: np.ndarray | None, labels: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Closed-form P(decision = y) per item (spec §3.6); `sets=None` is the control (no set shown)."""
        labels = np.asarray(labels)
        kappa = self.kappa(groups)
        alone = kappa + (1 - kappa) / self.K
        checked = self._check(sets, labels)
        if checked is None:
            return alone
        sets, size = checked
        c = sets[np.arange(len(labels)), labels].astype(np.float64)
        a = self.adoption(size)
        within = kappa * (c + (1 - c) * self.override) + (1 - kappa) * c / size
        return a * within + (1 - a) * alone

    def expected_adoption(self, sets: np.ndarray, labels: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Closed-form P(decision in C) per item (the study's adoption rate)."""
        labels = np.asarray(labels)
        kappa = self.kappa(groups)
        sets, size = self._check(sets, labels)
        c = sets[np.arange(len(labels)), labels].astype(np.float64)
        a = self.adoption(size)
        within = kappa * (c + (1 - c) * (1 - self.override)) + (1 - kappa)
        return a * within + (1 - a) * (kappa * c + (1 - kappa) * size / self.K)

    def sample(
        self, sets: np.ndarray | None, labels: np.ndarray, groups: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Monte-Carlo decisions (label ids) following the model's rules, one per item."""
        labels = np.asarray(labels)
        n = len(labels)
        knows = rng.random(n) < self.kappa(groups)
        guess = rng.integers(self.K, size=n)
        decision = np.where(knows, labels, guess)
        checked = self._check(sets, labels)
        if checked is None:
            return decision
        sets, size = checked
        adopt = rng.random(n) < self.adoption(size)
        member = np.argmax(np.where(sets, rng.random(sets.shape), -1.0), axis=1)  # uniform member of C
        in_set = sets[np.arange(n), labels]
        keep_y = rng.random(n) < self.override
        adopted = np.where(knows & (in_set | keep_y), labels, member)
        return np.where(adopt, adopted, decision)


def simulate_study(
    dm: SimulatedDecisionMaker,
    shown: Mapping[str, np.ndarray | None],
    labels: np.ndarray,
    groups: np.ndarray,
    *,
    participants: int,
    trials: int,
    n_groups: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A simulated version of the human study: per treatment t (`shown[t]`: non-empty sets of every item, None =
    control) `participants` simulated people each decide `trials` items drawn without replacement (all items if
    fewer). Returns hits (P, n_groups), counts (P, n_groups) and each participant's treatment (P,), the input of
    `metrics.bootstrap_disparate_impact`."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    hits, counts, treatment = [], [], []
    for name, C in shown.items():
        for _ in range(participants):
            items = rng.choice(len(labels), size=min(trials, len(labels)), replace=False)
            y, g = labels[items], groups[items]
            right = dm.sample(None if C is None else C[items], y, g, rng) == y
            hits.append(np.bincount(g, weights=right, minlength=n_groups))
            counts.append(np.bincount(g, minlength=n_groups))
            treatment.append(name)
    return np.array(hits), np.array(counts), np.array(treatment)
