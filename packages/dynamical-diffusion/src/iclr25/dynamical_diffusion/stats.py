"""Paired comparison of two models over seeds: the per-seed differences, Student's t and an exact sign-flip test.

Every model of a seed shares its data, initial weights, batches and sampling noise, so the seed-by-seed difference
of a metric removes most of the seed-to-seed variation. The test is decided by the exact two-sided sign-flip
(randomisation) p-value of the mean difference, which needs no normality assumption; with several comparisons
against one baseline, Holm's step-down correction keeps the family-wise error at the stated level.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MAX_EXACT = 16  # seeds up to which all 2^n sign patterns are enumerated (65,536 patterns)
N_RANDOM = 100_000  # sign patterns drawn above that


def sign_flip_pvalue(diffs: Sequence[float], seed: int = 0) -> float:
    """Two-sided p-value of mean(diffs) = 0 under random signs: share of sign patterns with |mean| >= observed.

    Exact (all 2^n patterns) for n <= 16, else `N_RANDOM` random patterns (with the observed one counted).
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 1 or d.size < 1:
        raise ValueError(f"diffs must be a non-empty 1-D sequence, got shape {d.shape}")
    observed = abs(d.mean())
    if d.size <= MAX_EXACT:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        extreme = np.abs(signs @ d / d.size) >= observed * (1 - 1e-12)
        return float(extreme.mean())
    signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(N_RANDOM, d.size))
    extreme = np.abs(signs @ d / d.size) >= observed * (1 - 1e-12)
    return float((extreme.sum() + 1) / (N_RANDOM + 1))


