"""Slow, obviously-correct forms of FI and IV (one training point at a time, explicit matrices).

Follows the pseudocode of the paper's Appendix A literally: H = hess(R) (with the L2 term), for each point
M_i = d_x d_theta L (p x d, by autograd), J_i = -(1/n) H^{-1} M_i, s_c = J_i^T grad_theta log P_c + grad_x log P_c,
G_i = sum_c P_c s_c s_c^T, FI_i = v G_i^+ v^T with numpy's pinv. Imports nothing from the fast module.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _torch_parts(model: Any):
    import torch

    theta = torch.as_tensor(np.asarray(model.theta, float))

    def loss(t, x, y):
        return -torch.log_softmax(model.logits_fn(t, x), -1)[y]

    def logp(t, x):
        return torch.log_softmax(model.logits_fn(t, x), -1)

    return torch, theta, loss, logp


def reference_hessian(model: Any, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """H = d^2/dtheta^2 [mean_i L_i + 1/2 sum l2 theta^2], by torch.autograd.functional.hessian."""
    torch, theta, loss, _ = _torch_parts(model)
    Xt = torch.as_tensor(np.asarray(X, float))
    yt = torch.as_tensor(np.asarray(y).astype(int))
    lam = torch.as_tensor(np.asarray(model.l2_diag, float))

    def R(t):
        return sum(loss(t, Xt[i], yt[i]) for i in range(len(yt))) / len(yt) + 0.5 * (lam * t * t).sum()

    return torch.autograd.functional.hessian(R, theta).numpy()


def reference_mixed(model: Any, x: np.ndarray, y: int) -> np.ndarray:
    """M = d_x d_theta L(y, x; theta) as an explicit (p, d) matrix."""
    torch, theta, loss, _ = _torch_parts(model)
    xt = torch.as_tensor(np.asarray(x, float))

    def grad_theta(xx):
        t = theta.clone().requires_grad_(True)
        return torch.autograd.grad(loss(t, xx, int(y)), t, create_graph=True)[0]

    return torch.autograd.functional.jacobian(grad_theta, xt).numpy()


def reference_grad(model: Any, x: np.ndarray, y: int) -> np.ndarray:
    """grad_theta L(y, x; theta)."""
    torch, theta, loss, _ = _torch_parts(model)
    t = theta.clone().requires_grad_(True)
    return torch.autograd.grad(loss(t, torch.as_tensor(np.asarray(x, float)), int(y)), t)[0].numpy()


def reference_fi(
    model: Any,
    X: np.ndarray,
    y: np.ndarray,
    g_target: np.ndarray,
    rcond: float = 1e-8,
    basis: np.ndarray | None = None,
) -> np.ndarray:
    """FI(z', z_i) for every training point, one point at a time; g_target = grad_theta L(z') (or its mean)."""
    torch, theta, _, logp = _torch_parts(model)
    X = np.asarray(X, float)
    y = np.asarray(y).astype(int)
    n = len(X)
    H = reference_hessian(model, X, y)
    out = np.empty(n)
    for i in range(n):
        M = reference_mixed(model, X[i], y[i])  # (p, d)
        J = -np.linalg.solve(H, M) / n  # (p, d)   Eq. A.7
        if basis is not None:
            J = J @ basis
        xt = torch.as_tensor(X[i])
        dth, dx = torch.autograd.functional.jacobian(lambda t, x: logp(t, x), (theta, xt))
        dth, dx = dth.numpy(), dx.numpy()
        if basis is not None:
            dx = dx @ basis
        P = np.exp(logp(theta, xt).detach().numpy())
        G = np.zeros((J.shape[1], J.shape[1]))
        for c in range(len(P)):
            s_c = J.T @ dth[c] + dx[c]
            G += P[c] * np.outer(s_c, s_c)
        v = g_target @ J
        out[i] = v @ np.linalg.pinv(G, rcond=rcond, hermitian=True) @ v
    return out


def reference_iv(model: Any, X: np.ndarray, y: np.ndarray, X_val: np.ndarray, y_val: np.ndarray, l2_sum: float):
    """IV_i = g_i^T (sum_i hess L_i + l2_sum I)^{-1} sum_V g (Chhabra et al. 2024), explicit loop."""
    X = np.asarray(X, float)
    y = np.asarray(y).astype(int)
    lam = np.asarray(model.l2_diag, float)
    H_mean = reference_hessian(model, X, y) - np.diag(lam)
    H_sum = len(X) * H_mean + l2_sum * np.eye(H_mean.shape[0])
    gV = sum(reference_grad(model, X_val[j], y_val[j]) for j in range(len(X_val)))
    w = np.linalg.solve(H_sum, gV)
    return np.array([reference_grad(model, X[i], y[i]) @ w for i in range(len(X))])
