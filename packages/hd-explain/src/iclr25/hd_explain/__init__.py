"""Data-centric Prediction Explanation via Kernelized Stein Discrepancy (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="hd-explain",
    title="Data-centric Prediction Explanation via Kernelized Stein Discrepancy",
    authors="Mahtab Sarvmaili, Hassan Sajjad, Ga Wu",
    arxiv="2403.15576",
    code="MahtabSarvmaili/HDExplain",
    cli="iclr25.hd_explain.cli:main",
    reproduce="iclr25.hd_explain.reproduce:run",
)
