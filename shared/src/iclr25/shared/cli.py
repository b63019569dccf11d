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
import sys
import time
import types
import typing
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from iclr25.shared.paper import Paper, discover_papers

WANDB_MODES = ("off", "offline", "online")
DEVICES = ("auto", "cpu", "cuda", "mps")
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
) -> None:
    """Add the flags every run-like command shares (see module docstring)."""
    parser.add_argument("--scale", choices=list(scales), default=default_scale, help="preset (default: %(default)s)")
    parser.add_argument("--config", type=Path, help="YAML file of config overrides, applied before key=value ones")
    parser.add_argument("--out", type=Path, help="run folder (default: runs/<paper>/<command>-<scale>-<time>)")
    parser.add_argument("--seed", type=int, default=0, help="base random seed (default: %(default)s)")
    parser.add_argument("--device", choices=DEVICES, default="auto", help="compute device (default: %(default)s)")
    parser.add_argument("--wandb", choices=WANDB_MODES, default="off", help="wandb logging (default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run folder")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. lr=0.01")


def default_run_dir(slug: str, command: str, scale: str) -> Path:
    """`runs/<slug>/<command>-<scale>-<YYYYmmdd-HHMMSS>` under the current folder: unique per run."""
    return Path("runs") / slug / f"{command}-{scale}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def resolve_preset(presets: dict[str, T], scale: str, config: T | None = None) -> T:
    """`config` if given, else the preset named `scale`; an unknown scale is a ValueError naming the allowed ones."""
    if config is not None:
        return config
    if scale not in presets:
        raise ValueError(f"unknown scale {scale!r}: scale must be one of {', '.join(presets)}")
    return presets[scale]


def rerun_command(slug: str, scale: str, config: Any, presets: dict[str, Any], seed: int = 0) -> str:
    """The command that reruns a reproduction: its preset, `--seed` unless 0, and a `key=value` per field of
    `config` that differs from the preset (in the form `build_config` reads back), for a Report's `command`."""
    command = f"iclr25-{slug} reproduce --scale {scale}" + (f" --seed {seed}" if seed else "")
    if scale not in presets:
        return command
    base = dataclasses.asdict(presets[scale])
    for key, value in dataclasses.asdict(config).items():
        if value != base.get(key):
            text = ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
            command += f" {key}={text}"
    return command


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
        if not isinstance(data, dict):
            raise CliError(f"config file {config_file} must hold a mapping of key: value")
        config = apply_overrides(config, data, source=f"{config_file.name}")
    return apply_overrides(config, parse_overrides(overrides))


