"""`iclr25-probe-pruning`: reproduce the claims, train the tiny model, prune and evaluate a local HF checkpoint.

    iclr25-probe-pruning reproduce --scale ci|quick|full [--devices N] [--max-memory 40GiB] [key=value ...]
    iclr25-probe-pruning train-tiny --out runs/tiny --steps 700
    iclr25-probe-pruning prune --model runs/tiny/model --ratio 0.4 --method pp --skip-layers 0 --round-multiple 8
    iclr25-probe-pruning eval --model runs/tiny/model [--data wiki.test.raw --tokenizer tokenizer.json]

Standard library only at module level, so `--help` answers at once.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

from iclr25.probe_pruning.config import PRESETS, PruneConfig, TrainConfig
from iclr25.probe_pruning.sharding import MAX_DEVICES
from iclr25.shared.cli import (
    CliError,
    add_config_args,
    add_run_args,
    check_verb_flags,
    config_from_args,
    make_parser,
    package_main,
)
from iclr25.shared.run import DEVICES
from iclr25.shared.validate import int_in

SLUG = "probe-pruning"
PROG = f"iclr25-{SLUG}"


def _verb_flags(verb: argparse.ArgumentParser) -> None:
    verb.add_argument("--out", type=Path, help="output folder (default: runs/probe-pruning/<command>-<time>)")
    verb.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    verb.add_argument("--device", choices=DEVICES, default="auto", help="compute device (default: %(default)s)")
    verb.add_argument("--overwrite", action="store_true", help="replace a folder an earlier run made")
    verb.add_argument("--quiet", action="store_true", help="no progress output")


def build_parser() -> argparse.ArgumentParser:
    """The `iclr25-probe-pruning` argument parser."""
    parser = make_parser(PROG, __doc__ or "")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the ci/quick/full reproduction and print the claims table")
    add_run_args(rep, scales=tuple(PRESETS), presets=PRESETS)
    rep.add_argument(
        "--devices", dest="split_devices", type=int_in(1, MAX_DEVICES), metavar="N",
        help="CUDA GPUs the model's decoder layers are split over (the config key devices=N)",
    )  # fmt: skip
    rep.add_argument(
        "--max-memory", dest="split_max_memory", metavar="SIZE",
        help="weight budget per GPU, e.g. 40GiB or 20GiB,40GiB (the config key max_memory=SIZE)",
    )  # fmt: skip
    tr = sub.add_parser("train-tiny", help="train the tiny byte-level LLaMA and save it as an HF folder")
    add_config_args(tr, TrainConfig())
    _verb_flags(tr)
    for name, text in (
        ("prune", "calibrate, prune (pp, fullbatch, wanda-sp, flap, controls) and report PPL + settings"),
        ("eval", "dense PPL of a local HF checkpoint"),
    ):
        verb = sub.add_parser(name, help=text)
        add_config_args(verb, PruneConfig(), exclude=("method",) if name == "eval" else ())
        _verb_flags(verb)
    return parser


def check_devices(devices: int, device: str) -> None:
    """Refuse a split over more GPUs than the run's device offers, before any run folder or weight."""
    if devices > 1:
        from iclr25.probe_pruning.sharding import cuda_devices
        from iclr25.shared.device import pick_device

        cuda_devices(devices, pick_device(device))


def _reproduce(args: argparse.Namespace) -> int:
    from iclr25.shared.cli import build_config, reproduce_command

    for key, value in (("devices", args.split_devices), ("max_memory", args.split_max_memory)):
        if value is not None:
            args.overrides.append(f"{key}={value}")
    config = build_config(PRESETS[args.scale], args.config, args.overrides)  # bad values: one line, nothing made
    check_devices(config.devices, args.device)
    return reproduce_command(SLUG, args, "iclr25.probe_pruning.reproduce:run", PRESETS)


def _device(name: str) -> str:
    from iclr25.shared.device import configure_torch, pick_device

    device = pick_device(name)
    configure_torch(device)
    return device


def _train(args: argparse.Namespace) -> int:
    cfg = config_from_args(args, TrainConfig())
    out = check_verb_flags(args, SLUG, "train-tiny", "user")
    device = _device(args.device)
    from iclr25.probe_pruning import data
    from iclr25.probe_pruning.hf_io import save_pretrained
    from iclr25.probe_pruning.training import train_tiny
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    a = data.split_tokens(data.to_tokens(data.prose_text()))[0]
    b = data.split_tokens(data.to_tokens(data.python_source_text()))[0]
    with open_run_folder(out, args.overwrite, paper=SLUG, command="train-tiny") as folder:
        model, log = train_tiny(
            [a, b], d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_ff=cfg.d_ff,
            steps=cfg.steps, batch=cfg.batch, seq=cfg.seq_len, lr=cfg.lr, seed=args.seed, device=device,
            cache=False,
        )  # fmt: skip
        save_pretrained(model, folder / "model")
        atomic_write_json(folder / "train_log.json", {**log, "config": cfg.__dict__, "seed": args.seed})
    print(f"trained {cfg.steps} steps in {log['train_wall_s']:.1f} s, final loss {log['final_loss']:.3f}")
    print(f"model written to {folder / 'model'}")
    return 0


