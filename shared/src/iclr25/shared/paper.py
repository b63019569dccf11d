"""The `Paper` descriptor each package exports, and discovery through the `iclr25.papers` entry points.

Kept import-light (standard library only) so that `iclr25 list` answers in well under a second.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

ENTRY_POINT_GROUP = "iclr25.papers"


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
    cli: str = ""  # "iclr25.<slug_u>.cli:main" (the default): takes argv (list[str] | None), returns an exit code
    reproduce: str = ""  # "iclr25.<slug_u>.reproduce:run" (the default): (scale, out, seed, ...) -> Report
    summary: str = ""
    venue: str = "ICLR 2025"
    scales: tuple[str, ...] = field(default=("quick", "full"))

    def __post_init__(self) -> None:
        if not self.slug or self.slug != self.slug.lower() or " " in self.slug:
            raise ValueError(f"Paper slug must be lower-case kebab-case, got {self.slug!r}")
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
        import tomllib
        from importlib.resources import files

        text = files(module).joinpath("paper.toml").read_text(encoding="utf-8")
        fields = tomllib.loads(text)
        slug = module.removeprefix("iclr25.").replace("_", "-")
        unknown = set(fields) - {f.name for f in dataclasses.fields(cls)} | ({"slug"} & set(fields))
        if unknown:
            raise ValueError(f"{module}/paper.toml: unknown or derived fields {sorted(unknown)}")
        return cls(slug=slug, **fields)

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
