"""Procedural and substantive fairness metrics of prediction sets (spec §3.5).

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
Procedural: per-group coverage, mean set size, singleton frequency, empty-set rate and their max - min gaps.
Substantive: improvement delta_{t,g} = A_{t,g} - A_{control,g} and disparate impact
Delta_t = max_g delta_{t,g} - min_g delta_{t,g}, with A from the simulated decision-maker (`decision`) on
top-1-filled sets (`evaluate_sets`). The participant-clustered bootstrap CI is our design.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from iclr25.fair_conformal_sets.calibrate import fill_empty_with_top1
from iclr25.fair_conformal_sets.decision import SimulatedDecisionMaker

PROCEDURAL = ("coverage", "size", "singleton", "empty")


def covered(sets: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """1{y_i in C_i} per item."""
    sets = np.asarray(sets, dtype=bool)
    return sets[np.arange(len(sets)), np.asarray(labels)]


def group_report(sets: np.ndarray, labels: np.ndarray, groups: np.ndarray) -> dict[str, Any]:
    """Per-group coverage, mean size, singleton and empty rates, overall values and max - min gaps."""
    sets = np.asarray(sets, dtype=bool)
    labels, groups = np.asarray(labels), np.asarray(groups)
    if not (len(sets) == len(labels) == len(groups)):
        raise ValueError(f"sets, labels and groups differ in length: {len(sets)}, {len(labels)}, {len(groups)}")
    size = sets.sum(axis=1)
    per_item = {"coverage": covered(sets, labels), "size": size, "singleton": size == 1, "empty": size == 0}

    def summary(rows: np.ndarray | slice) -> dict[str, float]:
        return {name: float(np.mean(values[rows])) for name, values in per_item.items()}

    by_group = {_key(g): {"n": int((groups == g).sum()), **summary(groups == g)} for g in np.unique(groups)}
    gaps = {m: max(v[m] for v in by_group.values()) - min(v[m] for v in by_group.values()) for m in PROCEDURAL}
    return {"overall": {"n": len(sets), **summary(slice(None))}, "groups": by_group, "gaps": gaps}


def _key(g: Any) -> Any:
    return g.item() if hasattr(g, "item") else g


def group_means(values: np.ndarray, groups: np.ndarray) -> dict[Any, float]:
    """Mean of a per-item quantity within each group."""
    values, groups = np.asarray(values, dtype=np.float64), np.asarray(groups)
    return {_key(g): float(values[groups == g].mean()) for g in np.unique(groups)}


def group_accuracy(
    dm: SimulatedDecisionMaker, sets: np.ndarray | None, labels: np.ndarray, groups: np.ndarray
) -> list[float]:
    """A_g: the decision model's closed-form accuracy averaged within each group (sorted); `sets=None` = control."""
    return list(group_means(dm.expected_accuracy(sets, labels, groups), groups).values())


def evaluate_sets(
    shown: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    dm: SimulatedDecisionMaker,
    control: list[float] | None = None,
) -> dict[str, Any]:
    """One treatment's metrics: overall coverage and size and per-group procedural metrics (`<m>_g`) of the shown
    sets, the same after top-1 filling (`<m>_filled_g`, filled by `scores`), and the decision model's per-group
    accuracy and adoption on the filled sets; with the `control` accuracy per group also delta_g and Delta."""
    before = group_report(shown, labels, groups)
    filled = fill_empty_with_top1(shown, scores)
    after = group_report(filled, labels, groups)
    gs = list(before["groups"])
    out: dict[str, Any] = {"coverage": before["overall"]["coverage"], "size": before["overall"]["size"]}
    for m in PROCEDURAL:
        out[f"{m}_g"] = [before["groups"][g][m] for g in gs]
        out[f"{m}_filled_g"] = [after["groups"][g][m] for g in gs]
    out["accuracy_g"] = group_accuracy(dm, filled, labels, groups)
    adopt = group_means(dm.expected_adoption(filled, labels, groups), groups)
    out["adoption_g"] = [adopt[g] for g in gs]
    if control is not None:
        delta = np.array(out["accuracy_g"]) - np.array(control)
        out.update(delta_g=delta.tolist(), Delta=float(delta.max() - delta.min()))
    return out


def disparate_impact(accuracy: Mapping[str, Mapping[Any, float]], control: str = "control") -> dict[str, Any]:
    """delta_{t,g} = A_{t,g} - A_{control,g} and Delta_t = max_g delta - min_g delta for every treatment t."""
    if control not in accuracy:
        raise ValueError(f"no control treatment {control!r} among {list(accuracy)}")
    base = accuracy[control]
    delta, big = {}, {}
    for t, acc in accuracy.items():
        if t == control:
            continue
        if set(acc) != set(base):
            raise ValueError(f"treatment {t!r} has groups {sorted(acc)}, control has {sorted(base)}")
        delta[t] = {g: float(acc[g] - base[g]) for g in base}
        big[t] = max(delta[t].values()) - min(delta[t].values())
    return {"delta": delta, "Delta": big}


def bootstrap_disparate_impact(
    hits: np.ndarray,
    counts: np.ndarray,
    treatment: np.ndarray,
    group_names: list,
    *,
    control: str = "control",
    n_boot: int = 1000,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
) -> dict[str, Any]:
    """Delta_t with a participant-clustered percentile bootstrap CI (our design, spec §3.5).

    `hits[p, g]` / `counts[p, g]`: correct and total decisions of participant p on items of group g;
    `treatment[p]`: p's treatment. Participants are resampled with replacement within each treatment, and group
    accuracies are pooled over the resampled participants' trials.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    hits, counts, treatment = np.asarray(hits, float), np.asarray(counts, float), np.asarray(treatment)
    if hits.shape != counts.shape or hits.ndim != 2 or len(treatment) != len(hits) or hits.shape[1] != len(group_names):
        raise ValueError("hits and counts must be (participants, groups) and match treatment and group_names")
    if control not in set(treatment.tolist()):
        raise ValueError(f"no participants in the control treatment {control!r}")

    def accuracies(rows: np.ndarray) -> np.ndarray:  # rows (B, n) -> (B, G)
        with np.errstate(invalid="ignore", divide="ignore"):
            return hits[rows].sum(axis=1) / counts[rows].sum(axis=1)

    samples, point = {}, {}
    for t in np.unique(treatment):
        members = np.flatnonzero(treatment == t)
        point[t] = accuracies(members[None, :])[0]
        samples[t] = accuracies(members[rng.integers(len(members), size=(n_boot, len(members)))])
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    out: dict[str, Any] = {}
    for t in samples:
        if t == control:
            continue
        d_point = point[t] - point[control]
        d_boot = samples[t] - samples[control]  # (B, G)
        big_boot = np.nanmax(d_boot, axis=1) - np.nanmin(d_boot, axis=1)
        out[str(t)] = {
            "Delta": float(np.nanmax(d_point) - np.nanmin(d_point)),
            "Delta_low": float(np.nanquantile(big_boot, lo_q)),
            "Delta_high": float(np.nanquantile(big_boot, hi_q)),
            "delta": {_key(g): float(d) for g, d in zip(group_names, d_point, strict=True)},
            "delta_low": {
                _key(g): float(v) for g, v in zip(group_names, np.nanquantile(d_boot, lo_q, axis=0), strict=True)
            },
            "delta_high": {
                _key(g): float(v) for g, v in zip(group_names, np.nanquantile(d_boot, hi_q, axis=0), strict=True)
            },
        }
    return out
