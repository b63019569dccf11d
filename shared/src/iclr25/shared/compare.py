"""Compare a run's results with a baseline (by default the package's committed results) and keep a history.

Every claim and metric is classified as identical, float noise, within tolerance, drifted, or (a gated claim)
failing. Numbers that differ by at most a relative 1e-9 (absolute 1e-12 near zero) are float noise: another
machine's kernels round the last digits differently, which is not a change of the code or its results. Beyond
that a claim may state its own `tolerance` (measured from a spread of seeds or thread counts), and
`--tolerance name=value` overrides it for a claim or metric. Timing figures (throughput, runtime, anything per
second) are compared as ratios, listed apart, and never called drift. The table leads with changed claims, then
changed metrics, each with its relative change; identical values and float noise are counted in one line.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iclr25.shared.files import append_to_log
from iclr25.shared.results import Report, _fmt

IDENTICAL, NOISE, WITHIN, DRIFTED, FAILS, MISSING, NEW, TIMING = (
    "identical",
    "float noise",
    "within tolerance",
    "drifted",
    "gated claim fails",
    "missing",
    "new",
    "timing",
)
FAILING = (DRIFTED, FAILS, MISSING)
FLOAT_NOISE = (1e-9, 1e-12)  # relative, and absolute near zero: the last digits of another machine's kernels
TIMING_BAND = (0.5, 2.0)  # new/old ratios outside it are flagged (slower/faster), never failed
# timing words: seconds (`_s` ending a part or before `_per_`; `per_s`), `_time(s)` and `_ms` only where no letter
# or digit follows (`tokens_per_s`, `train_s_per_seed`; not `nll_per_seed`, `rho_s_pairs`, `n_timesteps`)
TIMING_WORDS = re.compile(
    r"_s(?=$|[./]|_per_)|per_s(?![a-z0-9])|seconds|runtime|wall|cpu_ratio|_times?(?![a-z0-9])|_ms(?![a-z0-9])|speed"
    r"|latency|(?<![a-z])fps(?![a-z])"
)


@dataclass
class Row:
    """One compared value."""

    kind: str  # "claim", "metric", "timing"
    name: str
    old: Any
    new: Any
    difference: str
    status: str


@dataclass
class Comparison:
    """All rows of one comparison, and whether it passes."""

    paper: str
    scale: str
    run: str
    baseline: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Row]:
        """Rows that make the comparison fail (drift, a failing gated claim, a missing claim or metric)."""
        return [r for r in self.rows if r.status in FAILING]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document `--json` writes."""
        return {
            "paper": self.paper,
            "scale": self.scale,
            "run": self.run,
            "baseline": self.baseline,
            "passed": not self.failed,
            "notes": self.notes,
            "rows": [vars(r) for r in self.rows],
        }

    def to_markdown(self) -> str:
        """The tables for people (and a CI job summary): changed claims, changed metrics, then timings apart;
        identical values and float noise counted in one line."""
        verdict = "no drift" if not self.failed else f"{len(self.failed)} value(s) drifted or fail"
        quiet = [r for r in self.rows if r.kind != "timing" and r.status in (IDENTICAL, NOISE)]
        noise = sum(r.status == NOISE for r in quiet)
        lines = [
            f"### {self.paper} ({self.scale}): {verdict}",
            "",
            f"Run `{self.run}` against `{self.baseline}`.",
            "",
            f"{len(quiet) - noise} values identical, {noise} values within float noise (relative {FLOAT_NOISE[0]:g}).",
            "",
            *[line for note in self.notes for line in (note, "")],
        ]
        order = {s: i for i, s in enumerate((FAILS, DRIFTED, MISSING, NEW, WITHIN))}
        for kind, title in (("claim", "Changed claims"), ("metric", "Changed metrics")):
            changed = [r for r in self.rows if r.kind == kind and r not in quiet]
            if changed:
                lines += [
                    f"**{title}**",
                    "",
                    "| name | baseline | new | difference | status |",
                    "|---|---|---|---|---|",
                ]
                for r in sorted(changed, key=lambda r: (order.get(r.status, 9), r.name)):
                    lines.append(_cells(r.name, _shown(r.old), _shown(r.new), r.difference, r.status))
                lines.append("")
        timings = [r for r in self.rows if r.kind == "timing"]
        if timings:
            lines += ["**Timings** (never drift)", "", "| name | baseline | new | ratio |", "|---|---|---|---|"]
            lines += [_cells(r.name, _shown(r.old), _shown(r.new), r.difference) for r in timings]
        return "\n".join(lines) + "\n"


def _cells(*cells: Any) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return f"[{len(value)} values]" if len(value) > 4 else str([_fmt(v) for v in value])
    return _fmt(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, str):
            try:
                return float(value)  # non-finite floats are stored as "nan"/"inf" strings
            except ValueError:
                return None
        return None
    return float(value)


