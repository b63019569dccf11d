"""The results site: every claim, figure and command of every installed paper, as a static MkDocs (Material) site.

`iclr25 site build` reads each package's committed `results/<scale>/results.json` (nothing is re-run), writes
Markdown pages and an `mkdocs.yml` into a temporary project, builds it with MkDocs and copies the built site into
`--out` through the guarded writer: the output folder is a run folder of the `site build` command (marker
`.iclr25-run.json`), so an existing folder that iclr25 did not make is refused, and `--overwrite` replaces only a
folder an earlier `site build` made (the new site is staged beside it and swapped in when complete).

Pages: an index (one row per paper), one page per paper (its claims, figures, command, environment, the README's
analysis and "Not done", the history of each claim where a history file exists), every claim in one table, and
the claim vocabulary. MkDocs and the Material theme are imported only when building; they live in the
workspace's `docs` dependency group (`uv sync --group docs`), never in a package's install dependencies.

Standard library at module level: `iclr25 --help` stays fast.
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import math
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iclr25.shared.files import write_bytes, write_text
from iclr25.shared.paper import Paper, discover_papers
from iclr25.shared.results import RESULTS_FILE, Report, _fmt

SITE_COMMAND = "site build"
DEFAULT_OUT = Path("site")
INSTALL_HINT = (
    "iclr25 site build needs MkDocs and the Material theme, which are not installed: "
    "run `uv sync --group docs` in a clone of the repository"
)
HOLDS_TEXT = "✓ holds"
FAILS_TEXT = "✗ not reproduced"
HISTORY_FILE = "history.jsonl"
_ARXIV_ID = re.compile(r"^\d{4}\.\d{4,5}(v\d+)?$")


class SiteDependencyError(RuntimeError):
    """MkDocs or the Material theme is not installed (the `docs` dependency group)."""


# ------------------------------------------------------------------------------------------------ inputs
@dataclass
class PaperSource:
    """Where one paper's published material lives: its committed results folder and (in a checkout) its package."""

    slug: str
    results_dir: Path
    package_dir: Path | None = None  # holds README.md; None for a wheel install
    title: str = ""
    authors: str = ""
    arxiv: str = ""
    code: str = ""  # official code, "owner/name"
    openreview: str = ""  # OpenReview forum id
    code_commit: str = ""  # the official-code commit the package was checked against
    licence: str = ""  # the official code's licence, as stated
    settings: tuple[tuple[str, str], ...] = ()  # the paper's main experiment settings, (name, value) pairs
    status: str = ""  # one line: what reproduces and what does not (the root README's papers table)
    install_size: str = ""  # e.g. "5,530 MB, 59 distributions" (the root README's install table)


@dataclass
class PaperEntry:
    """One paper's page, read and checked: its source, report, README sections and history."""

    source: PaperSource
    report: Report
    analysis: tuple[str, str] | None = None  # (the README's heading, its Markdown body)
    not_done: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def slug(self) -> str:
        """The paper's slug."""
        return self.source.slug


