"""`iclr25-compose-decompose`: reproduce CtD's claims, train agents, compose, evaluate, score message logs with CBM.

Paper: "CtD: Composition through Decomposition in Emergent Communication" (ICLR 2025, arXiv 2601.10169).
Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iclr25.compose_decompose.config import MAX_GAMES, MAX_STEPS, PRESETS
from iclr25.shared.cli import (
    CliError,
    add_run_args,
    build_config,
    check_verb_flags,
    make_parser,
    package_main,
    reproduce_command,
    scale_out_from_args,
)
from iclr25.shared.validate import int_at_most

PROG = "iclr25-compose-decompose"
SCALES = ("ci", "quick", "full")
CHANNELS = ("cb", "gs", "qt")  # = config.CHANNELS (a test checks it)
DATASETS = ("thing", "shapes", "digits")  # = data.DATASETS

EPILOG = """examples:
  iclr25-compose-decompose reproduce --scale quick
  iclr25-compose-decompose train --step decompose --channel cb --dataset shapes --steps 1500 --out runs/cb
  iclr25-compose-decompose compose runs/cb --zero-shot
  iclr25-compose-decompose compose runs/cb --steps 500
  iclr25-compose-decompose eval runs/cb
  iclr25-compose-decompose cbm runs/cb/messages.jsonl
