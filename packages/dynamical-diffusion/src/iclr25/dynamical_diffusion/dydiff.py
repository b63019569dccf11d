"""Dynamical Diffusion (DyDiff): Guo et al., "Dynamical Diffusion: Learning Temporal Dynamics with Diffusion
Models", ICLR 2025, arXiv 2503.00951.

Implements the temporally-aware forward process and its deterministic (DDIM, eta = 0) sampler:

- the cosine beta schedule (Nichol & Dhariwal) giving abar_t, and the "cosine-r" gamma schedule giving
  theta_bar_t = prod_{i<=t} (1 - gamma_i), which equals r * abar_t + (1 - r) before clipping   (Sec. 3, schedules)
- the dynamics operator Dyn_theta, a causal moving average along the frame axis, and its inverse   (Sec. 3, Dyn)
- q(x_t | x_0): x_t = sqrt(abar_t) Dyn(x_0) + sqrt(1 - abar_t) Dyn(eps)                          (forward process)
- the training loss || eps_phi(x_t, t, cond) - Dyn(eps) ||^2 (mixed-noise target)                (objective)
- the DDIM step: unmix with theta_bar_t, one ordinary DDIM step, re-mix with theta_bar_{t_prev}      (sampler)

With r = 0, theta_bar is identically 1, Dyn is the identity and everything reduces to standard diffusion ("DPM").
Follows the official code (thuml/dynamical-diffusion); equations are numbered here as in the package's README:
(1) beta schedule, (2) gamma schedule, (3) Dyn, (4) Dyn^{-1}, (5) forward process, (6) loss, (7) DDIM step,
(8) prior. Deliberate differences: pixel space (no VAE); an optional `clip_x0` that the official sampler lacks
(off by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from iclr25.dynamical_diffusion.config import DDIM_BUGS

EpsNet = Callable[[Tensor, Tensor], Tensor]  # (net_input (B, S, 2C+2, *sp), t (B,)) -> eps_mix (B, S, C, *sp)


def make_beta_schedule(kind: str = "cosine", T: int = 1000, s: float = 0.008) -> np.ndarray:
    """Cosine beta schedule of length T (float64), beta_t = clip(1 - f(t+1)/f(t), 0, 0.999)   (1)."""
    if kind != "cosine":
        raise ValueError(f"beta schedule must be 'cosine', got {kind!r}")
    if T < 2:
        raise ValueError(f"T must be >= 2, got {T}")
    u = np.arange(T + 1, dtype=np.float64)
    f = np.cos((u / T + s) / (1 + s) * math.pi / 2) ** 2
    return np.clip(1 - f[1:] / f[:-1], 0, 0.999)


def make_theta_schedule(kind: str = "cosine", T: int = 1000, ratio: float = 0.5, s: float = 0.008) -> np.ndarray:
    """Gamma schedule "cosine-r": gamma_t = clip(1 - g(t+1)/g(t), 0, 0.999), g = r f/f(0) + 1 - r   (2)."""
    if kind != "cosine":
        raise ValueError(f"gamma schedule must be 'cosine', got {kind!r}")
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"gamma ratio r must lie in [0, 1], got {ratio}")
    u = np.arange(T + 1, dtype=np.float64)
    f = np.cos((u / T + s) / (1 + s) * math.pi / 2) ** 2
    g = ratio * f / f[0] + (1 - ratio)
    return np.clip(1 - g[1:] / g[:-1], 0, 0.999)


def cumprod_schedule(betas: np.ndarray) -> np.ndarray:
    """abar_t = prod_{i<=t} (1 - beta_i) (also theta_bar from gammas)."""
    return np.cumprod(1.0 - betas)


def ddim_timesteps(n: int, T: int = 1000) -> np.ndarray:
    """DDIM timesteps as in the official sampler: arange(0, T, T // n) + 1 (ascending)."""
    if not 1 <= n <= T:
        raise ValueError(f"number of DDIM steps must lie in [1, {T}], got {n}")
    steps = np.arange(0, T, T // n) + 1
    if steps[-1] > T - 1:  # the schedules index t in [0, T-1]
        raise ValueError(f"{n} DDIM steps over T={T} would reach t={steps[-1]} > T-1; pick another step count")
    return steps


def _theta_view(theta: Tensor | float, x: Tensor) -> Tensor:
    """theta as a (B, 1, ..., 1) tensor (or scalar tensor) broadcasting over x's trailing dims."""
    theta = torch.as_tensor(theta, dtype=torch.float64, device=x.device)
    if theta.ndim == 0:
        return theta
    return theta.reshape(-1, *([1] * (x.ndim - 1)))


def dyn(x: Tensor, theta: Tensor | float, dim: int = 1) -> Tensor:
    """Dyn_theta(x): y^0 = x^0, y^s = sqrt(1-theta) y^{s-1} + sqrt(theta) x^s along `dim`   (3).

    `theta` is a scalar or one value per batch element (dim 0). Computed in closed form as one lower-triangular
    matrix product over frames: y^s = a^s x^0 + sum_{1<=j<=s} sqrt(theta) a^{s-j} x^j with a = sqrt(1-theta).
    """
    x = x.movedim(dim, 1)  # (B, S, ...)
    S = x.shape[1]
    th = torch.as_tensor(theta, dtype=torch.float64, device=x.device).reshape(-1)  # (B,) or (1,)
    a = torch.sqrt(1 - th)[:, None, None]  # (b, 1, 1)
    idx = torch.arange(S, device=x.device)
    power = (idx[:, None] - idx[None, :]).clamp(min=0).to(torch.float64)  # (S, S): s - j
    coef = a**power * torch.sqrt(th)[:, None, None]  # (b, S, S)
    coef[:, :, 0] = a[:, :, 0] ** idx.to(torch.float64)  # first frame enters unscaled: a^s
    coef = torch.tril(coef).to(x.dtype)  # (b, S, S), row s mixes frames j <= s
    y = torch.einsum("bsj,bj...->bs...", coef.expand(x.shape[0], S, S), x)
    return y.movedim(1, dim)


def dyn_inverse(y: Tensor, theta: Tensor | float, dim: int = 1, eps: float = 1e-6) -> Tensor:
    """Dyn_theta^{-1}(y): x^0 = y^0, x^s = (y^s - sqrt(1-theta) y^{s-1}) / sqrt(theta)   (4).

    sqrt(theta) is clamped at `eps` (theta_bar -> 0 when r = 1 and t -> T).
    """
    y = y.movedim(dim, 1)
    th = _theta_view(theta, y)
    a = torch.sqrt(1 - th).to(y.dtype)
    rt = torch.sqrt(th).clamp(min=eps).to(y.dtype)
    rest = (y[:, 1:] - a * y[:, :-1]) / rt
    return torch.cat([y[:, :1], rest], dim=1).movedim(1, dim)


def condition_input(xt: Tensor, cond: Tensor) -> Tensor:
    """Per-frame network input [x_t^s, context^s or 0, context mask, first-future mask] -> (B, S, 2C+2, *sp).

    Official conditioning key `concat-video-mask-1st`; `cond` holds the S_in context frames (B, S_in, C, *sp).
    """
    B, S = xt.shape[:2]
    n_ctx = cond.shape[1]
    if n_ctx >= S:
        raise ValueError(f"need fewer context frames ({n_ctx}) than total frames ({S})")
    ctx = torch.zeros_like(xt)
    ctx[:, :n_ctx] = cond
    mask_shape = (B, S, 1, *xt.shape[3:])
    ctx_mask = torch.zeros(mask_shape, dtype=xt.dtype, device=xt.device)
    ctx_mask[:, :n_ctx] = 1
    first = torch.zeros(mask_shape, dtype=xt.dtype, device=xt.device)
    first[:, n_ctx] = 1
    return torch.cat([xt, ctx, ctx_mask, first], dim=2)


class DynamicalDiffusion(nn.Module):
    """DyDiff around an eps-network `net(net_input, t)`; gamma_ratio = 0 is the standard diffusion model (DPM).

    Sequences are (B, S, C, *spatial) with the first `n_context` frames given as context; the whole sequence is
    diffused and the loss covers every frame, as in the official code.
    """

    def __init__(
        self,
        net: nn.Module,
        T: int = 1000,
        beta_schedule: str = "cosine",
        gamma_ratio: float = 0.5,
        dependent_noise: bool = True,
        n_context: int = 3,
        ddim_bug: str | None = None,
    ) -> None:
        """`ddim_bug` (one of DDIM_BUGS, dependent noise only) makes every DDIM step deliberately wrong, so that the
        exact checks can show they catch it in this sampler: 'remix_theta_t' re-mixes with theta_bar_t instead of
        theta_bar_{t_prev}; 'no_unmix' carries the mixed noise over as it is; 'double_mix' mixes it a second time."""
        super().__init__()
        if n_context < 1:
            raise ValueError(f"n_context must be >= 1, got {n_context}")
        if ddim_bug is not None and (ddim_bug not in DDIM_BUGS or not dependent_noise):
            raise ValueError(f"ddim_bug must be None or one of {DDIM_BUGS} with dependent noise, got {ddim_bug!r}")
        self.ddim_bug = ddim_bug
        self.net = net
        self.T = T
        self.gamma_ratio = float(gamma_ratio)
        self.dependent_noise = dependent_noise
        self.n_context = n_context
        abar = cumprod_schedule(make_beta_schedule(beta_schedule, T))
        theta = cumprod_schedule(make_theta_schedule(beta_schedule, T, ratio=gamma_ratio))
        # float64 buffers; values are cast to the data dtype where used.
        self.register_buffer("abar", torch.from_numpy(abar), persistent=False)
        self.register_buffer("theta_bar", torch.from_numpy(theta), persistent=False)

    # -- schedule lookups -------------------------------------------------------------------------------------
    def _coef(self, values: Tensor, t: Tensor | int | None, x: Tensor, default: float = 1.0) -> Tensor:
        """values[t] as (B, 1, ..., 1) in x's dtype; t=None -> `default` (the step after the last)."""
        if t is None:
            return torch.full((x.shape[0],) + (1,) * (x.ndim - 1), default, dtype=x.dtype, device=x.device)
        t = torch.as_tensor(t, device=values.device).reshape(-1).expand(x.shape[0])
        return values[t].to(device=x.device, dtype=x.dtype).reshape(-1, *([1] * (x.ndim - 1)))

    def _theta(self, t: Tensor | int | None, x: Tensor) -> Tensor:
        """theta_bar[t] per batch element, float64 (B,); t=None -> 1."""
        if t is None:
            return torch.ones(x.shape[0], dtype=torch.float64, device=x.device)
        t = torch.as_tensor(t, device=self.theta_bar.device).reshape(-1).expand(x.shape[0])
        return self.theta_bar[t].to(x.device)

    # -- forward process ---------------------------------------------------------------------------------------
    def q_sample(self, x0: Tensor, t: Tensor | int, noise: Tensor) -> tuple[Tensor, Tensor]:
        """x_t = sqrt(abar_t) Dyn(x0) + sqrt(1-abar_t) eps_mix with eps_mix = Dyn(noise) (dependent noise)   (5)."""
        theta = self._theta(t, x0)
        sa = self._coef(self.abar.sqrt(), t, x0)
        s1a = self._coef((1 - self.abar).sqrt(), t, x0)
        eps_mix = dyn(noise, theta) if self.dependent_noise else noise
        return sa * dyn(x0, theta) + s1a * eps_mix, eps_mix

    def predict(self, xt: Tensor, t: Tensor, cond: Tensor) -> Tensor:
        """The network's mixed-noise prediction eps_phi(x_t, t, cond)."""
        return self.net(condition_input(xt, cond), t)

    def loss(self, x0: Tensor, generator: torch.Generator | None = None, part: slice | None = None) -> Tensor:
        """MSE between the prediction and the mixed noise Dyn(eps), all frames, t ~ U{0..T-1}   (6).

        `part`: the loss of these rows of the batch only, with t and the noise drawn for the whole batch (one
        process's share of a global batch: every process draws the same numbers and keeps its own rows)."""
        B = x0.shape[0]
        t = torch.randint(0, self.T, (B,), generator=generator, device=x0.device)
        noise = torch.randn(x0.shape, generator=generator, device=x0.device, dtype=x0.dtype)
        if part is not None:
            x0, t, noise = x0[part], t[part], noise[part]
        xt, eps_mix = self.q_sample(x0, t, noise)
        return torch.mean((self.predict(xt, t, x0[:, : self.n_context]) - eps_mix) ** 2)

    # -- sampler -----------------------------------------------------------------------------------------------
    def ddim_step(
        self,
        x: Tensor,
        t: int,
        t_prev: int | None,
        eps_mix: Tensor,
        clip_x0: float | None = None,
    ) -> Tensor:
        """One deterministic DDIM step x_t -> x_{t_prev}: unmix with theta_bar_t, re-mix with theta_bar_{t_prev}   (7).

        t_prev=None is the final step (abar_prev = theta_prev = 1), which returns x0_hat.
        """
        th, th_prev = self._theta(t, x), self._theta(t_prev, x)
        sa, s1a = self._coef(self.abar.sqrt(), t, x), self._coef((1 - self.abar).sqrt(), t, x)
        sa_p = self._coef(self.abar.sqrt(), t_prev, x, default=1.0)
        s1a_p = self._coef((1 - self.abar).sqrt(), t_prev, x, default=0.0)
        if self.dependent_noise:
            x0_hat = dyn_inverse((x - s1a * eps_mix) / sa, th)  # standard coordinates
            e_std = dyn_inverse(eps_mix, th)
            if clip_x0 is not None:
                x0_hat = x0_hat.clamp(-clip_x0, clip_x0)
                e_std = (dyn_inverse(x, th) - sa * x0_hat) / s1a
            if self.ddim_bug == "no_unmix":  # wrong: x' = sqrt(abar') Dyn_{theta'}(x0_hat) + sqrt(1-abar') eps_mix
                return sa_p * dyn(x0_hat, th_prev) + s1a_p * eps_mix
            if self.ddim_bug == "double_mix":  # wrong: the mixed noise goes through the re-mix again
                e_std = eps_mix
            return dyn(sa_p * x0_hat + s1a_p * e_std, th if self.ddim_bug == "remix_theta_t" else th_prev)
        x0_hat = dyn_inverse((x - s1a * eps_mix) / sa, th)
        e_std = eps_mix
        if clip_x0 is not None:
            x0_hat = x0_hat.clamp(-clip_x0, clip_x0)
            e_std = (x - sa * dyn(x0_hat, th)) / s1a
        return sa_p * dyn(x0_hat, th_prev) + s1a_p * e_std

    @torch.no_grad()
    def sample(
        self,
        cond: Tensor,
        n_frames: int,
        n_samples: int = 8,
        ddim_steps: int = 50,
        clip_x0: float | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Draw `n_samples` sequences of `n_frames` frames per context; returns (n_samples, B, S, C, *sp)."""
        if cond.shape[1] != self.n_context:
            raise ValueError(f"cond must hold {self.n_context} context frames, got {cond.shape[1]}")
        B = cond.shape[0]
        ts = ddim_timesteps(ddim_steps, self.T)
        cond_rep = cond.repeat(n_samples, *([1] * (cond.ndim - 1)))  # (n*B, S_in, C, *sp)
        shape = (n_samples * B, n_frames, *cond.shape[2:])
        x = torch.randn(shape, generator=generator, device=cond.device, dtype=cond.dtype)
        if self.dependent_noise:
            x = dyn(x, self._theta(int(ts[-1]), x))  # prior: mixed white noise at the largest DDIM step   (8)
        for k in range(len(ts) - 1, -1, -1):
            t = int(ts[k])
            t_prev = int(ts[k - 1]) if k > 0 else None
            t_batch = torch.full((x.shape[0],), t, device=x.device, dtype=torch.long)
            x = self.ddim_step(x, t, t_prev, self.predict(x, t_batch, cond_rep), clip_x0=clip_x0)
        return x.reshape(n_samples, B, *x.shape[1:])
