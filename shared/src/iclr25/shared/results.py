"""Claims and reports: the schema every reproduction writes and the umbrella CLI and tests read back.

A run folder holds `results.json` (the schema below), `report.md` (the same, for people) and figures.
Every file is written atomically (temporary file + rename); run folders themselves are managed by
`iclr25.shared.run` (marker, lock, safe replacement).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iclr25.shared.files import edit_source_file

SCHEMA_VERSION = 1
RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"


class RunExistsError(FileExistsError):
    """Raised when a run folder already holds results and overwriting was not asked for."""


@dataclass
class Claim:
    """One claim of a paper, measured by us.

    `gated` claims are asserted by the package's tests (the reproduction fails CI if they do not
    hold); the others are measured and reported, holding or not.
    """

    name: str  # short identifier, e.g. "coverage_eci"
    statement: str  # what the claim says, in words
    paper: float | str | None  # the paper's value (None when the paper gives no number)
    ours: float | str | None  # our measured value
    margin: str  # the test, e.g. "|ours - 0.9| <= 0.015" or ">= 1.2x baseline"
    holds: bool
    gated: bool
    tolerance: float | None = None  # `iclr25 compare`: how far `ours` may move between runs (None: exactly equal)
    source: str = ""  # where the paper gives its value ("Table 2", "Fig. 3", "Sec. 5.1"), "" when it gives none
    measured: bool = True  # False when the metric the claim reads is missing from the run (it then does not hold)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Claim.name must not be empty")
        self.holds = bool(self.holds) and bool(self.measured)
        self.gated = bool(self.gated)
        self.measured = bool(self.measured)
        for attr in ("paper", "ours"):
            value = getattr(self, attr)
            if hasattr(value, "item"):  # numpy / torch scalars
                setattr(self, attr, value.item())

    @property
    def status(self) -> str:
        """'holds', 'FAILS' or 'not measured', plus whether the claim is gated or only reported."""
        state = "not measured" if not self.measured else "holds" if self.holds else "FAILS"
        return state + (" (gated)" if self.gated else " (reported)")


def _jsonable(value: Any) -> Any:
    """Convert numpy/torch scalars and arrays, paths and non-finite floats into plain JSON values."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def environment() -> dict[str, Any]:
    """The hardware and software a result was produced on (no heavy imports unless already loaded)."""
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch"] = torch.__version__
        env["threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            env["gpu"] = torch.cuda.get_device_name(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        env["numpy"] = numpy.__version__
    return env


@dataclass
class Report:
    """Everything a reproduction measured: metrics, claims, config, environment, runtime, throughput."""

    paper: str  # the paper's slug
    scale: str  # "ci", "quick", "full", or a user's name for the run
    claims: list[Claim] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    throughput: dict[str, float] = field(default_factory=dict)  # e.g. {"train_samples_per_s": ...}
    runtime_s: float = 0.0  # wall-clock seconds
    cpu_s: float = 0.0  # CPU seconds (user + system, this process and its finished children)
    command: str = ""  # the command that produced it
    figures: list[str] = field(default_factory=list)  # file names inside the run folder
    notes: str = ""
    environment: dict[str, Any] = field(default_factory=environment)
    # `iclr25 compare`: how far a metric (by its dotted path) may move between runs on other machines, measured
    # from a spread (seeds, thread counts, perturbed inputs) where a computation amplifies last-digit differences
    tolerances: dict[str, float] = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def claim(self, name: str) -> Claim:
        """The claim called `name`."""
        for c in self.claims:
            if c.name == name:
                return c
        raise KeyError(f"no claim {name!r}; have {[c.name for c in self.claims]}")

    @property
    def failed_gated(self) -> list[Claim]:
        """Gated claims that do not hold."""
        return [c for c in self.claims if c.gated and not c.holds]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document written to `results.json`."""
        data = asdict(self)
        data["schema_version"] = SCHEMA_VERSION
        return _jsonable(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Inverse of `to_dict`; rejects documents of another schema version or shape."""
        if not isinstance(data, dict):
            raise ValueError(f"a results document is a JSON object, not {type(data).__name__}")
        if not isinstance(data.get("claims", []), list) or not all(isinstance(c, dict) for c in data.get("claims", [])):
            raise ValueError("its claims must be a list of objects")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ValueError(f"results schema version {version!r} is not supported (expected {SCHEMA_VERSION})")
        fields = {k: v for k, v in data.items() if k != "schema_version"}
        fields["claims"] = [Claim(**c) for c in fields.get("claims", [])]
        return cls(**fields)

    @classmethod
    def read(cls, path: str | Path) -> Report:
        """Read a `results.json` (or the run folder holding one)."""
        path = Path(path)
        if path.is_dir():
            path = path / RESULTS_FILE
        try:
            data = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path} is not a results.json (not JSON text: {type(e).__name__})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a results.json (not a JSON object)")
        return cls.from_dict(data)

    def to_markdown(self) -> str:
        """The human-readable report: claims table, metrics, throughput, environment."""
        lines = [f"# {self.paper}: {self.scale} reproduction", ""]
        if self.command:
            lines += ["Command:", "", "```", self.command, "```", ""]
        lines += [claims_table(self.claims), ""]
        if self.throughput:
            lines += ["## Throughput", "", "| measure | value |", "|---|---|"]
            lines += [f"| {k} | {_fmt(v)} |" for k, v in self.throughput.items()]
            lines.append("")
        if self.metrics:
            lines += ["## Metrics", "", "| metric | value |", "|---|---|"]
            lines += [f"| {k} | {_fmt(v)} |" for k, v in _flatten(self.metrics).items()]
            lines.append("")
        if self.figures:
            lines += ["## Figures", ""] + [f"![{f}]({f})" for f in self.figures] + [""]
        if self.notes:
            lines += ["## Notes", "", self.notes, ""]
        env = ", ".join(f"{k}={v}" for k, v in self.environment.items())
        lines += [
            "## Environment",
            "",
            f"Runtime {self.runtime_s:.1f} s wall, {self.cpu_s:.1f} s CPU. {env}. Created {self.created}.",
            "",
        ]
        return "\n".join(lines)

    def write(self, run_dir: str | Path) -> Path:
        """Write `results.json` and `report.md` atomically into `run_dir`; returns the JSON path."""
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_dir / REPORT_FILE, self.to_markdown())
        return atomic_write_json(run_dir / RESULTS_FILE, self.to_dict())


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and len(value) > 8:
        return f"[{len(value)} values]"
    return str(value)


