"""The umbrella `iclr25` command and the CLI helpers every paper package shares.

Import-light on purpose: only the standard library at module level, so `--help` answers instantly.

Every package CLI uses the same flags (`add_run_args`): `--scale`, `--config file.yaml`, `key=value`
overrides, `--out`, `--seed`, `--device`, `--wandb {off,offline,online}`, `--overwrite`. Bad input
gives one line on stderr and exit code 2, never a traceback (`Parser` + `guarded`).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import math
import os
import sys
import time
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from iclr25.shared.device import select_cpu_kernels
from iclr25.shared.paper import Paper, discover_papers
from iclr25.shared.progress import LABEL_ENV, set_quiet
from iclr25.shared.run import DEVICES, WANDB_MODES, check_run_folder, check_wandb_mode, default_run_dir
from iclr25.shared.validate import field_constraints

T = TypeVar("T")


class CliError(Exception):
    """A user error the CLI reports as one line (no traceback) with a non-zero exit."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr (exit 2) instead of usage + message."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def make_parser(prog: str, description: str) -> Parser:
    """A top-level parser for a package CLI (sub-commands created from it inherit one-line errors)."""
    return Parser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_run_args(
    parser: argparse.ArgumentParser,
    scales: Sequence[str] = ("quick", "full"),
    default_scale: str = "quick",
    scale_out: bool = False,
    presets: dict[str, Any] | None = None,
) -> None:
    """Add the flags every run-like command shares (see module docstring); `scale_out` adds the multi-process
    flags of verbs whose loops train networks (`add_scale_out_args`); `presets` lists the config keys, what each
    accepts and its value in the default preset below the flags in `--help`."""
    parser.add_argument("--scale", choices=list(scales), default=default_scale, help="preset (default: %(default)s)")
    parser.add_argument("--config", type=Path, help="YAML file of config overrides, applied before key=value ones")
    add_verb_args(parser, scale_out=scale_out)
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. lr=0.01")
    if presets is not None:
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.epilog = config_keys_help(presets[default_scale], f"the {default_scale} preset")


def config_keys_help(config: Any, source: str) -> str:
    """A table of dataclass `config`'s keys: what each accepts (its declared constraints) and its value in `source`."""
    rules = field_constraints(type(config))
    rows = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        shown = ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
        shown = shown if len(shown) <= 28 else shown[:25] + "..."
        rows.append((f.name, shown, "; ".join(rule.describe() for rule in rules[f.name])))
    name_width = max(len(row[0]) for row in rows)
    value_width = max(len(row[1]) for row in rows)
    lines = [f"  {n:<{name_width}}  {v:<{value_width}}  {a}".rstrip() for n, v, a in rows]
    return f"config keys (key=value; value in {source}, then what it accepts):\n" + "\n".join(lines)


def add_verb_args(parser: argparse.ArgumentParser, *, scale_out: bool = False, seed: int = 0) -> None:
    """The flags of every verb that writes a run folder (`train`, `eval`, ...): `--out`, `--seed`, `--device`,
    `--wandb`, `--overwrite`, `--quiet`, and with `scale_out` the multi-process flags; check them with
    `check_verb_flags` before any heavy import."""
    parser.add_argument("--out", type=Path, help="run folder (default: runs/<paper>/<command>-<label>-<time>)")
    parser.add_argument("--seed", type=int, default=seed, help="random seed (default: %(default)s)")
    parser.add_argument("--device", choices=DEVICES, default="auto", help="compute device (default: %(default)s)")
    parser.add_argument("--wandb", choices=WANDB_MODES, default="off", help="wandb logging (default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true", help="replace a run folder an earlier run made")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    if scale_out:
        add_scale_out_args(parser)


def add_scale_out_args(parser: argparse.ArgumentParser) -> None:
    """`--devices N|auto`, `--num-nodes`, `--strategy`, `--precision`, `--resume auto|PATH`, `--checkpoint-every`."""
    parser.add_argument("--devices", default="1", help="processes per node: an integer or 'auto' (every GPU)")
    parser.add_argument("--num-nodes", type=int, default=1, help="nodes (default: %(default)s)")
    parser.add_argument("--strategy", default="auto", help="auto, ddp, ddp_spawn or fsdp (default: %(default)s)")
    parser.add_argument("--precision", help="e.g. 32-true, bf16-mixed (default: bf16-mixed on GPUs with it)")
    parser.add_argument("--resume", help="'auto': continue the run in --out from its newest checkpoint; or a file")
    parser.add_argument("--checkpoint-every", type=int, default=0, help="steps between checkpoints (0: the loop's)")


