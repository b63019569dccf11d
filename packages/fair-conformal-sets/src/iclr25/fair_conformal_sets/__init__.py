"""Conformal Prediction Sets Can Cause Disparate Impact (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="fair-conformal-sets",
    title="Conformal Prediction Sets Can Cause Disparate Impact",
    authors="Jesse C. Cresswell, Bhargava Kumar, Yi Sui, Mouloud Belbahri",
    arxiv="2410.01888",
    code="layer6ai-labs/conformal-prediction-fairness",
    cli="iclr25.fair_conformal_sets.cli:main",
    reproduce="iclr25.fair_conformal_sets.reproduce:run",
)