def _difference(old: Any, new: Any, tolerance: float) -> tuple[str, str]:
    """(difference text, status) of two values; lists are compared element-wise (largest difference)."""
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return f"length {len(old)} -> {len(new)}", DRIFTED
        rank = {IDENTICAL: 0, NOISE: 1, WITHIN: 2, DRIFTED: 3}
        worst, status = "", IDENTICAL
        for a, b in zip(old, new, strict=True):
            text, s = _difference(a, b, tolerance)
            if rank[s] > rank[status]:
                worst, status = text, s
            if s == DRIFTED:
                break
        return worst or "0", status
    a, b = _number(old), _number(new)
    if a is None or b is None:
        return ("same" if old == new else "differs"), (IDENTICAL if old == new else DRIFTED)
    if a == b or (math.isnan(a) and math.isnan(b)):
        return "0", IDENTICAL
    diff = b - a
    relative = abs(diff) / max(abs(a), abs(b))
    text = f"{diff:+.4g} ({'+' if diff > 0 else '-'}{relative:.3g} relative)" if math.isfinite(diff) else "differs"
    if abs(diff) <= max(FLOAT_NOISE[0] * max(abs(a), abs(b)), FLOAT_NOISE[1]):
        return text, NOISE
    return text, (WITHIN if abs(diff) <= tolerance else DRIFTED)


def _is_timing(name: str, declared: Sequence[str] = ()) -> bool:
    """A duration or a rate: a timing word anywhere, a path part that is a time in seconds (`train_s`) or a
    timing group (`timing.total_s`, `timing_s.mdn`), or a name matching a pattern the package declares as a timing
    (`TIMINGS` of its claims module, e.g. a time fraction whose name does not say so)."""
    parts = re.split(r"[./]", name)
    return (
        TIMING_WORDS.search(name) is not None
        or any(part.endswith("_s") or part.startswith("timing") for part in parts)
        or any(fnmatch.fnmatchcase(name, pattern) for pattern in declared)
    )


def _leaves(metrics: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted path -> value of nested metrics, into lists of records too (`seeds.0.models.seq.train_s`), so that
    the timings inside a per-seed record are told apart from its values; a list of numbers stays one value."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_leaves(value, path + "."))
        elif isinstance(value, list) and value and all(isinstance(v, dict | list) for v in value):
            if all(isinstance(v, list) and not any(isinstance(x, dict | list) for x in v) for v in value):
                out[path] = value  # a matrix of numbers: compared element-wise as one value
            else:
                out.update(_leaves({str(i): v for i, v in enumerate(value)}, path + "."))
        else:
            out[path] = value
    return out


def _ratio(old: Any, new: Any, name: str = "") -> tuple[str, str]:
    """new/old as a ratio, flagged outside the band: a rate (per second) grows when faster, a duration shrinks."""
    a, b = _number(old), _number(new)
    if a is None or b is None or a <= 0:
        return "n/a", TIMING
    ratio = b / a
    faster = ratio > 1 if "per_s" in name else ratio < 1
    flag = "" if TIMING_BAND[0] <= ratio <= TIMING_BAND[1] else (" (faster)" if faster else " (slower)")
    return f"x{ratio:.3g}{flag}", TIMING


def _kernel_mode(report: Report) -> str:
    return str((report.environment.get("kernels") or {}).get("mode", "native (not recorded)"))


def _kernel_notes(baseline: Report, run: Report) -> list[str]:
    """Why values may differ although the code did not change: one side computed with its CPU's native kernels."""
    old, new = _kernel_mode(baseline), _kernel_mode(run)
    if old == new == "portable":
        return []
    return [
        f"Note: the baseline used {old} CPU kernels and this run {new} ones; only portable kernels on both sides give "
        "the same floats on two machines, so trained values may move beyond float noise here without a code change."
    ]


def compare(
    run: Report,
    baseline: Report,
    *,
    tolerances: dict[str, float] | None = None,
    run_name: str = "",
    baseline_name: str = "",
    timings: Sequence[str] = (),
) -> Comparison:
    """Compare `run` with `baseline`: claims (gated ones must hold), metrics, then timing figures as ratios.
    `timings`: name patterns the package declares as timings beyond what their names say."""
    if run.paper != baseline.paper:
        raise ValueError(f"the run is of {run.paper!r} but the baseline of {baseline.paper!r}")
    tolerances = {**baseline.tolerances, **run.tolerances, **(tolerances or {})}  # the package's, then the user's
    result = Comparison(run.paper, run.scale, run_name, baseline_name, notes=_kernel_notes(baseline, run))
    old_claims = {c.name: c for c in baseline.claims}
    new_claims = {c.name: c for c in run.claims}
    for name, old in old_claims.items():
        new = new_claims.get(name)
        if new is None:
            result.rows.append(Row("claim", name, old.ours, None, "", MISSING))
            continue
        if new.gated and not new.holds:
            result.rows.append(Row("claim", name, old.ours, new.ours, "", FAILS))
        elif _is_timing(name, timings):  # a speed-up or a runtime: a ratio, listed apart, never drift
            result.rows.append(Row("timing", name, old.ours, new.ours, *_ratio(old.ours, new.ours, name)))
        else:
            tolerance = tolerances.get(name, getattr(new, "tolerance", None) or 0.0)
            result.rows.append(Row("claim", name, old.ours, new.ours, *_difference(old.ours, new.ours, tolerance)))
    for name, new in new_claims.items():
        if name not in old_claims:
            status = FAILS if new.gated and not new.holds else NEW
            result.rows.append(Row("claim", name, None, new.ours, "", status))
    old_metrics, new_metrics = _leaves(baseline.metrics), _leaves(run.metrics)
    for name in sorted(set(old_metrics) | set(new_metrics)):
        old, new = old_metrics.get(name), new_metrics.get(name)
        if _is_timing(name, timings):
            result.rows.append(Row("timing", name, old, new, *_ratio(old, new, name)))
        elif name not in new_metrics:
            result.rows.append(Row("metric", name, old, None, "", MISSING))
        elif name not in old_metrics:
            result.rows.append(Row("metric", name, None, new, "", NEW))
        else:
            result.rows.append(Row("metric", name, old, new, *_difference(old, new, tolerances.get(name, 0.0))))
    timings = {**{f"throughput.{k}": v for k, v in baseline.throughput.items()}, "runtime_s": baseline.runtime_s}
    fresh = {**{f"throughput.{k}": v for k, v in run.throughput.items()}, "runtime_s": run.runtime_s}
    for name in sorted(set(timings) | set(fresh)):
        result.rows.append(
            Row("timing", name, timings.get(name), fresh.get(name), *_ratio(timings.get(name), fresh.get(name), name))
        )
    return result


def read_report(path: str | Path, what: str) -> Report:
    """A results.json (or the run folder holding one), with a one-line error for a missing or malformed file."""
    path = Path(path)
    target = path / "results.json" if path.is_dir() else path
    if not target.is_file():
        raise ValueError(f"{what} {path} holds no results.json")
    try:
        return Report.from_dict(json.loads(target.read_text()))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"{what} {target} is not a results.json of this project: {message}") from None


