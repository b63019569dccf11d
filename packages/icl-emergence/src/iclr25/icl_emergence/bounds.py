"""PAC-Bayesian generalization bounds for two-level AR-NTP (spec §3.2; the paper's exact constants, its n_eff
and its prompt-length term could not be verified: these are the documented generic forms).

- `pac_bayes_term`: c * sqrt((KL + ln(2 sqrt(n) / delta)) / (2 n)) for a loss in [0, c] (Maurer/Seeger form).
- `two_level_bound`: E_mu L <= E_mu L_hat + seq_term(n_eff) + topic_term(K), delta/2 each (union bound);
  n_eff = K*N*T ("token", default) or K*N ("sequence").
- `data_dependent_bound`: the prior is trained on K_J held-out topics; only the remaining K - K_J count.
- `gaussian_kl`, `isotropic_gaussian_kl`: KL between (diagonal) Gaussian posterior and prior.
- `langevin_kl`: Girsanov bound for Langevin/SGLD, KL <= (beta/4) sum_s eta_s ||g_s - g^J_s||^2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

N_EFF = ("token", "sequence")


def _check(kl: float, n: float, delta: float, c: float) -> None:
    if not (kl >= 0 and math.isfinite(kl)):
        raise ValueError(f"kl must be finite and >= 0, got {kl}")
    if not n >= 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    if not c > 0:
        raise ValueError(f"c must be > 0, got {c}")


def pac_bayes_term(kl: float, n: float, delta: float, c: float = 1.0) -> float:
    """c * sqrt((KL + ln(2 sqrt(n)/delta)) / (2 n)): the PAC-Bayes gap for n samples of a loss in [0, c]."""
    _check(kl, n, delta, c)
    return c * math.sqrt((kl + math.log(2 * math.sqrt(n) / delta)) / (2 * n))


def effective_n(K: int, N: int, T: int, n_eff: str = "token") -> int:
    """K*N*T tokens ("token") or K*N sequences ("sequence")."""
    if n_eff not in N_EFF:
        raise ValueError(f"n_eff must be one of {', '.join(N_EFF)}; got {n_eff!r}")
    return K * N * T if n_eff == "token" else K * N


def two_level_bound(
    emp_loss: float,
    kl: float,
    K: int,
    N: int,
    T: int,
    delta: float = 0.05,
    c: float = 1.0,
    n_eff: str = "token",
    kl_topic: float | None = None,
) -> dict[str, float]:
    """Two-level bound (spec §3.2 items 1-2): emp_loss + seq_term(KL, n_eff, delta/2) + topic_term(KL, K, delta/2)."""
    n = effective_n(K, N, T, n_eff)
    seq = pac_bayes_term(kl, n, delta / 2, c)
    topic = pac_bayes_term(kl if kl_topic is None else kl_topic, K, delta / 2, c)
    return {"emp_loss": float(emp_loss), "seq_term": seq, "topic_term": topic, "bound": float(emp_loss) + seq + topic}


def data_dependent_bound(
    emp_loss: float, kl: float, K: int, K_J: int, N: int, T: int, **kwargs: Any
) -> dict[str, float]:
    """Two-level bound with a prior trained on K_J of the K topics (spec §3.2 item 3): uses the other K - K_J."""
    if not 0 <= K_J < K:
        raise ValueError(f"K_J must lie in [0, K), got K_J = {K_J}, K = {K}")
    return two_level_bound(emp_loss, kl, K - K_J, N, T, **kwargs)


def gaussian_kl(mu_q: Any, sigma_q: Any, mu_p: Any, sigma_p: Any) -> float:
    """KL(N(mu_q, diag sigma_q^2) || N(mu_p, diag sigma_p^2)), summed over coordinates (sigmas broadcast)."""
    mu_q, mu_p = np.asarray(mu_q, float), np.asarray(mu_p, float)
    sq, sp = (
        np.broadcast_to(np.asarray(sigma_q, float), mu_q.shape),
        np.broadcast_to(np.asarray(sigma_p, float), mu_q.shape),
    )
    if (sq <= 0).any() or (sp <= 0).any():
        raise ValueError("standard deviations must be > 0")
    return float(np.sum(np.log(sp / sq) + (sq**2 + (mu_q - mu_p) ** 2) / (2 * sp**2) - 0.5))


def isotropic_gaussian_kl(theta_hat: Any, theta_prior: Any, sigma: float) -> float:
    """KL(N(theta_hat, s^2 I) || N(theta_prior, s^2 I)) = ||theta_hat - theta_prior||^2 / (2 s^2)."""
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    diff = np.asarray(theta_hat, float) - np.asarray(theta_prior, float)
    return float(diff @ diff / (2 * sigma**2)) if diff.ndim == 1 else float((diff**2).sum() / (2 * sigma**2))


def langevin_kl(grad_diff_sq_norms: Any, step_sizes: Any, beta: float) -> float:
    """(beta/4) sum_s eta_s ||g_s - g^J_s||^2: the discretised Girsanov bound on KL(mu_tau || nu_tau) for Langevin
    dynamics on L_hat vs on the prior objective L_hat_J from the same initialisation (spec §3.2 item 4)."""
    g, eta = (
        np.asarray(grad_diff_sq_norms, float),
        np.broadcast_to(np.asarray(step_sizes, float), np.shape(grad_diff_sq_norms)),
    )
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    if (g < 0).any() or (eta < 0).any():
        raise ValueError("squared norms and step sizes must be >= 0")
    return float(beta / 4 * np.sum(eta * g))


def clip_loss(loss: Any, c: float) -> Any:
    """min(loss, c): the bounded loss the PAC-Bayes terms need (spec §3.4 item 5)."""
    if not c > 0:
        raise ValueError(f"c must be > 0, got {c}")
    return np.minimum(loss, c)
