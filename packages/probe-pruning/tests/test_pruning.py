"""The method (spec §9 checks 1-5): ratios, probe selection, fusion, PPsp, pruned == masked, EMA, probe attention."""

from __future__ import annotations

import math

import pytest
import torch

from iclr25.probe_pruning import reference
from iclr25.probe_pruning.baselines import (
    StaticPruner,
    flap_global_ratios,
    flap_head_cost,
    flap_scores,
    wanda_sp_scores,
)
from iclr25.probe_pruning.pruning import (
    PPConfig,
    ProbePruner,
    adjusted_ratio,
    collect_stats,
    flops_report,
    heads_kept,
    importance_scaled_fusion,
    keep_count,
    ppsp_head_scores,
    ppsp_mlp_scores,
    select_probe,
)


def test_ratio_adjustment_and_keep_counts():
    assert adjusted_ratio(0.4, 32, 3) == 0.44
    assert keep_count(11008, 0.44, 64) == 6208
    assert keep_count(48, 0.4, 1) == 29
    assert keep_count(48, 0.4, 8) == 32
    assert adjusted_ratio(0.4, 4, (0,)) == 0.53
    assert keep_count(176, 0.53, 8) == 88
    assert heads_kept(32, 0.44) == 32 - 14 and heads_kept(4, 0.53) == 2
    assert keep_count(100, 0.0, 64) == 100
    with pytest.raises(ValueError, match="skipped"):
        adjusted_ratio(0.4, 3, (0, 1, 2))


@pytest.mark.parametrize(("B", "S"), [(20, 16), (20, 64), (7, 5), (3, 40)])
def test_probe_selection_matches_bruteforce(B, S):
    g = torch.Generator().manual_seed(B * S)
    residual = torch.randn(B, S, 6, generator=g) * torch.rand(B, S, 1, generator=g) * 3
    x = torch.randn(B, S, 6, generator=g)
    probe, b_idx, s_idx = select_probe(x, residual, 0.5, 0.05)
    b_ref, s_ref = reference.select_probe_bruteforce(residual, 0.5, 0.05)
    assert b_idx.tolist() == b_ref and s_idx.tolist() == s_ref
    assert len(s_ref) == min(S, max(math.ceil(0.5 * S), 2)) and len(b_ref) == math.ceil(0.05 * B)
    assert s_idx.tolist() == sorted(s_idx.tolist()) and b_idx.tolist() == sorted(b_idx.tolist())
    assert torch.equal(probe, x[b_idx][:, s_idx])  # the probe holds the normalised input, ranked by the residual
    if len(s_ref) <= 10 and len(s_ref) < S:
        assert s_idx[0] == 0


def test_probe_selection_seq_first_then_batch_on_chosen_positions():
    residual = torch.ones(4, 4, 2)
    residual[:, 2] = 5.0  # positions 2 and 3 (n_s = 2) win; 0 is forced in place of the smaller one (n_s <= 10)
    residual[:, 3] = 4.0
    residual[1, 1] = 50.0  # sample 1 is huge only at a position that is not selected -> must not win
    residual[3, 2] = 6.0  # sample 3 is largest on the selected positions
    _, b_idx, s_idx = select_probe(torch.zeros(4, 4, 2), residual, 0.5, 0.25)
    assert s_idx.tolist() == [0, 2]
    assert b_idx.tolist() == [3]
    _, b_rev, _ = select_probe(torch.zeros(4, 4, 2), residual, 0.5, 0.25, order=("bsz", "seq"))
    assert b_rev.tolist() == [1]


