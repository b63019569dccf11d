"""Digests of floats that pass through every kind of CPU kernel a reproduction uses (torch's vectorised ops, its
BLAS and oneDNN layers, a few training steps, NumPy's ufuncs and BLAS, SciPy's LAPACK), computed in a fresh
process after `select_cpu_kernels()`. Run as a script; prints one JSON object of name -> SHA-256 prefix."""

from __future__ import annotations

import hashlib
import json

from iclr25.shared.device import kernels_in_effect, select_cpu_kernels


def _digest(array: object) -> str:
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def fingerprint() -> dict[str, str]:
    """Name -> digest of one computation each, seeded and on one thread."""
    select_cpu_kernels()
    import numpy as np
    import scipy.linalg
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(64, 96)
    w = torch.randn(96, 80)
    out = {
        "torch.matmul": _digest((x @ w).numpy()),
        "torch.exp_softmax": _digest(torch.softmax(x.exp() * 0.1, dim=-1).numpy()),
        "torch.conv1d": _digest(torch.nn.functional.conv1d(x[None], torch.randn(8, 64, 5)).numpy()),
        "torch.layer_norm_gelu": _digest(torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (96,))).numpy()),
    }
    model = torch.nn.Sequential(torch.nn.Linear(96, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    target = torch.randn(64, 1)
    for _ in range(20):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), target).backward()
        optimizer.step()
    out["torch.training"] = _digest(torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((120, 120))
    v = rng.standard_normal(20_000)
    single = a.astype(np.float32)
    out["numpy.ufuncs"] = _digest(np.concatenate([np.exp(v), np.log1p(np.abs(v)), np.tanh(v), np.exp(v[:100])]))
    out["numpy.matmul"] = _digest(np.concatenate([(a @ a).ravel(), (single @ single).ravel()]))
    out["scipy.lapack"] = _digest(scipy.linalg.solve(a @ a.T + np.eye(120), v[:120]))
    return out


if __name__ == "__main__":
    digests = fingerprint()
    print(json.dumps({"kernels": kernels_in_effect(), "digests": digests}))
