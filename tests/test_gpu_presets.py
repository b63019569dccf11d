"""Every package's smallest preset (`ci`, else `quick`) on a CUDA GPU: it runs to the end with `--device cuda` and its
gated claims hold there too. Marked `gpu`: skipped where no GPU is present, run by `pytest -m gpu` on a GPU machine."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from iclr25.shared.device import cuda_available
from iclr25.shared.paper import discover_papers

PAPERS = sorted(discover_papers())
# Gated claims that a package documents as holding on CPU only, with the reason its README gives.
DEVICE_DEPENDENT: dict[str, dict[str, str]] = {
    "etd-exploration": {
        name: "the maze critic's rank correlations swing with the float kernels (0.72-0.88 per seed on an H200, 0.72-0.80 "
        "on another CPU build of torch, against the 0.9 gate): README, 'Device and kernel dependence'"
        for name in ("maze_rho_pairs_clean", "maze_rho_goal20_noisy")
    },
}


def smallest_preset(slug: str) -> str:
    """`ci` where the package has one, else `quick`."""
    presets = importlib.import_module("iclr25." + slug.replace("-", "_") + ".config").PRESETS
    return "ci" if "ci" in presets else "quick"


def test_every_package_has_a_small_preset() -> None:
    assert len(PAPERS) == 19
    assert all(smallest_preset(slug) in ("ci", "quick") for slug in PAPERS)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("slug", PAPERS)
def test_the_smallest_preset_holds_its_gated_claims_on_cuda(slug: str, tmp_path: Path) -> None:
    report = discover_papers()[slug].load_reproduce()(smallest_preset(slug), tmp_path / slug, device="cuda")
    assert report.metrics  # it measured something on the GPU
    excused = DEVICE_DEPENDENT.get(slug, {})
    failing = [c.name for c in report.claims if c.gated and not c.holds and c.name not in excused]
    assert not failing, f"{slug}: gated claims fail on cuda: {failing}"
