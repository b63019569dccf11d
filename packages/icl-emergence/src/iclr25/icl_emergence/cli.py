"""`iclr25-icl-emergence`: reproduce the paper's claims, pre-train on a two-level corpus, generate GINC data,
evaluate ICL accuracy of a checkpoint, compute the two-level PAC-Bayes bound of a run.

    iclr25-icl-emergence reproduce --scale quick
    iclr25-icl-emergence train --data lds --topics 64 --seqs 64 --length 32 --out runs/lds64
    iclr25-icl-emergence ginc-gen --out data/ginc --n-train 100 --train-length 1024
    iclr25-icl-emergence train --data ginc --topics 5 --seqs 64 --length 128 --out runs/ginc5
    iclr25-icl-emergence eval --ckpt runs/ginc5/model.pt --prompts data/ginc/id_prompts_randomsample_3.json
    iclr25-icl-emergence bound --report runs/lds64/report.json --n-eff token

Standard library only at module level, so `--help` answers at once.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from iclr25.icl_emergence.config import PRESETS, BoundConfig, TrainConfig
from iclr25.shared.cli import (
    CliError,
    add_config_args,
    add_run_args,
    config_from_args,
    make_parser,
    package_main,
)

SLUG = "icl-emergence"
PROG = f"iclr25-{SLUG}"
# `ginc-gen` sizes, refused before any work (the official set: 1 000 x 10 240 train tokens, 2 500 prompts)
GINC_GEN_MAX = {"n_train": 100_000, "train_length": 102_400, "n_val": 100_000, "val_length": 102_400,
                "n_prompts": 100_000}  # fmt: skip
MAX_GINC_TOKENS = 200_000_000  # n_train x train_length: 20x the official set
CKPT_KEYS = ("state_dict", "model", "kind", "config")


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, __doc__ or "")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run a reproduction preset and check the claims")
    add_run_args(rep, scales=tuple(PRESETS), scale_out=True, presets=PRESETS)
    train = sub.add_parser("train", help="AR-NTP pre-training on a K x N x T corpus (lds or ginc)")
    add_config_args(train, TrainConfig())
    gen = sub.add_parser("ginc-gen", help="write a GINC dataset folder in the official file layout")
    for flag, default in (
        ("--n-symbols", 50), ("--n-values", 10), ("--n-slots", 10), ("--n-hmms", 10), ("--n-train", 1000),
        ("--train-length", 10240), ("--n-val", 100), ("--val-length", 1024), ("--n-prompts", 2500),
    ):  # fmt: skip
        gen.add_argument(flag, type=int, default=default, help="(default: %(default)s)")
    gen.add_argument("--transition-temp", type=float, default=0.1, help="(default: %(default)s)")
    gen.add_argument("--start-temp", type=float, default=10.0, help="(default: %(default)s)")
    gen.add_argument("--value-identity-coeff", type=float, default=0.9, help="(default: %(default)s)")
    gen.add_argument("--prompt-lengths", default="3,5,8,10", help="k values (default: %(default)s)")
    gen.add_argument("--n-examples", default="0,1,2,4,8,16,32,64,128,256", help="(default: %(default)s)")
    ev = sub.add_parser("eval", help="ICL accuracy of a `train --data ginc` checkpoint on a GINC prompt file")
    ev.add_argument("--ckpt", type=Path, required=True, help="model.pt written by `train --data ginc`")
    ev.add_argument("--prompts", type=Path, required=True, help="*_prompts_randomsample_<k>.json (JSON lines)")
    bound = sub.add_parser("bound", help="two-level PAC-Bayes bound for the report.json of a `train` run")
    bound.add_argument("--report", type=Path, required=True, help="report.json written by `train`")
    add_config_args(bound, BoundConfig())
    for verb in (train, gen, ev, bound):
        verb.add_argument("--out", type=Path, help="output folder (default: runs/<paper>/<command>-<time>)")
        verb.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
        verb.add_argument("--overwrite", action="store_true", help="replace a folder an earlier run made")
    train.add_argument("--device", choices=("auto", "cpu", "cuda", "mps"), default="auto")
    train.add_argument("--ginc-dir", type=Path, help="with --data ginc: train on this official GINC folder")
    return parser


def _out(args: argparse.Namespace, command: str) -> Path:
    from iclr25.shared.run import check_run_folder, default_run_dir

    out = args.out or default_run_dir(SLUG, command, "user")
    check_run_folder(out, args.overwrite)
    return out


def _ints(text: str, name: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise CliError(f"{name} must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < 0:
        raise CliError(f"{name} must be non-empty non-negative integers, got {text!r}")
    return values


def _train(args: argparse.Namespace) -> int:
    cfg = config_from_args(args, TrainConfig())
    if args.seed < 0:
        raise CliError(f"--seed must be >= 0, got {args.seed}")
    if args.ginc_dir is not None and cfg.data != "ginc":
        raise CliError("--ginc-dir needs --data ginc")
    out = _out(args, "train")
    from iclr25.icl_emergence.train import train_run
    from iclr25.shared.run import open_run_folder

    with open_run_folder(out, args.overwrite, paper=SLUG, command="train") as folder:
        report = train_run(cfg, folder, seed=args.seed, device=args.device, ginc_dir=args.ginc_dir)
    for key in ("train_loss", "seen_loss", "unseen_loss", "unseen_late", "G_seq", "G_top", "icl_accuracy"):
        if key in report:
            print(f"{key}: {report[key]}")
    print(f"results written to {out}")
    return 0


def _ginc_gen(args: argparse.Namespace) -> int:
    from iclr25.icl_emergence.ginc import GINCConfig

    ks, ns = _ints(args.prompt_lengths, "--prompt-lengths"), _ints(args.n_examples, "--n-examples")
    if min(ks) < 2:
        raise CliError(f"--prompt-lengths must be >= 2, got {args.prompt_lengths}")
    for flag, most in GINC_GEN_MAX.items():  # sizes bounded before any work
        if not 1 <= getattr(args, flag) <= most:
            raise CliError(f"--{flag.replace('_', '-')} must be in [1, {most}], got {getattr(args, flag)}")
    if args.n_train * args.train_length > MAX_GINC_TOKENS:
        raise CliError(
            f"--n-train x --train-length must be at most {MAX_GINC_TOKENS:,} tokens (the official set: 10,240,000), "
            f"got {args.n_train * args.train_length:,}"
        )
    gcfg = GINCConfig(
        n_symbols=args.n_symbols, n_values=args.n_values, n_slots=args.n_slots, n_hmms=args.n_hmms,
        transition_temp=args.transition_temp, start_temp=args.start_temp,
        value_identity_coeff=args.value_identity_coeff,
    )  # fmt: skip
    out = _out(args, "ginc-gen")
    from iclr25.icl_emergence.data import write_ginc_dir
    from iclr25.icl_emergence.ginc import GINC
    from iclr25.shared.run import open_run_folder

    with open_run_folder(out, args.overwrite, paper=SLUG, command="ginc-gen") as folder:
        files = write_ginc_dir(
            GINC(gcfg), folder, n_train=args.n_train, train_length=args.train_length, n_val=args.n_val,
            val_length=args.val_length, prompt_lengths=ks, n_examples=ns, n_prompts=args.n_prompts,
            seed=1111 + args.seed,
        )  # fmt: skip
    print(f"wrote {len(files)} files to {out}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from iclr25.shared.safeload import load_checkpoint

    ckpt = load_checkpoint(args.ckpt, required_keys=CKPT_KEYS, what=f"checkpoint written by `{PROG} train`")
    if ckpt["kind"] != "tokens" or "vocab" not in ckpt:
        raise CliError(f"{args.ckpt} is a {ckpt['kind']} model; eval needs a `train --data ginc` checkpoint")
    out = _out(args, "eval")
    from iclr25.icl_emergence.train import eval_prompts
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    result = eval_prompts(ckpt, args.prompts)
    with open_run_folder(out, args.overwrite, paper=SLUG, command="eval") as folder:
        atomic_write_json(folder / "eval.json", result)
    print("n_examples  prompts  accuracy")
    for n, row in result["by_n_examples"].items():
        print(f"{n}  {row['prompts']}  {row['accuracy']:.3f}")
    print(f"results written to {out}")
    return 0


def _bound(args: argparse.Namespace) -> int:
    cfg = config_from_args(args, BoundConfig())
    path = args.report
    if not path.is_file():
        raise CliError(f"{path} does not exist (expected the report.json of a `train` run)")
    try:
        data: Any = json.loads(path.read_text())
    except ValueError:
        raise CliError(f"{path} is not a JSON file (expected the report.json of a `train` run)") from None
    keys = ("K", "N", "T", "emp_loss", "kl")
    if not isinstance(data, dict) or any(not isinstance(data.get(k), int | float) for k in keys):
        raise CliError(f"{path} lacks numeric {', '.join(keys)} (expected the report.json of a `train` run)")
    from iclr25.icl_emergence.bounds import clip_loss, two_level_bound

    emp = float(clip_loss(data["emp_loss"], cfg.c))
    result = two_level_bound(emp, float(data["kl"]), int(data["K"]), int(data["N"]), int(data["T"]), cfg.delta,
                             cfg.c, cfg.n_eff)  # fmt: skip
    result.update(n_eff=cfg.n_eff, delta=cfg.delta, c=cfg.c, kl=float(data["kl"]))
    if args.out is not None:
        from iclr25.shared.results import atomic_write_json
        from iclr25.shared.run import open_run_folder

        with open_run_folder(_out(args, "bound"), args.overwrite, paper=SLUG, command="bound") as folder:
            atomic_write_json(folder / "bound.json", result)
    print(json.dumps(result, indent=2))
    return 0


main = package_main(PROG, _parser, {"train": _train, "ginc-gen": _ginc_gen, "eval": _eval, "bound": _bound})


if __name__ == "__main__":
    raise SystemExit(main())