def test_fusion_and_scores_closed_forms():
    g = torch.Generator().manual_seed(0)
    P, H = torch.rand(5, 12, generator=g, dtype=torch.float64), torch.rand(5, 12, generator=g, dtype=torch.float64)
    rho = P / (P + H + 1e-6)
    assert torch.allclose(importance_scaled_fusion(P, H), (1 - rho) * H + rho * P, atol=1e-12)
    assert torch.allclose(importance_scaled_fusion(P, H, rho=0.3), 0.7 * H + 0.3 * P)
    C = torch.rand(12, generator=g, dtype=torch.float64)
    W = torch.randn(7, 12, generator=g, dtype=torch.float64)
    assert torch.allclose(ppsp_mlp_scores(C, W).double(), reference.ppsp_mlp_loop(C, W), atol=1e-6)
    assert torch.allclose(ppsp_head_scores(C, W, 3).double(), reference.ppsp_head_loop(C, W, 3), atol=1e-6)
    hist = torch.rand(5, 12, generator=g, dtype=torch.float64)
    wanda = torch.tensor([sum(abs(float(W[i, c])) for i in range(7)) * math.sqrt(float(hist[:, c].sum())) for c in range(12)])  # fmt: skip
    assert torch.allclose(wanda_sp_scores(hist, W).double(), wanda.double(), atol=1e-6)
    assert torch.allclose(wanda_sp_scores(hist, W, 3).double(), wanda.view(3, 4).sum(1).double(), atol=1e-6)
    flap = torch.tensor([float(hist[:, c].sum()) * sum(float(W[i, c]) ** 2 for i in range(7)) for c in range(12)])
    assert torch.allclose(flap_scores(hist, W).double(), flap.double(), atol=1e-6)


def test_flap_global_structure_respects_the_budget(make):
    g = torch.Generator().manual_seed(3)
    scores = {(i, k): torch.rand(8 if k == "attn" else 10, generator=g) for i in (1, 2) for k in ("attn", "mlp")}
    kept = flap_global_ratios(scores, n_heads=4, head_cost=3.0, ratio=0.5)
    total = 2 * (4 * 3.0 + 10)
    cost = sum(v.numel() * (3.0 if k[1] == "attn" else 1.0) for k, v in kept.items())
    assert cost <= 0.5 * total + 3.0 and cost >= 0.5 * total - 3.0
    assert all(v.tolist() == sorted(v.tolist()) and v.numel() >= 1 for v in kept.values())
    cfg = make().cfg  # d 32, hd 8, LLaMA: (S d hd 4 + 2 S^2 hd) / (S d 3)
    assert flap_head_cost(cfg, 16) == pytest.approx((16 * 32 * 8 * 4 + 2 * 256 * 8) / (16 * 32 * 3))


def test_ratio_zero_equals_dense(llama, ids, calib):
    pp = ProbePruner(llama, PPConfig(ratio=0.0, skip_layers=(0,), round_multiple=1)).calibrate(calib)
    assert torch.allclose(pp(ids), llama(ids).logits, atol=1e-5)


@pytest.mark.parametrize(("arch", "kv"), [("llama", 4), ("llama", 2), ("opt", 4)])
def test_pruned_forward_equals_masked_dense(arch, kv, ids, calib, make):
    model = make(arch, kv)
    pp = ProbePruner(model, PPConfig(ratio=0.4, skip_layers=(0,), round_multiple=8)).calibrate(calib)
    logits = pp(ids)
    kept = dict(pp.last_kept)
    assert kept[(1, "attn")].numel() == heads_kept(4, pp.r_adj) and kept[(1, "mlp")].numel() == pp.kept_counts["mlp"]
    assert torch.allclose(logits, reference.masked_forward(model, ids, kept), atol=1e-5)
    kept_n = {k: v.numel() for k, v in kept.items()}
    fl = flops_report(model.cfg, *ids.shape, kept_n, (1, 8), (0,))
    assert fl["pruned"] < 0.85 * fl["dense"] and 0 < fl["probe_fraction"] < 0.2


def test_static_pruners_equal_masked_dense_plus_compensation(llama, ids, calib):
    stats = collect_stats(llama, calib, (1, 2))
    wanda = StaticPruner(llama, "wanda-sp", 0.4, (0,), 8).set_stats(stats)
    assert torch.allclose(wanda(ids), reference.masked_forward(llama, ids, wanda.kept), atol=1e-5)
    flap = StaticPruner(llama, "flap", 0.4, (0,), 8).set_stats(stats)
    key = (1, "mlp")
    mu = stats[key].sum.sum(0) / (stats[key].n * stats[key].sum.shape[0])  # over samples and positions
    pruned = [c for c in range(48) if c not in flap.kept[key].tolist()]
    W = llama.layers[1].mlp.down_proj.weight
    assert torch.allclose(flap.bias[key], W[:, pruned] @ mu[pruned], atol=1e-5)
    assert flap(ids).shape == (6, 16, 61)


