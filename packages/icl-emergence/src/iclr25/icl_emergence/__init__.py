"""Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from Generalization (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="icl-emergence",
    title="Towards Auto-Regressive Next-Token Prediction: In-Context Learning Emerges from Generalization",
    authors="Zixuan Gong, Xiaolin Hu, Huayi Tang, Yong Liu",
    arxiv="",
    code="zx-gong/ICL-Emerge",
    cli="iclr25.icl_emergence.cli:main",
    reproduce="iclr25.icl_emergence.reproduce:run",
)
