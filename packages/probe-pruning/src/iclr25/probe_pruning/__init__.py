"""Probe Pruning: Accelerating LLMs through Dynamic Pruning via Model-Probing (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="probe-pruning",
    title="Probe Pruning: Accelerating LLMs through Dynamic Pruning via Model-Probing",
    authors="Qi Le, Enmao Diao, Ziyan Wang, Xinran Wang, Jie Ding, Li Yang, Ali Anwar",
    arxiv="2502.15618",
    code="Qi-Le1/Probe_Pruning",
    cli="iclr25.probe_pruning.cli:main",
    reproduce="iclr25.probe_pruning.reproduce:run",
)
