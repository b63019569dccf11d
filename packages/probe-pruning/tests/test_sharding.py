"""The layer-wise device map (sharding.py): the plan, a split model's outputs and pruning decisions, device agreement
on a model split over the CPU and the `meta` device, and the command line's refusals."""

from __future__ import annotations

import itertools
import random

import pytest
import torch
from torch.overrides import TorchFunctionMode

from iclr25.probe_pruning.baselines import StaticPruner
from iclr25.probe_pruning.model import DecoderLM, ModelConfig
from iclr25.probe_pruning.pruning import PPConfig, ProbePruner, collect_stats, evaluate_ppl
from iclr25.probe_pruning.sharding import (
    DevicePlan,
    parse_max_memory,
    parse_memory,
    part_bytes,
    plan_config,
    plan_device_map,
    plan_model,
    shard_model,
)

GIB = 2**30


# ------------------------------------------------------------------------------------------------ the plan
def _brute_force(sizes, k, embed, head, budget):
    """The smallest largest load over every split of `sizes` into k contiguous non-empty blocks (None: none fits)."""
    n, best = len(sizes), None
    for cuts in itertools.combinations(range(1, n), k - 1):
        bounds = (0, *cuts, n)
        loads = [sum(sizes[bounds[d] : bounds[d + 1]]) for d in range(k)]
        loads[0] += embed
        loads[-1] += head
        if all(load <= b for load, b in zip(loads, budget, strict=True)):
            best = max(loads) if best is None else min(best, max(loads))
    return best


def _check_plan(plan: DevicePlan, sizes, embed, head):
    k = len(plan.devices)
    assert list(plan.layer_slots) == sorted(plan.layer_slots)  # contiguous blocks, in device order
    assert set(plan.layer_slots) == set(range(k))  # every device holds at least one layer
    loads = [sum(s for s, d in zip(sizes, plan.layer_slots, strict=True) if d == slot) for slot in range(k)]
    loads[0] += embed
    loads[-1] += head
    assert list(plan.loads) == loads


@pytest.mark.parametrize(
    ("sizes", "devices", "embed", "head", "budget", "slots"),
    [
        ([1] * 4, 2, 0, 0, None, (0, 0, 1, 1)),
        ([1] * 5, 2, 0, 0, None, (0, 0, 1, 1, 1)),  # a tie: the earlier device holds fewer layers
        ([1] * 6, 2, 3, 0, None, (0, 1, 1, 1, 1, 1)),  # large embeddings: fewer layers on the first device
        ([1] * 6, 3, 0, 3, None, (0, 0, 1, 1, 1, 2)),  # a large head: the last device holds one layer
        ([5, 1, 1, 1, 1, 1], 2, 0, 0, None, (0, 1, 1, 1, 1, 1)),
        ([1] * 4, 2, 0, 0, [1, 10], (0, 1, 1, 1)),  # a small first budget
        ([1] * 4, 2, 0, 0, [10, 1], (0, 0, 0, 1)),
        ([2] * 3, 3, 0, 0, None, (0, 1, 2)),
        ([7], 1, 2, 3, None, (0,)),
    ],
)
def test_plan_places_contiguous_balanced_blocks(sizes, devices, embed, head, budget, slots):
    names = [f"cuda:{i}" for i in range(devices)]
    plan = plan_device_map(sizes, names, embed, head, budget)
    assert plan.layer_slots == slots
    _check_plan(plan, sizes, embed, head)
    assert plan.embed_device == names[0] and plan.head_device == names[-1]