def guarded(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorate a CLI `main`: user errors become one stderr line and exit code 2, never a traceback."""

    def wrap(fn: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> int:
            try:
                return fn(*args, **kwargs)
            except (CliError, ValueError, FileNotFoundError, FileExistsError, KeyError) as e:
                message = e.args[0] if isinstance(e, KeyError) and e.args else e
                print(f"{prog}: error: {message}", file=sys.stderr)
                return 2
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return 130

        return inner

    return wrap


def reproduce_command(slug: str, args: argparse.Namespace, run: Callable[..., Any], presets: dict[str, Any]) -> int:
    """The `reproduce` verb every package shares: preset -> config -> run -> claims table -> exit code.

    `run` is the package's `reproduce.run`; it gets the merged config and the common flags. Returns 1
    when a gated claim does not hold, else 0.
    """
    from iclr25.shared.results import claims_table

    config = build_config(presets[args.scale], args.config, args.overrides)
    out = args.out or default_run_dir(slug, "reproduce", args.scale)
    report = run(
        scale=args.scale,
        out=out,
        seed=args.seed,
        device=args.device,
        wandb=args.wandb,
        overwrite=args.overwrite,
        config=config,
    )
    print(claims_table(report.claims))
    print(f"results written to {out}")
    return 1 if report.failed_gated else 0


# --------------------------------------------------------------------------------------------------
# The umbrella `iclr25` command.


def _find(papers: dict[str, Paper], slug: str) -> Paper:
    if slug not in papers:
        known = ", ".join(papers) or "none installed"
        raise CliError(f"unknown paper {slug!r}; installed: {known}")
    return papers[slug]


def _cmd_list(papers: dict[str, Paper]) -> int:
    if not papers:
        print("No iclr25 paper packages are installed. Install one, e.g. `pip install iclr25-eci-conformal`.")
        return 0
    width = max(len(s) for s in papers)
    for slug, paper in papers.items():
        print(f"{slug:<{width}}  {paper.title}")
    return 0


def _cmd_info(paper: Paper) -> int:
    print(f"{paper.title}")
    print(f"  authors:       {paper.authors}")
    print(f"  venue:         {paper.venue}")
    print(f"  arXiv:         {paper.arxiv}")
    print(f"  official code: {paper.code or 'none public'}")
    print(f"  install:       pip install {paper.distribution}")
    print(f"  import:        import {paper.module}")
    print(f"  command:       iclr25-{paper.slug} --help   (or: iclr25 {paper.slug} --help)")
    print(f"  scales:        {', '.join(paper.scales)}")
    if paper.summary:
        print(f"  summary:       {paper.summary}")
    return 0


def _cmd_reproduce(papers: dict[str, Paper], args: argparse.Namespace) -> int:
    from iclr25.shared.results import claims_table

    if args.all == bool(args.slug):
        raise CliError("give one paper slug or --all")
    chosen = list(papers.values()) if args.all else [_find(papers, args.slug)]
    if not chosen:
        print("No iclr25 paper packages are installed, so there is nothing to reproduce.")
        print(claims_table([], paper_column=True))
        return 0
    base_out: Path | None = args.out if args.all else None
    rows, failures = [], []
    for paper in chosen:
        if args.scale not in paper.scales:
            failures.append(f"{paper.slug}: no {args.scale!r} scale (has {', '.join(paper.scales)})")
            continue
        out = (
            (base_out / paper.slug) if base_out else (args.out or default_run_dir(paper.slug, "reproduce", args.scale))
        )
        print(f"== {paper.slug}: {args.scale} reproduction -> {out}", flush=True)
        start = time.perf_counter()
        try:
            report = paper.load_reproduce()(
                scale=args.scale,
                out=out,
                seed=args.seed,
                device=args.device,
                wandb=args.wandb,
                overwrite=args.overwrite,
            )
        except Exception as e:  # one paper's failure must not hide the others' results
            failures.append(f"{paper.slug}: {type(e).__name__}: {e}")
            continue
        print(f"   done in {time.perf_counter() - start:.1f} s", flush=True)
        rows.append((paper.slug, report))
        failures += [f"{paper.slug}: gated claim {c.name!r} does not hold" for c in report.failed_gated]
    print()
    lines = claims_table([], paper_column=True).splitlines()
    for slug, report in rows:
        lines += claims_table(report.claims, paper_column=True, slug=slug).splitlines()[2:]
    print("\n".join(lines))
    for failure in failures:
        print(f"iclr25: {failure}", file=sys.stderr)
    return 1 if failures else 0


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
            if readme_block(report) not in (root / "README.md").read_text():
                stale.append(paper.slug)
            continue
        try:
            changed = refresh_readme_block(root / "README.md", report)
        except ValueError as e:
            raise CliError(str(e)) from None
        print(f"{paper.slug}: README results block {'updated' if changed else 'already up to date'}")
    for slug in stale:
        print(f"iclr25: {slug}: README results block differs from results/{args.scale}/results.json", file=sys.stderr)
    return 1 if stale else 0


def _umbrella_parser(papers: dict[str, Paper]) -> Parser:
    parser = make_parser("iclr25", "ICLR 2025 papers, reimplemented: list, inspect and reproduce them.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{list,info,reproduce,readme,<slug>}")
    sub.add_parser("list", help="installed papers")
    info = sub.add_parser("info", help="one paper's details")
    info.add_argument("slug")
    rep = sub.add_parser("reproduce", help="run reproductions and print their claims table")
    rep.add_argument("slug", nargs="?", help="paper to reproduce (or --all)")
    rep.add_argument("--all", action="store_true", help="every installed paper")
    rep.add_argument("--scale", default="quick", help="quick (CPU, minutes) or full (one GPU)")
    rep.add_argument("--out", type=Path, help="run folder (with --all: a folder per paper inside it)")
    rep.add_argument("--seed", type=int, default=0)
    rep.add_argument("--device", choices=DEVICES, default="auto")
    rep.add_argument("--wandb", choices=WANDB_MODES, default="off")
    rep.add_argument("--overwrite", action="store_true", help="replace existing run folders")
    readme = sub.add_parser("readme", help="rewrite a package README's results table from its committed results")
    readme.add_argument("slug", nargs="?", help="paper whose README to refresh (or --all)")
    readme.add_argument("--all", action="store_true", help="every installed paper")
    readme.add_argument("--scale", default="quick", help="which committed results/<scale>/ to use")
    readme.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is stale")
    return parser


@guarded("iclr25")
def main(argv: list[str] | None = None) -> int:
    """Entry point of the umbrella `iclr25` command."""
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
    return _cmd_reproduce(papers, args)


if __name__ == "__main__":
    sys.exit(main())
