"""`iclr25-patch-train`: patch-level training of LLMs (arXiv 2407.12665) from the command line.

Verbs: `reproduce` (the presets), `cost` (Section 2.2 accounting), `train` (one token, patch or
two-stage run on a corpus), `eval` (token-level NLL of a saved model, optionally a multiple-choice task),
`tokenize` (a corpus into the flat token file the full presets read).
Standard library imports only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

from iclr25.shared.cli import CliError, add_run_args, default_run_dir, guarded, make_parser, reproduce_command

PROG = "iclr25-patch-train"
SLUG = "patch-train"
SCALES = ("ci", "quick", "full", "full-125m")


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
    add_run_args(rep, scales=SCALES)

    cost = sub.add_parser("cost", help="training cost and step plan of two-stage training")
    cost.add_argument("--K", type=int, default=4, help="patch size (default: %(default)s)")
    cost.add_argument("--lam", type=parse_fraction, default=2 / 3, help="patch-stage data fraction, e.g. 2/3")
    cost.add_argument("--T", type=int, default=2048, help="context length (default: %(default)s)")
    cost.add_argument("--tokens-per-step", type=int, default=2**21, help="tokens per optimizer step")
    cost.add_argument("--budget-steps", type=int, default=135_000, help="token-level steps of the budget")
    cost.add_argument("--budget", choices=("equal-compute", "equal-data"), default="equal-data")

    tr = sub.add_parser("train", help="train a model: token, patch or two-stage")
    tr.add_argument("--stage", choices=("token", "patch", "two-stage"), default="two-stage")
    tr.add_argument("--K", type=int, default=4, help="patch size (default: %(default)s)")
    tr.add_argument("--lam", type=parse_fraction, default=2 / 3, help="patch-stage data fraction (two-stage)")
    tr.add_argument("--budget", choices=("equal-compute", "equal-data"), default="equal-compute",
                    help="two-stage: read 1/C(lam,K) x the data of --steps token steps, or the same data")  # fmt: skip
    tr.add_argument("--steps", type=int, default=300, help="token-level step budget (default: %(default)s)")
    tr.add_argument("--model", default="tiny", help="model size: tiny, 125m, 370m, 780m, 1.3b, 2.7b")
    tr.add_argument("--corpus", default="stdlib", help="stdlib, shakespeare, topics or a local file/folder")
    tr.add_argument("--tokenizer", default="byte", help="byte or a local tokenizer.json")
    tr.add_argument("--T", type=int, default=64, help="context length (default: %(default)s)")
    tr.add_argument("--tokens-per-step", type=int, default=1024)
    tr.add_argument("--lr", type=float, default=3e-3)
    tr.add_argument("--warmup", type=float, default=0.1, help="fraction of each stage, or steps if >= 1")
    tr.add_argument("--micro-batch", type=int, default=0, help="sequences per forward (0: the whole step)")
    tr.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: all)")
    tr.add_argument("--out", type=Path, help="run folder")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--device", choices=("auto", "cpu", "cuda", "mps"), default="auto")
    tr.add_argument("--wandb", choices=("off", "offline", "online"), default="off")
    tr.add_argument("--overwrite", action="store_true")

    tk = sub.add_parser("tokenize", help="pre-tokenise a corpus into a flat token file for the full presets")
    tk.add_argument("--corpus", required=True, help="a folder of .jsonl/.jsonl.zst shards or one file")
    tk.add_argument("--tokenizer", default="byte", help="byte or a local tokenizer.json")
    tk.add_argument("--out", type=Path, required=True, help="token file to write (.bin)")

    ev = sub.add_parser("eval", help="token-level NLL of a trained model folder; optional multiple-choice task")
    ev.add_argument("--ckpt", type=Path, required=True, help="model folder written by `train` (model/)")
    ev.add_argument("--corpus", default="stdlib", help="validation corpus (its 'valid' split) or a local file")
    ev.add_argument("--tokenizer", default="byte")
    ev.add_argument("--T", type=int, default=64)
    ev.add_argument("--windows", type=int, default=1024, help="number of T-token windows")
    ev.add_argument("--task", type=Path, help="multiple-choice jsonl (HellaSwag, PIQA or ARC format)")
    ev.add_argument("--device", choices=("auto", "cpu", "cuda", "mps"), default="auto")
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
    if args.K < 1 or args.steps < 2:  # checked before the heavy imports: bad input fails fast
        raise ValueError("--K must be >= 1 and --steps >= 2")
    if args.T < 2 or args.tokens_per_step % (args.K * args.T):
        raise ValueError(f"--tokens-per-step={args.tokens_per_step} must be a multiple of K*T={args.K * args.T} (T>=2)")
    import torch

    from iclr25.patch_train.baselines import comparison_plans
    from iclr25.patch_train.data import TokenStream, corpus_texts, encode_documents, shuffle_chunks
    from iclr25.patch_train.evaluate import evaluate_nll
    from iclr25.patch_train.patch import MODEL_SIZES, make_llama
    from iclr25.patch_train.reproduce import Config, _tokenizer
    from iclr25.patch_train.train import OptimConfig, train_two_stage
    from iclr25.shared.results import atomic_write_json, prepare_run_dir

    if args.model not in MODEL_SIZES:
        raise ValueError(f"unknown model size {args.model!r}; allowed: {', '.join(MODEL_SIZES)}")
    cfg = Config(seeds=1, model=args.model, corpus=args.corpus, tokenizer=args.tokenizer, T=args.T, K=args.K,
                 lam=args.lam if 0 < args.lam < 1 else 0.5, tokens_per_step=args.tokens_per_step)  # fmt: skip
    warmup = int(args.warmup) if args.warmup >= 1 else args.warmup
    plans = comparison_plans(args.K, args.lam, args.T, args.tokens_per_step, args.steps, args.lr, warmup)
    if args.stage == "token":
        chosen = plans["token"]
    elif args.stage == "patch":
        chosen = [p for p in plans["patch"] if p.stage == "patch"]
    else:
        chosen = plans["patch"] if args.budget == "equal-compute" else plans["patch_equal_data"]
    if not chosen:
        raise ValueError("the plan is empty: check --lam, --K and --steps")
    run_dir = prepare_run_dir(args.out or default_run_dir(SLUG, "train", args.stage), args.overwrite)
    tok = _tokenizer(cfg)
    train_ids = shuffle_chunks(encode_documents(corpus_texts(args.corpus, "train", args.seed), tok), 512, args.seed)
    valid_ids = encode_documents(corpus_texts(args.corpus, "valid", args.seed), tok)
    need = sum(p.tokens for p in chosen)
    if len(train_ids) < need:
        raise ValueError(f"corpus {args.corpus!r} has {len(train_ids)} training tokens; this plan needs {need}")
    torch.manual_seed(args.seed)
    model = make_llama(args.model, tok.vocab_size, args.T)
    results = train_two_stage(
        model,
        TokenStream(train_ids),
        chosen,
        run_dir,
        optim=OptimConfig(micro_batch=args.micro_batch or None),
        device=args.device,
        wandb=args.wandb,
        seed=args.seed,
        threads=args.threads or None,
        eval_fn=lambda m: dict(zip(("nll", "ppl"), evaluate_nll(m, valid_ids, args.T, 512, seed=1234), strict=True)),
    )
    model.save_pretrained(run_dir / "model")
    summary = [
        {**r.plan.to_dict(), "eval": r.eval, "wall_s": r.wall_s, "tokens_per_s": r.tokens_per_s} for r in results
    ]
    atomic_write_json(run_dir / "summary.json", summary)
    for r in summary:
        print(
            f"{r['stage']:5s} K={r['K']}: {r['steps']} steps, {r['tokens_per_s']:.0f} tok/s, val NLL {r['eval']['nll']:.4f}"
        )
    print(f"model written to {run_dir / 'model'}")
    return 0


def _tokenize(args: argparse.Namespace) -> int:
    from iclr25.patch_train.data import iter_corpus_documents, write_token_file
    from iclr25.patch_train.reproduce import Config, _tokenizer

    if not Path(args.corpus).exists():
        raise ValueError(f"corpus {args.corpus} does not exist")
    tok = _tokenizer(Config(seeds=1, tokenizer=args.tokenizer))
    n = write_token_file(iter_corpus_documents(args.corpus), tok, args.out)
    print(f"wrote {n} tokens to {args.out} ({'uint16' if tok.vocab_size <= 65_536 else 'uint32'})")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from iclr25.patch_train.data import corpus_texts, encode_documents
    from iclr25.patch_train.evaluate import evaluate_nll, load_mc_task, score_multiple_choice
    from iclr25.patch_train.reproduce import Config, _tokenizer
    from iclr25.shared.device import pick_device

    if not (args.ckpt / "config.json").is_file():
        raise ValueError(f"{args.ckpt} is not a saved model folder (no config.json)")
    if args.task is not None and not args.task.is_file():
        raise ValueError(f"task file {args.task} does not exist")
    from transformers import AutoModelForCausalLM

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


@guarded(PROG)
def main(argv: list[str] | None = None) -> int:
    """Entry point of `iclr25-patch-train`."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "reproduce":
        from iclr25.patch_train.reproduce import PRESETS, run

        return reproduce_command(SLUG, args, run, PRESETS)
    if args.command == "cost":
        return _cost(args)
    if args.command == "train":
        return _train(args)
    if args.command == "eval":
        return _eval(args)
    if args.command == "tokenize":
        return _tokenize(args)
    raise CliError(f"unknown command {args.command!r}")


if __name__ == "__main__":
    sys.exit(main())
