"""Highway-BP through time for GRU/LSTM: exactness at k ≥ T, FPI = truncated BPTT (spec §9 check 4)."""

import pytest
import torch
from torch import nn

from iclr25.highway_bp.baselines import truncated_bptt_backward
from iclr25.highway_bp.highway import flat_grad
from iclr25.highway_bp.models import SeqClassifier
from iclr25.highway_bp.rnn import HighwayRNN, rnn_backward, rnn_step

T, B, I, H = 6, 3, 2, 4


def _setup(cell: str, seed: int = 0):
    torch.manual_seed(seed)
    rnn = HighwayRNN(I, H, cell).double()
    head = nn.Linear(H, 3).double()
    x = torch.randn(T, B, I, dtype=torch.float64)
    y = torch.randint(0, 3, (T, B))
    return rnn, head, x, y


def _grads(rnn, head, fn):
    rnn.zero_grad(set_to_none=True)
    head.zero_grad(set_to_none=True)
    fn()
    return torch.cat([flat_grad(rnn), flat_grad(head)])


def _all_steps_loss(head, y):
    return lambda hs: sum(nn.functional.cross_entropy(head(hs[t]), y[t]) for t in range(T))


def _last_step_loss(head, y):
    return lambda hs: nn.functional.cross_entropy(head(hs[-1]), y[-1])


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("algo", ["hbp", "fpi"])
@pytest.mark.parametrize("losses", ["last", "all"])
def test_exact_at_k_ge_T(cell, algo, losses):
    rnn, head, x, y = _setup(cell)
    loss_fn = (_all_steps_loss if losses == "all" else _last_step_loss)(head, y)
    exact = _grads(rnn, head, lambda: rnn_step(rnn, x, loss_fn, algo="bptt"))
    for k in (T, T + 3):
        got = _grads(rnn, head, lambda k=k: rnn_step(rnn, x, loss_fn, k=k, algo=algo))
        assert (got - exact).norm() / exact.norm() < 1e-6
    approx = _grads(rnn, head, lambda: rnn_step(rnn, x, loss_fn, k=1, algo=algo))
    assert (approx - exact).norm() / exact.norm() > 1e-6


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_fpi_equals_truncated_bptt(cell, k):
    rnn, head, x, y = _setup(cell, seed=1)
    fpi = _grads(rnn, head, lambda: rnn_step(rnn, x, _all_steps_loss(head, y), k=k, algo="fpi"))

    def step_loss(j, h):
        return nn.functional.cross_entropy(head(h), y[j - 1])

    ref = _grads(rnn, head, lambda: truncated_bptt_backward(rnn, x, step_loss, k))
    assert torch.allclose(fpi, ref, atol=1e-10)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_state_gradients_exact_for_last_k_steps(cell):
    rnn, head, x, y = _setup(cell, seed=2)
    loss_fn = _all_steps_loss(head, y)
    xp = rnn.input_proj(x)
    states = rnn.run(xp.detach())
    leaf = states.clone().requires_grad_(True)
    e = torch.autograd.grad(loss_fn(rnn.output(leaf[1:])), leaf)[0]
    # exact ∂𝓛/∂s_t through the recurrence
    s = [states[0].clone().requires_grad_(True)]
    for t in range(T):
        s.append(rnn.combine(s[-1], rnn.parts(s[-1], xp[t].detach())))
    exact = torch.stack(torch.autograd.grad(loss_fn(rnn.output(torch.stack(s[1:]))), s))
    for k in range(T + 1):
        w = rnn_backward(rnn, rnn.input_proj(x), states, e, k)
        for t in range(T + 1):
            rel = float((w[t] - exact[t]).norm() / exact[t].norm())
            assert (rel < 1e-10) if t >= T - k else (rel > 1e-6), (k, t, rel)


@pytest.mark.parametrize("algo", ["hbp", "fpi"])
def test_closed_form_gru_vjp_matches_autograd(algo):
    rnn, _, x, _ = _setup("gru", seed=3)
    xp = rnn.input_proj(x)
    states = rnn.run(xp.detach())
    e = torch.randn(T + 1, B, H, dtype=torch.float64)
    for k in (1, 3):
        ws = []
        for closed in (True, False):
            rnn.zero_grad(set_to_none=True)
            ws.append(rnn_backward(rnn, rnn.input_proj(x), states, e, k, algo=algo, closed_form=closed))
            ws.append(flat_grad(rnn).clone())
        assert torch.allclose(ws[0], ws[2], atol=1e-12) and torch.allclose(ws[1], ws[3], atol=1e-12)


def test_fused_gru_matches_cell_loop():
    rnn, _, x, _ = _setup("gru")
    assert torch.allclose(rnn.run_fused(x), rnn.run(rnn.input_proj(x)), atol=1e-12)


def test_gru_matches_torch_gru():
    rnn, _, x, _ = _setup("gru")
    ref = nn.GRU(I, H).double()
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(ref, name + "_l0").copy_(getattr(rnn, name))
    assert torch.allclose(rnn.run(rnn.input_proj(x))[1:], ref(x)[0], atol=1e-12)


def test_lstm_matches_torch_lstm():
    rnn, _, x, _ = _setup("lstm")
    ref = nn.LSTM(I, H).double()
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(ref, name + "_l0").copy_(getattr(rnn, name))
    assert torch.allclose(rnn(x), ref(x)[0], atol=1e-12)


def test_seq_classifier_embedding_gets_gradient():
    torch.manual_seed(0)
    model = SeqClassifier(1, 8, 3).double()
    x, y = torch.randn(4, 5, 1, dtype=torch.float64), torch.tensor([0, 1, 2, 0])
    model.zero_grad()
    model.step(x, y, k=5, algo="bptt")
    exact = flat_grad(model).clone()
    model.zero_grad(set_to_none=True)
    model.step(x, y, k=5, algo="hbp")
    assert torch.allclose(flat_grad(model), exact, atol=1e-10)
    assert model.embed.weight.grad.abs().sum() > 0


def test_bad_input():
    with pytest.raises(ValueError, match="cell must be one of"):
        HighwayRNN(2, 3, "rnn")
    rnn, head, x, y = _setup("gru")
    with pytest.raises(ValueError, match="algo must be one of"):
        rnn_step(rnn, x, _last_step_loss(head, y), algo="bp")
    with pytest.raises(ValueError, match="GRU cell only"):
        HighwayRNN(2, 3, "lstm").run_fused(torch.zeros(2, 1, 2))
