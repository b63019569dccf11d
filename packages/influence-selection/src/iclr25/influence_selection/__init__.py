"""Enhancing Prediction Performance through Influence Measure (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="influence-selection",
    title="Enhancing Prediction Performance through Influence Measure",
    authors="Shuguang Yu, Wenqian Xu, Xinyi Zhou, Xuechun Wang, Hongtu Zhu",
    arxiv="",
    code="",
    cli="iclr25.influence_selection.cli:main",
    reproduce="iclr25.influence_selection.reproduce:run",
)