def read_results(path: str | Path) -> Report:
    """A committed results.json, checked; anything malformed is a ValueError of one line naming the file."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist") from None
    except OSError as e:
        raise ValueError(f"{path} cannot be read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a valid results.json: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not a valid results.json: not JSON ({e.msg}, line {e.lineno})") from None
    try:
        report = Report.from_dict(data)
    except (TypeError, ValueError, KeyError) as e:
        message = " ".join(str(e).split()) or type(e).__name__
        raise ValueError(f"{path} is not a valid results.json: {message}") from None
    problem = _shape_problem(report)
    if problem:
        raise ValueError(f"{path} is not a valid results.json: {problem}")
    return report


def _shape_problem(report: Report) -> str | None:
    """What is wrong with the types of a report's fields (from_dict checks only its shape), or None."""
    if not isinstance(report.paper, str) or not report.paper:
        return "its paper must be a non-empty string"
    if not isinstance(report.scale, str):
        return "its scale must be a string"
    for name in ("runtime_s", "cpu_s"):
        value = getattr(report, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"its {name} must be a number, got {value!r}"
    for name in ("metrics", "config", "environment", "throughput"):
        if not isinstance(getattr(report, name), dict):
            return f"its {name} must be an object"
    if not isinstance(report.figures, list) or not all(isinstance(f, str) for f in report.figures):
        return "its figures must be a list of file names"
    if not isinstance(report.command, str):
        return "its command must be a string"
    seen: set[str] = set()
    for claim in report.claims:
        if not isinstance(claim.name, str) or not isinstance(claim.statement, str) or not isinstance(claim.margin, str):
            return f"claim {claim.name!r}: name, statement and margin must be strings"
        if claim.name in seen:
            return f"claim {claim.name!r} appears twice"
        seen.add(claim.name)
    return None


def _root_readme(package_dir: Path | None) -> str:
    """The workspace README beside `packages/<slug>` (a source checkout), or ""."""
    if package_dir is None or package_dir.parent.name != "packages":
        return ""
    readme = package_dir.parent.parent / "README.md"
    try:
        return readme.read_text(encoding="utf-8")
    except OSError:
        return ""


def readme_facts(readme: str, slug: str) -> tuple[str, str]:
    """(status line, install size) of `slug` from the workspace README's papers table and install-size table."""
    status = size = ""
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith(f"| [{slug}](packages/{slug})") and len(cells) >= 4:
            status = cells[2]
        elif line.startswith(f"| {slug} |") and len(cells) >= 3 and "MB" in cells[2]:
            measured = cells[2].split("→")[-1].strip()
            count = re.match(r"\s*(\d+)", cells[1].split("→")[-1])
            size = f"{measured}" + (f" ({count.group(1)} distributions)" if count else "")
    return status, size


def installed_sources(scale: str = "quick", papers: dict[str, Paper] | None = None) -> list[PaperSource]:
    """Every installed paper whose source checkout holds committed `results/<scale>/` (found the way `iclr25 readme`
    finds them), with its title and links; papers without committed results are left out."""
    from iclr25.shared.cli import package_root

    sources = []
    for paper in (papers if papers is not None else discover_papers()).values():
        root = package_root(paper)
        if root is None or not (root / "results" / scale / RESULTS_FILE).is_file():
            continue
        status, size = readme_facts(_root_readme(root), paper.slug)
        sources.append(
            PaperSource(
                slug=paper.slug,
                results_dir=root / "results" / scale,
                package_dir=root,
                title=paper.title,
                authors=paper.authors,
                arxiv=paper.arxiv,
                code=paper.code,
                openreview=paper.openreview,
                code_commit=paper.code_commit,
                licence=paper.licence,
                settings=paper.settings,
                status=status or paper.summary,
                install_size=size,
            )
        )
    return sources


def sources_from_folders(folders: Sequence[str | Path], papers: dict[str, Paper] | None = None) -> list[PaperSource]:
    """Sources for given results folders (or results.json files): the paper is named by each results.json; its
    package is the folder two levels up when it holds a README.md (`packages/<slug>/results/<scale>`)."""
    papers = discover_papers() if papers is None else papers
    sources = []
    for given in folders:
        folder = Path(given)
        folder = folder.parent if folder.name == RESULTS_FILE else folder
        report = read_results(folder)
        package = folder.parent.parent if (folder.parent.parent / "README.md").is_file() else None
        paper = papers.get(report.paper)
        if paper is None:
            paper = _paper_toml(package, report.paper)
        meta = (
            {"title": paper.title, "authors": paper.authors, "arxiv": paper.arxiv, "code": paper.code} if paper else {}
        )
        status, size = readme_facts(_root_readme(package), report.paper)
        sources.append(
            PaperSource(
                slug=report.paper,
                results_dir=folder,
                package_dir=package,
                title=str(meta.get("title") or report.paper),
                authors=str(meta.get("authors", "")),
                arxiv=str(meta.get("arxiv", "")),
                code=str(meta.get("code", "")),
                openreview=paper.openreview if paper else "",
                code_commit=paper.code_commit if paper else "",
                licence=paper.licence if paper else "",
                settings=paper.settings if paper else (),
                status=status or (paper.summary if paper else ""),
                install_size=size,
            )
        )
    return sources


def _paper_toml(package: Path | None, slug: str) -> Paper | None:
    """The paper record (paper.toml) of a package that is not installed, or None when it has none or it is
    invalid (the page then shows the slug only)."""
    if package is None:
        return None
    path = package / "src" / "iclr25" / slug.replace("-", "_") / "paper.toml"
    try:
        return Paper.from_toml(path.read_text(encoding="utf-8"), slug, source=str(path))
    except (OSError, ValueError):
        return None


def readme_sections(readme: str) -> tuple[tuple[str, str] | None, str | None]:
    """The README's results analysis ((its heading, body), the generated claims block left out) and the body of its
    "Not done" section; None for a section the README lacks."""
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in readme.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    analysis = not_done = None
    for heading, lines in sections:
        body = "\n".join(lines).strip()
        if analysis is None and heading.lower().startswith("results"):
            body = re.sub(r"<!-- results:\S+ begin.*?<!-- results:\S+ end -->", "", body, flags=re.DOTALL).strip()
            analysis = (heading, body)
        elif not_done is None and heading.lower().startswith("not done"):
            not_done = body
    return analysis, not_done


def _history_files(source: PaperSource) -> list[Path]:
    candidates = [source.results_dir / HISTORY_FILE, source.results_dir.parent / HISTORY_FILE]
    return [p for p in candidates if p.is_file()]


def load_entry(source: PaperSource, history: Sequence[Path] = ()) -> PaperEntry:
    """Read one paper's results, README sections and history (from `history` files and a `history.jsonl` beside
    its results); malformed input is a one-line ValueError naming the file."""
    from iclr25.shared.compare import read_history

    report = read_results(source.results_dir / RESULTS_FILE)
    analysis = not_done = None
    if source.package_dir is not None and (source.package_dir / "README.md").is_file():
        analysis, not_done = readme_sections((source.package_dir / "README.md").read_text(encoding="utf-8"))
    entries: list[dict[str, Any]] = []
    for path in [*_history_files(source), *history]:
        try:
            entries += read_history(path, source.slug)
        except ValueError as e:
            if "holds no runs of" not in str(e):
                raise
    return PaperEntry(source, report, analysis, not_done, entries)


# ------------------------------------------------------------------------------------------------ Markdown
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def md_text(value: Any) -> str:
    """`value` as literal text inside Markdown (a table cell): one line, HTML and Markdown characters escaped."""
    text = " ".join(str(value).split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def shown_value(value: Any) -> str:
    """A claim's value as the site shows it (the claims tables' format; "n/a" when the paper gives none)."""
    if value is None:
        return "n/a"
    return " ".join(_fmt(value).split())


def holds_cell(holds: bool) -> str:
    """The holds column: colour (CSS class) and text, so a failing claim stands out as much as a holding one."""
    return (
        f'<span class="claim-holds">{HOLDS_TEXT}</span>' if holds else f'<span class="claim-fails">{FAILS_TEXT}</span>'
    )


def _counts(report: Report) -> tuple[int, int, int, int]:
    gated = [c for c in report.claims if c.gated]
    reported = [c for c in report.claims if not c.gated]
    return sum(c.holds for c in gated), len(gated), sum(c.holds for c in reported), len(reported)


def counts_text(report: Report) -> str:
    """`8/8 gated · 6/13 reported` (claims holding of each kind)."""
    g_hold, g_all, r_hold, r_all = _counts(report)
    return f"{g_hold}/{g_all} gated · {r_hold}/{r_all} reported"


def duration(seconds: float) -> str:
    """`42 s` or `12.3 min`."""
    if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
        return "not recorded"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def arxiv_link(arxiv: str) -> str:
    """A Markdown link to the arXiv abstract, or the text as given (an OpenReview id, "not found")."""
    if _ARXIV_ID.match(arxiv.strip()):
        return f"[arXiv {arxiv.strip()}](https://arxiv.org/abs/{arxiv.strip()})"
    return md_text(arxiv) if arxiv else "no arXiv entry"


def claims_table(entries: Iterable[PaperEntry], *, paper_column: bool, prefix: str = "") -> str:
    """The sortable, filterable claims table (in a `div.claims`): claim, statement, paper's value, ours, margin,
    holds, gated; with `paper_column` a first column links each claim's paper page (`prefix` + papers/<slug>/)."""
    head = ["claim", "statement", "paper's value", "ours", "margin", "holds", "gated"]
    if paper_column:
        head.insert(0, "paper")
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for entry in entries:
        for c in entry.report.claims:
            cells = [
                f'<span class="claim-name">{md_text(c.name).replace("_", "_<wbr>")}</span>',
                f'<span class="claim-statement">{md_text(c.statement)}</span>',
                md_text(shown_value(c.paper)),
                md_text(shown_value(c.ours)),
                md_text(c.margin),
                holds_cell(c.holds),
                "gated" if c.gated else "reported",
            ]
            if paper_column:
                cells.insert(0, f"[{entry.slug}]({prefix}papers/{entry.slug}/index.md)")
            rows.append("| " + " | ".join(cells) + " |")
    return '<div class="claims" markdown>\n\n' + "\n".join(rows) + "\n\n</div>"


def _rewrite_links(body: str, source: PaperSource, repo_url: str | None, assets: dict[str, Path]) -> str:
    """Make a README section's links work on the site: images in the package are copied beside the page
    (`assets` collects them), other relative links point at the repository (or become plain text without one)."""
    package = source.package_dir

    def image(match: re.Match[str]) -> str:
        alt, target = match.group(1), match.group(2).strip()
        if re.match(r"^[a-z]+:", target) or package is None:
            return match.group(0)
        file = (package / target).resolve()
        if not file.is_file() or not file.is_relative_to(package.resolve()):
            return f"*(figure not available: {md_text(alt or target)})*"
        name = "readme/" + file.relative_to(package.resolve()).as_posix()
        assets[name] = file
        return f"![{alt or Path(target).stem}]({name})"

    def link(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2).strip()
        if re.match(r"^[a-z]+:", target):
            return match.group(0)
        if repo_url and package is not None:
            base = f"{repo_url.rstrip('/')}/blob/main/packages/{package.name}"
            return f"[{text}]({base}/README.md{target})" if target.startswith("#") else f"[{text}]({base}/{target})"
        return text

    out, fenced = [], False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            line = re.sub(r"!\[([^\]]*)\]\(([^)\s]+)\)", image, line)
            line = re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", link, line)
        out.append(line)
    return "\n".join(out)


def _environment_table(report: Report) -> str:
    rows = ["| environment | value |", "|---|---|"]
    for key, value in report.environment.items():
        rows.append(
            f"| {md_text(key)} | {md_text(value if not isinstance(value, dict | list) else json.dumps(value))} |"
        )
    return "\n".join(rows)


def _figure_alt(entry: PaperEntry, name: str) -> str:
    words = Path(name).stem.replace("_", " ").replace("-", " ")
    return f"{entry.slug}: {words} ({entry.report.scale} reproduction)"


def paper_page(entry: PaperEntry, repo_url: str | None, assets: dict[str, Path], history_pngs: list[str]) -> str:
    """The Markdown page of one paper; `assets` collects the files the page shows (name beside the page -> file)."""
    source, report = entry.source, entry.report
    title = source.title or source.slug
    links = [arxiv_link(source.arxiv)]
    if source.openreview:
        links.append(f"[OpenReview](https://openreview.net/forum?id={source.openreview})")
    if source.code:
        code = f"[official code](https://github.com/{source.code})"
        if source.code_commit:
            code += f" at [`{source.code_commit[:12]}`](https://github.com/{source.code}/tree/{source.code_commit})"
        if source.licence:
            code += f" ({md_text(source.licence)})"
        links.append(code)
    if repo_url:
        links.append(f"[package source]({repo_url.rstrip('/')}/tree/main/packages/{source.slug})")
    lines = [
        "---",
        f"title: {json.dumps(source.slug + ': ' + title)}",
        "---",
        "",
        f"# {md_text(title)}",
        "",
        f"`{source.slug}` · " + " · ".join(links) + (f"  \n{md_text(source.authors)}" if source.authors else ""),
        "",
    ]
    if source.settings:
        lines += [
            "Main experiment settings (the paper's): "
            + "; ".join(f"{md_text(name)}: {md_text(value)}" for name, value in source.settings),
            "",
        ]
    if source.status:
        lines += ['!!! abstract "Status"', "", f"    {md_text(source.status)}", ""]
    g_hold, g_all, r_hold, r_all = _counts(report)
    gated_ok = "claim-holds" if g_hold == g_all else "claim-fails"
    lines += [
        f'Claims holding in the {md_text(report.scale)} reproduction: <span class="{gated_ok}">{g_hold}/{g_all} '
        f"gated</span> · {r_hold}/{r_all} reported. Runtime {duration(report.runtime_s)} wall, "
        f"{duration(report.cpu_s)} CPU. See [the claim vocabulary](../../vocabulary.md) for what each column means.",
        "",
        "## Claims",
        "",
        claims_table([entry], paper_column=False),
        "",
    ]
    shown = []
    for name in report.figures:
        file = source.results_dir / name
        if file.is_file() and not Path(name).is_absolute() and ".." not in Path(name).parts:
            assets[name] = file
            shown.append(name)
    if shown:
        lines += ["## Figures", ""]
        for name in shown:
            lines += [f"![{md_text(_figure_alt(entry, name))}]({name})", "", f"*{md_text(name)}*", ""]
    lines += ["## How these numbers were made", ""]
    if report.command:
        lines += ["The command:", "", "```", report.command, "```", ""]
    lines += [
        f"Results committed at `{md_text(_relative(source.results_dir))}` (created {md_text(report.created)}); "
        f"{duration(report.runtime_s)} wall, {duration(report.cpu_s)} CPU.",
        "",
        _environment_table(report),
        "",
    ]
    if entry.analysis is not None:
        heading, body = entry.analysis
        lines += [
            f"## Analysis (the README's “{md_text(heading)}”)",
            "",
            _rewrite_links(body, source, repo_url, assets),
        ]
        lines.append("")
    if entry.not_done is not None:
        lines += ["## Not done", "", _rewrite_links(entry.not_done, source, repo_url, assets), ""]
    if history_pngs:
        lines += ["## History", "", f"Each claim's value over the {len(entry.history)} recorded runs.", ""]
        for png in history_pngs:
            claim = Path(png).stem.removeprefix("history-")
            lines += [f"![history of claim {md_text(claim)}]({png})", ""]
    return "\n".join(lines)


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        parts = path.resolve().parts
        return "/".join(parts[-4:])


def index_page(entries: list[PaperEntry]) -> str:
    """The home page: one row per paper, with totals."""
    g_hold = sum(_counts(e.report)[0] for e in entries)
    g_all = sum(_counts(e.report)[1] for e in entries)
    r_hold = sum(_counts(e.report)[2] for e in entries)
    r_all = sum(_counts(e.report)[3] for e in entries)
    lines = [
        "---",
        "hide: [toc]",
        "---",
        "",
        "# ICLR 2025 reproductions: results",
        "",
        f"{len(entries)} papers, each reimplemented as its own package and reproduced at CPU scale. Every number here "
        "comes from the committed results of a package (`results/<scale>/results.json`) and the command shown on its "
        f"page. Gated claims holding: **{g_hold}/{g_all}**; reported claims holding: **{r_hold}/{r_all}**. "
        "[Every claim in one table](claims.md) · [what the columns mean](vocabulary.md).",
        "",
        '<div class="sortable" markdown>',
        "",
        "| paper | title | status | claims holding | quick runtime | install size |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        s = e.source
        title = md_text(s.title or s.slug) + " (" + arxiv_link(s.arxiv) + ")"
        g_h, g_a, r_h, r_a = _counts(e.report)
        gated_cls = "claim-holds" if g_h == g_a else "claim-fails"
        counts = f'<span class="{gated_cls}">{g_h}/{g_a} gated</span> · {r_h}/{r_a} reported'
        runtime = duration(e.report.runtime_s) if e.report.scale == "quick" else f"({md_text(e.report.scale)})"
        lines.append(
            f"| [{s.slug}](papers/{s.slug}/index.md) | {title} | {md_text(s.status) or '—'} | {counts} | {runtime} | "
            f"{md_text(s.install_size) or 'not recorded'} |"
        )
    lines += ["", "</div>", ""]
    return "\n".join(lines)


def all_claims_page(entries: list[PaperEntry]) -> str:
    """Every claim of every paper in one sortable, filterable table."""
    total = sum(len(e.report.claims) for e in entries)
    return "\n".join(
        [
            "---",
            "hide: [toc]",
            "---",
            "",
            "# Every claim",
            "",
            f"{total} claims of {len(entries)} papers. Filter by paper, by whether a claim holds and by whether it is "
            "gated or reported; click a column's header to sort by it. [What the columns mean](vocabulary.md).",
            "",
            claims_table(entries, paper_column=True),
            "",
        ]
    )


VOCABULARY = f"""# The claim vocabulary

Each paper package turns the paper's headline results into **claims**, measures them in its reproduction and writes
them to `results/<scale>/results.json`. The tables on this site show every claim with these columns.

claim
:   A short identifier of the claim (e.g. `coverage_eci`), the same in results.json, the package's tests and
    `iclr25 compare`.

statement
:   What the claim says, in words.

paper's value
:   The number the paper reports for it; `n/a` when the paper gives none (a qualitative claim).

ours
:   The value our reproduction measured.

margin
:   The test that decides whether the claim holds, e.g. `|ours - 0.9| <= 0.015` or `>= 1.2x baseline`.

holds
:   Whether our value passes the margin: <span class="claim-holds">{HOLDS_TEXT}</span> or
    <span class="claim-fails">{FAILS_TEXT}</span>. A claim that does not hold is published like one that does.

gated
:   A **gated** claim is asserted by the package's tests: if it stops holding, CI fails. A **reported** claim is
    measured and shown, holding or not, because the paper makes it but our CPU-scale reproduction cannot (or does
    not) settle it; the package README says why.

status
:   One line per paper summing up what reproduces and what does not (the root README's papers table).
    In `iclr25 reproduce` output a claim's status reads `holds (gated)`, `FAILS (reported)` and so on.

scale
:   The preset that made the numbers: `quick` runs on a laptop CPU (what is committed and shown here), `full`
    mirrors the paper's setting on a GPU, `ci` is a smaller preset for the test gate.

quick runtime
:   The wall time of the committed quick reproduction (its `runtime_s`), on 2 CPU cores.

install size
:   The size of a fresh virtual environment holding only that package and `iclr25-shared` (from the root README).

history
:   Where a history file (`history.jsonl`, appended by `iclr25 compare --history`) exists, a paper's page plots each
    claim's value over the recorded runs.
"""

SITE_CSS = """
.claim-holds { color: #16883e; font-weight: 600; white-space: nowrap; }
.claim-fails { color: #c0262d; font-weight: 600; white-space: nowrap; }
[data-md-color-scheme="slate"] .claim-holds { color: #6fdc8c; }
[data-md-color-scheme="slate"] .claim-fails { color: #ff8589; }
.claims-filter { display: flex; flex-wrap: wrap; gap: .5em; align-items: center; margin: .6em 0; font-size: .7rem; }
.claims-filter select, .claims-filter input {
  font: inherit; padding: .25em .4em; border-radius: .2em; color: var(--md-default-fg-color);
  background: var(--md-default-bg-color); border: 1px solid var(--md-default-fg-color--lighter);
}
.claims-filter .claims-count { color: var(--md-default-fg-color--light); }
.md-typeset th.sortable { cursor: pointer; user-select: none; }
.md-grid { max-width: 90rem; }
.md-typeset .claims td:nth-last-child(-n+2) { white-space: nowrap; }
.md-typeset .claim-name { font-family: var(--md-code-font-family); font-size: .85em; }
.md-typeset .claim-statement { display: inline-block; min-width: 16em; }
.md-typeset th.sortable[aria-sort="ascending"]::after { content: " ▲"; }
.md-typeset th.sortable[aria-sort="descending"]::after { content: " ▼"; }
"""

SITE_JS = """// Sort (click a header) and filter (paper, holds, gated, text) the claims tables of the results site.
(function () {
  "use strict";
  var FILTERED = ["paper", "holds", "gated"];
  function text(row, i) { return row.cells[i] ? row.cells[i].textContent.trim() : ""; }
  function key(value) {
    var n = Number(value.replace(/,/g, ""));
    return value !== "" && !isNaN(n) ? [0, n] : [1, value.toLowerCase()];
  }
  function compare(a, b) {
    if (a[0] !== b[0]) return a[0] - b[0];
    return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
  }
  function makeSortable(table, rows) {
    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    heads.forEach(function (th, i) {
      th.classList.add("sortable");
      th.tabIndex = 0;
      th.title = "sort by " + th.textContent.trim();
      function sort() {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        rows.slice().sort(function (a, b) { return dir * compare(key(text(a, i)), key(text(b, i))); })
          .forEach(function (row) { table.tBodies[0].appendChild(row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
    });
  }
  function makeFilterable(box, table, rows) {
    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var bar = document.createElement("div");
    bar.className = "claims-filter";
    var filters = [];
    var count = document.createElement("span");
    count.className = "claims-count";
    function apply() {
      var query = search.value.trim().toLowerCase();
      var shown = 0;
      rows.forEach(function (row) {
        var ok = filters.every(function (f) { return !f.select.value || text(row, f.index) === f.select.value; });
        ok = ok && (!query || row.textContent.toLowerCase().indexOf(query) >= 0);
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      count.textContent = shown + " of " + rows.length + " claims";
    }
    heads.forEach(function (th, i) {
      var name = th.textContent.trim();
      if (FILTERED.indexOf(name) < 0) return;
      var values = rows.map(function (row) { return text(row, i); })
        .filter(function (v, j, all) { return all.indexOf(v) === j; }).sort();
      var select = document.createElement("select");
      select.setAttribute("aria-label", "filter by " + name);
      select.dataset.column = name;
      [["", "any " + name]].concat(values.map(function (v) { return [v, v]; })).forEach(function (pair) {
        var option = document.createElement("option");
        option.value = pair[0];
        option.textContent = pair[1];
        select.appendChild(option);
      });
      select.addEventListener("change", apply);
      filters.push({ index: i, select: select });
      bar.appendChild(select);
    });
    var search = document.createElement("input");
    search.type = "search";
    search.placeholder = "filter claims";
    search.setAttribute("aria-label", "filter claims by text");
    search.addEventListener("input", apply);
    bar.appendChild(search);
    bar.appendChild(count);
    box.insertBefore(bar, box.firstChild);
    apply();
  }
  function enhance() {
    document.querySelectorAll("div.claims, div.sortable").forEach(function (box) {
      var table = box.querySelector("table");
      if (!table || !table.tHead || box.dataset.enhanced) return;
      box.dataset.enhanced = "1";
      var rows = Array.prototype.slice.call(table.tBodies[0].rows);
      makeSortable(table, rows);
      if (box.classList.contains("claims")) makeFilterable(box, table, rows);
    });
  }
  if (typeof document$ !== "undefined") document$.subscribe(enhance);
  else document.addEventListener("DOMContentLoaded", enhance);
})();
"""


def mkdocs_config(entries: list[PaperEntry], site_dir: Path, site_url: str | None) -> dict[str, Any]:
    """The `mkdocs.yml` of the generated project (Material: search, navigation, light/dark toggle)."""
    config: dict[str, Any] = {
        "site_name": "iclr25: ICLR 2025 reproductions",
        "site_description": "Every claim, figure and command of the iclr25 paper reproductions.",
        "docs_dir": "docs",
        "site_dir": str(site_dir),
        "use_directory_urls": True,
        "theme": {
            "name": "material",
            "font": False,  # no web fonts: the site loads nothing from other hosts
            "features": [
                "navigation.sections",
                "navigation.top",
                "navigation.tracking",
                "search.suggest",
                "search.highlight",
                "content.code.copy",
                "toc.follow",
            ],
            "palette": [
                {
                    "media": "(prefers-color-scheme: light)",
                    "scheme": "default",
                    "primary": "indigo",
                    "toggle": {"icon": "material/brightness-7", "name": "Switch to dark mode"},
                },
                {
                    "media": "(prefers-color-scheme: dark)",
                    "scheme": "slate",
                    "primary": "indigo",
                    "toggle": {"icon": "material/brightness-4", "name": "Switch to light mode"},
                },
            ],
        },
        "plugins": ["search"],
        "markdown_extensions": [
            "tables",
            "attr_list",
            "md_in_html",
            "admonition",
            "def_list",
            {"toc": {"permalink": True}},
            "pymdownx.superfences",
        ],
        "extra_css": ["assets/site.css"],
        "extra_javascript": ["assets/claims.js"],
        "validation": {"links": {"not_found": "warn", "absolute_links": "warn", "unrecognized_links": "warn"}},
        "nav": [
            {"Papers": "index.md"},
            {"Every claim": "claims.md"},
            {"Claim vocabulary": "vocabulary.md"},
            {"Paper pages": [{e.slug: f"papers/{e.slug}/index.md"} for e in entries]},
        ],
    }
    if site_url:
        config["site_url"] = site_url
    return config


# ------------------------------------------------------------------------------------------------ build
def _import_mkdocs() -> Any:
    """The MkDocs build API, or SiteDependencyError saying how to install the docs group."""
    try:
        from mkdocs.commands.build import build
        from mkdocs.config import load_config
    except ImportError:
        raise SiteDependencyError(INSTALL_HINT) from None
    try:
        import material  # noqa: F401
    except ImportError:
        raise SiteDependencyError(INSTALL_HINT) from None
    return load_config, build


def check_site_folder(out: str | Path, overwrite: bool = False) -> None:
    """Refuse, before any work, an output folder the site may not be written to: an existing folder holding files
    that `site build` did not make (with or without `--overwrite`), or an earlier site without `--overwrite`."""
    from iclr25.shared.run import LOCK, check_run_folder, read_marker

    out = Path(out)
    if out.is_dir() and any(p.name != LOCK for p in out.iterdir()):
        marker = read_marker(out)
        if marker is not None and marker.get("command") != SITE_COMMAND:
            raise ValueError(
                f"{out} holds an iclr25 {marker.get('command') or 'run'} folder, not a site that `iclr25 site build` "
                "made; --overwrite never replaces it: choose another --out"
            )
    try:
        check_run_folder(out, overwrite)
    except FileExistsError as e:  # a complete earlier site: the run layer's RunExistsError
        raise ValueError(str(e)) from None


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(" ".join(record.getMessage().split()))


def _run_mkdocs(config_file: Path) -> list[str]:
    """Build the MkDocs project of `config_file` (into its `site_dir`); returns the warnings MkDocs logged."""
    load_config, build = _import_mkdocs()
    log = logging.getLogger("mkdocs")
    collect = _Collect()
    saved = (log.level, log.propagate)
    log.addHandler(collect)
    log.setLevel(logging.WARNING)
    log.propagate = False
    try:
        config = load_config(config_file=str(config_file))
        config.plugins.on_startup(command="build", dirty=False)
        try:
            build(config)
        finally:
            config.plugins.on_shutdown()
    finally:
        log.removeHandler(collect)
        log.setLevel(saved[0])
        log.propagate = saved[1]
    return collect.messages


def write_project(
    project: Path,
    entries: list[PaperEntry],
    *,
    repo_url: str | None = None,
    site_url: str | None = None,
) -> Path:
    """Write the MkDocs project (Markdown pages, figures, CSS/JS, `mkdocs.yml`) into the new folder `project`;
    returns its `mkdocs.yml`. The built site goes to `project/site`."""
    import yaml

    from iclr25.shared.compare import plot_history

    docs = project / "docs"

    def put(relative: str, text: str) -> None:
        write_text(docs / relative, text, record=False)

    put("index.md", index_page(entries))
    put("claims.md", all_claims_page(entries))
    put("vocabulary.md", VOCABULARY)
    put("assets/site.css", SITE_CSS.lstrip())
    put("assets/claims.js", SITE_JS)
    for entry in entries:
        page_dir = docs / "papers" / entry.slug
        pngs = []
        if entry.history:
            numeric = sorted({n for h in entry.history for n in h.get("claims", {})})
            for name in numeric:
                png = f"history-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png"
                plot_history(entry.history, [name], page_dir / png)
                pngs.append(png)
        assets: dict[str, Path] = {}
        page = paper_page(entry, repo_url, assets, pngs)
        write_text(page_dir / "index.md", page, record=False)
        for name, file in assets.items():
            write_bytes(page_dir / name, file.read_bytes(), record=False)
    config = mkdocs_config(entries, project / "site", site_url)
    return write_text(project / "mkdocs.yml", yaml.safe_dump(config, sort_keys=False), record=False)


def build_site(
    sources: Sequence[PaperSource],
    out: str | Path = DEFAULT_OUT,
    *,
    overwrite: bool = False,
    repo_url: str | None = None,
    site_url: str | None = None,
    history: Sequence[Path] = (),
) -> tuple[Path, list[str]]:
    """Build the site of `sources` into `out` (a run folder of `site build`); returns `out` and MkDocs' warnings.

    Order: the output folder is checked, every results.json read and checked (a malformed one is a ValueError
    naming it), the MkDocs project generated and built in a temporary folder, and only then the built files
    copied into `out` (staged beside an earlier site and swapped in when complete)."""
    from iclr25.shared.run import open_run_folder

    _import_mkdocs()
    out = Path(out)
    check_site_folder(out, overwrite)
    if not sources:
        raise ValueError("no committed results to publish: no installed paper has results/<scale>/results.json")
    entries = sorted((load_entry(s, history) for s in sources), key=lambda e: e.slug)
    slugs = [e.slug for e in entries]
    if len(set(slugs)) != len(slugs):
        raise ValueError(
            f"two results folders are of the same paper: {sorted({s for s in slugs if slugs.count(s) > 1})}"
        )
    with tempfile.TemporaryDirectory(prefix="iclr25-site-") as tmp:
        project = Path(tmp) / "project"
        config_file = write_project(project, entries, repo_url=repo_url, site_url=site_url)
        warnings = _run_mkdocs(config_file)
        built = project / "site"
        with open_run_folder(out, overwrite, paper="site", command=SITE_COMMAND) as folder:
            for file in sorted(built.rglob("*")):
                if file.is_file():
                    write_bytes(folder / file.relative_to(built), file.read_bytes(), record=False)
    return out, warnings


def is_site(folder: str | Path) -> bool:
    """Whether `folder` holds a complete site that `iclr25 site build` made."""
    from iclr25.shared.run import read_marker

    marker = read_marker(Path(folder)) if Path(folder).is_dir() else None
    return bool(marker and marker.get("command") == SITE_COMMAND and marker.get("status") == "complete")


def serve(folder: str | Path, port: int = 8000, bind: str = "127.0.0.1") -> None:
    """Serve a built site over HTTP until interrupted (Python's http.server)."""
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    with ThreadingHTTPServer((bind, port), handler) as server:
        host, actual = server.server_address[:2]
        print(f"serving {folder} at http://{host}:{actual}/ (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("stopped", flush=True)


# ------------------------------------------------------------------------------------------------ CLI
def add_site_parser(sub: Any) -> None:
    """Register `iclr25 site build|serve` on the umbrella command's sub-parsers."""
    site = sub.add_parser("site", help="build or preview the static results site of every installed paper")
    verbs = site.add_subparsers(dest="site_command", required=True, metavar="{build,serve}")
    for name, text in (("build", "build the site from the committed results"), ("serve", "preview it locally")):
        verb = verbs.add_parser(name, help=text)
        verb.add_argument("--out", type=Path, default=DEFAULT_OUT, help="site folder (default: %(default)s)")
        verb.add_argument("--scale", default="quick", help="which committed results/<scale>/ (default: %(default)s)")
        verb.add_argument(
            "--results",
            type=Path,
            nargs="+",
            action="extend",
            default=[],
            metavar="DIR",
            help="results folders to publish (packages/*/results/quick); default: every installed paper's committed "
            "results",
        )
        verb.add_argument(
            "--history", type=Path, action="append", default=[], metavar="FILE", help="a history file (repeatable)"
        )
        verb.add_argument("--repo-url", help="repository for source links (default: from $GITHUB_REPOSITORY)")
        verb.add_argument("--site-url", help="the URL the site is published at")
        verb.add_argument("--overwrite", action="store_true", help="replace a site an earlier `site build` made")
        if name == "serve":
            verb.add_argument("--port", type=int, default=8000, help="(default: %(default)s; 0 picks a free one)")
            verb.add_argument("--bind", default="127.0.0.1", help="address to listen on (default: %(default)s)")
            verb.add_argument("--rebuild", action="store_true", help="build again even when --out holds a site")


def _repo_url(given: str | None) -> str | None:
    import os

    if given:
        return given
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    return f"https://github.com/{repository}" if re.fullmatch(r"[\w.-]+/[\w.-]+", repository) else None


def site_main(args: argparse.Namespace) -> int:
    """`iclr25 site build|serve`: exit 0, or 2 with one line (a missing docs group, a bad folder or results.json)."""
    building = args.site_command == "build" or args.rebuild or not is_site(args.out)
    if building:
        sources = sources_from_folders(args.results) if args.results else installed_sources(args.scale)
        try:
            _import_mkdocs()
        except SiteDependencyError as e:
            print(f"iclr25: error: {e}", file=sys.stderr)
            return 2
        if args.site_command == "serve" and is_site(args.out):
            args.overwrite = True  # --rebuild replaces the site it serves
        out, warnings = build_site(
            sources,
            args.out,
            overwrite=args.overwrite,
            repo_url=_repo_url(args.repo_url),
            site_url=args.site_url,
            history=args.history,
        )
        for warning in warnings:
            print(f"iclr25 site: mkdocs: {warning}", file=sys.stderr)
        print(f"built the results site of {len(sources)} papers in {out} (open {out / 'index.html'})")
    if args.site_command == "serve":
        serve(args.out, args.port, args.bind)
    return 0