def _prune(args: argparse.Namespace, command: str) -> int:
    base = PruneConfig(method="dense") if command == "eval" else PruneConfig()
    cfg = config_from_args(args, base)
    if not cfg.model:
        raise CliError("--model is required (a folder with config.json and safetensors or pytorch_model.bin)")
    out = check_verb_flags(args, SLUG, command, "user")
    check_devices(cfg.devices, args.device)
    device = _device(args.device)
    import torch

    from iclr25.probe_pruning import data, hf_io
    from iclr25.probe_pruning.config import Config
    from iclr25.probe_pruning.experiments import make_pruner, place_model
    from iclr25.probe_pruning.pruning import collect_stats, evaluate_ppl
    from iclr25.probe_pruning.reproduce import check_split
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    # the user's files are read first (each refused on one line if unusable), the model last
    tokenize = data.load_tokenizer(cfg.tokenizer) if cfg.tokenizer else None
    text = data.load_wikitext(cfg.data) if cfg.data else None
    c4_docs = data.read_c4(cfg.calib) if cfg.calib and cfg.method != "dense" else None
    rc = Config(
        ratio=cfg.ratio, skip_layers=cfg.skip_layers, round_multiple=cfg.round_multiple, probe_seq=cfg.probe_seq,
        probe_bsz=cfg.probe_bsz, ema=cfg.ema, fusion=cfg.fusion, model_dir=cfg.model, devices=cfg.devices,
        max_memory=cfg.max_memory,
    )  # fmt: skip
    check_split(rc)  # more GPUs than layers, or weights over the budgets: refused before the weights are read
    model = place_model(hf_io.from_pretrained_dir(cfg.model), rc, device)
    n_layers = model.cfg.num_hidden_layers
    bad_skip = any(s >= n_layers for s in cfg.skip_layers) or len(set(cfg.skip_layers)) >= n_layers
    if cfg.method != "dense" and bad_skip:
        raise CliError(f"--skip-layers {cfg.skip_layers} does not fit a model of {n_layers} layers")
    if tokenize is None:
        folder_tok = Path(cfg.model) / "tokenizer.json"
        tokenize = data.load_tokenizer(folder_tok) if folder_tok.is_file() else data.byte_tokenize
    tokens = data.to_tokens(text if text is not None else data.python_source_text(), tokenize)
    tokens = data.split_tokens(tokens)[1] if text is None else tokens
    if int(tokens.max()) >= model.cfg.vocab_size:
        raise CliError(f"token ids reach {int(tokens.max())} but the model's vocabulary has {model.cfg.vocab_size}")
    evals = data.batches(data.random_windows(tokens, cfg.batches * cfg.batch, cfg.seq_len, args.seed), cfg.batch)
    evals = [b.to(device) for b in evals]
    settings: dict = {"config": {**cfg.__dict__}, "seed": args.seed, "device": device}
    if getattr(model, "device_plan", None) is not None:
        settings["device_map"] = model.device_plan.to_dict()
    result: dict = {"dense_ppl": evaluate_ppl(model, evals)}
    if cfg.method != "dense":
        if c4_docs is not None:
            calib = data.load_c4_windows(c4_docs, cfg.calib_windows, cfg.seq_len, args.seed, tokenize)
        else:
            prose = data.split_tokens(data.to_tokens(data.prose_text(), tokenize))[0]
            calib = data.random_windows(prose, cfg.calib_windows, cfg.seq_len, args.seed + 1)
        layers = tuple(i for i in range(n_layers) if i not in cfg.skip_layers)
        with torch.no_grad():
            stats = collect_stats(model, [b.to(device) for b in data.batches(calib, cfg.batch)], layers)
        extra = {"log_probes": True} if cfg.method in ("pp", "fullbatch", "random", "inverted") else {}
        runner = make_pruner(model, cfg.method, rc, stats, args.seed, **extra)
        result[f"{cfg.method}_ppl"] = evaluate_ppl(runner, evals)
        settings["r_adjusted"] = runner.r_adj
        settings["kept_units_last_batch"] = {f"{i}.{k}": int(v.numel()) for (i, k), v in sorted(runner.last_kept.items())}  # fmt: skip
        if getattr(runner, "probe_log", None):
            settings["probe_indices_first_batch"] = runner.probe_log[: 2 * len(layers)]
    with open_run_folder(out, args.overwrite, paper=SLUG, command=command) as folder:
        atomic_write_json(folder / "report.json", {**result, "settings": settings})
    for key, value in result.items():
        print(f"{key}: {value:.4f}")
    if "r_adjusted" in settings:
        print(f"r' = {settings['r_adjusted']}, kept units: {json.dumps(settings['kept_units_last_batch'])}")
    print(f"results written to {folder}")
    return 0


main = package_main(
    PROG,
    build_parser,
    {
        "reproduce": _reproduce,
        "train-tiny": _train,
        "prune": partial(_prune, command="prune"),
        "eval": partial(_prune, command="eval"),
    },
)


if __name__ == "__main__":
    raise SystemExit(main())
