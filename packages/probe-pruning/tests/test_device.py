"""Device placement: every tensor the pruners create lives on the device of their inputs (or, for random draws, of
their generator, then moved). Checked on CPU by making `meta` the default device: a tensor made without an explicit
device lands on `meta`, and using it with the CPU inputs raises, as a CPU tensor indexed by a CUDA mask does on a
GPU (the FLAP baseline's global ranking once crashed that way on CUDA)."""

from __future__ import annotations

import types

import pytest
import torch

from iclr25.probe_pruning import baselines
from iclr25.probe_pruning.baselines import StaticPruner, flap_global_ratios
from iclr25.probe_pruning.pruning import PPConfig, ProbePruner, collect_stats

PP = {"ratio": 0.4, "skip_layers": (0,), "round_multiple": 8}
RUNNERS = {
    "wanda-sp": lambda m, st: StaticPruner(m, "wanda_sp", 0.4, (0,), 8).set_stats(st),
    "flap": lambda m, st: StaticPruner(m, "flap", 0.4, (0,), 8).set_stats(st),
    "pp": lambda m, st: ProbePruner(m, PPConfig(**PP)).set_history(st),
    "fullbatch": lambda m, st: ProbePruner(m, PPConfig(probe_seq=1.0, probe_bsz=1.0, **PP)).set_history(st),
    "random": lambda m, st: ProbePruner(m, PPConfig(control="random", **PP)).set_history(st),
    "inverted": lambda m, st: ProbePruner(m, PPConfig(control="inverted", **PP)).set_history(st),
    "random-probe": lambda m, st: ProbePruner(m, PPConfig(probe_select="random", **PP)).set_history(st),
    "first-probe": lambda m, st: ProbePruner(m, PPConfig(probe_select="first", **PP)).set_history(st),
    "history-only": lambda m, st: ProbePruner(m, PPConfig(fusion="history_only", **PP)).set_history(st),
}


def _scores():
    g = torch.Generator().manual_seed(0)
    return {(1, "attn"): torch.rand(32, generator=g), (1, "mlp"): torch.rand(48, generator=g)}


@pytest.mark.parametrize("method", sorted(RUNNERS))
def test_pruners_create_tensors_on_the_input_device(method, llama, ids, calib):
    stats = collect_stats(llama, calib, (1, 2))
    dense = llama(ids).logits
    with torch.device("meta"):  # calibration masks and the pruned forward, with CPU model and inputs
        runner = RUNNERS[method](llama, stats)
        out = runner(ids)
    assert out.device == ids.device and out.shape == dense.shape and torch.isfinite(out).all()


def _check_flap_devices() -> None:
    scores = _scores()
    ref = flap_global_ratios(scores, 4, 3.0, 0.5)
    with torch.device("meta"):
        kept = flap_global_ratios(scores, 4, 3.0, 0.5)
    assert all(kept[k].device.type == "cpu" and torch.equal(kept[k], ref[k]) for k in ref), kept


def test_flap_global_ratios_keeps_the_scores_device():
    _check_flap_devices()


def test_the_device_check_fails_on_an_index_made_without_a_device(monkeypatch):
    """The bug this file guards against: the unit index built by `torch.arange(n)` (the default device) and then
    masked with a mask on the scores' device."""

    def arange_without_device(*args, **kwargs):
        kwargs.pop("device", None)
        return torch.arange(*args, **kwargs)

    broken = types.SimpleNamespace(**{n: getattr(torch, n) for n in dir(torch) if not n.startswith("__")})
    broken.arange = arange_without_device
    monkeypatch.setattr(baselines, "torch", broken)
    flap_global_ratios(_scores(), 4, 3.0, 0.5)  # unnoticed while every tensor is on the CPU ...
    with pytest.raises((AssertionError, RuntimeError, NotImplementedError)):
        _check_flap_devices()  # ... caught here
