"""One `seed_everything` for all packages: Python, NumPy and (when installed) torch, CPU and CUDA."""

from __future__ import annotations

import os
import random


def seed_everything(seed: int, deterministic: bool = False) -> int:
    """Seed every generator; with `deterministic`, ask torch for deterministic kernels ("warn" on CUDA).

    Sets `PL_GLOBAL_SEED` too, so Lightning seeds DataLoader workers from it, as its own helper does.
    """
    if not isinstance(seed, int) or seed < 0 or seed >= 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    os.environ["PL_GLOBAL_SEED"] = str(seed)
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)  # noqa: NPY002 (the legacy global generator is what third-party code uses)
    except ImportError:  # numpy is a dependency of shared, but keep this usable without it
        pass
    try:
        import torch
    except ImportError:
        return seed
    torch.manual_seed(seed)  # also seeds every CUDA device
    if deterministic:
        warn_only = torch.cuda.is_available()
        torch.use_deterministic_algorithms(True, warn_only=warn_only)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return seed