def claims_table(claims: list[Claim], paper_column: bool = False, slug: str = "") -> str:
    """A Markdown table of claims: paper's value, ours, margin, status."""
    head = (
        "| paper | claim | paper's value | ours | margin | status |"
        if paper_column
        else ("| claim | paper's value | ours | margin | status |")
    )
    sep = "|---" * (6 if paper_column else 5) + "|"
    rows = [head, sep]
    for c in claims:
        cells = [
            c.name,
            _fmt(c.paper) if c.paper is not None else "n/a",
            _fmt(c.ours),
            c.margin,
            c.status,
        ]
        if paper_column:
            cells.insert(0, slug)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")  # "|x|" stays one cell
    return "\n".join(rows)


README_BEGIN = "<!-- results:{scale} begin (generated from results/{scale}/results.json) -->"
README_END = "<!-- results:{scale} end -->"


def readme_block(report: Report) -> str:
    """The claims table a package README embeds between markers; a workspace test checks it matches."""
    return "\n".join(
        [
            README_BEGIN.format(scale=report.scale),
            claims_table(report.claims),
            README_END.format(scale=report.scale),
        ]
    )


def refresh_readme_block(readme: str | Path, report: Report) -> bool:
    """Rewrite the README's results block of `report.scale` from `report`; returns whether the README changed.

    The block runs from the line that starts with `<!-- results:<scale> begin` to the README_END marker, both
    included; a README without them is a ValueError (the markers say where the table belongs).
    """
    path = Path(readme)
    text = path.read_text()
    begin, end = f"<!-- results:{report.scale} begin", README_END.format(scale=report.scale)
    start = text.find(begin)
    stop = text.find(end, start)
    if start < 0 or stop < 0:
        raise ValueError(
            f"{path} has no results block for scale {report.scale!r}: add the lines "
            f"{README_BEGIN.format(scale=report.scale)} and {end}"
        )
    updated = text[:start] + readme_block(report) + text[stop + len(end) :]
    if updated == text:
        return False
    edit_source_file(path, updated)
    return True


def atomic_write_text(path: str | Path, text: str, *, overwrite: bool = False) -> Path:
    """Write `text` to `path` atomically through the guarded writer (`iclr25.shared.files.write_text`)."""
    from iclr25.shared.files import write_text

    return write_text(path, text, overwrite=overwrite)


def atomic_write_json(path: str | Path, data: Any, *, overwrite: bool = False) -> Path:
    """Write `data` as indented JSON, atomically, through the guarded writer."""
    return atomic_write_text(path, json.dumps(_jsonable(data), indent=2, allow_nan=False) + "\n", overwrite=overwrite)


def save_figure(fig: Any, path: str | Path, dpi: int = 110, *, overwrite: bool = False) -> Path:
    """Save a matplotlib figure atomically as PNG, through the guarded writer, and close it."""
    import matplotlib.pyplot as plt

    from iclr25.shared.files import write_with

    try:
        return write_with(
            path, lambda f: fig.savefig(f, format="png", dpi=dpi, bbox_inches="tight"), overwrite=overwrite
        )
    finally:
        plt.close(fig)