def scale_out_from_args(args: argparse.Namespace) -> Any:
    """The `ScaleOut` the flags of `add_scale_out_args` ask for."""
    from iclr25.shared.fabric import ScaleOut

    devices = args.devices if args.devices == "auto" else _coerce("--devices", args.devices, int)
    return ScaleOut(devices, args.num_nodes, args.strategy, args.precision, args.resume, args.checkpoint_every)


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse `type`: an integer >= `minimum` (argparse turns the refusal into one error line)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    return parse


def positive_float(text: str) -> float:
    """An argparse `type`: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    """Turn ``["lr=0.1", "steps=10"]`` into ``{"lr": "0.1", "steps": "10"}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"override {item!r} is not of the form key=value")
        out[key.strip()] = value.strip()
    return out


def _coerce(name: str, value: Any, annotation: Any) -> Any:
    """Convert a YAML or command-line value to a config field's annotated type."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        is_none = value is None or (isinstance(value, str) and value.lower() in ("none", "null"))
        if is_none and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(name, value, arg)
            except CliError as e:
                errors.append(str(e))
        raise CliError(errors[0] if errors else f"{name}: cannot parse {value!r}")
    if origin in (tuple, list):
        items = value if isinstance(value, list | tuple) else [v for v in str(value).split(",") if v.strip()]
        inner = args[0] if args else str
        converted = [_coerce(name, v, inner) for v in items]
        return tuple(converted) if origin is tuple else converted
    if origin is typing.Literal:
        if value not in args and str(value) not in [str(a) for a in args]:
            raise CliError(f"{name} must be one of {list(args)}, got {value!r}")
        return next(a for a in args if str(a) == str(value))
    try:
        if annotation is bool:
            if isinstance(value, bool):
                return value
            text = str(value).lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if annotation is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(float(value)) if isinstance(value, str) and "e" in value.lower() else int(value)
        if annotation is float:
            return float(value)
        if annotation is str:
            return str(value)
        if annotation is Path:
            return Path(value)
    except OverflowError:  # an integer written as 1e400 (infinite as a float)
        raise CliError(
            f"{name} expects a finite {getattr(annotation, '__name__', annotation)}, got {value!r}"
        ) from None
    except (TypeError, ValueError):
        raise CliError(f"{name} expects {getattr(annotation, '__name__', annotation)}, got {value!r}") from None
    return value


def apply_overrides(config: T, values: dict[str, Any], source: str = "override") -> T:
    """Return a copy of dataclass `config` with `values` applied, each coerced to its field's type."""
    if not dataclasses.is_dataclass(config):
        raise TypeError("apply_overrides needs a dataclass instance")
    hints = typing.get_type_hints(type(config))
    names = [f.name for f in dataclasses.fields(config)]
    changes = {}
    for key, value in values.items():
        if key not in names:
            raise CliError(f"unknown {source} key {key!r}; allowed: {', '.join(names)}")
        changes[key] = _coerce(key, value, hints[key])
    try:
        return dataclasses.replace(config, **changes)
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None


def build_config(base: T, config_file: Path | None = None, overrides: Sequence[str] = ()) -> T:
    """Preset -> YAML file (`--config`) -> `key=value` overrides, in that order of precedence."""
    config = base
    if config_file is not None:
        if not config_file.is_file():
            raise CliError(f"config file {config_file} does not exist")
        import yaml

        try:
            data = yaml.safe_load(config_file.read_text()) or {}
        except yaml.YAMLError as e:
            raise CliError(f"config file {config_file} is not valid YAML: {str(e).splitlines()[0]}") from None
        except UnicodeDecodeError:
            raise CliError(f"config file {config_file} is not a text file (YAML expected)") from None
        if not isinstance(data, dict):
            raise CliError(f"config file {config_file} must hold a mapping of key: value")
        config = apply_overrides(config, data, source=f"{config_file.name}")
    return apply_overrides(config, parse_overrides(overrides))


def add_config_args(parser: argparse.ArgumentParser, config: Any, *, exclude: Sequence[str] = ()) -> None:
    """One `--field-name` flag per field of dataclass `config`, its default shown from `config` and its help from the
    field's `metadata={"help": ...}` and the constraints its type declares: a verb's flags and the function it calls then share one source of defaults
    (read them back with `config_from_args`)."""
    rules = field_constraints(type(config))
    for f in dataclasses.fields(config):
        if f.name in exclude:
            continue
        default = getattr(config, f.name)
        shown = ",".join(map(str, default)) if isinstance(default, tuple | list) else default
        allowed = "; ".join(rule.describe() for rule in rules[f.name])
        text = f.metadata.get("help", "")
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            default=None,
            metavar="V",
            help=f"{text} ({allowed + '; ' if allowed else ''}default: {shown})".strip(),
        )


