"""`iclr25-patch-train`: patch-level training of LLMs (arXiv 2407.12665) from the command line.

Verbs: `reproduce` (the presets), `cost` (Section 2.2 accounting), `train` (one token, patch or
two-stage run on a corpus), `eval` (token-level NLL of a saved model, optionally a multiple-choice task),
`tokenize` (a corpus into the flat token file the full presets read), `sweep` (patch vs token at equal compute
over data sizes, Table 4), `overhead` (where a training step's time goes), `scale-plan` (how a preset splits over
GPUs and its estimated GPU hours).
Standard library imports only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from fractions import Fraction
from pathlib import Path

from iclr25.patch_train.config import (
    BUDGETS,
    MAX_EVAL_WINDOWS,
    MAX_SEEDS,
    MAX_STEPS,
    MAX_T,
    PRESETS,
    STAGES,
    TrainConfig,
)
from iclr25.shared.cli import (
    add_config_args,
    add_run_args,
    add_verb_args,
    check_verb_flags,
    config_from_args,
    make_parser,
    package_main,
    scale_out_from_args,
)
from iclr25.shared.files import check_writable
from iclr25.shared.progress import set_quiet
from iclr25.shared.run import DEVICES, check_run_folder, open_run_folder
from iclr25.shared.validate import int_at_most

PROG = "iclr25-patch-train"
SLUG = "patch-train"
SCALES = tuple(PRESETS)
TRAIN = TrainConfig()  # the defaults of `train`
SWEEP_BUDGETS = (12, 25, 50, 100, 200, 400)  # = sweep.BUDGETS (kept here: --help imports no torch)


def parse_fraction(text: str) -> float:
    """'2/3', '0.667' or '1/2' -> float in [0, 1]."""
    try:
        value = float(Fraction(text)) if "/" in text else float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"expected a number or a fraction like 2/3, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, __doc__.split("\n\n")[0] if __doc__ else PROG)
    sub = parser.add_subparsers(dest="command", required=True)

    rep = sub.add_parser("reproduce", help="run a preset and print its claims table")
    add_run_args(rep, scales=SCALES, scale_out=True, presets=PRESETS)

    cost = sub.add_parser("cost", help="training cost and step plan of two-stage training")
    cost.add_argument("--K", type=int, default=4, help="patch size (default: %(default)s)")
    cost.add_argument("--lam", type=parse_fraction, default=2 / 3, help="patch-stage data fraction, e.g. 2/3")
    cost.add_argument("--T", type=int, default=2048, help="context length (default: %(default)s)")
    cost.add_argument("--tokens-per-step", type=int, default=2**21, help="tokens per optimizer step")
    cost.add_argument("--budget-steps", type=int, default=135_000, help="token-level steps of the budget")
    cost.add_argument("--budget", choices=("equal-compute", "equal-data"), default="equal-data")

    tr = sub.add_parser("train", help="train a model: token, patch or two-stage (flags: the fields of TrainConfig)")
    tr.add_argument("--stage", choices=STAGES, default=TRAIN.stage, help="(default: %(default)s)")
    tr.add_argument("--lam", type=parse_fraction, default=TRAIN.lam, help="patch-stage data fraction, e.g. 2/3")
    tr.add_argument("--budget", choices=BUDGETS, default=TRAIN.budget,
                    help="two-stage: read 1/C(lam,K) x the data of --steps token steps, or the same data")  # fmt: skip
    add_config_args(tr, TRAIN, exclude=("stage", "lam", "budget"))
    add_verb_args(tr, scale_out=True)

    tk = sub.add_parser("tokenize", help="pre-tokenise a corpus into a flat token file for the full presets")
    tk.add_argument("--corpus", required=True, help="a folder of .jsonl/.jsonl.zst shards or one file")
    tk.add_argument("--tokenizer", default="byte", help="byte or a local tokenizer.json")
    tk.add_argument("--out", type=Path, required=True, help="token file to write (.bin)")
    tk.add_argument("--overwrite", action="store_true", help="replace an existing token file")
    tk.add_argument("--quiet", action="store_true", help="no progress output")

    ev = sub.add_parser("eval", help="token-level NLL of a trained model folder; optional multiple-choice task")
    ev.add_argument("--ckpt", type=Path, required=True, help="model folder written by `train` (model/)")
    ev.add_argument("--corpus", default="stdlib", help="validation corpus (its 'valid' split) or a local file")
    ev.add_argument("--tokenizer", default="byte")
    ev.add_argument("--T", type=int_at_most(MAX_T), default=64)
    ev.add_argument("--windows", type=int_at_most(MAX_EVAL_WINDOWS), default=1024, help="number of T-token windows")
    ev.add_argument("--task", type=Path, help="multiple-choice jsonl (HellaSwag, PIQA or ARC format)")
    ev.add_argument("--device", choices=DEVICES, default="auto")

    sw = sub.add_parser("sweep", help="patch vs token at equal compute over token budgets (data-size sweep, Table 4)")
    sw.add_argument("--out", type=Path, required=True, help="folder for sweep.json, rows.jsonl and sweep.png")
    sw.add_argument("--budgets", default=",".join(map(str, SWEEP_BUDGETS)), help="token steps, comma-separated")
    sw.add_argument("--seeds", type=int_at_most(MAX_SEEDS), default=2, help="seeds per budget (default: %(default)s)")
    sw.add_argument(
        "--overwrite", action="store_true", help="replace an earlier sweep's run folder --out (a user's files stay)"
    )
    sw.add_argument(
        "--resummarize", action="store_true", help="redo the summary and plot of the sweep in --out (its run folder)"
    )
    sw.add_argument("--quiet", action="store_true", help="no progress output")

    ov = sub.add_parser("overhead", help="where a training step's time goes (quick preset shapes, CPU)")
    ov.add_argument("--out", type=Path, required=True, help="run folder for overhead.json")
    ov.add_argument(
        "--overwrite", action="store_true", help="replace an earlier study's run folder --out (a user's files stay)"
    )
    ov.add_argument(
        "--steps", type=int_at_most(MAX_STEPS), default=40, help="timed steps per measurement (default: %(default)s)"
    )

    sp = sub.add_parser("scale-plan", help="a preset's micro-batches per GPU count and estimated GPU hours")
    sp.add_argument("--scale", choices=SCALES, default="full-125m")
    return parser


def _cost(args: argparse.Namespace) -> int:
    from iclr25.patch_train.patch import training_cost
    from iclr25.patch_train.plan import plan_two_stage

    if args.K < 1:
        raise ValueError(f"--K must be a positive integer, got {args.K}")
    kw = (
        {"compute_budget": args.budget_steps}
        if args.budget == "equal-compute"
        else {"total_tokens": args.budget_steps * args.tokens_per_step}
    )
    plans = plan_two_stage(args.K, args.lam, args.T, args.tokens_per_step, **kw)
    print(f"cost C(lam={args.lam:.4g}, K={args.K}) = {training_cost(args.lam, args.K):.4f} x token-level training")
    for p in plans:
        print(f"  {p.stage:5s} K={p.K}: {p.steps} steps x {p.seqs_per_step} seqs x {p.block_tokens} tokens")
    return 0


def _train(args: argparse.Namespace) -> int:
    cfg = config_from_args(args, TRAIN)  # every value checked before the heavy imports: bad input fails fast
    scale_out = scale_out_from_args(args)
    target = check_verb_flags(args, SLUG, "train", cfg.stage)
    from iclr25.patch_train.config import Config
    from iclr25.patch_train.experiments import _tokenizer

    # the tokenizer is read before anything is written: a file that is not a tokenizer.json is one line
    tok = _tokenizer(Config(seeds=1, tokenizer=cfg.tokenizer))

    import torch

    from iclr25.patch_train.baselines import comparison_plans
    from iclr25.patch_train.data import TokenStream, corpus_texts, encode_documents, shuffle_chunks
    from iclr25.patch_train.evaluate import evaluate_nll
    from iclr25.patch_train.patch import make_llama
    from iclr25.patch_train.train import OptimConfig, train_two_stage
    from iclr25.shared.device import pick_device
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import RUN_DIR_ENV, is_follower

    warmup = int(cfg.warmup) if cfg.warmup >= 1 else cfg.warmup
    plans = comparison_plans(cfg.K, cfg.lam, cfg.T, cfg.tokens_per_step, cfg.steps, cfg.lr, warmup)
    if cfg.stage == "token":
        chosen = plans["token"]
    elif cfg.stage == "patch":
        chosen = [p for p in plans["patch"] if p.stage == "patch"]
    else:
        chosen = plans["patch"] if cfg.budget == "equal-compute" else plans["patch_equal_data"]
    if not chosen:
        raise ValueError("the plan is empty: check --lam, --K and --steps")
    device = pick_device(args.device)
    train_ids = shuffle_chunks(encode_documents(corpus_texts(cfg.corpus, "train", args.seed), tok), 512, args.seed)
    valid_ids = encode_documents(corpus_texts(cfg.corpus, "valid", args.seed), tok)
    need = sum(p.tokens for p in chosen)
    if len(train_ids) < need:
        raise ValueError(f"corpus {cfg.corpus!r} has {len(train_ids)} training tokens; this plan needs {need}")
    resume = scale_out.resume == "auto"
    with open_run_folder(target, args.overwrite, paper=SLUG, command="train", resume=resume) as run_dir:
        if scale_out.distributed:  # the processes Lightning starts share this run folder
            os.environ[RUN_DIR_ENV] = str(Path(run_dir).resolve())
        torch.manual_seed(args.seed)
        model = make_llama(cfg.model, tok.vocab_size, cfg.T)
        results = train_two_stage(
            model,
            TokenStream(train_ids),
            chosen,
            run_dir,
            optim=OptimConfig(micro_batch=cfg.micro_batch or None),
            device=device,
            wandb=args.wandb,
            seed=args.seed,
            threads=cfg.threads or None,
            eval_fn=lambda m: dict(zip(("nll", "ppl"), evaluate_nll(m, valid_ids, cfg.T, 512, seed=1234), strict=True)),
            scale_out=scale_out,
        )
        if is_follower():  # rank 0 writes the model and the summary
            return 0
        model.save_pretrained(run_dir / "model")
        summary = [
            {**r.plan.to_dict(), "eval": r.eval, "wall_s": r.wall_s, "tokens_per_s": r.tokens_per_s} for r in results
        ]
        atomic_write_json(run_dir / "summary.json", summary)
    for r in summary:
        print(
            f"{r['stage']:5s} K={r['K']}: {r['steps']} steps, {r['tokens_per_s']:.0f} tok/s, val NLL {r['eval']['nll']:.4f}"
        )
    print(f"model written to {target / 'model'}")
    return 0


def _tokenize(args: argparse.Namespace) -> int:
    if not Path(args.corpus).exists():
        raise ValueError(f"corpus {args.corpus} does not exist")
    check_writable(args.out, args.overwrite)  # before any work: a new file, or one an earlier tokenize wrote
    set_quiet(args.quiet)
    from iclr25.patch_train.config import Config
    from iclr25.patch_train.data import iter_corpus_documents, write_token_file
    from iclr25.patch_train.experiments import _tokenizer
    from iclr25.shared.progress import progress

    tok = _tokenizer(Config(seeds=1, tokenizer=args.tokenizer))
    docs = progress(iter_corpus_documents(args.corpus), desc="tokenize", unit="doc")
    n = write_token_file(docs, tok, args.out, overwrite=args.overwrite)  # written whole, then put in place
    print(f"wrote {n} tokens to {args.out} ({'uint16' if tok.vocab_size <= 65_536 else 'uint32'})")
    return 0


def _eval(args: argparse.Namespace) -> int:
    if not (args.ckpt / "config.json").is_file():
        raise ValueError(f"{args.ckpt} is not a saved model folder (no config.json)")
    if args.task is not None and not args.task.is_file():
        raise ValueError(f"task file {args.task} does not exist")
    if args.T < 2 or args.windows < 1:
        raise ValueError(f"--T must be >= 2 and --windows >= 1, got {args.T} and {args.windows}")
    from transformers import AutoModelForCausalLM

    from iclr25.patch_train.config import Config
    from iclr25.patch_train.data import corpus_texts, encode_documents
    from iclr25.patch_train.evaluate import evaluate_nll, load_mc_task, score_multiple_choice
    from iclr25.patch_train.experiments import _tokenizer
    from iclr25.shared.device import pick_device
    from iclr25.shared.safeload import reading_file

    with reading_file(args.ckpt, f"model folder written by `{PROG} train`"):  # safetensors only: nothing pickled
        model = AutoModelForCausalLM.from_pretrained(args.ckpt, use_safetensors=True, trust_remote_code=False)
    model = model.to(pick_device(args.device))
    tok = _tokenizer(Config(seeds=1, tokenizer=args.tokenizer))
    out: dict[str, float] = {}
    valid = encode_documents(corpus_texts(args.corpus, "valid"), tok)
    out["nll"], out["ppl"] = evaluate_nll(model, valid, args.T, args.windows, seed=1234)
    if args.task is not None:
        out.update(score_multiple_choice(model, tok, load_mc_task(args.task), max_len=args.T))
    print(json.dumps(out))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    try:
        budgets = tuple(int(b) for b in args.budgets.split(","))
    except ValueError:
        raise ValueError(f"--budgets must be comma-separated integers, got {args.budgets!r}") from None
    if not budgets or min(budgets) < 2 or args.seeds < 1:
        raise ValueError(f"--budgets must be integers >= 2 and --seeds >= 1, got {args.budgets!r} and {args.seeds}")
    saved = args.out / "sweep.json"
    if args.resummarize and not saved.is_file():
        raise ValueError(f"--resummarize: {saved} does not exist")
    # before any work: a new run folder, or (--overwrite, --resummarize) one an earlier sweep made; a folder
    # holding anything else is refused and a user's file in a sweep's folder is never replaced
    check_run_folder(args.out, args.overwrite or args.resummarize)
    set_quiet(args.quiet)
    from iclr25.patch_train.sweep import run_sweep, summarize

    earlier = json.loads(saved.read_text()) if args.resummarize else None
    with open_run_folder(args.out, args.overwrite or args.resummarize, paper=SLUG, command="sweep") as folder:
        if earlier is not None:
            result = summarize(earlier, folder, write_rows=True)
        else:
            result = run_sweep(folder, budgets=budgets, seeds=args.seeds)
    for row in result["summary"]:
        print(f"S={row['token_steps']:5d}  D/N={row['tokens_per_param']:7.2f}  token {row['token_nll']:.4f}  "
              f"patch {row['patch_nll']:.4f}  delta {row['delta']:+.4f} +- {row['delta_sd']:.4f}")  # fmt: skip
    print(f"crossover (tokens per parameter): {result['crossover_tokens_per_param']} ({result['crossover_direction']})")
    return 0


def _overhead(args: argparse.Namespace) -> int:
    if args.steps < 5:
        raise ValueError(f"--steps must be >= 5, got {args.steps}")
    check_run_folder(args.out, args.overwrite)  # before the study: a bad --out fails at once, in one line
    from iclr25.patch_train.train import overhead_study

    with open_run_folder(args.out, args.overwrite, paper=SLUG, command="overhead") as folder:
        result = overhead_study(folder, steps=args.steps)
    print(json.dumps(result, indent=1))
    return 0


def _scale_plan(args: argparse.Namespace) -> int:
    from iclr25.patch_train.estimate import scale_plan

    print(json.dumps(scale_plan(PRESETS[args.scale]), indent=1))
    return 0


main = package_main(
    PROG,
    _parser,
    {"cost": _cost, "train": _train, "eval": _eval, "tokenize": _tokenize, "sweep": _sweep, "overhead": _overhead,
     "scale-plan": _scale_plan},
)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