def paired_comparison(baseline: Sequence[float], other: Sequence[float]) -> dict[str, float | int]:
    """Paired statistics of `baseline - other` (positive: `other` is lower, i.e. better for an error metric)."""
    b, o = np.asarray(baseline, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if b.shape != o.shape or b.ndim != 1:
        raise ValueError(f"baseline and other must be 1-D of equal length, got {b.shape} and {o.shape}")
    d = b - o
    n = d.size
    sd = float(d.std(ddof=1)) if n > 1 else float("nan")
    constant = n < 2 or sd <= 1e-12 * float(np.abs(d).max())  # t is undefined (or rounding noise) then
    t = float("nan") if constant else float(d.mean() / (sd / math.sqrt(n)))
    return {
        "n": n,
        "mean_diff": float(d.mean()),
        "sd_diff": sd,
        "t": t,
        "df": n - 1,
        "p_sign_flip": sign_flip_pvalue(d),
        "ratio_of_means": float(o.mean() / b.mean()),
        "wins": int((o < b).sum()),
    }


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (same order as given), each capped at 1."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


# Config fields that decide a model's numbers on a seed; the others choose which models and seeds a run has.
RUN_ONLY_FIELDS = (
    "seeds",
    "workers",
    "threads",
    "ablation_ratios",
    "noise_ablation",
    "clip_ablation",
    "checkpoint_every",
)
BASELINE = "dpm"
DEFAULT = "dydiff"  # the default DyDiff (r = 0.5, dependent noise): the ablations' second baseline
ALPHA = 0.05  # stated before the runs: significant when the Holm-adjusted two-sided sign-flip p is below this


def merge_seed_rows(reports: Sequence[dict]) -> tuple[list[dict], list[str]]:
    """Per-seed rows of several `results.json` documents of the same setting, by seed; returns the rows and every
    model (DPM first; a model may miss on some seeds). Refuses runs whose settings differ and seeds whose shared
    models disagree."""
    if not reports:
        raise ValueError("need at least one results.json")
    setting = [{k: v for k, v in r["config"].items() if k not in RUN_ONLY_FIELDS} for r in reports]
    for other in setting[1:]:
        diff = sorted(k for k in set(setting[0]) | set(other) if setting[0].get(k) != other.get(k))
        if diff:
            raise ValueError(f"the runs differ in {diff}: their seeds are not comparable")
    rows: dict[int, dict] = {}
    for report in reports:
        for row in report["metrics"]["per_seed"]:
            seed = int(row["seed"])
            if seed in rows:
                shared = [m for m in row if isinstance(row[m], dict) and m in rows[seed]]
                if any(row[m]["crps"] != rows[seed][m]["crps"] for m in shared):
                    raise ValueError(f"seed {seed} gives different CRPS in two runs of the same setting")
                rows[seed] = {**row, **rows[seed]}
            else:
                rows[seed] = dict(row)
    ordered = [rows[s] for s in sorted(rows)]
    if any(BASELINE not in row for row in ordered):
        raise ValueError(f"every seed needs the baseline {BASELINE!r}")
    models = list(dict.fromkeys(m for row in ordered for m, v in row.items() if isinstance(v, dict)))
    return ordered, [BASELINE] + [m for m in models if m != BASELINE]


def _family(rows: Sequence[dict], names: Sequence[str], base: str, metric: str) -> dict:
    """Each of `names` against `base` on the seeds that have both, with Holm-adjusted p-values over `names`."""
    out = {}
    for m in names:
        have = [row for row in rows if m in row and base in row]
        out[m] = paired_comparison([r[base][metric] for r in have], [r[m][metric] for r in have])
        out[m]["seeds"] = [int(r["seed"]) for r in have]
    for m, p in zip(names, holm([out[m]["p_sign_flip"] for m in names]), strict=True):
        out[m]["p_holm"] = p
        out[m]["significant"] = p < ALPHA
    return out


def paired_report(rows: Sequence[dict], models: Sequence[str], metric: str = "crps") -> dict:
    """Every model against DPM on the seeds that have it (Holm over these comparisons), and every ablation against
    the default DyDiff (a second family, Holm over the ablations); significant when Holm p < 0.05."""
    names = [m for m in models if m != BASELINE]
    ablations = [m for m in names if m != DEFAULT]
    result = {
        "seeds": [int(row["seed"]) for row in rows],
        "metric": metric,
        "per_seed": {m: [row[m][metric] if m in row else None for row in rows] for m in models},
        "vs_dpm": _family(rows, names, BASELINE, metric),
    }
    if DEFAULT in names and ablations:
        result["vs_dydiff"] = _family(rows, ablations, DEFAULT, metric)
    return result


def paired_markdown(result: dict) -> str:
    """The paired comparison as Markdown: one row per seed, then the tests (against DPM, then against DyDiff)."""
    models = list(result["per_seed"])
    lines = [f"Paired comparison over seeds {result['seeds']} ({result['metric']}, lower is better).", ""]
    lines += ["| seed | " + " | ".join(models) + " |", "|---" * (len(models) + 1) + "|"]
    for i, seed in enumerate(result["seeds"]):
        cells = [result["per_seed"][m][i] for m in models]
        lines.append(f"| {seed} | " + " | ".join("—" if v is None else f"{v:.4f}" for v in cells) + " |")
    means = [np.mean([v for v in result["per_seed"][m] if v is not None]) for m in models]
    lines.append("| mean | " + " | ".join(f"{v:.4f}" for v in means) + " |")
    for key, base, label in (("vs_dpm", BASELINE, "DPM"), ("vs_dydiff", DEFAULT, "DyDiff")):
        if key not in result:
            continue
        lines += [
            "",
            f"| vs {label} | seeds | mean ratio | mean diff ({base} - model) | sd | t | better on | sign-flip p "
            "| Holm p |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for m, p in result[key].items():
            lines.append(
                f"| {m} | {p['n']} | {p['ratio_of_means']:.3f} | {p['mean_diff']:.5f} | {p['sd_diff']:.5f} | "
                f"{p['t']:.2f} | {p['wins']}/{p['n']} | {p['p_sign_flip']:.4f} | {p['p_holm']:.4f} |"
            )
    return "\n".join(lines) + "\n"


def write_paired(
    runs: Sequence[str | Path],
    out: str | Path,
    metric: str = "crps",
    models: Sequence[str] | None = None,
    overwrite: bool = False,
) -> dict:
    """Merge the per-seed rows of run folders (or results.json files) and write paired.json and paired.md;
    `models` keeps only these DyDiff variants (Holm then runs over them alone). Both files are new, or with
    `overwrite` ones an earlier call wrote (the guarded writer's rule)."""
    import json

    from iclr25.shared.results import atomic_write_json, atomic_write_text
    from iclr25.shared.safeload import reading_file

    docs = []
    for run in runs:
        path = Path(run) / "results.json" if Path(run).is_dir() else Path(run)
        if not path.is_file():
            raise ValueError(f"{path} does not exist")
        with reading_file(path, "results.json written by `reproduce`"):
            docs.append(json.loads(path.read_text()))
    rows, found = merge_seed_rows(docs)
    if models is not None:
        missing = sorted(set(models) - set(found))
        if missing:
            raise ValueError(f"no run has {missing}; the runs have {found}")
        found = [BASELINE] + [m for m in found if m in models and m != BASELINE]
    result = paired_report(rows, found, metric)
    result["runs"] = [doc.get("command", "") for doc in docs]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "paired.json", result, overwrite=overwrite)
    commands = "\n".join(f"- `{c}`" for c in result["runs"])
    atomic_write_text(out / "paired.md", f"{paired_markdown(result)}\nRuns merged:\n{commands}\n", overwrite=overwrite)
    return result
