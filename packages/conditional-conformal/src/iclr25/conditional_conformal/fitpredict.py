"""The `fit-predict` verb's work: split a user's table, train an MDN (and a quantile net for CQR), calibrate the
chosen method, write per-row sets for the held-out rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.files import write_text

from .data import split_indices, standardize


def build_method(name: str, est: Any, alpha: float, m: int, m_tau: int, seed: int):
    """A method by its CLI name, on estimator `est`."""
    from .baselines import PCP, PiOnly, SplitCP
    from .cp2 import CP2HPD, CP2PCP

    if name == "cp2-pcp-l":
        return CP2PCP(est, alpha, m, m_tau, "linear", seed=seed)
    if name == "cp2-pcp-d":
        return CP2PCP(est, alpha, m, m_tau, "difference", seed=seed)
    if name == "cp2-hpd":
        return CP2HPD(est, alpha, m_tau, seed=seed)
    if name == "pcp":
        return PCP(est, alpha, m, seed=seed)
    if name == "pi":
        return PiOnly(est, alpha, m, m_tau, seed=seed)
    if name == "cp":
        return SplitCP(est, alpha)
    raise ValueError(f"unknown method {name!r}")


def fit_predict(values: list[list[float]], n_features: int, args: Any, folder: Path) -> dict[str, Any]:
    """Train / calibrate / test split (shuffled with --seed), fit, predict; writes sets.csv; returns a summary."""
    from .baselines import CQR
    from .estimators import MDN

    a = np.asarray(values, dtype=float)
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(len(a))
    n_cal, n_test = int(args.cal_frac * len(a)), int(args.test_frac * len(a))
    ic, it, itr = split_indices(perm, n_cal, n_test)
    X, Y = a[:, :n_features], a[:, n_features:]
    Xtr, Xc, Xt = standardize(X[itr], X[ic], X[it])
    Ytr, Yc, Yt = Y[itr], Y[ic], Y[it]
    if args.method == "cqr":
        method = CQR(alpha=args.alpha, seed=args.seed).train(Xtr, Ytr).calibrate(Xc, Yc)
    else:
        mdn = MDN(X.shape[1], Y.shape[1], args.components, (100, 100), seed=args.seed)
        mdn.fit(Xtr, Ytr, epochs=args.epochs, seed=args.seed)
        method = build_method(args.method, mdn, args.alpha, args.m, args.m_tau, args.seed).calibrate(Xc, Yc)
    sets = method.predict_set(Xt)
    hit = sets.contains(Yt)
    one_d = Y.shape[1] == 1
    size = sets.length() if one_d else sets.volume()
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(["row", *(f"y{j}" for j in range(Y.shape[1])), "covered", "size", "set"])
    for j, row in enumerate(it):
        desc = ";".join(f"[{lo:.6g},{hi:.6g}]" for lo, hi in sets.intervals(j)) if one_d else ""
        w.writerow([int(row) + 1, *(f"{v:.6g}" for v in Yt[j]), int(hit[j]), f"{size[j]:.6g}", desc])
    write_text(folder / "sets.csv", text.getvalue())
    return {
        "method": args.method,
        "alpha": args.alpha,
        "n_train": len(itr),
        "n_cal": len(ic),
        "n_test": len(it),
        "coverage": float(hit.mean()),
        "mean_size": float(np.mean(size)),
        "size_over_sd": float(np.mean(size) / Yt.std()) if one_d else float("nan"),
        "qhat": float(np.max(method.qhat_)),
    }
