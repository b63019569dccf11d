"""Every gated claim fails on a deliberately broken variant of what it checks (and holds on the real thing).

Every gate is judged by the claims declared in `claims`: the mechanics gates on `experiments.mechanics_checks`, the
in-run gates (stage switch, equal compute, smoke) on the checks `experiments` makes of tiny two-stage runs whose probes
record what the loops did.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import iclr25.patch_train.patch as patch_mod
import iclr25.patch_train.plan as plan_mod
import iclr25.patch_train.stage as stage_mod
from iclr25.patch_train import experiments
from iclr25.patch_train.baselines import comparison_plans
from iclr25.patch_train.claims import declared
from iclr25.patch_train.config import PRESETS
from iclr25.patch_train.data import TokenStream
from iclr25.patch_train.llama import from_hf
from iclr25.patch_train.patch import make_llama
from iclr25.patch_train.stage import measured_flops_per_position
from iclr25.patch_train.train import TwoStageLoop, run_interleaved, train_two_stage
from iclr25.shared.claims import evaluate

V, T, K = 64, 16, 4
MECHANICS = ("cost_lam2/3_K4", "official_step_counts", "patch_loss_K1_is_ce", "patch_loss_eq2", "patch_forward_parity")


def _judged(checks: dict) -> dict:
    """The declared claims (ci preset) judged on metrics holding only `checks`, by name."""
    cfg = PRESETS["ci"]
    return {c.name: c for c in evaluate(declared(cfg), {"checks": checks}, cfg)}


def _mechanics(name: str) -> bool:
    return _judged(experiments.mechanics_checks(0))[name].holds


def test_mechanics_gates_hold():
    claims = _judged(experiments.mechanics_checks(0))
    assert all(claims[n].holds for n in MECHANICS), [n for n in MECHANICS if not claims[n].holds]


@pytest.mark.parametrize(
    "broken",
    [
        lambda m: m.setattr(
            patch_mod, "patch_position_ids", lambda b, t, device=None: torch.arange(t).expand(b, t) * K
        ),
        lambda m: m.setattr(patch_mod, "patchify", lambda e, k: e.view(e.shape[0], -1, k, e.shape[-1]).sum(2)),
        lambda m: m.setattr(patch_mod, "patchify", lambda e, k: e[:, ::k]),
    ],
    ids=["positions iK", "sum not mean", "first token of the patch"],
)
def test_parity_gate_fails_on_broken_patch_forward(monkeypatch, broken):
    broken(monkeypatch)
    assert not _mechanics("patch_forward_parity")


def test_loss_gates_fail_on_shifted_targets(monkeypatch):
    real = patch_mod.patch_lm_loss
    monkeypatch.setattr(patch_mod, "patch_lm_loss", lambda lo, la, k, **kw: real(lo, torch.roll(la, 1, dims=1), k))
    assert not _mechanics("patch_loss_eq2")
    assert not _mechanics("patch_loss_K1_is_ce")


def test_cost_gates_fail_on_a_wrong_cost(monkeypatch):
    wrong = lambda lam, K: lam / K + 1.0 - lam / 2  # noqa: E731
    monkeypatch.setattr(patch_mod, "training_cost", wrong)
    monkeypatch.setattr(plan_mod, "training_cost", wrong)
    assert not _mechanics("cost_lam2/3_K4")
    assert not _mechanics("official_step_counts")


# ------------------------------------------------------------------------------------------- in-run gates
def _stream(n: int = 60_000) -> np.ndarray:
    """A learnable token stream: a fixed random cycle of the vocabulary with 10% noise."""
    rng = np.random.default_rng(0)
    cycle = rng.permutation(np.arange(1, V))
    ids = cycle[np.arange(n) % len(cycle)]
    noise = rng.random(n) < 0.1
    ids[noise] = rng.integers(1, V, noise.sum())
    return ids


def _runs(token_steps: int = 12, names: tuple[str, ...] = ("token", "patch"), engine: str = "torch", tmp=None):
    plans = comparison_plans(K, 2 / 3, T, 256, token_steps, lr=1e-2, warmup=0.1)
    ids = _stream()
    out = {}
    if engine == "torch":
        loops = {}
        for name in names:
            torch.manual_seed(0)
            model = from_hf(make_llama("tiny", V, K * T))  # K*T positions: room for the unpooled variant below
            loops[name] = TwoStageLoop(model, TokenStream(ids), plans[name], seed=0)
        run_interleaved(loops)
        out = {n: loop.results for n, loop in loops.items()}
    else:
        for name in names:
            torch.manual_seed(0)
            model = make_llama("tiny", V, K * T)
            out[name] = train_two_stage(model, TokenStream(ids), plans[name], tmp / name, device="cpu", threads=1)
    return out, ids


def _switch_holds(runs, ids) -> bool:
    return _judged({"switch": experiments.switch_checks(runs["patch"], ids)})["stage_switch"].holds


def _compute_holds(compute: dict) -> bool:
    return _judged({"compute": compute})["equal_compute_flops_ratio"].holds


def _fpp() -> dict[int, float]:
    torch.manual_seed(0)
    model = from_hf(make_llama("tiny", V, K * T))
    return {k: measured_flops_per_position(model, k, T) for k in (1, K)}


def test_in_run_gates_hold():
    runs, ids = _runs()
    assert _switch_holds(runs, ids)
    compute = experiments.compute_checks(runs, _fpp())
    assert _compute_holds(compute)
    assert compute["flops_ratio"] == pytest.approx(1.0, abs=0.02) and compute["data_ratio"] == 2.0


def test_stage_switch_holds_on_the_lightning_engine(tmp_path):
    runs, ids = _runs(names=("patch",), engine="lightning", tmp=tmp_path)
    assert _switch_holds(runs, ids)


def test_switch_gate_fails_when_the_optimizer_state_is_carried_over(monkeypatch):
    made: list = []
    real = stage_mod.make_optimizer

    def carried(model, plan, optim, **kw):  # the second stage keeps the first stage's AdamW (state and all)
        opt, sched = real(model, plan, optim, **kw)
        if made:
            opt.load_state_dict(made[0].state_dict())
            for group in opt.param_groups:
                group["lr"] = plan.lr * sched.lr_lambdas[0](0)
        made.append(opt)
        return opt, sched

    monkeypatch.setattr(stage_mod, "make_optimizer", carried)
    runs, ids = _runs(names=("patch",))
    assert not _switch_holds(runs, ids)


def test_switch_gate_fails_when_the_schedule_continues(monkeypatch):
    offset = {"steps": 0}
    real = stage_mod.make_optimizer

    def continued(model, plan, optim, **kw):  # one schedule over both stages: stage 2 starts at stage 1's last step
        opt, _ = real(model, plan, optim, **kw)
        start, total = offset["steps"], offset["steps"] + plan.steps
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: plan_mod.hf_cosine_lr(start + s, 1.0, plan.warmup, total)
        )
        offset["steps"] += plan.steps
        return opt, sched

    monkeypatch.setattr(stage_mod, "make_optimizer", continued)
    runs, ids = _runs(names=("patch",))
    assert not _switch_holds(runs, ids)


def test_switch_gate_fails_when_stage_two_rereads_the_data(monkeypatch):
    def take(self, n):  # never advances: stage 2 reads stage 1's tokens again
        return self.ids[:n]

    monkeypatch.setattr(TokenStream, "take", take)
    runs, ids = _runs(names=("patch",))
    assert not _switch_holds(runs, ids)


def test_compute_gate_fails_on_a_wrong_plan(monkeypatch):
    monkeypatch.setattr(plan_mod, "training_cost", lambda lam, K: lam + 1.0 - lam)  # patch steps billed as token steps
    runs, _ = _runs()
    assert not _compute_holds(experiments.compute_checks(runs, _fpp()))


def test_compute_gate_fails_when_the_patch_stage_does_not_pool(monkeypatch):
    real = stage_mod.patch_forward

    def unpooled(model, ids, K=1, labels=None):  # K*T positions per block: a token-level forward of the block
        return real(model, ids, 1, labels=labels)

    monkeypatch.setattr(stage_mod, "patch_forward", unpooled)
    runs, _ = _runs()
    assert not _compute_holds(experiments.compute_checks(runs, _fpp()))


def _smoke_claims(runs) -> dict[str, bool]:
    st1 = runs["patch"][0]
    claims = _judged({"stage1": experiments.smoke_checks(st1, math.log(V))})
    return {n: claims[n].holds for n in ("patch_loss_falls", "token_nll_after_patch_stage")}


def test_smoke_gates_hold_and_fail_without_learning(monkeypatch):
    from iclr25.patch_train.evaluate import evaluate_nll

    valid = _stream(4096)

    def run():
        plans = comparison_plans(K, 2 / 3, T, 256, 24, lr=1e-2, warmup=0.1)
        torch.manual_seed(0)
        model = from_hf(make_llama("tiny", V, T))
        loop = TwoStageLoop(
            model, TokenStream(_stream()), plans["patch"][:1], eval_fn=lambda m: {"nll": evaluate_nll(m, valid, T)[0]}
        )
        return {"patch": loop.run()}

    assert all(_smoke_claims(run()).values())
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda self, closure=None: None)  # the weights never move
    assert not any(_smoke_claims(run()).values())


def test_fast_model_equals_hugging_face_with_gradients():
    torch.manual_seed(0)
    hf = make_llama("tiny", V, 64)
    fast = from_hf(hf)
    ids = torch.randint(0, V, (2, 4 * 16))
    for k, x in ((4, ids), (1, ids[:, :32])):
        a, la = patch_mod.patch_forward(hf, x, k, labels=x)
        b, lb = patch_mod.patch_forward(fast, x, k, labels=x)
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
        la.backward()
        lb.backward()
        for (name, p), q in zip(hf.named_parameters(), fast.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)
        hf.zero_grad()
        fast.zero_grad()
    assert set(hf.state_dict()) == set(fast.state_dict())  # interchangeable checkpoints
    from iclr25.patch_train.llama import to_hf

    back = to_hf(fast)
    torch.testing.assert_close(back(input_ids=ids).logits, hf(input_ids=ids).logits, rtol=0, atol=0)
