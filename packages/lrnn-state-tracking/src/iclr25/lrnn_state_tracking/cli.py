"""Command line of the reimplementation of "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues"
(Grazzi, Siems et al., ICLR 2025, arXiv 2411.12537).

    iclr25-lrnn-state-tracking reproduce --scale quick
    iclr25-lrnn-state-tracking train --task parity --model deltanet --eig-range -1,1 steps=500
    iclr25-lrnn-state-tracking eval --ckpt runs/.../model.pt --lengths 40:256 --n 8192
    iclr25-lrnn-state-tracking theory-check
    iclr25-lrnn-state-tracking ppl --ckpt runs/lm/lm.pt --data code.jsonl --field content --max-len 2048
    iclr25-lrnn-state-tracking table results/quick/results.json results/studies/*/study.json

Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from iclr25.lrnn_state_tracking.config import MAX_EVAL_N, MODELS, PRESETS, TASKS, TRAIN_PRESETS, TrainConfig
from iclr25.lrnn_state_tracking.verbs import VERBS, add_verbs, run_verb
from iclr25.shared.cli import (
    CliError,
    add_run_args,
    build_config,
    check_verb_flags,
    make_parser,
    package_main,
    scale_out_from_args,
)
from iclr25.shared.run import DEVICES, open_run_folder
from iclr25.shared.validate import int_at_most

PROG = "iclr25-lrnn-state-tracking"
SLUG = "lrnn-state-tracking"


def _parser():
    parser = make_parser(PROG, __doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run a preset and check the paper's claims")
    add_run_args(rep, scales=("ci", "quick", "full"), scale_out=True, presets=PRESETS)
    tr = sub.add_parser("train", help="train one model on one task and evaluate it on lengths 40-256")
    tr.add_argument("--task", choices=TASKS, default="parity")
    tr.add_argument("--model", "--mixer", dest="model", choices=MODELS, default="deltanet")
    tr.add_argument("--eig-range", default="-1,1", help="0,1 or -1,1 (default: %(default)s)")
    add_run_args(tr, scale_out=True)
    ev = sub.add_parser("eval", help="evaluate a checkpoint written by `train`")
    ev.add_argument("--ckpt", type=Path, required=True)
    ev.add_argument("--lengths", default="40:256", help="min:max sequence length (default: %(default)s)")
    ev.add_argument("--n", type=int_at_most(MAX_EVAL_N), default=8_192, help="test sequences (default: %(default)s)")
    ev.add_argument("--seed", type=int, default=12_345)
    ev.add_argument("--device", choices=DEVICES, default="auto")
    sub.add_parser("theory-check", help="run the executable theory (Prop. 1, Thm. 1, Thm. 3) and print pass/fail")
    add_verbs(sub)  # ppl, train-lm, table, official-config
    return parser


def _fix_negative_values(argv: list[str]) -> list[str]:
    """Let `--eig-range -1,1` through argparse, which would read `-1,1` as an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--eig-range" and i + 1 < len(argv):
            out.append(f"--eig-range={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _parse_lengths(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        raise CliError(f"--lengths must look like MIN:MAX (e.g. 40:256), got {text!r}") from None
    if not 1 <= lo <= hi <= 256:
        raise CliError(f"--lengths must satisfy 1 <= MIN <= MAX <= 256, got {text!r}")
    return lo, hi


def _train(args) -> int:
    from dataclasses import replace

    # the config values, wandb and the run folder first: nothing heavy is imported before they pass
    base = TrainConfig(task=args.task, model=args.model, eig_range=args.eig_range, seed=args.seed)
    base = replace(base, **TRAIN_PRESETS[args.scale])
    cfg = build_config(base, args.config, args.overrides)
    scale_out = scale_out_from_args(args)
    out = check_verb_flags(args, SLUG, "train", args.scale)
    import torch

    from iclr25.lrnn_state_tracking.training import evaluate, save_checkpoint, train
    from iclr25.shared.device import configure_torch, pick_device
    from iclr25.shared.fabric import Checkpointer
    from iclr25.shared.logging import MetricsLogger, NullLogger
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import is_follower, launch_fabric

    threads_before = torch.get_num_threads()
    try:
        device = pick_device(args.device)
        configure_torch(device, threads=1 if device == "cpu" else None)
        resume = scale_out.resume == "auto"
        with open_run_folder(out, args.overwrite, paper=SLUG, command="train", resume=resume) as folder:
            fabric = launch_fabric(folder, args.device, scale_out) if scale_out.wants_fabric else None
            every = scale_out.checkpoint_every or max(1, cfg.steps // 10)
            wanted = scale_out.checkpoint_every or scale_out.resume
            checkpointer = Checkpointer(folder / "checkpoints", every) if wanted else None
            name = f"{cfg.model}-{cfg.task}"
            with NullLogger() if is_follower() else MetricsLogger(folder, wandb=args.wandb, name=name) as logger:
                result = train(
                    cfg,
                    device,
                    log_every=max(1, cfg.steps // 20),
                    logger=logger,
                    fabric=fabric,
                    checkpointer=checkpointer,
                    resume=scale_out.resume,
                )
                ev = evaluate(
                    result.model, cfg.task, cfg.eval_n, (40, 256), cfg.eval_seed, device=device, mult=cfg.mult
                )
                logger.log({"test_scaled_accuracy": ev["scaled_accuracy"]}, step=cfg.steps)
            if is_follower():  # rank 0 writes the model and the summary
                return 0
            save_checkpoint(result, folder / "model.pt")
            summary = {
                "task": cfg.task,
                "model": cfg.model,
                "eig_range": cfg.eig_range,
                "steps": cfg.steps,
                "test_lengths": "40:256",
                "scaled_accuracy": round(ev["scaled_accuracy"], 4),
                "accuracy": round(ev["accuracy"], 4),
                "train_tokens_per_s": round(result.tokens_per_s, 1),
                "checkpoint": str(Path(out) / "model.pt"),
            }
            atomic_write_json(folder / "summary.json", summary)
    finally:
        torch.set_num_threads(threads_before)
    print(json.dumps(summary, indent=2))
    return 0


def _eval(args) -> int:
    lengths = _parse_lengths(args.lengths)
    if args.n < 1:
        raise CliError(f"--n must be >= 1, got {args.n}")
    if not args.ckpt.is_file():
        raise CliError(f"checkpoint {args.ckpt} does not exist")
    import torch

    from iclr25.lrnn_state_tracking.training import evaluate, load_checkpoint
    from iclr25.shared.device import configure_torch, pick_device

    threads_before = torch.get_num_threads()
    try:
        device = pick_device(args.device)
        configure_torch(device, threads=1 if device == "cpu" else None)
        model, cfg = load_checkpoint(args.ckpt, device)
        ev = evaluate(model, cfg.task, args.n, lengths, args.seed, device=device, mult=cfg.mult)
    finally:
        torch.set_num_threads(threads_before)
    result = {
        "task": cfg.task,
        "model": cfg.model,
        "eig_range": cfg.eig_range,
        "lengths": args.lengths,
        "n": args.n,
        "scaled_accuracy": round(ev["scaled_accuracy"], 4),
        "accuracy": round(ev["accuracy"], 4),
    }
    print(json.dumps(result, indent=2))
    return 0


def _theory() -> int:
    from iclr25.lrnn_state_tracking.experiments import theory_checks

    checks = theory_checks()
    for name, ok in checks.items():
        print(f"{'pass' if ok else 'FAIL'}  {name}")
    return 0 if all(checks.values()) else 1


_main = package_main(
    PROG,
    _parser,
    {"train": _train, "eval": _eval, "theory-check": lambda _: _theory(), **dict.fromkeys(VERBS, run_verb)},
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `iclr25-lrnn-state-tracking` (negative numbers are values, not flags)."""
    return _main(_fix_negative_values(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    sys.exit(main())
