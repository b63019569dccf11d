"""CtD: Composition through Decomposition in Emergent Communication (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="compose-decompose",
    title="CtD: Composition through Decomposition in Emergent Communication",
    authors="Boaz Carmeli, Ron Meir, Yonatan Belinkov",
    arxiv="",
    code="",
    cli="iclr25.compose_decompose.cli:main",
    reproduce="iclr25.compose_decompose.reproduce:run",
)
