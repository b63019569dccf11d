"""Probabilistic Conformal Prediction with Approximate Conditional Validity (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="conditional-conformal",
    title="Probabilistic Conformal Prediction with Approximate Conditional Validity",
    authors="Vincent Plassier, Alexander Fishkov, Mohsen Guizani, Maxim Panov, Eric Moulines",
    arxiv="2407.01794",
    code="stat-ml/conditional_cp",
    cli="iclr25.conditional_conformal.cli:main",
    reproduce="iclr25.conditional_conformal.reproduce:run",
)
