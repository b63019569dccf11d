"""CB channel (spec 9.3): nearest codewords, straight-through gradient, VQ losses to 1e-6, k-means init, dead codes;
GS and QT baselines; the Receiver's AND rule; the game forward pass."""

from __future__ import annotations

import math

import pytest
import torch

from iclr25.compose_decompose.agents import MultiTargetGame, Receiver, Sender, log1mexp, make_encoder
from iclr25.compose_decompose.baselines import GumbelChannel, QuantizedChannel
from iclr25.compose_decompose.codebook import CodebookChannel, kmeans
from iclr25.compose_decompose.reference import and_receiver_reference, nearest_codewords_reference, vq_losses_reference


@pytest.fixture
def channel():
    torch.manual_seed(0)
    ch = CodebookChannel(12, 16, init="uniform")
    ch.codebook.data.normal_()
    return ch


@pytest.mark.parametrize("n_words", [1, 2, 3], ids=lambda n: f"words{n}")
def test_codebook_forward_is_nearest_rows(channel, n_words):
    z = torch.randn(40, 16)
    out = channel(z, n_words)
    assert out.words.shape == (40, n_words) and out.vectors.shape == (40, n_words, 16)
    assert out.words.tolist() == nearest_codewords_reference(z, channel.codebook.detach(), n_words)
    assert torch.allclose(out.vectors, channel.codebook[out.words], atol=1e-6)  # forward = e_k
    assert all(len(set(w)) == n_words for w in out.words.tolist())  # distinct words


@pytest.mark.parametrize("n_words", [1, 2], ids=lambda n: f"words{n}")
def test_codebook_straight_through_and_losses(channel, n_words):
    z = torch.randn(30, 16, dtype=torch.float64, requires_grad=True)
    channel.double()
    out = channel(z, n_words)
    g = torch.randn(out.vectors.shape, dtype=torch.float64)
    (out.vectors * g).sum().backward(retain_graph=True)
    assert torch.allclose(z.grad, g.sum(1), atol=1e-12)  # d q / d z = I per word
    cb_ref, commit_ref = vq_losses_reference(z.detach(), channel.codebook.detach(), out.words.tolist())
    assert abs(out.logs["codebook_loss"] - cb_ref) < 1e-6 and abs(out.logs["commit_loss"] - commit_ref) < 1e-6
    assert abs(float(out.loss.detach()) - (1.0 * cb_ref + 0.25 * commit_ref)) < 1e-6
    # the codebook term moves only the codebook, the commitment term only z
    z.grad = None
    channel.codebook.grad = None
    out.loss.backward()
    e = channel.codebook[out.words].detach()
    expect_z = 0.25 * 2 * (z.detach()[:, None] - e).sum(1) / len(z)
    assert torch.allclose(z.grad, expect_z, atol=1e-10)
    assert channel.codebook.grad.abs().sum() > 0


def test_kmeans_init_and_dead_codes():
    torch.manual_seed(0)
    centers = torch.randn(4, 2) * 10
    x = (centers[:, None] + 0.1 * torch.randn(4, 50, 2)).reshape(-1, 2)
    c = kmeans(x, 4, generator=torch.Generator().manual_seed(0))
    assert torch.cdist(c, centers).min(1).values.max() < 0.5
    ch = CodebookChannel(4, 2, init="kmeans", dead_after=3)
    ch.initialize(x)
    assert torch.cdist(ch.codebook.detach(), centers).min(1).values.max() < 0.5
    z = torch.zeros(8, 2) + centers[0]
    for _ in range(2):
        assert ch.after_step(z, ch(z).words) == 0
    used = int(ch(z).words[0, 0])
    assert ch.after_step(z, ch(z).words) == 3  # the three unused codes, re-seeded from z
    dead = [k for k in range(4) if k != used]
    assert torch.allclose(ch.codebook.detach()[dead], centers[0].expand(3, 2))
    with pytest.raises(ValueError, match="n_words"):
        ch(z, 5)


