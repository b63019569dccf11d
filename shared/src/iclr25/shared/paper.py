"""The `Paper` descriptor each package exports, and discovery through the `iclr25.papers` entry points.

Kept import-light (standard library only) so that `iclr25 list` answers in well under a second.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

ENTRY_POINT_GROUP = "iclr25.papers"

README_HEADER_BEGIN = "<!-- paper:begin (generated from paper.toml) -->"
README_HEADER_END = "<!-- paper:end -->"

# The type each paper.toml key must have (the TOML value, before Paper converts it).
_TOML_TYPES: dict[str, type] = {
    "title": str,
    "authors": str,
    "arxiv": str,
    "openreview": str,
    "code": str,
    "code_commit": str,
    "licence": str,
    "cli": str,
    "reproduce": str,
    "summary": str,
    "venue": str,
    "scales": list,
    "settings": dict,
}
_OPENREVIEW_ID = re.compile(r"[A-Za-z0-9_-]{8,12}")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Paper:
    """What the umbrella CLI needs to know about one paper package.

    `cli` and `reproduce` are dotted paths ("module:function") resolved only when used, so that
    listing papers never imports torch.
    """

    slug: str
    title: str
    authors: str
    arxiv: str
    code: str = ""  # official code repository ("owner/name"), or "" when none is public
    code_commit: str = ""  # the official-code commit this package was checked against, or "" when not recorded
    licence: str = ""  # the official code's licence as stated (e.g. "MIT", "none"), or "" when unknown
    openreview: str = ""  # the ICLR 2025 OpenReview forum id, or "" when unknown
    cli: str = ""  # "iclr25.<slug_u>.cli:main" (the default): takes argv (list[str] | None), returns an exit code
    reproduce: str = ""  # "iclr25.<slug_u>.reproduce:run" (the default): (scale, out, seed, ...) -> Report
    summary: str = ""
    venue: str = "ICLR 2025"
    scales: tuple[str, ...] = field(default=("quick", "full"))
    # The paper's main experiment settings as the README states them, in order: (name, value) pairs such as
    # ("model", "ResNet-50"); a `[settings]` table in paper.toml (2-6 short string entries), or () when not given.
    settings: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.slug or self.slug != self.slug.lower() or " " in self.slug:
            raise ValueError(f"Paper slug must be lower-case kebab-case, got {self.slug!r}")
        settings = self.settings
        pairs = tuple(settings.items()) if isinstance(settings, Mapping) else tuple(tuple(p) for p in settings)
        if any(len(p) != 2 or not all(isinstance(v, str) and v.strip() for v in p) for p in pairs):
            raise ValueError(f"Paper.settings must map names to non-empty strings, got {settings!r}")
        if pairs and not 2 <= len(pairs) <= 6:
            raise ValueError(f"Paper.settings must have 2 to 6 entries (the main ones), got {len(pairs)}")
        object.__setattr__(self, "settings", pairs)
        if self.openreview and not _OPENREVIEW_ID.fullmatch(self.openreview):
            raise ValueError(
                f"Paper.openreview must be an OpenReview forum id like 'YeSxbRrDRl', got {self.openreview!r}"
            )
        if self.code and not _REPO.fullmatch(self.code):
            raise ValueError(f"Paper.code must look like 'owner/name', got {self.code!r}")
        if self.code_commit and not (self.code and _COMMIT.fullmatch(self.code_commit)):
            raise ValueError(
                f"Paper.code_commit must be a lower-case hex commit (7-40 digits) of the official code, "
                f"given together with `code`; got {self.code_commit!r}"
            )
        if self.licence and not self.code:
            raise ValueError(f"Paper.licence {self.licence!r} is the official code's: give `code` too")
        object.__setattr__(self, "cli", self.cli or f"{self.module}.cli:main")
        object.__setattr__(self, "reproduce", self.reproduce or f"{self.module}.reproduce:run")
        object.__setattr__(self, "scales", tuple(self.scales))
        for name in ("cli", "reproduce"):
            if ":" not in getattr(self, name):
                raise ValueError(f"Paper.{name} must look like 'module:function', got {getattr(self, name)!r}")

    @classmethod
    def load(cls, module: str) -> Paper:
        """The descriptor of package `module` (e.g. ``iclr25.eci_conformal``), read from the `paper.toml` beside
        its `__init__.py` (title, authors, arxiv, code, summary, scales: data, not code)."""
        from importlib.resources import files

        text = files(module).joinpath("paper.toml").read_text(encoding="utf-8")
        slug = module.removeprefix("iclr25.").replace("_", "-")
        return cls.from_toml(text, slug, source=f"{module}/paper.toml")

    @classmethod
    def from_toml(cls, text: str, slug: str, source: str = "paper.toml") -> Paper:
        """The descriptor of paper `slug` from the text of its paper.toml; any problem (bad TOML, an unknown or
        derived key, a value of the wrong type or form) is a ValueError that names `source`."""
        import tomllib

        try:
            fields = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{source}: not valid TOML: {e}") from None
        unknown = set(fields) - set(_TOML_TYPES)
        if unknown:
            raise ValueError(f"{source}: unknown or derived fields {sorted(unknown)} (known: {', '.join(_TOML_TYPES)})")
        for name, value in fields.items():
            if not isinstance(value, _TOML_TYPES[name]):
                raise ValueError(
                    f"{source}: field {name!r} must be a TOML {_TOML_TYPES[name].__name__}, "
                    f"got {type(value).__name__} {value!r}"
                )
        if not all(isinstance(s, str) for s in fields.get("scales", [])):
            raise ValueError(f"{source}: field 'scales' must be a list of strings, got {fields['scales']!r}")
        try:
            return cls(slug=slug, **fields)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    def readme_header(self) -> str:
        """The header block a package README embeds right after its first heading (between README_HEADER_BEGIN
        and README_HEADER_END): title, authors, venue, arXiv/OpenReview links, official code, settings."""
        lines = [README_HEADER_BEGIN, f"**{self.title}**", "", f"- Authors: {self.authors or 'not found'}"]
        lines.append(f"- Venue: {self.venue}")
        links = []
        arxiv = self.arxiv.strip()
        if re.fullmatch(r"\d{4}\.\d{4,5}(v\d+)?", arxiv):
            links.append(f"arXiv [{arxiv}](https://arxiv.org/abs/{arxiv})")
        else:
            links.append(f"arXiv: {arxiv or 'none found'}")
        if self.openreview:
            links.append(f"OpenReview [{self.openreview}](https://openreview.net/forum?id={self.openreview})")
        lines.append("- Paper: " + " · ".join(links))
        if self.code:
            url = f"https://github.com/{self.code}"
            code = f"[{self.code}]({url})"
            if self.code_commit:
                code += f" at commit [`{self.code_commit[:12]}`]({url}/tree/{self.code_commit})"
            if self.licence:
                code += f"; licence: {self.licence}"
            lines.append(f"- Official code: {code}")
        else:
            lines.append("- Official code: none public")
        if self.settings:
            lines.append("- Main experiment settings (the paper's, as read for this package):")
            lines += [f"  - {name}: {value}" for name, value in self.settings]
        lines.append(README_HEADER_END)
        return "\n".join(lines)

    @property
    def module(self) -> str:
        """The import name of the package, e.g. ``iclr25.eci_conformal``."""
        return "iclr25." + self.slug.replace("-", "_")

    @property
    def distribution(self) -> str:
        """The PyPI distribution name, e.g. ``iclr25-eci-conformal``."""
        return "iclr25-" + self.slug

    def load_cli(self) -> Callable[[list[str] | None], int]:
        """Import and return the package CLI's `main`."""
        return _resolve(self.cli)

    def load_reproduce(self) -> Callable[..., Any]:
        """Import and return the package's reproduction entry point."""
        return _resolve(self.reproduce)

    def load_claims(self) -> Callable[[Any], list[Any]]:
        """Import and return the package's claim declarations, `declared(config) -> list[Declared]` of its
        `claims` module (see `iclr25.shared.claims`)."""
        return _resolve(f"{self.module}.claims:declared")

    def load_timings(self) -> tuple[str, ...]:
        """Name patterns (claims and dotted metric paths) the package's claims module declares as timings beyond
        what their names say (`TIMINGS`, default none): `iclr25 compare` lists them apart and never calls them drift."""
        return tuple(getattr(importlib.import_module(f"{self.module}.claims"), "TIMINGS", ()))

    def load_presets(self) -> dict[str, Any]:
        """Import and return the package's presets (`PRESETS` of its `config` module): scale name -> Config."""
        return _resolve(f"{self.module}.config:PRESETS")


def _resolve(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def discover_papers() -> dict[str, Paper]:
    """Installed papers by slug, from the `iclr25.papers` entry-point group."""
    papers: dict[str, Paper] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        paper = ep.load()
        if not isinstance(paper, Paper):
            raise TypeError(f"entry point {ep.name!r} must point at an iclr25.shared.Paper, got {type(paper)}")
        if ep.name != paper.slug:
            raise ValueError(f"entry point name {ep.name!r} differs from its Paper slug {paper.slug!r}")
        papers[paper.slug] = paper
    return dict(sorted(papers.items()))