def config_from_args(args: argparse.Namespace, config: T) -> T:
    """`config` with every flag the user gave (see `add_config_args`) coerced to its field's type and checked."""
    given = {
        f.name: getattr(args, f.name) for f in dataclasses.fields(config) if getattr(args, f.name, None) is not None
    }
    return apply_overrides(config, given, source="flag")


def _one_line(e: BaseException) -> str:
    """The message of a user error, on one line."""
    if isinstance(e, KeyError) and e.args:
        return str(e.args[0])
    if isinstance(e, OSError) and e.strerror and not isinstance(e, FileExistsError | FileNotFoundError):
        return f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    if isinstance(e, FileNotFoundError) and e.filename and e.strerror:
        return f"{e.filename} does not exist"
    if isinstance(e, ModuleNotFoundError) and str(e).startswith("No module named"):  # else a message naming an extra
        return f"this command needs the optional package {e.name!r}, which is not installed (pip install {e.name})"
    text = " ".join(str(e).split())
    return text or type(e).__name__


def _user_error(e: BaseException) -> bool:
    """Errors a user's input causes (bad values, files, folders, a missing optional package), as opposed to bugs."""
    if isinstance(e, ModuleNotFoundError):
        return not (e.name or "").startswith("iclr25")
    return isinstance(e, CliError | ValueError | OSError | KeyError | EOFError)


