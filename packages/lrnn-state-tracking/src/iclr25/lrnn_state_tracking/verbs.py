"""The command-line verbs `ppl`, `train-lm`, `table` and `official-config` of the reimplementation of Grazzi, Siems et
al., "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues" (ICLR 2025, arXiv 2411.12537).

    ppl --ckpt runs/lm/lm.pt --data code.jsonl --field content --max-len 2048   # NLL/perplexity per position bucket
    train-lm --data corpus.jsonl --out runs/lm model=deltanet eig_range=-1,1     # a small byte-level LM for `ppl`
    table results/quick/results.json results/studies/*/study.json                # our numbers in Table 3's layout
    official-config parity_delta_net_2.yaml --write dn.yaml                      # then: train --config dn.yaml

Standard library at module level (so `--help` is fast). `add_verbs` registers them on a sub-parser; `run_verb` runs
the parsed command.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from iclr25.lrnn_state_tracking.config import LMConfig
from iclr25.shared.cli import CliError, add_verb_args, build_config, check_verb_flags

SLUG = "lrnn-state-tracking"
VERBS = ("ppl", "train-lm", "table", "official-config")


def add_verbs(sub: argparse._SubParsersAction) -> None:
    """Register the verbs on `sub` (the package parser's sub-parsers)."""
    ppl = sub.add_parser("ppl", help="mean NLL and perplexity per token-position bucket of a byte-level LM (Fig. 5)")
    ppl.add_argument("--ckpt", type=Path, required=True, help="a checkpoint written by `train-lm`")
    ppl.add_argument("--data", type=Path, required=True, help=".txt, .jsonl, .jsonl.zst or .parquet")
    ppl.add_argument("--field", default="text", help="JSON key / column; join several with + (default: %(default)s)")
    ppl.add_argument("--max-len", type=int, default=2_048, help="tokens scored per document (default: %(default)s)")
    ppl.add_argument("--max-docs", type=int, default=None, help="read at most this many documents")
    ppl.add_argument("--batch-size", type=int, default=8)
    lm = sub.add_parser("train-lm", help="train a small byte-level DeltaNet/Mamba LM on a text file")
    lm.add_argument("--data", type=Path, required=True, help=".txt, .jsonl, .jsonl.zst or .parquet")
    lm.add_argument("--field", default="text", help="JSON key / column (default: %(default)s)")
    lm.add_argument("--max-docs", type=int, default=None)
    add_verb_args(lm)
    lm.add_argument("overrides", nargs="*", metavar="key=value", help="LMConfig fields, e.g. steps=500")
    table = sub.add_parser("table", help="print our results in the layout of the paper's Table 3")
    table.add_argument("files", type=Path, nargs="+", help="reproduce results.json and/or study.json files")
    official = sub.add_parser("official-config", help="read an official experiment YAML into our TrainConfig")
    official.add_argument("yaml", type=Path)
    official.add_argument("--write", type=Path, help="also write its TrainConfig fields as a YAML for `train --config`")


def run_verb(args: argparse.Namespace) -> int:
    """Run the verb `args.command`."""
    if args.command == "table":
        from iclr25.lrnn_state_tracking.table import collect, format_table3

        print(format_table3(collect(args.files)))
        return 0
    if args.command == "official-config":
        from iclr25.lrnn_state_tracking.official import load_official_yaml
        from iclr25.shared.files import check_writable, write_text

        if args.write is not None:
            check_writable(args.write)  # a new file only, checked before the YAML is read
        cfg = load_official_yaml(args.yaml)
        out = asdict(cfg)
        if args.write is not None:
            import yaml

            write_text(args.write, yaml.safe_dump(asdict(cfg.train), sort_keys=False))
            out["train_command"] = f"iclr25-{SLUG} train --scale full --config {args.write}"
        print(json.dumps(out, indent=2))
        return 0
    if args.command == "ppl":
        return _ppl(args)
    if args.command == "train-lm":
        return _train_lm(args)
    raise CliError(f"unknown verb {args.command!r}; allowed: {', '.join(VERBS)}")


def _ppl(args: argparse.Namespace) -> int:
    if args.max_len < 1 or args.batch_size < 1 or (args.max_docs is not None and args.max_docs < 1):
        raise CliError("--max-len, --batch-size and --max-docs must be >= 1")
    if not args.ckpt.is_file():
        raise CliError(f"checkpoint {args.ckpt} does not exist")
    if not args.data.is_file():
        raise CliError(f"data file {args.data} does not exist")
    from iclr25.lrnn_state_tracking.lm import perplexity

    out = perplexity(args.ckpt, args.data, args.field, args.max_len, args.max_docs, batch_size=args.batch_size)
    print(json.dumps(out, indent=2))
    return 0


def _train_lm(args: argparse.Namespace) -> int:
    cfg = build_config(LMConfig(seed=args.seed), None, args.overrides)
    if not args.data.is_file():
        raise CliError(f"data file {args.data} does not exist")
    out = check_verb_flags(args, SLUG, "train-lm", cfg.model)
    import torch

    from iclr25.lrnn_state_tracking.lm import read_texts, save_lm, train_lm
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    texts = read_texts(args.data, args.field, args.max_docs)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with open_run_folder(out, args.overwrite, paper=SLUG, command="train-lm") as folder:
            result = train_lm(texts, cfg, log_every=max(1, cfg.steps // 20))
            save_lm(result, folder / "lm.pt")
            summary = {
                "config": asdict(cfg),
                "final_loss": result.history[-1][1] if result.history else None,
                "tokens_per_s": round(result.tokens_per_s, 1),
                "checkpoint": str(Path(out) / "lm.pt"),
            }
            atomic_write_json(folder / "summary.json", summary)
    finally:
        torch.set_num_threads(threads)
    print(json.dumps(summary, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m iclr25.lrnn_state_tracking.verbs VERB ...` (the same verbs as the package CLI)."""
    from iclr25.shared.cli import guarded, make_parser

    @guarded(f"iclr25-{SLUG}")
    def inner(argv: list[str] | None) -> int:
        parser = make_parser(f"iclr25-{SLUG}", __doc__.split("\n\n")[0])
        add_verbs(parser.add_subparsers(dest="command", required=True))
        return run_verb(parser.parse_args(argv))

    return inner(argv)


if __name__ == "__main__":
    raise SystemExit(main())