def history_entry(report: Report) -> dict[str, Any]:
    """One line of a history file: when, which commit, every numeric claim value, throughput and runtime."""
    return {
        "paper": report.paper,
        "scale": report.scale,
        "created": report.created,
        "commit": report.environment.get("commit"),
        "claims": {c.name: c.ours for c in report.claims if _number(c.ours) is not None},
        "holds": {c.name: c.holds for c in report.claims},
        "throughput": report.throughput,
        "runtime_s": report.runtime_s,
    }


def _is_history(text: str) -> bool:
    """Whether `text` is a history file: every non-empty line a JSON object with a paper and its claims."""
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            return False
        if not (isinstance(entry, dict) and "paper" in entry and "claims" in entry):
            return False
    return True


def append_history(path: str | Path, report: Report) -> None:
    """Append the run to a JSON-lines history file (a new one, or one these entries make up; never another file)."""
    path = Path(path)
    lead = "\n" if path.is_file() and (text := path.read_text()) and not text.endswith("\n") else ""
    append_to_log(path, lead + json.dumps(history_entry(report)) + "\n", _is_history)


def read_history(path: str | Path, paper: str) -> list[dict[str, Any]]:
    """The history entries of `paper`, oldest first; a malformed line is a one-line error naming it."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"history file {path} does not exist")
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise ValueError(f"{path} line {number} is not JSON") from None
        if not isinstance(entry, dict) or "paper" not in entry:
            raise ValueError(f"{path} line {number} is not a history entry")
        if entry["paper"] == paper:
            entries.append(entry)
    if not entries:
        raise ValueError(f"{path} holds no runs of {paper!r}")
    return entries


def plot_history(entries: list[dict[str, Any]], names: list[str], out: str | Path) -> Path:
    """A PNG with one panel per figure (a claim value, `throughput.<key>` or `runtime_s`) over the runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.results import save_figure

    def value(entry: dict[str, Any], name: str) -> float | None:
        if name == "runtime_s":
            return _number(entry.get("runtime_s"))
        if name.startswith("throughput."):
            return _number(entry.get("throughput", {}).get(name.removeprefix("throughput.")))
        return _number(entry.get("claims", {}).get(name))

    known = {n for e in entries for n in e.get("claims", {})} | {"runtime_s"}
    known |= {f"throughput.{k}" for e in entries for k in e.get("throughput", {})}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"no history of {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 2.4 * len(names)), squeeze=False)
    labels = [f"{e.get('created', '?')[:10]} {e.get('commit') or ''}".strip() for e in entries]
    for ax, name in zip(axes[:, 0], names, strict=True):
        ys = [value(e, name) for e in entries]
        ax.plot(range(len(ys)), [y if y is not None else float("nan") for y in ys], "o-")
        ax.set_ylabel(name, fontsize=8)
        ax.set_xticks(range(len(ys)), labels, rotation=30, ha="right", fontsize=7)
    axes[0, 0].set_title(f"{entries[0]['paper']} ({entries[0].get('scale', '?')}) over {len(entries)} runs", fontsize=9)
    return save_figure(fig, out)