def test_plan_is_the_best_balance():
    rng = random.Random(0)
    for _ in range(150):
        n, k = rng.randint(1, 7), rng.randint(1, 4)
        if k > n:
            continue
        sizes = [rng.randint(1, 9) for _ in range(n)]
        embed, head = rng.randint(0, 9), rng.randint(0, 9)
        budget = [rng.randint(5, 40) for _ in range(k)] if rng.random() < 0.5 else [float("inf")] * k
        best = _brute_force(sizes, k, embed, head, budget)
        given = None if budget[0] == float("inf") else budget
        if best is None:
            with pytest.raises(ValueError, match="do not fit"):
                plan_device_map(sizes, [str(i) for i in range(k)], embed, head, given)
            continue
        plan = plan_device_map(sizes, [str(i) for i in range(k)], embed, head, given)
        _check_plan(plan, sizes, embed, head)
        assert max(plan.loads) == best and all(load <= b for load, b in zip(plan.loads, budget, strict=True))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([1, 1], ["a", "b", "c"]), "3 devices for a model of 2 decoder layers"),
        (([1, 1], []), "at least one device"),
        (([], ["a"]), "no decoder layers"),
        (([4, 4], ["a", "b"], 0, 0, [3, 10]), "do not fit"),
        (([1, 1], ["a", "b"], 0, 0, [3]), "1 memory budgets for 2 devices"),
    ],
)
def test_plan_refuses_what_cannot_work(args, message):
    with pytest.raises(ValueError, match=message):
        plan_device_map(*args)


LLAMA_2 = {  # (config, parameters): LLaMA-2-7B and -13B (the counts of their HF checkpoints)
    "7b": (ModelConfig(vocab_size=32000, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=32, intermediate_size=11008), 6_738_415_616),
    "13b": (ModelConfig(vocab_size=32000, hidden_size=5120, num_hidden_layers=40, num_attention_heads=40,
                        num_key_value_heads=40, intermediate_size=13824), 13_015_864_320),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LLAMA_2))
