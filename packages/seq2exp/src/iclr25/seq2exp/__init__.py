"""Learning to Discover Regulatory Elements for Gene Expression Prediction (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="seq2exp",
    title="Learning to Discover Regulatory Elements for Gene Expression Prediction",
    authors="Xingyu Su, Haiyang Yu, Degui Zhi, Shuiwang Ji",
    arxiv="2502.13991",
    code="divelab/AIRS",
    cli="iclr25.seq2exp.cli:main",
    reproduce="iclr25.seq2exp.reproduce:run",
)
