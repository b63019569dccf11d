"""TSC-Net: Trajectory-Scene-Cell Network for Pedestrian Trajectory Prediction (ICLR 2025). Work in progress."""

from iclr25.shared.paper import Paper

PAPER = Paper(
    slug="tsc-net",
    title="TSC-Net: Trajectory-Scene-Cell Network for Pedestrian Trajectory Prediction",
    authors="",
    arxiv="",
    code="hubovc/TSC-Net",
    cli="iclr25.tsc_net.cli:main",
    reproduce="iclr25.tsc_net.reproduce:run",
)