def guarded(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorate a CLI `main`: user errors become one stderr line and exit code 2, never a traceback;
    Ctrl-C becomes one "interrupted" line and exit code 130."""

    def wrap(fn: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> int:
            try:
                return fn(*args, **kwargs)
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return 130
            except Exception as e:
                if not _user_error(e):
                    raise
                print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
                return 2

        return inner

    return wrap


def check_verb_flags(args: argparse.Namespace, slug: str, command: str, label: str) -> Path:
    """Check a verb's shared flags before any heavy import or data work (the seed, wandb installed when asked, the
    run folder usable, `--quiet` applied) and return its run folder: `--out`, or `runs/<slug>/<command>-<label>-<time>`."""
    seed = getattr(args, "seed", 0)
    if not 0 <= seed < 2**32:
        raise CliError(f"--seed must be an integer in [0, 2**32), got {seed}")
    check_wandb_mode(getattr(args, "wandb", "off"))
    resume = getattr(args, "resume", None) == "auto"
    if resume and args.out is None:
        raise CliError("--resume auto continues the run in --out: name that folder")
    resume_file = getattr(args, "resume", None)
    if resume_file is not None and resume_file != "auto":  # a foreign or unsafe file is refused before any work
        from iclr25.shared.fabric import check_checkpoint

        check_checkpoint(resume_file)
    out = args.out or default_run_dir(slug, command, label)
    check_run_folder(out, getattr(args, "overwrite", False), resume)
    set_quiet(getattr(args, "quiet", False))
    return out


def reproduce_command(
    slug: str, args: argparse.Namespace, run: Callable[..., Any] | str, presets: dict[str, Any]
) -> int:
    """The `reproduce` verb every package shares: flags -> config -> run -> claims table -> exit code.

    `run` is the package's `reproduce.run` or its dotted path ("module:function"), imported only after the
    run folder and the config values have been checked, so bad input is refused before torch loads.
    Returns 1 when a gated claim does not hold, else 0.
    """
    from iclr25.shared.results import claims_table

    out = check_verb_flags(args, slug, "reproduce", args.scale)
    config = build_config(presets[args.scale], args.config, args.overrides)
    options = {"scale_out": scale_out_from_args(args)} if hasattr(args, "devices") else {}
    if isinstance(run, str):
        module, _, attr = run.partition(":")
        run = getattr(importlib.import_module(module), attr)
    report = run(
        scale=args.scale,
        out=out,
        seed=args.seed,
        device=args.device,
        wandb=args.wandb,
        overwrite=args.overwrite,
        config=config,
        **options,
    )
    print(claims_table(report.claims))
    print(f"results written to {out}")
    return 1 if report.failed_gated else 0


def package_main(
    prog: str,
    parser: Callable[[], argparse.ArgumentParser],
    verbs: dict[str, Callable[[argparse.Namespace], int]],
) -> Callable[..., int]:
    """The `main` of the package CLI `prog` ("iclr25-<slug>"): parse argv with `parser()` and run the verb that
    `args.command` names in `verbs`. `reproduce` is the shared verb unless `verbs` names its own: the package's
    `reproduce:run` through `reproduce_command`, with the presets of its light `config` module. Before any verb runs,
    `--quiet` is applied and an absent accelerator asked for with `--device` is refused; user errors give one line
    and exit 2 (`guarded`)."""
    slug = prog.removeprefix("iclr25-")
    module = "iclr25." + slug.replace("-", "_")

    def reproduce(args: argparse.Namespace) -> int:
        presets = importlib.import_module(f"{module}.config").PRESETS
        return reproduce_command(slug, args, f"{module}.reproduce:run", presets)

    commands = {"reproduce": reproduce, **verbs}

    @guarded(prog)
    def main(argv: list[str] | None = None) -> int:
        select_cpu_kernels()  # before NumPy loads and torch runs: the same floats on any x86-64 CPU
        args = parser().parse_args(sys.argv[1:] if argv is None else argv)
        if getattr(args, "quiet", False):
            set_quiet(True)
        if getattr(args, "device", "auto") in ("cuda", "mps"):
            from iclr25.shared.device import pick_device

            pick_device(args.device)
        return commands[args.command](args)

    main.__doc__ = f"Entry point of `{prog}`."
    return main


# --------------------------------------------------------------------------------------------------
# The umbrella `iclr25` command.


def _find(papers: dict[str, Paper], slug: str) -> Paper:
    if slug not in papers:
        known = ", ".join(papers) or "none installed"
        raise CliError(f"unknown paper {slug!r}; installed: {known}")
    return papers[slug]


def _cmd_list(papers: dict[str, Paper]) -> int:
    if not papers:
        print(
            "No iclr25 paper packages are installed. From a clone, install one: "
            "`uv pip install ./shared ./packages/eci-conformal`."
        )
        return 0
    width = max(len(s) for s in papers)
    for slug, paper in papers.items():
        print(f"{slug:<{width}}  {paper.title}")
    return 0


def _cmd_info(paper: Paper) -> int:
    print(f"{paper.title}")
    print(f"  authors:       {paper.authors}")
    print(f"  venue:         {paper.venue}")
    print(f"  arXiv:         {paper.arxiv or 'none found'}")
    print(f"  OpenReview:    {paper.openreview or 'unknown'}")
    print(f"  official code: {paper.code or 'none public'}")
    if paper.code:
        print(f"  code commit:   {paper.code_commit or 'not recorded'}")
        print(f"  code licence:  {paper.licence or 'unknown'}")
    print(
        f"  install:       uv pip install ./shared ./packages/{paper.slug}   (from a clone; not on a package index yet)"
    )
    print(f"  import:        import {paper.module}")
    print(f"  command:       iclr25-{paper.slug} --help   (or: iclr25 {paper.slug} --help)")
    print(f"  scales:        {', '.join(paper.scales)}")
    if paper.summary:
        print(f"  summary:       {paper.summary}")
    if paper.settings:
        print("  settings:      (the paper's main experiments)")
        width = max(len(name) for name, _ in paper.settings)
        for name, value in paper.settings:
            print(f"    {name:<{width}}  {value}")
    return 0


def _cmd_claims(paper: Paper, args: argparse.Namespace) -> int:
    """List a paper's declared claims, or evaluate them again from a results.json (`--results`), without running
    anything: `--check` exits 1 when they differ from the claims stored there, `--out` writes the re-evaluated
    results (for `iclr25 compare`)."""
    from iclr25.shared.claims import config_of, differences, evaluate
    from iclr25.shared.results import Report, claims_table

    presets = paper.load_presets()
    if args.results is None:
        if args.check or args.out:
            raise CliError("--check and --out need --results FILE (the run whose claims to evaluate again)")
        if args.scale not in presets:
            raise CliError(f"{paper.slug} has no scale {args.scale!r}: scale must be one of {', '.join(presets)}")
        declared = paper.load_claims()(presets[args.scale])
        print(
            f"{paper.slug}: {len(declared)} claims of the {args.scale} preset ({sum(d.gated for d in declared)} gated)"
        )
        print("| claim | gated | paper's value | where in the paper | reads | margin |")
        print("|---|---|---|---|---|---|")
        for d in declared:
            cells = [d.name, "yes" if d.gated else "no", "n/a" if d.paper is None else str(d.paper)]
            cells += [d.source or "-", f"`{d.reads}`", d.margin]
            print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return 0
    from iclr25.shared.compare import read_report

    stored = read_report(args.results, "results")
    if stored.paper != paper.slug:
        raise CliError(f"{args.results} holds results of {stored.paper!r}, not {paper.slug!r}")
    config = config_of(presets, stored.scale, stored.config)
    claims = evaluate(paper.load_claims()(config), stored.metrics, config, throughput=stored.throughput)
    report = Report(**{**vars(stored), "claims": claims})
    print(claims_table(report.claims))
    if args.out:
        check_run_folder(args.out, overwrite=False)
        print(f"wrote {report.write(args.out)}")
    changed = differences(stored.claims, report.claims)
    if args.check:
        for line in changed:
            print(f"iclr25: {paper.slug}: {line}", file=sys.stderr)
        print(
            f"{paper.slug}: {len(report.claims)} claims, {'identical to' if not changed else 'DIFFERENT from'} {args.results}"
        )
        return 1 if changed else 0
    return 0


def _recorded_runtime(paper: Paper, scale: str) -> float | None:
    """The expected wall time of the package's committed `results/<scale>` run (from a source checkout).

    The smaller of its wall and CPU time: a run recorded on a busy machine has a wall time inflated by the load,
    but its CPU time is not; a multi-threaded run's CPU time exceeds its wall time.
    """
    import json

    root = package_root(paper)
    try:
        data = json.loads((root / "results" / scale / "results.json").read_text()) if root else None
    except (OSError, ValueError):
        return None
    times = [data.get(key) for key in ("runtime_s", "cpu_s")] if isinstance(data, dict) else []
    times = [float(t) for t in times if isinstance(t, int | float) and not isinstance(t, bool) and t > 0]
    return min(times) if times else None


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def exit_with_parent(parent: int, every: float = 2.0) -> None:
    """End this process when process `parent` is gone: a `--jobs` worker whose command was killed (a SIGTERM, not
    Ctrl-C, which reaches the workers too) would otherwise run on unseen and write into the run folders."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _reproduce_one(
    slug: str, kwargs: dict[str, Any], threads: int | None = None, parent: int | None = None
) -> dict[str, Any]:
    """Run one paper's reproduction (in this process or a worker) and return its report as a dict."""
    select_cpu_kernels()  # a spawned worker: the variables came from the parent, the record starts here
    if parent is not None:
        exit_with_parent(parent)
    if threads:  # a worker of `--jobs N`: its share of the cores, and its paper named on each progress line
        os.environ["ICLR25_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(threads)
        os.environ[LABEL_ENV] = slug
    report = discover_papers()[slug].load_reproduce()(**kwargs)
    return report.to_dict()


def _cmd_reproduce(papers: dict[str, Paper], args: argparse.Namespace) -> int:
    from iclr25.shared.results import Report, claims_table

    if args.all == bool(args.slug):
        raise CliError("give paper slugs or --all")
    if args.jobs < 1:
        raise CliError(f"--jobs must be >= 1, got {args.jobs}")
    if not 0 <= args.seed < 2**32:
        raise CliError(f"--seed must be an integer in [0, 2**32), got {args.seed}")
    set_quiet(args.quiet)
    named = list(dict.fromkeys(args.slug))  # in the order given, each once
    chosen = list(papers.values()) if args.all else [_find(papers, slug) for slug in named]
    for paper in [] if args.all else chosen:
        if args.scale not in paper.scales:
            raise CliError(f"{paper.slug} has no scale {args.scale!r}: scale must be one of {', '.join(paper.scales)}")
    if not chosen:
        print("No iclr25 paper packages are installed, so there is nothing to reproduce.")
        print(claims_table([], paper_column=True))
        return 0
    failures = [
        f"{p.slug}: no {args.scale!r} scale (has {', '.join(p.scales)})" for p in chosen if args.scale not in p.scales
    ]
    chosen = [p for p in chosen if args.scale in p.scales]
    several = args.all or len(named) > 1  # then --out holds a folder per paper
    outs = {
        p.slug: (args.out / p.slug)
        if several and args.out
        else (args.out or default_run_dir(p.slug, "reproduce", args.scale))
        for p in chosen
    }
    for out in outs.values():
        check_run_folder(out, args.overwrite)
    common = {"scale": args.scale, "seed": args.seed, "device": args.device, "wandb": args.wandb}
    common["overwrite"] = args.overwrite
    recorded = {p.slug: _recorded_runtime(p, args.scale) for p in chosen}
    reports: dict[str, Report] = {}
    interrupted = False

    def done(slug: str, result: dict[str, Any] | BaseException, seconds: float) -> None:
        if isinstance(result, BaseException):
            failures.append(f"{slug}: {_one_line(result)}")
            print(f"   {slug}: failed after {_minutes(seconds)}", flush=True)
            return
        report = reports[slug] = Report.from_dict(result)
        failures.extend(f"{slug}: gated claim {c.name!r} does not hold" for c in report.failed_gated)
        print(f"   {slug}: done in {_minutes(seconds)} -> {outs[slug]}", flush=True)

    try:
        if args.jobs == 1 or len(chosen) == 1:
            for i, paper in enumerate(chosen):
                left = sum(recorded[p.slug] or 0.0 for p in chosen[i:])
                estimate = (
                    f"recorded run {_minutes(recorded[paper.slug])}" if recorded[paper.slug] else "no recorded run"
                )
                print(
                    f"== [{i + 1}/{len(chosen)}] {paper.slug}: {args.scale} reproduction ({estimate}; "
                    f"about {_minutes(left)} of recorded runs left)",
                    flush=True,
                )
                start = time.perf_counter()
                try:
                    result: dict[str, Any] | BaseException = _reproduce_one(
                        paper.slug, {**common, "out": outs[paper.slug]}
                    )
                except Exception as e:  # one paper's failure must not hide the others' results
                    result = e
                done(paper.slug, result, time.perf_counter() - start)
        else:
            _reproduce_parallel(chosen, outs, common, args.jobs, recorded, done)
    except KeyboardInterrupt:
        interrupted = True
    print()
    lines = claims_table([], paper_column=True).splitlines()
    for slug, report in reports.items():
        lines += claims_table(report.claims, paper_column=True, slug=slug).splitlines()[2:]
    print("\n".join(lines))
    for failure in failures:
        print(f"iclr25: {failure}", file=sys.stderr)
    if interrupted:
        print(f"iclr25: interrupted ({len(reports)} of {len(chosen)} papers finished)", file=sys.stderr)
        return 130
    return 1 if failures else 0


def _reproduce_parallel(
    chosen: list[Paper],
    outs: dict[str, Path],
    common: dict[str, Any],
    jobs: int,
    recorded: dict[str, float | None],
    done: Callable[[str, Any, float], None],
) -> None:
    """Papers in `jobs` spawned processes, the cores split between them, longest recorded run first."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    threads = max(1, (os.cpu_count() or 1) // jobs)
    order = sorted(chosen, key=lambda p: -(recorded[p.slug] or 0.0))
    total = sum(v or 0.0 for v in recorded.values())
    print(
        f"== {len(order)} papers in {jobs} processes ({threads} thread(s) each); about {_minutes(total / jobs)} "
        "from their recorded runs",
        flush=True,
    )
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        started = time.perf_counter()
        pending = {
            pool.submit(_reproduce_one, p.slug, {**common, "out": outs[p.slug]}, threads, os.getpid()): p.slug
            for p in order
        }
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    slug = pending.pop(future)
                    error = future.exception()
                    done(slug, error if error is not None else future.result(), time.perf_counter() - started)
                if pending:
                    print(f"   {len(pending)} running or queued: {', '.join(sorted(pending.values()))}", flush=True)
        except KeyboardInterrupt:
            for future in pending:
                future.cancel()
            raise


def package_root(paper: Paper) -> Path | None:
    """The source folder of `paper`'s package (its pyproject.toml and README.md), or None for a wheel install."""
    import importlib.util

    spec = importlib.util.find_spec(paper.reproduce.partition(":")[0])
    if spec is None or spec.origin is None:
        return None
    for folder in Path(spec.origin).resolve().parents:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and (folder / "README.md").is_file():
            return folder if f'name = "{paper.distribution}"' in pyproject.read_text() else None
    return None


def _cmd_readme(papers: dict[str, Paper], args: argparse.Namespace) -> int:
    from iclr25.shared.results import Report, readme_block, refresh_readme_block

    if args.all == bool(args.slug):
        raise CliError("give one paper slug or --all")
    stale = []
    for paper in list(papers.values()) if args.all else [_find(papers, args.slug)]:
        root = package_root(paper)
        if root is None:
            raise CliError(f"{paper.slug}: no source checkout found (the README block lives in the repository)")
        results = root / "results" / args.scale
        if not (results / "results.json").is_file():
            raise CliError(f"{paper.slug}: no committed results at {results}; run its reproduce --scale {args.scale}")
        report = Report.read(results)
        if args.check:
            text = (root / "README.md").read_text()
            if readme_block(report) not in text:
                stale.append(f"{paper.slug}: README results block differs from results/{args.scale}/results.json")
            if paper.readme_header() not in text:
                stale.append(f"{paper.slug}: README paper header differs from paper.toml")
            continue
        try:
            changed = refresh_readme_block(root / "README.md", report)
            header_changed = refresh_readme_header(root / "README.md", paper)
        except ValueError as e:
            raise CliError(str(e)) from None
        print(f"{paper.slug}: README results block {'updated' if changed else 'already up to date'}")
        print(f"{paper.slug}: README paper header {'updated' if header_changed else 'already up to date'}")
    for line in stale:
        print(f"iclr25: {line}", file=sys.stderr)
    return 1 if stale else 0


def refresh_readme_header(readme: str | Path, paper: Paper) -> bool:
    """Rewrite the README's paper header block (from `<!-- paper:begin` to `<!-- paper:end -->`) from `paper`;
    returns whether the README changed. A README without the markers is a ValueError."""
    from iclr25.shared.files import edit_source_file
    from iclr25.shared.paper import README_HEADER_BEGIN, README_HEADER_END

    path = Path(readme)
    text = path.read_text()
    start = text.find("<!-- paper:begin")
    stop = text.find(README_HEADER_END, start)
    if start < 0 or stop < 0:
        raise ValueError(
            f"{path} has no paper header block: add the lines {README_HEADER_BEGIN} and {README_HEADER_END} "
            "right after its first heading"
        )
    updated = text[:start] + paper.readme_header() + text[stop + len(README_HEADER_END) :]
    if updated == text:
        return False
    edit_source_file(path, updated)
    return True


def _cmd_compare(papers: dict[str, Paper], args: argparse.Namespace) -> int:
    from iclr25.shared.compare import append_history, compare, read_report
    from iclr25.shared.files import append_to_log
    from iclr25.shared.results import atomic_write_json, claims_table

    tolerances = {}
    for item in args.tolerance:
        name, sep, value = item.partition("=")
        try:
            tolerances[name] = float(value) if sep and name else float("nan")
        except ValueError:
            tolerances[name] = float("nan")
        if not tolerances[name] >= 0:
            raise CliError(f"--tolerance {item!r} must look like NAME=VALUE with VALUE >= 0")
    run = read_report(args.run, "run")
    baseline_path = args.baseline
    if baseline_path is None:
        root = package_root(papers[run.paper]) if run.paper in papers else None
        candidate = root / "results" / run.scale if root else None
        if candidate is not None and (candidate / "results.json").is_file():
            baseline_path = candidate
    if args.history:
        append_history(args.history, run)
    if baseline_path is None:
        if not args.allow_missing_baseline:
            raise CliError(
                f"no committed results/{run.scale} for {run.paper!r}; give a BASELINE or --allow-missing-baseline"
            )
        text = f"### {run.paper} ({run.scale}): no baseline to compare with\n\n{claims_table(run.claims)}\n"
        print(text)
        if args.summary:
            append_to_log(args.summary, text + "\n")
        return 1 if run.failed_gated else 0
    result = compare(
        run,
        read_report(baseline_path, "baseline"),
        tolerances=tolerances,
        run_name=str(args.run),
        baseline_name=str(baseline_path),
        timings=papers[run.paper].load_timings() if run.paper in papers else (),
    )
    print(result.to_markdown())
    if args.json:
        atomic_write_json(args.json, result.to_dict())
    if args.summary:
        append_to_log(args.summary, result.to_markdown() + "\n")
    for row in result.failed:
        print(f"iclr25: {run.paper}: {row.kind} {row.name!r} {row.status}", file=sys.stderr)
    return 1 if result.failed else 0


def _umbrella_parser(papers: dict[str, Paper]) -> Parser:
    parser = make_parser("iclr25", "ICLR 2025 papers, reimplemented: list, inspect and reproduce them.")
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="{list,info,claims,reproduce,readme,compare,history,new,site,smoke,<slug>}",
    )
    sub.add_parser("list", help="installed papers")
    info = sub.add_parser("info", help="one paper's details")
    info.add_argument("slug")
    rep = sub.add_parser("reproduce", help="run reproductions and print their claims table")
    rep.add_argument("slug", nargs="*", help="papers to reproduce (or --all)")
    rep.add_argument("--all", action="store_true", help="every installed paper")
    rep.add_argument(
        "--scale", default="quick", help="ci (CPU, seconds), quick (CPU, minutes to an hour) or full (GPU)"
    )
    rep.add_argument("--jobs", type=int, default=1, help="papers run in parallel processes (default: %(default)s)")
    rep.add_argument("--quiet", action="store_true", help="no progress output")
    rep.add_argument("--out", type=Path, help="run folder (with several papers or --all: a folder per paper inside it)")
    rep.add_argument("--seed", type=int, default=0)
    rep.add_argument("--device", choices=DEVICES, default="auto")
    rep.add_argument("--wandb", choices=WANDB_MODES, default="off")
    rep.add_argument("--overwrite", action="store_true", help="replace run folders earlier runs made")
    claims = sub.add_parser(
        "claims", help="a paper's declared claims, or its claims evaluated again from a results.json"
    )
    claims.add_argument("slug")
    claims.add_argument("--scale", default="quick", help="whose preset's claims to list (default: %(default)s)")
    claims.add_argument("--results", type=Path, help="evaluate the claims again from this results.json (or run folder)")
    claims.add_argument("--check", action="store_true", help="exit 1 when they differ from the claims stored there")
    claims.add_argument("--out", type=Path, help="write the results with the re-evaluated claims into this new folder")
    cmp = sub.add_parser("compare", help="compare a run's results with a baseline (default: the committed results)")
    cmp.add_argument("run", type=Path, help="run folder (or its results.json)")
    cmp.add_argument("baseline", type=Path, nargs="?", help="default: the package's committed results/<scale>")
    cmp.add_argument(
        "--tolerance", action="append", default=[], metavar="NAME=VALUE", help="allowed |change| of a claim"
    )
    cmp.add_argument("--json", type=Path, help="also write the comparison as JSON")
    cmp.add_argument("--summary", type=Path, help="append the Markdown table to this file (a CI job summary)")
    cmp.add_argument("--history", type=Path, help="append this run to a JSON-lines history file")
    cmp.add_argument("--allow-missing-baseline", action="store_true", help="no baseline: summarise the run only")
    hist = sub.add_parser("history", help="plot claims or throughput of a paper over the runs in a history file")
    hist.add_argument("file", type=Path)
    hist.add_argument("--paper", required=True)
    hist.add_argument("--figure", action="append", default=[], help="claim name, throughput.<key> or runtime_s")
    hist.add_argument("--out", type=Path, required=True, help="PNG to write")
    new = sub.add_parser("new", help="(source checkout) start a new paper package from the template")
    new.add_argument("slug", help="kebab-case name, e.g. my-paper: dist iclr25-my-paper, import iclr25.my_paper")
    new.add_argument("--title", required=True, help="the paper's title")
    readme = sub.add_parser(
        "readme", help="rewrite a package README's paper header (from paper.toml) and results table (from results)"
    )
    readme.add_argument("slug", nargs="?", help="paper whose README to refresh (or --all)")
    readme.add_argument("--all", action="store_true", help="every installed paper")
    readme.add_argument("--scale", default="quick", help="which committed results/<scale>/ to use")
    readme.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is stale")
    from iclr25.shared.site import add_site_parser

    add_site_parser(sub)  # `iclr25 site build|serve`: the static results site
    from iclr25.shared.smoke import add_smoke_parser

    add_smoke_parser(sub)  # `iclr25 smoke`: time every paper's full-preset network for a few steps
    return parser


