"""Agree to Disagree: Demystifying Homogeneous Deep Ensembles through Distributional Equivalence (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="ensemble-homogeneity",
    title="Agree to Disagree: Demystifying Homogeneous Deep Ensembles through Distributional Equivalence",
    authors="Yipei Wang, Xiaoqian Wang",
    arxiv="",
    code="yipei-wang/DeepEnsembleDemystified",
    cli="iclr25.ensemble_homogeneity.cli:main",
    reproduce="iclr25.ensemble_homogeneity.reproduce:run",
)
