"""Acceptance checks 1-4 of the spec: schedules, Dyn, r = 0 equivalence, and the one-step DDIM identity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.dynamical_diffusion import reference
from iclr25.dynamical_diffusion.config import DDIM_BUGS
from iclr25.dynamical_diffusion.dydiff import (
    DynamicalDiffusion,
    condition_input,
    cumprod_schedule,
    ddim_timesteps,
    dyn,
    dyn_inverse,
    make_beta_schedule,
    make_theta_schedule,
)
from iclr25.dynamical_diffusion.experiments import sampler_noise_drift
from iclr25.dynamical_diffusion.models import FrameStackUNet


def test_schedule_values() -> None:
    theta = cumprod_schedule(make_theta_schedule("cosine", 1000, ratio=0.5))
    abar = cumprod_schedule(make_beta_schedule("cosine", 1000))
    np.testing.assert_allclose(theta[[249, 499, 749, 999]], [0.923506, 0.746922, 0.572136, 0.5], atol=1e-5)
    np.testing.assert_allclose(abar[[249, 499]], [0.847012, 0.493844], atol=1e-5)
    assert round(float(np.sqrt(abar[981])), 3) == 0.028  # the README's one-step-to-x0 divisor


def test_theta_equals_r_abar_plus_one_minus_r_before_clipping() -> None:
    theta = cumprod_schedule(make_theta_schedule("cosine", 1000, ratio=0.9))
    np.testing.assert_allclose(theta[:990], reference.theta_bar_unclipped(1000, 0.9)[:990], rtol=1e-10)


def test_r0_theta_is_exactly_one() -> None:
    assert np.all(cumprod_schedule(make_theta_schedule("cosine", 1000, ratio=0.0)) == 1.0)


def test_ddim_timesteps() -> None:
    assert ddim_timesteps(50).tolist() == list(range(1, 1000, 20))
    assert ddim_timesteps(20)[[0, -1]].tolist() == [1, 951]


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_bad_ratio_raises(bad: float) -> None:
    with pytest.raises(ValueError, match="gamma ratio"):
        make_theta_schedule("cosine", 1000, ratio=bad)


def test_bad_schedule_kind_raises() -> None:
    with pytest.raises(ValueError, match="cosine"):
        make_beta_schedule("linear", 1000)


def test_dyn_worked_example() -> None:
    y = dyn(torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64), 0.25)
    torch.testing.assert_close(y, torch.tensor([[1.0, 1.8660254, 3.1160254, 4.6985572]], dtype=torch.float64))


@pytest.mark.parametrize("theta", [0.05, 0.5, 1.0])
@pytest.mark.parametrize("shape", [(2, 5), (3, 4, 2, 6), (2, 7, 1, 3, 3)], ids=["ts", "1d", "2d"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_dyn_matches_loop_reference_and_inverts(theta: float, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g, dtype=dtype, requires_grad=True)
    y_fast, y_ref = dyn(x, theta), reference.dyn_loop(x, theta)
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 1e-12, "rtol": 1e-12}
    torch.testing.assert_close(y_fast, y_ref, **tol)
    w = torch.randn(shape, generator=g, dtype=dtype)
    (g_fast,) = torch.autograd.grad((y_fast * w).sum(), x)
    (g_ref,) = torch.autograd.grad((y_ref * w).sum(), x)
    torch.testing.assert_close(g_fast, g_ref, **tol)
    torch.testing.assert_close(dyn_inverse(y_fast, theta), x, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dyn_inverse(y_fast, theta), reference.dyn_inverse_loop(y_ref, theta), **tol)
    assert torch.equal(y_fast[:, 0], x[:, 0])  # the first frame is never mixed


def test_dyn_per_batch_theta() -> None:
    x = torch.randn(3, 6, 4, dtype=torch.float64)
    th = torch.tensor([0.1, 0.5, 1.0])
    y = dyn(x, th)
    for b in range(3):
        torch.testing.assert_close(y[b : b + 1], reference.dyn_loop(x[b : b + 1], float(th[b])))
    torch.testing.assert_close(dyn_inverse(y, th), x)


def test_dyn_other_frame_axis() -> None:
    x = torch.randn(2, 3, 6)
    torch.testing.assert_close(dyn(x, 0.3, dim=2), dyn(x.transpose(1, 2), 0.3).transpose(1, 2))


def test_dyn_white_noise_has_unit_marginal_variance() -> None:
    z = torch.randn(100_000, 6, generator=torch.Generator().manual_seed(0))
    y = dyn(z, 0.25)
    assert (y.var(0) - 1).abs().max() < 0.02
    assert y[:, 1:].T.corrcoef().diagonal(1).min() > 0.5  # neighbouring frames are correlated


def test_dyn_inverse_guards_theta_zero() -> None:
    assert torch.isfinite(dyn_inverse(torch.randn(2, 4), 0.0)).all()


def _net(S: int = 5) -> FrameStackUNet:
    torch.manual_seed(0)
    return FrameStackUNet(S, 1, 1, width=8, ch_mult=(1, 2)).eval()


def test_r0_q_sample_and_target_bit_for_bit() -> None:
    dpm = DynamicalDiffusion(_net(), gamma_ratio=0.0, n_context=2)
    g = torch.Generator().manual_seed(1)
    x0, eps = torch.randn(4, 5, 1, 8, generator=g), torch.randn(4, 5, 1, 8, generator=g)
    t = torch.tensor([0, 1, 500, 999])
    xt, eps_mix = dpm.q_sample(x0, t, eps)
    assert torch.equal(eps_mix, eps)
    assert torch.equal(xt, reference.plain_q_sample(x0, t, eps))


def test_r0_sampler_equals_plain_ddim_bit_for_bit() -> None:
    net = _net()
    dpm = DynamicalDiffusion(net, gamma_ratio=0.0, n_context=2)
    cond = torch.randn(3, 2, 1, 8, generator=torch.Generator().manual_seed(2))
    a = dpm.sample(cond, 5, n_samples=2, ddim_steps=10, generator=torch.Generator().manual_seed(3))
    b = reference.plain_ddim_sample(net, cond, 5, 2, 10, generator=torch.Generator().manual_seed(3))
    assert a.shape == (2, 3, 5, 1, 8)
    assert torch.equal(a, b)


def test_r_positive_sampler_differs_from_plain_ddim() -> None:
    net = _net()
    dd = DynamicalDiffusion(net, gamma_ratio=0.5, n_context=2)
    cond = torch.randn(3, 2, 1, 8, generator=torch.Generator().manual_seed(2))
    a = dd.sample(cond, 5, n_samples=2, ddim_steps=10, generator=torch.Generator().manual_seed(3))
    b = reference.plain_ddim_sample(net, cond, 5, 2, 10, generator=torch.Generator().manual_seed(3))
    assert (a - b).abs().max() > 1e-3


@pytest.mark.parametrize("r", [0.0, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("pair", [(501, 481), (981, 961), (21, 1)], ids=lambda p: f"{p[0]}to{p[1]}")
@pytest.mark.parametrize("dependent", [True, False], ids=["dep", "indep"])
def test_ddim_step_lands_on_previous_noised_sample(r: float, pair: tuple[int, int], dependent: bool) -> None:
    g = torch.Generator().manual_seed(4)
    x0, eps = torch.randn(2, 5, 1, 8, 8, generator=g), torch.randn(2, 5, 1, 8, 8, generator=g)
    dd = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=r, dependent_noise=dependent, n_context=2)
    t, t_prev = pair
    xt, eps_target = dd.q_sample(x0, t, eps)
    expected_target = dyn(eps, dd.theta_bar[t]) if dependent else eps
    torch.testing.assert_close(eps_target, expected_target)
    out = dd.ddim_step(xt, t, t_prev, eps_target)
    torch.testing.assert_close(out, dd.q_sample(x0, t_prev, eps)[0], atol=1e-5, rtol=0)
    # Jumping straight to x0 divides by sqrt(abar_t): float32 rounding grows by that factor.
    tol = 1e-5 / float(dd.abar[t].sqrt())
    torch.testing.assert_close(dd.ddim_step(xt, t, None, eps_target), x0, atol=tol, rtol=0)


def test_ddim_step_wrong_variants_are_detected() -> None:
    """Re-mixing with theta_t (not theta_{t_prev}) or not unmixing the noise misses by ~0.08 / ~0.04."""
    g = torch.Generator().manual_seed(5)
    x0, eps = torch.randn(2, 5, 1, 8, 8, generator=g), torch.randn(2, 5, 1, 8, 8, generator=g)
    dd = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=0.5, n_context=2)
    xt, e_mix = dd.q_sample(x0, 501, eps)
    target = dd.q_sample(x0, 481, eps)[0]
    th, th_p = dd.theta_bar[501], dd.theta_bar[481]
    sa, s1a, sap, s1ap = (
        v.float()
        for v in (dd.abar[501].sqrt(), (1 - dd.abar[501]).sqrt(), dd.abar[481].sqrt(), (1 - dd.abar[481]).sqrt())
    )
    x0_hat = dyn_inverse((xt - s1a * e_mix) / sa, th)
    right = dyn(sap * x0_hat + s1ap * dyn_inverse(e_mix, th), th_p)
    remix_with_t = dyn(sap * x0_hat + s1ap * dyn_inverse(e_mix, th), th)
    no_unmix = sap * dyn(x0_hat, th_p) + s1ap * e_mix  # mixed noise carried over without unmixing
    double_mix = dyn(sap * x0_hat + s1ap * e_mix, th_p)  # mixed noise mixed a second time
    assert (right - target).abs().max() < 1e-5
    assert (remix_with_t - target).abs().max() > 0.02
    assert (no_unmix - target).abs().max() > 0.01
    assert (double_mix - target).abs().max() > 0.1
    # The package's own sampler with each bug injected computes exactly these wrong steps (and only then).
    assert torch.equal(dd.ddim_step(xt, 501, 481, e_mix), right)
    for bug, wrong in (("remix_theta_t", remix_with_t), ("no_unmix", no_unmix), ("double_mix", double_mix)):
        buggy = DynamicalDiffusion(torch.nn.Identity(), gamma_ratio=0.5, n_context=2, ddim_bug=bug)
        torch.testing.assert_close(buggy.ddim_step(xt, 501, 481, e_mix), wrong, atol=1e-6, rtol=0)


def test_sampler_keeps_the_implied_noise_and_each_bug_breaks_it() -> None:
    """sample() with a perfect noise predictor: the implied DDIM noise stays fixed; every injected bug moves it."""
    assert sampler_noise_drift(None, seed=3) < 1e-10
    assert sampler_noise_drift(None, seed=3, gamma_ratio=0.9) < 1e-8
    for bug in DDIM_BUGS:
        assert sampler_noise_drift(bug, seed=3) > 0.1


def test_ddim_bug_flag_is_validated() -> None:
    with pytest.raises(ValueError, match="ddim_bug must be None or one of"):
        DynamicalDiffusion(torch.nn.Identity(), ddim_bug="typo")
    with pytest.raises(ValueError, match="with dependent noise"):
        DynamicalDiffusion(torch.nn.Identity(), dependent_noise=False, ddim_bug="no_unmix")


def test_clip_x0_changes_only_when_asked() -> None:
    dd = DynamicalDiffusion(_net(), gamma_ratio=0.5, n_context=2)
    x = 5 * torch.randn(2, 5, 1, 8)
    e = torch.randn(2, 5, 1, 8)
    assert torch.equal(dd.ddim_step(x, 501, 481, e), dd.ddim_step(x, 501, 481, e, clip_x0=None))
    last = dd.ddim_step(x, 21, None, e, clip_x0=1.0)
    assert last.abs().max() <= 1.0 + 1e-6


def test_prior_is_noise_mixed_with_theta_of_largest_ddim_step() -> None:
    """The sampler starts from Dyn(white noise, theta_bar[951]) for 20 steps, not theta_bar[999]."""
    seen: list[torch.Tensor] = []

    class Recorder(torch.nn.Module):
        def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            seen.append((x[:, :, :1].clone(), t.clone()))
            return torch.zeros_like(x[:, :, :1])

    dd = DynamicalDiffusion(Recorder(), gamma_ratio=1.0, n_context=1)
    dd.sample(torch.zeros(3, 1, 1, 4), 4, n_samples=2, ddim_steps=20, generator=torch.Generator().manual_seed(0))
    first, t = seen[0]
    assert t.tolist() == [951] * 6
    noise = torch.randn(6, 4, 1, 4, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(first, dyn(noise, dd.theta_bar[951]))
    assert (first - dyn(noise, dd.theta_bar[999])).abs().max() > 1e-2


def test_loss_is_scalar_and_backpropagates() -> None:
    dd = DynamicalDiffusion(_net(), gamma_ratio=0.5, n_context=2)
    loss = dd.loss(torch.randn(4, 5, 1, 8), generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert loss.ndim == 0
    assert all(p.grad is not None for p in dd.net.parameters())


def test_loss_targets_the_mixed_noise_on_all_frames() -> None:
    """Loss (6) = mean over all frames of (net(x_t, t, clean context) - Dyn_{theta_bar_t}(eps))^2."""
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    class Recorder(torch.nn.Module):
        def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            seen.append((x.clone(), t.clone()))
            return 0.1 * x[:, :, :1]

    dd = DynamicalDiffusion(Recorder(), gamma_ratio=0.5, n_context=2)
    x0 = torch.randn(6, 5, 1, 8, generator=torch.Generator().manual_seed(1))
    loss = dd.loss(x0, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(7)  # replay the loss's draws: t first, then the noise
    t = torch.randint(0, 1000, (6,), generator=g)
    eps = torch.randn(x0.shape, generator=g)
    th = dd.theta_bar[t]
    view = (-1, 1, 1, 1)
    eps_mix = torch.stack([reference.dyn_loop(eps[b : b + 1], float(th[b]))[0] for b in range(6)])
    x0_mix = torch.stack([reference.dyn_loop(x0[b : b + 1], float(th[b]))[0] for b in range(6)])
    xt = dd.abar[t].sqrt().float().reshape(view) * x0_mix + (1 - dd.abar[t]).sqrt().float().reshape(view) * eps_mix
    inp, t_seen = seen[0]
    assert torch.equal(t_seen, t)
    torch.testing.assert_close(inp[:, :, :1], xt, atol=1e-5, rtol=1e-5)
    assert torch.equal(inp[:, :2, 1:2], x0[:, :2])  # clean context as conditioning
    torch.testing.assert_close(loss, ((0.1 * xt - eps_mix) ** 2).mean(), atol=1e-6, rtol=1e-5)
    # Plain eps as the target would give a different loss.
    assert (loss - ((0.1 * xt - eps) ** 2).mean()).abs() > 1e-3


def test_condition_input_layout() -> None:
    xt = torch.randn(2, 5, 1, 8)
    cond = torch.randn(2, 2, 1, 8)
    inp = condition_input(xt, cond)
    assert inp.shape == (2, 5, 4, 8)
    assert torch.equal(inp[:, :, 0:1], xt)
    assert torch.equal(inp[:, :2, 1:2], cond)
    assert inp[:, 2:, 1].abs().sum() == 0
    assert inp[:, :, 2, 0].tolist() == [[1, 1, 0, 0, 0]] * 2
    assert inp[:, :, 3, 0].tolist() == [[0, 0, 1, 0, 0]] * 2


def test_sample_rejects_wrong_context_length() -> None:
    dd = DynamicalDiffusion(_net(), gamma_ratio=0.5, n_context=2)
    with pytest.raises(ValueError, match="context frames"):
        dd.sample(torch.zeros(1, 3, 1, 8), 5, n_samples=1, ddim_steps=2)