@pytest.mark.parametrize("n_devices", [1, 2, 4])
def test_llama_2_plans_in_fp16(name, n_devices):
    cfg, params = LLAMA_2[name]
    plan = plan_config(cfg, [f"cuda:{i}" for i in range(n_devices)], dtype=torch.float16)
    assert sum(plan.loads) == 2 * params  # every weight placed once, 2 bytes each
    counts = [plan.layer_slots.count(d) for d in range(n_devices)]
    assert counts == [cfg.num_hidden_layers // n_devices] * n_devices  # equal layers, embeddings ~ head
    assert max(plan.loads) < 2 * params / n_devices * 1.05
    in_fp32 = plan_config(cfg, ["cuda:0"], dtype=torch.float32)
    assert in_fp32.loads == (4 * params,)


def test_llama_2_13b_under_a_budget():
    cfg, params = LLAMA_2["13b"]
    with pytest.raises(ValueError, match="do not fit"):  # 24.2 GiB of fp16 weights on one 20 GiB budget
        plan_config(cfg, ["cuda:0"], [20 * GIB], dtype=torch.float16)
    plan = plan_config(cfg, ["cuda:0", "cuda:1"], [8 * GIB, 40 * GIB], dtype=torch.float16)
    assert plan.loads[0] <= 8 * GIB and sum(plan.loads) == 2 * params
    assert plan.layer_slots.count(0) < plan.layer_slots.count(1)


def test_memory_strings():
    assert parse_memory("40GiB") == 40 * GIB and parse_memory("80GB") == 80 * 10**9
    assert parse_memory("512 MiB") == 512 * 2**20 and parse_memory("1000") == 1000 and parse_memory("1.5kib") == 1536
    assert parse_max_memory("", 3) is None and parse_max_memory("1GiB", 2) == [GIB, GIB]
    assert parse_max_memory("1GiB,2GiB", 2) == [GIB, 2 * GIB]
    for bad in ("40XB", "GiB", "-1GiB", "0"):
        with pytest.raises(ValueError, match="memory size"):
            parse_memory(bad)
    with pytest.raises(ValueError, match="3 budgets for 2 devices"):
        parse_max_memory("1GiB,1GiB,1GiB", 2)


# ------------------------------------------------------------------------------------------------ a split model
RUNNERS = {
    "pp": lambda m, st: ProbePruner(m, PPConfig(ratio=0.4, skip_layers=(0,), round_multiple=8)).set_history(st),
    "fullbatch": lambda m, st: ProbePruner(
        m, PPConfig(ratio=0.4, skip_layers=(0,), round_multiple=8, probe_seq=1.0, probe_bsz=1.0)
    ).set_history(st),
    "random": lambda m, st: ProbePruner(m, PPConfig(ratio=0.4, skip_layers=(0,), control="random")).set_history(st),
    "wanda-sp": lambda m, st: StaticPruner(m, "wanda_sp", 0.4, (0,), 8).set_stats(st),
    "flap": lambda m, st: StaticPruner(m, "flap", 0.4, (0,), 8).set_stats(st),
}


def _decisions(runner):
    if isinstance(runner, ProbePruner):
        return {k: d.kept.tolist() for k, d in runner.decisions.items()}
    return {k: v.tolist() for k, v in runner.kept.items()} | {("bias", *k): v.tolist() for k, v in runner.bias.items()}


@pytest.mark.parametrize(
    ("arch", "devices"),
    [("llama", ["cpu", "cpu"]), ("opt", ["cpu", "cpu:0"]), ("llama", ["cpu", "cpu:0", "cpu", "cpu:0"])],
)
def test_a_split_model_gives_identical_outputs_and_decisions(make, arch, devices, ids, calib):
    """Split over CPU devices (for OPT over "cpu" and "cpu:0", which the plan treats as two devices, so that the
    tied head gets its own copy), the dense logits, calibration statistics, perplexities and every method's kept
    units are those of the unsplit model."""
    whole, split = make(arch, layers=4), make(arch, layers=4)
    shard_model(split, plan_model(split, devices))
    assert split.layer_devices is not None and len(set(split.device_plan.layer_slots)) == len(devices)
    if arch == "opt":
        assert split.lm_head.weight is not split.model.decoder.embed_tokens.weight
    assert torch.equal(whole(ids).logits, split(ids).logits)
    stats_whole, stats_split = collect_stats(whole, calib, (1, 2, 3)), collect_stats(split, calib, (1, 2, 3))
    assert all(torch.equal(stats_whole[k].sq, stats_split[k].sq) for k in stats_whole)
    for method, build in RUNNERS.items():
        a, b = build(whole, stats_whole), build(split, stats_split)
        assert evaluate_ppl(a, [ids, ids.flip(0)]) == evaluate_ppl(b, [ids, ids.flip(0)]), method
        assert _decisions(a) == _decisions(b) and _decisions(a), method


def test_timing_synchronises_every_device_of_a_split_model(make):
    from iclr25.probe_pruning.experiments import _split_devices

    model = make("llama", layers=4)
    assert _split_devices(model) == ()
    assert _split_devices(ProbePruner(model, PPConfig(skip_layers=(0,)))) == ()
    shard_model(model, plan_model(model, ["cpu", "cpu:0"]))
    both = (torch.device("cpu"), torch.device("cpu:0"))
    assert _split_devices(model) == both
    assert _split_devices(StaticPruner(model, "wanda_sp", 0.4, (0,), 8)) == both


class OneDevicePerOp(TorchFunctionMode):
    """Raises when one torch operation reads tensors (of one dimension or more) on different devices: what a GPU
    refuses, and what torch lets pass silently between the CPU and `meta` for some operations (a matmul)."""

    MOVES = frozenset({"to", "cpu", "cuda", "copy_", "__get__", "__set__"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") not in self.MOVES:
            found = {t.device for t in _tensors((args, kwargs)) if t.dim() > 0}
            if len(found) > 1:
                raise RuntimeError(f"{getattr(func, '__name__', func)} mixes devices {sorted(map(str, found))}")
        return func(*args, **kwargs)


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, list | tuple):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)


META_RUNNERS = {k: v for k, v in RUNNERS.items() if k != "flap"}  # FLAP's global ranking reads values (see below)
META_RUNNERS["inverted"] = lambda m, st: ProbePruner(
    m, PPConfig(ratio=0.4, skip_layers=(0,), control="inverted")
).set_history(st)
META_RUNNERS["history-only"] = lambda m, st: ProbePruner(
    m, PPConfig(ratio=0.4, skip_layers=(0,), fusion="history_only")
).set_history(st)


def _run_split_over_meta(make) -> dict[str, torch.device]:
    """A model whose first layers sit on the CPU and the rest (and the head) on `meta`: every operation must read
    tensors of one device, so a tensor left behind at a block boundary raises."""
    model = make("llama", layers=4)
    shard_model(model, plan_model(model, ["cpu", "meta"]))
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 61, (6, 32), generator=g)  # 32 positions: a probe of 16 (no data-dependent rule)
    calib = [torch.randint(0, 61, (4, 32), generator=g) for _ in range(2)]
    out = {}
    with OneDevicePerOp():
        out["dense"] = model(ids).logits.device
        stats = collect_stats(model, calib, (1, 2, 3))
        for name, build in META_RUNNERS.items():
            out[name] = build(model, stats)(ids).device
    return out