"""


def _parser():
    parser = make_parser(PROG, __doc__.splitlines()[0].split(": ", 1)[1])
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True, metavar="{reproduce,train,compose,eval,cbm}")
    rep = sub.add_parser("reproduce", help="run the ci/quick/full reproduction and print its claims table")
    add_run_args(rep, scales=SCALES, presets=PRESETS, scale_out=True)
    tr = sub.add_parser("train", help="train Sender, channel and Receiver on Decompose (or Compose) games")
    add_run_args(tr, scales=SCALES, scale_out=True)
    tr.add_argument("--step", choices=("decompose", "compose"), default="decompose", help="game (default: %(default)s)")
    tr.add_argument("--channel", choices=CHANNELS, default="cb", help="channel (default: %(default)s)")
    tr.add_argument("--dataset", choices=DATASETS, default="shapes", help="data (default: %(default)s)")
    tr.add_argument("--steps", type=int_at_most(MAX_STEPS), help="training steps (default: the preset's `steps`)")
    co = sub.add_parser("compose", help="Compose games on held-out combinations with a trained run")
    co.add_argument("run_dir", type=Path, help="folder written by `train`")
    mode = co.add_mutually_exclusive_group()
    mode.add_argument("--zero-shot", action="store_true", help="evaluate without further training (default)")
    mode.add_argument(
        "--steps",
        type=int_at_most(MAX_STEPS),
        help="fine-tune this many steps on Compose games of training combinations",
    )
    co.add_argument("--phrase-size", type=int, default=2, help="FVPs per Compose phrase (default: %(default)s)")
    co.add_argument(
        "--games", type=int_at_most(MAX_GAMES), default=1000, help="evaluation games (default: %(default)s)"
    )
    ev = sub.add_parser("eval", help="evaluate a trained run: Decompose, zero-shot Compose, CBM, AMI, PosDis/BosDis")
    ev.add_argument("run_dir", type=Path, help="folder written by `train`")
    ev.add_argument(
        "--games", type=int_at_most(MAX_GAMES), default=1000, help="evaluation games (default: %(default)s)"
    )
    cb = sub.add_parser("cbm", help="Concept-Best-Matching score of a JSON-lines message log")
    cb.add_argument("file", type=Path, help='JSON lines ["w1.w2", "c1.c2"]')
    cb.add_argument(
        "--words-eos",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="drop each message's last word, its end-of-message word (default: on, as the reference CBM code; "
        "--no-words-eos for logs without one)",
    )
    return parser


def _checkpoint(run_dir: Path) -> Path:
    path = run_dir / "checkpoint.pt"
    if not path.is_file():
        raise CliError(f"{run_dir} holds no checkpoint.pt; give a folder written by `{PROG} train`")
    return path


def _check_scale_out(args) -> object:
    """The `ScaleOut` of the flags, refusing before any work what the loops do not do (sharded parameters)."""
    scale_out = scale_out_from_args(args)
    if scale_out.strategy == "fsdp":
        raise CliError(
            "--strategy fsdp: the training loop checkpoints one full state dict from rank 0; use ddp (or auto)"
        )
    return scale_out


def _reproduce(args) -> int:
    from iclr25.compose_decompose.experiments import WORKERS_AND_SCALE_OUT, uses_scale_out

    scale_out = _check_scale_out(args)
    cfg = build_config(PRESETS[args.scale], args.config, args.overrides)
    if cfg.workers > 1 and uses_scale_out(cfg, scale_out):
        raise CliError(WORKERS_AND_SCALE_OUT)
    return reproduce_command("compose-decompose", args, "iclr25.compose_decompose.reproduce:run", PRESETS)


def _train(args) -> int:
    from iclr25.compose_decompose.config import PRESETS
    from iclr25.shared.run import open_run_folder

    scale_out = _check_scale_out(args)
    cfg = build_config(PRESETS[args.scale], args.config, args.overrides)
    steps = cfg.steps if args.steps is None else args.steps
    if steps < 1:
        raise CliError(f"--steps must be >= 1, got {steps}")
    out = check_verb_flags(args, "compose-decompose", "train", args.scale)
    resume = scale_out.resume == "auto"
    with open_run_folder(out, args.overwrite, paper="compose-decompose", command="train", resume=resume) as folder:
        import torch

        from iclr25.compose_decompose.data import make_dataset, write_cbm_jsonl
        from iclr25.compose_decompose.training import decompose_then_compose, evaluate, message_samples, save_checkpoint
        from iclr25.shared.device import pick_device
        from iclr25.shared.fabric import Checkpointer
        from iclr25.shared.logging import MetricsLogger, NullLogger
        from iclr25.shared.results import atomic_write_json
        from iclr25.shared.run import is_follower, launch_fabric

        torch.set_num_threads(cfg.threads)
        device = pick_device(args.device)
        fabric = launch_fabric(folder, args.device, scale_out) if scale_out.wants_fabric else None
        every = scale_out.checkpoint_every or cfg.checkpoint_every

        def scale(phase: str) -> dict:
            options: dict = {} if fabric is None else {"fabric": fabric}
            if every or scale_out.resume:
                options.update(
                    checkpointer=Checkpointer(folder / "checkpoints" / phase, every), resume=scale_out.resume
                )
            return options

        settings = {
            "dataset": args.dataset,
            "seed": args.seed,
            "noise": cfg.noise,
            "thing_per_combo": cfg.thing_per_combo,
            "n_per_combo": cfg.n_per_combo,
            "image_size": cfg.image_size,
            "shape_extended": cfg.shape_extended,
            "channel": args.channel,
            "K": cfg.K,
            "dim": cfg.dim,
            "hidden": cfg.hidden,
            "sender": cfg.sender,
            "combine": cfg.combine,
            "beta1": cfg.beta1,
            "beta2": cfg.beta2,
            "init": cfg.init,
            "dead_after": cfg.dead_after,
            "gs_word_init": cfg.gs_word_init,
            "step": args.step,
            "steps": steps,
            "batch": cfg.batch,
            "lr": cfg.lr,
        }
        data = make_dataset(
            args.dataset, args.seed, cfg.noise, cfg.thing_per_combo, cfg.n_per_combo, cfg.image_size, cfg.shape_extended
        )
        compose = args.step == "compose"
        keys = ("hidden", "sender", "combine", "beta1", "beta2", "init", "dead_after", "gs_word_init")
        agent = {k: settings[k] for k in keys}
        name = f"compose-decompose-train-{args.channel}-{args.dataset}"
        with NullLogger() if is_follower() else MetricsLogger(folder, wandb=args.wandb, name=name) as logger:
            res = decompose_then_compose(
                data,
                channel=args.channel,
                steps=steps,
                batch=cfg.batch,
                lr=cfg.lr,
                K=cfg.K,
                dim=cfg.dim,
                eval_games=cfg.eval_games,
                compose_size=cfg.compose_size,
                train_phrase_size=cfg.compose_size if compose else 1,
                train_distractors="hard" if compose else "uniform",
                seed=args.seed,
                device=device,
                **agent,
                log=logger.log,
                scale_out=scale,
            )
        game = res.pop("game")
        if is_follower():  # rank 0 writes the model, the messages and the summary
            return 0
        save_checkpoint(folder / "checkpoint.pt", game.cpu(), settings)
        ev = evaluate(game, data, 500, 1, "train")
        samples = message_samples(ev["words"], ev["phrases"])
        write_cbm_jsonl(folder / "messages.jsonl", [(w, [data.space.fvp_name(p[0])]) for w, p in samples])
        atomic_write_json(folder / "train.json", {"settings": settings, "metrics": res})
    print(
        f"{args.channel} on {args.dataset}, {steps} {args.step} steps: Decompose game acc "
        f"{res['decompose_game_acc']:.3f} (per candidate {res['decompose_cand_acc']:.3f}), zero-shot Compose game acc "
        f"{res['compose_zero_shot_game_acc']:.3f}, CBM {res['decompose_cbm']:.3f}, {res['games_per_s']:.0f} games/s"
    )
    print(f"results written to {out}")
    return 0


def _compose(args) -> int:
    from iclr25.compose_decompose.metrics import exact_word_set_rate
    from iclr25.compose_decompose.training import evaluate, language_metrics, load_checkpoint_game, train
    from iclr25.shared.results import atomic_write_json

    if args.games < 10:
        raise CliError(f"--games must be >= 10, got {args.games}")
    if args.steps is not None and args.steps < 1:
        raise CliError(f"--steps must be >= 1, got {args.steps}")
    game, data, s = load_checkpoint_game(_checkpoint(args.run_dir))
    if not 2 <= args.phrase_size <= data.space.n_attributes:
        raise CliError(f"--phrase-size must be in 2..{data.space.n_attributes}, got {args.phrase_size}")
    mapping = language_metrics(evaluate(game, data, args.games, 1, "train"))["mapping"]
    if args.steps:
        train(game, data, args.steps, s["batch"], s["lr"], args.phrase_size, 3, 3, "hard", s["seed"] + 1)
    ev = evaluate(game, data, args.games, args.phrase_size, "heldout" if data.heldout.any() else "all", "hard")
    lang = language_metrics(ev)
    result = {
        "mode": "zero-shot" if not args.steps else f"fine-tuned {args.steps} steps",
        "phrase_size": args.phrase_size,
        "game_acc": ev["game_acc"],
        "cand_acc": ev["cand_acc"],
        "exact_word_set": exact_word_set_rate(ev["words"], ev["phrases"], mapping),
        "cbm": lang["cbm"],
        "ami": lang["ami"],
    }
    name = "compose.json" if not args.steps else f"compose_finetuned_{args.steps}.json"
    atomic_write_json(args.run_dir / name, result)
    print(json.dumps(result, indent=1))
    return 0


def _eval(args) -> int:
    from iclr25.compose_decompose.training import describe_all, evaluate, language_metrics, load_checkpoint_game
    from iclr25.shared.results import atomic_write_json

    if args.games < 10:
        raise CliError(f"--games must be >= 10, got {args.games}")
    game, data, _ = load_checkpoint_game(_checkpoint(args.run_dir))
    dec = evaluate(game, data, args.games, 1, "train")
    lang = language_metrics(dec)
    comp = evaluate(game, data, args.games, 2, "heldout" if data.heldout.any() else "all", "hard")
    result = {
        "decompose_game_acc": dec["game_acc"],
        "decompose_cand_acc": dec["cand_acc"],
        "decompose_cbm": lang["cbm"],
        "decompose_ami": lang["ami"],
        "compose_zero_shot_game_acc": comp["game_acc"],
        "compose_zero_shot_cand_acc": comp["cand_acc"],
        **describe_all(game, data),
    }
    atomic_write_json(args.run_dir / "eval.json", result)
    print(json.dumps(result, indent=1))
    return 0


def _cbm(args) -> int:
    from iclr25.compose_decompose.data import load_cbm_jsonl
    from iclr25.compose_decompose.metrics import concept_best_match

    samples = load_cbm_jsonl(args.file)
    if args.words_eos and any(len(w) < 2 for w, _ in samples):
        raise CliError(
            "a message has fewer than two words, but --words-eos (the default) drops each message's last word as "
            "its end-of-message word; give --no-words-eos for a log without end-of-message words"
        )
    res = concept_best_match(samples, words_eos=args.words_eos)
    res["mapping"] = {str(k): str(v) for k, v in res["mapping"].items()}
    print(json.dumps(res, indent=1))
    return 0


main = package_main(
    PROG, _parser, {"reproduce": _reproduce, "train": _train, "compose": _compose, "eval": _eval, "cbm": _cbm}
)


if __name__ == "__main__":
    sys.exit(main())
