"""Data formats of the SA-GFN package (Madan et al., ICLR 2025; spec §6c): sample logs and mode sets.

No external data exist for the paper's tasks (HyperGrid, bit sequences are generated). Provided instead:
- sample logs: `.npz` with `states int64 [N, D]` (terminal states), `iteration int64 [N]`, optional
  `log_reward float [N]`; `load_sample_log` validates them and `sample_log_metrics` recomputes the empirical
  L1/TV and the modes found on a HyperGrid;
- mode sets for sequence tasks: text, one bitstring per line (`load_mode_set`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.files import save_arrays


def save_sample_log(path: str | Path, states: Any, iteration: Any, log_reward: Any | None = None) -> Path:
    """Write a sample log (.npz)."""
    arrays = {"states": np.asarray(states, dtype=np.int64), "iteration": np.asarray(iteration, dtype=np.int64)}
    if log_reward is not None:
        arrays["log_reward"] = np.asarray(log_reward, dtype=np.float64)
    return save_arrays(path, arrays)


def load_sample_log(path: str | Path) -> dict[str, np.ndarray]:
    """Read and validate a sample log; ValueError on a malformed file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"sample log {path} does not exist")
    from iclr25.shared.safeload import load_npz

    data = load_npz(path, what="readable .npz sample log")  # allow_pickle=False: nothing in the file runs
    if "states" not in data or "iteration" not in data:
        raise ValueError(f"{path} must hold 'states' and 'iteration' arrays, has {sorted(data)}")
    states, it = data["states"], data["iteration"]
    if states.ndim != 2 or not np.issubdtype(states.dtype, np.integer):
        raise ValueError(f"'states' must be an integer array [N, D], got {states.dtype} {states.shape}")
    if it.shape != (states.shape[0],):
        raise ValueError(f"'iteration' must have shape ({states.shape[0]},), got {it.shape}")
    if "log_reward" in data and data["log_reward"].shape != it.shape:
        raise ValueError(f"'log_reward' must have shape {it.shape}, got {data['log_reward'].shape}")
    if (states < 0).any():
        raise ValueError("'states' must be non-negative grid coordinates")
    return data


def sample_log_metrics(log: dict[str, np.ndarray], env) -> dict[str, float]:
    """Empirical l1_mean and TV to R/Z, modes found and distinct states of a HyperGrid sample log."""
    import torch

    from iclr25.sa_gfn.gflownet import l1_mean, total_variation

    states = torch.as_tensor(log["states"])
    if states.shape[1] != env.ndim or (states >= env.height).any():
        raise ValueError(f"states do not fit {env!r}: shape {tuple(states.shape)}, max {int(states.max())}")
    freq = torch.bincount(env.to_index(states), minlength=env.n_states).double()
    freq /= freq.sum()
    target = env.true_distribution()
    modes = env.mode_region(states[env.mode_mask(states)]).unique().numel()
    return {
        "l1_mean": l1_mean(freq, target),
        "tv": total_variation(freq, target),
        "modes_found": int(modes),
        "distinct_states": int(env.to_index(states).unique().numel()),
        "n": int(states.shape[0]),
    }


def load_mode_set(path: str | Path, length: int | None = None) -> np.ndarray:
    """Read a mode set: one bitstring per line (blank lines ignored) -> int64 array [M, length]."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"mode set {path} does not exist")
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if set(line) - {"0", "1"}:
            raise ValueError(f"{path}:{i}: a mode must contain only 0 and 1, got {line[:40]!r}")
        if length is not None and len(line) != length:
            raise ValueError(f"{path}:{i}: a mode must have {length} bits, got {len(line)}")
        rows.append([int(c) for c in line])
    if not rows:
        raise ValueError(f"{path} holds no modes")
    if len({len(r) for r in rows}) != 1:
        raise ValueError(f"{path}: every mode must have the same length")
    return np.array(rows, dtype=np.int64)