def test_every_operation_of_a_split_model_reads_one_device(make):
    """FLAP is not in this check: its global threshold selects units by value (a meta tensor has none); its device
    handling is checked by `test_device.py` and by the identical decisions above."""
    assert set(_run_split_over_meta(make).values()) == {torch.device("meta")}


def test_the_device_agreement_check_fails_when_a_boundary_is_skipped(make, monkeypatch):
    """The bug the check exists for: hidden states not moved to the next device at a block boundary."""
    monkeypatch.setattr(DecoderLM, "to_layer", lambda self, i, h, pos: (h, pos))
    with pytest.raises(RuntimeError, match="mixes devices"):
        _run_split_over_meta(make)


def test_the_device_agreement_check_fails_when_the_positions_stay_behind(make, monkeypatch):
    monkeypatch.setattr(DecoderLM, "to_layer", lambda self, i, h, pos: (h.to(self.layer_devices[i]), pos))
    with pytest.raises(RuntimeError, match="mixes devices"):
        _run_split_over_meta(make)


def test_part_bytes_count_every_weight_once(make):
    for arch in ("llama", "opt"):
        model = make(arch, layers=3)
        embed, layers, head = part_bytes(model)
        unique = sum(p.numel() * p.element_size() for p in model.parameters())
        tied = model.lm_head.weight.numel() * 4 if arch == "opt" else 0  # the head's copy when split
        assert embed + sum(layers) + head == unique + tied
        assert len(layers) == 3 and len(set(layers)) == 1