def test_gumbel_channel_eval_is_argmax_and_train_is_one_hot():
    torch.manual_seed(0)
    gs = GumbelChannel(12, 16)
    z = torch.randn(50, 16, requires_grad=True)
    gs.eval()
    out = gs(z, 2)
    logits = gs.head(z)
    assert out.words[:, 0].tolist() == logits.argmax(-1).tolist()  # spec 9.3: one-hot argmax at evaluation
    assert torch.equal(out.vectors.sum(-1), torch.ones(50, 2))
    gs.train()
    out = gs(z, 3)
    assert torch.allclose(out.vectors.sum(-1), torch.ones(50, 3))
    assert out.vectors.detach().max(-1).values.eq(1).all()
    assert all(len(set(w)) == 3 for w in out.words.tolist())
    (out.vectors[..., 0].sum()).backward()
    assert z.grad is not None and z.grad.abs().sum() > 0  # straight-through gradient reaches the Sender


def test_quantized_channel_levels_and_ids():
    qt = QuantizedChannel(16, levels=3, bits=2, max_words=3)
    assert QuantizedChannel.bits_for(12) == 4 and QuantizedChannel.bits_for(48) == 6 and qt.vocab == 9
    z = torch.randn(20, 16, requires_grad=True)
    out = qt(z, 2)
    lv = out.vectors.detach() * 2
    assert torch.allclose(lv, lv.round()) and out.words.max() < 9
    assert out.words.tolist() == (lv[..., 0] + 3 * lv[..., 1]).long().tolist()
    out.vectors.sum().backward()
    assert z.grad.abs().sum() > 0


def test_and_receiver_equals_product_of_sigmoids():
    torch.manual_seed(0)
    rcv = Receiver(make_encoder((12,), 8), msg_dim=5, combine="and")
    vec, cand = torch.randn(4, 3, 5), torch.randn(4, 6, 12)
    s = rcv.word_scores(vec, cand)
    log_p, log_1mp = rcv(vec, cand)
    assert torch.allclose(log_p.exp(), and_receiver_reference(s), atol=1e-6)
    assert torch.allclose(log_1mp.exp(), 1 - and_receiver_reference(s), atol=1e-6)
    one_p, _ = rcv(vec[:, :1], cand)
    assert torch.allclose(one_p.exp(), torch.sigmoid(s[:, 0]), atol=1e-6)  # spec 9.3: one word -> sigma(logit)
    assert torch.allclose(
        log1mexp(torch.tensor([-1e-3, -30.0])), torch.log(1 - torch.exp(torch.tensor([-1e-3, -30.0])))
    )
    for combine in ("sum", "gru"):
        r = Receiver(make_encoder((12,), 8), msg_dim=5, combine=combine)
        lp, l1 = r(vec, cand)
        assert torch.allclose(lp.exp() + l1.exp(), torch.ones(4, 6), atol=1e-6)
    h = 8
    assert math.isclose(rcv.scale, 1 / math.sqrt(h))


@pytest.mark.parametrize("shape", [(12,), (3, 32, 32), (1, 8, 16)], ids=["vector", "shapes", "digits"])
@pytest.mark.parametrize("kind", ["single", "slots"])
def test_game_forward_shapes_and_zero_message(shape, kind):
    torch.manual_seed(0)
    snd = Sender(make_encoder(shape, 16), 8, kind=kind, slots=3)
    game = MultiTargetGame(snd, CodebookChannel(12, 8), Receiver(make_encoder(shape, 16), 8))
    t, c = torch.rand(5, 3, *shape), torch.rand(5, 6, *shape)
    y = torch.tensor([[1, 0, 1, 0, 1, 0]] * 5, dtype=torch.float32)
    out = game(t, c, y, n_words=2)
    assert out.log_p.shape == (5, 6) and out.channel.words.shape == (5, 3 if kind == "slots" else 2)
    out.loss.backward()
    assert all(p.grad is not None for n, p in game.named_parameters() if n.startswith("sender"))
    zero = game(t, c, y, n_words=2, zero_message=True)
    assert torch.allclose(zero.log_p, zero.log_p[:, :1].expand(5, 6))  # no message: every candidate alike