@guarded("iclr25")
def main(argv: list[str] | None = None) -> int:
    """Entry point of the umbrella `iclr25` command."""
    select_cpu_kernels()  # before NumPy loads and torch runs, here and in the workers of `--jobs`
    argv = list(sys.argv[1:] if argv is None else argv)
    papers = discover_papers()
    if argv and argv[0] in papers:  # `iclr25 <slug> ...` forwards to the package CLI
        return papers[argv[0]].load_cli()(argv[1:])
    args = _umbrella_parser(papers).parse_args(argv)
    if args.command == "list":
        return _cmd_list(papers)
    if args.command == "info":
        return _cmd_info(_find(papers, args.slug))
    if args.command == "readme":
        return _cmd_readme(papers, args)
    if args.command == "claims":
        return _cmd_claims(_find(papers, args.slug), args)
    if args.command == "compare":
        return _cmd_compare(papers, args)
    if args.command == "smoke":
        from iclr25.shared.smoke import smoke_main

        return smoke_main(args)
    if args.command == "site":
        from iclr25.shared.site import site_main

        return site_main(args)
    if args.command == "history":
        from iclr25.shared.compare import plot_history, read_history

        entries = read_history(args.file, args.paper)
        names = args.figure or sorted({n for e in entries for n in e.get("claims", {})}) or ["runtime_s"]
        print(f"wrote {plot_history(entries, names, args.out)} ({len(entries)} runs)")
        return 0
    if args.command == "new":
        from iclr25.shared.scaffold import new_package, workspace_root

        folder = new_package(workspace_root(Path.cwd()), args.slug, args.title)
        print(f"created {folder} and registered it in the root pyproject.toml; next:")
        print(f"  uv lock && uv sync && uv run pytest {folder}")
        print(
            f"  uv run iclr25-{args.slug} reproduce --scale quick --out {folder}/results/quick && uv run iclr25 readme {args.slug}"
        )
        return 0
    return _cmd_reproduce(papers, args)


if __name__ == "__main__":
    sys.exit(main())