def test_attention_probe_equals_reference(llama):
    block = llama.layers[1]
    g = torch.Generator().manual_seed(4)
    probe = torch.randn(2, 5, 32, generator=g)
    pos = torch.tensor([0, 3, 4, 9, 12])
    fast = block.attn_inner(probe, pos)
    assert torch.allclose(fast.double(), reference.probe_attention_reference(block, probe, pos), atol=1e-4)
    # the probe attends among its own tokens only: changing an unselected token changes nothing
    x = torch.randn(1, 13, 32, generator=g)
    a = block.attn_inner(x[:, pos], pos)
    x[0, 5] += 10
    assert torch.equal(a, block.attn_inner(x[:, pos], pos))


def test_ema_updates_only_kept_channels(llama, ids, calib):
    pp = ProbePruner(llama, PPConfig(ratio=0.4, skip_layers=(0,), round_multiple=8, ema=0.9)).calibrate(calib)
    before = {k: v.clone() for k, v in pp.history.items()}
    captured = {}
    original = pp.observe

    def spy(layer, kind, kept, z):
        captured[(layer, kind)] = (kept, z.clone())
        original(layer, kind, kept, z)

    pp.observe = spy
    pp(ids)
    for key, hist in pp.history.items():
        kept, z = captured[key]
        cols = kept if key[1] == "mlp" else (kept[:, None] * 8 + torch.arange(8)).reshape(-1)
        pruned = [c for c in range(hist.shape[1]) if c not in cols.tolist()]
        assert torch.equal(hist[:, pruned], before[key][:, pruned])  # pruned channels keep their history
        expected = 0.9 * before[key][:, cols] + 0.1 * z.pow(2).mean(0)
        assert torch.allclose(hist[:, cols], expected, atol=1e-6)
        assert not torch.allclose(hist[:, cols], before[key][:, cols])
    # the decision of a batch uses the history from before that batch: a second identical batch can differ
    assert pp.decisions[(1, "mlp")].s_idx is not None


def test_controls_and_ablations_run(llama, ids, calib):
    base = PPConfig(ratio=0.4, skip_layers=(0,), round_multiple=8)
    stats = collect_stats(llama, calib, (1, 2))
    pp = ProbePruner(llama, base).set_history(stats)
    pp(ids)
    inv = ProbePruner(llama, PPConfig(**{**base.__dict__, "control": "inverted"})).set_history(stats)
    inv(ids)
    # the first pruned block sees the same input in both: its scores are negated, its kept heads the lowest
    assert torch.allclose(inv.decisions[(1, "attn")].scores, -pp.decisions[(1, "attn")].scores)
    assert set(pp.last_kept[(1, "attn")].tolist()).isdisjoint(inv.last_kept[(1, "attn")].tolist())
    r1 = ProbePruner(llama, PPConfig(**{**base.__dict__, "control": "random", "seed": 5})).set_history(stats)
    r2 = ProbePruner(llama, PPConfig(**{**base.__dict__, "control": "random", "seed": 5})).set_history(stats)
    assert torch.equal(r1(ids), r2(ids))
    for extra in ({"fusion": "probe_only"}, {"fusion": "history_only"}, {"fusion": "fixed:0.5"},
                  {"probe_select": "random"}, {"probe_select": "first"}, {"probe_seq": 1.0, "probe_bsz": 1.0}):  # fmt: skip
        out = ProbePruner(llama, PPConfig(**{**base.__dict__, **extra})).set_history(stats)(ids)
        assert torch.isfinite(out).all()
    with pytest.raises(ValueError, match="fusion"):
        PPConfig(fusion="fixed:2")
    with pytest.raises(RuntimeError):
        ProbePruner(llama, base)(ids)