# ------------------------------------------------------------------------------------------------ the command line
@pytest.fixture
def tiny_dir(tmp_path):
    from iclr25.probe_pruning.hf_io import save_pretrained
    from iclr25.probe_pruning.model import build_model

    cfg = ModelConfig(vocab_size=256, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                      num_key_value_heads=4, intermediate_size=48)  # fmt: skip
    return save_pretrained(build_model(cfg), tmp_path / "model")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["reproduce", "--devices", "2", "--device", "cpu"], "CUDA GPUs, but the run's device is cpu"),
        (["reproduce", "--devices", "5"], "devices=5 exceeds the 4 decoder layers"),
        (["reproduce", "devices=5"], "devices=5 exceeds the 4 decoder layers"),
        (["reproduce", "--devices", "0"], "--devices"),
        (["reproduce", "--devices", "two"], "--devices"),
        (["reproduce", "--max-memory", "40XB"], "memory size"),
        (["reproduce", "--max-memory", "1KiB"], "do not fit"),
        (["reproduce", "--devices", "2", "--max-memory", "1GiB,1GiB,1GiB", "--device", "cpu"], "3 budgets for 2"),
        (["prune", "--model", "m", "--devices", "2", "--device", "cpu"], "CUDA GPUs"),
        (["prune", "--model", "m", "--devices", "0"], "devices"),
        (["prune", "--model", "m", "--max-memory", "lots"], "memory size"),
        (["eval", "--model", "TINY", "--max-memory", "1KiB", "--device", "cpu"], "do not fit"),
    ],
)
def test_bad_split_is_one_line(tmp_path, tiny_dir, monkeypatch, capsys, argv, needle):
    from iclr25.probe_pruning.cli import main

    monkeypatch.chdir(tmp_path)
    argv = [str(tiny_dir) if a == "TINY" else a for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert needle in err, err
    assert not (tmp_path / "runs").exists()


def test_prune_under_a_memory_budget_records_the_device_map(tmp_path, tiny_dir):
    import json

    from iclr25.probe_pruning.cli import main

    out = tmp_path / "o"
    argv = ["prune", "--model", str(tiny_dir), "--method", "flap", "--skip-layers", "0", "--round-multiple", "8",
            "--seq-len", "16", "--batch", "4", "--batches", "1", "--calib-windows", "4", "--max-memory", "1GiB",
            "--device", "cpu", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["device_map"]["devices"] == ["cpu"]
    assert report["settings"]["device_map"]["layers"] == [[0, 2]]


def test_a_split_needs_cuda_in_the_python_api(make):
    from iclr25.probe_pruning.config import Config
    from iclr25.probe_pruning.experiments import place_model

    with pytest.raises(ValueError, match="CUDA GPUs"):
        place_model(make("llama"), Config(devices=2), "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="more CUDA GPUs than the 0"):
            place_model(make("llama"), Config(devices=2), "cuda")


def test_seeds_train_through_the_shared_process_map_in_order(monkeypatch):
    """`train_seeds(workers=2)` hands the seeds to `iclr25.shared.parallel.map_in_processes` (one thread per
    process) and caches each result under its own seed, in the order asked (the map itself, spawned processes with
    the sequential results, is tested with the shared layer; here it runs in this process)."""
    import numpy as np

    from iclr25.probe_pruning.training import train_seeds, train_tiny
    from iclr25.shared import parallel

    calls = []

    def in_process(function, items, workers, **kw):
        calls.append((workers, kw.get("threads")))
        return [function(item) for item in items]

    monkeypatch.setattr(parallel, "map_in_processes", in_process)
    rng = np.random.default_rng(0)
    domains = [rng.integers(0, 256, 4000, dtype=np.int64), rng.integers(0, 256, 4000, dtype=np.int64)]
    kw = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 24, "steps": 3, "batch": 4, "seq": 16}
    parallel_runs = train_seeds(domains, [7, 5], workers=2, **kw)
    assert calls == [(2, 1)]
    for seed, (model, log) in zip([7, 5], parallel_runs, strict=True):
        ref, _ = train_tiny(domains, seed=seed, cache=False, **kw)
        assert log["steps"] == 3
        assert all(
            torch.equal(a, b) for a, b in zip(model.state_dict().values(), ref.state_dict().values(), strict=True)
        )
    a, b = (m.state_dict()["lm_head.weight"] for m, _ in parallel_runs)
    assert not torch.equal(a, b)


def test_a_checkpoint_split_is_checked_from_its_config(tiny_dir):
    """More devices than the checkpoint's decoder layers, or budgets its weights do not fit, are refused from its
    config.json (on the meta device) before any weight is read."""
    from iclr25.probe_pruning.config import Config
    from iclr25.probe_pruning.reproduce import check_split

    base = {"model_dir": str(tiny_dir), "dtype": "float16"}
    with pytest.raises(ValueError, match="4 devices for a model of 3 decoder layers"):
        check_split(Config(devices=4, **base))
    with pytest.raises(ValueError, match="do not fit"):
        check_split(Config(devices=3, max_memory="1KiB", **base))
    check_split(Config(devices=3, max_memory="1MiB", **base))  # 3 tiny layers over 3 budgets: fits
