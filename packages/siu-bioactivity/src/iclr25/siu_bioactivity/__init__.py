"""Redefining the Task of Bioactivity Prediction (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="siu-bioactivity",
    title="Redefining the Task of Bioactivity Prediction",
    authors="Yanwen Huang, Bowen Gao, Yinjun Jia, Hongbo Ma, Wei-Ying Ma, Ya-Qin Zhang, Yanyan Lan",
    arxiv="2406.08961",
    code="bowen-gao/SIU",
    cli="iclr25.siu_bioactivity.cli:main",
    reproduce="iclr25.siu_bioactivity.reproduce:run",
)
