"""Every count or size a config takes has an upper bound: a hostile or mistyped `steps=100000000` is refused with one
line before any work, instead of exhausting memory or running for months.

A config field is a size when it holds an int (or a tuple of ints) and its name looks like a count or a size (see
SIZE_WORDS); it must then declare `AtMost(...)` in its `Annotated` metadata, directly or inside `Each(...)` or
`OrNone(...)`. Fields with a size-like name that are not sizes are listed, with the reason, in NOT_SIZES. The check is a
function over a config module, so a test can run it on a deliberately broken config and see it fail."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import types
import typing
from pathlib import Path

import pytest

from iclr25.shared.validate import AtLeast, AtMost, check_fields

ROOT = Path(__file__).resolve().parents[1]
SLUGS = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))

# Words of a field name (split at "_", case-insensitive) that make an integer field a count or a size.
SIZE_WORDS = frozenset(
    [
        "steps",
        "step",
        "iters",
        "iterations",
        "rounds",
        "epochs",
        "warmup",
        "games",
        "trials",
        "boot",
        "splits",
        "runs",
        "repeats",
        "reps",
        "seeds",
        "width",
        "wide",
        "narrow",
        "depth",
        "layers",
        "blocks",
        "hidden",
        "heads",
        "dim",
        "ndim",
        "d",
        "model",
        "ff",
        "latent",
        "latents",
        "features",
        "rank",
        "len",
        "length",
        "lengths",
        "size",
        "sizes",
        "height",
        "chunk",
        "bytes",
        "cap",
        "multiple",
        "radius",
        "bfs",
        "batch",
        "batches",
        "bsz",
        "micro",
        "tokens",
        "windows",
        "frames",
        "envs",
        "clips",
        "scenes",
        "pockets",
        "ligands",
        "peds",
        "genes",
        "motifs",
        "signals",
        "rna",
        "samples",
        "points",
        "pool",
        "sub",
        "init",
        "acquire",
        "budgets",
        "members",
        "subsets",
        "components",
        "probes",
        "participants",
        "prompts",
        "examples",
        "dirs",
        "bins",
        "ms",
        "cal",
        "test",
        "train",
        "pairs",
        "classes",
        "cells",
        "cell",
        "grid",
        "targets",
        "distractors",
        "sibling",
        "behavior",
        "mix",
        "combo",
        "flipped",
        "cvae",
        "threads",
        "workers",
        "n",
        "k",
        "t",
        "ks",
    ]
)
SIZE_PREFIXES = ("n_", "num_", "max_", "min_")

# Fields whose name looks like a size but whose value is not one (an id, a seed value, a position, a mode).
NOT_SIZES = {
    # the seed values themselves (added to --seed); how many there are is the tuple's length, typed out by the user
    "iclr25.icl_emergence.config.Config.seeds": "seed values",
    "iclr25.siu_bioactivity.config.Config.seeds": "seed values",
    # a stride (every k-th training image joins the pool): a huge one only leaves a pool of one image
    "iclr25.hd_explain.config.Config.pool_every": "a stride, not a size",
}


def _is_int_like(hint: typing.Any) -> bool:
    """An int, an optional int, or a tuple of ints (bools excluded)."""
    base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
    origin, args = typing.get_origin(base), typing.get_args(base)
    if base is int:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_int_like(a) for a in args if a is not type(None))
    if origin is tuple:
        return bool(args) and all(a is int or a is Ellipsis for a in args)
    return False


def looks_like_size(name: str) -> bool:
    """Whether a field name reads as a count or a size (`steps`, `n_test`, `mlp_hidden`, `validity_reps`, `T`)."""
    lowered = name.lower()
    words = lowered.split("_")
    plural = [w[:-1] for w in words if w.endswith("s")]  # `widths`, `budgets`, `mlp_ks`
    return lowered.startswith(SIZE_PREFIXES) or any(word in SIZE_WORDS for word in (*words, *plural))


def _has_upper_bound(rules: typing.Iterable[typing.Any]) -> bool:
    from iclr25.shared.validate import AtMost, Each, InRange, OrNone

    for rule in rules:
        if isinstance(rule, AtMost | InRange):
            return True
        if isinstance(rule, Each) and _has_upper_bound(rule.rules):
            return True
        if isinstance(rule, OrNone) and _has_upper_bound((rule.rule,)):
            return True
    return False


def unbounded_sizes(module_name: str, not_sizes: typing.Mapping[str, str] = NOT_SIZES) -> list[str]:
    """`module.Class.field` for each size-like integer field of the module's config dataclasses without an upper
    bound (fields named in `not_sizes` as `Class.field` or `module.Class.field` are skipped)."""
    from iclr25.shared.validate import field_constraints

    module = importlib.import_module(module_name)
    found = []
    for cls in vars(module).values():
        if not (inspect.isclass(cls) and dataclasses.is_dataclass(cls) and cls.__module__ == module_name):
            continue
        hints = typing.get_type_hints(cls, include_extras=True)
        for name, rules in field_constraints(cls).items():
            where = f"{module_name}.{cls.__name__}.{name}"
            if f"{cls.__name__}.{name}" in not_sizes or where in not_sizes:
                continue
            if _is_int_like(hints[name]) and looks_like_size(name) and not _has_upper_bound(rules):
                found.append(where)
    return found


@pytest.mark.parametrize("slug", SLUGS)
def test_every_size_has_an_upper_bound(slug: str) -> None:
    assert unbounded_sizes(f"iclr25.{slug.replace('-', '_')}.config") == []


@pytest.mark.parametrize("slug", SLUGS)
def test_presets_keep_within_the_bounds(slug: str) -> None:
    """Every preset still constructs (a bound below a preset's value would refuse the preset itself)."""
    module = importlib.import_module(f"iclr25.{slug.replace('-', '_')}.config")
    for name, preset in module.PRESETS.items():
        assert dataclasses.replace(preset) == preset, name


def test_the_allow_list_names_real_fields() -> None:
    """An entry of NOT_SIZES that names no field is stale."""
    fields = set()
    for slug in SLUGS:
        module = importlib.import_module(f"iclr25.{slug.replace('-', '_')}.config")
        for cls in vars(module).values():
            if inspect.isclass(cls) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__:
                fields |= {f"{module.__name__}.{cls.__name__}.{f.name}" for f in dataclasses.fields(cls)}
    assert [entry for entry in NOT_SIZES if entry not in fields] == []


def test_size_names() -> None:
    sizes = ["steps", "n_test", "mlp_hidden", "validity_reps", "T", "d_model", "batch_size", "num_workers", "Ks"]
    assert all(looks_like_size(name) for name in sizes)
    assert not any(looks_like_size(name) for name in ("seed", "eval_seed", "lr", "checkpoint_every", "alpha"))


def test_the_check_fails_on_a_deliberately_broken_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "broken_sizes"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "config.py").write_text(
        "from __future__ import annotations\n"
        "from dataclasses import dataclass\n"
        "from typing import Annotated\n"
        "from iclr25.shared.validate import AtLeast, AtMost, Each, NonNegativeInt, PositiveInt, Validated\n"
        "@dataclass(frozen=True)\n"
        "class Config(Validated):\n"
        "    steps: PositiveInt = 10\n"  # no upper bound: steps=100000000 would be accepted
        "    widths: Annotated[tuple[int, ...], Each(AtLeast(1))] = (4, 8)\n"
        "    n_test: Annotated[int, AtLeast(1), AtMost(1000)] = 10\n"
        "    hidden: Annotated[tuple[int, ...], Each(AtLeast(1), AtMost(4096))] = (8,)\n"
        "    seed: NonNegativeInt = 0\n"
        "    lr: float = 0.1\n"
        "    fold: PositiveInt = 3\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = unbounded_sizes("broken_sizes.config")
        assert found == ["broken_sizes.config.Config.steps", "broken_sizes.config.Config.widths"]
        assert unbounded_sizes("broken_sizes.config", {"Config.steps": "", "Config.widths": ""}) == []
    finally:
        for name in [m for m in sys.modules if m.startswith("broken_sizes")]:
            monkeypatch.delitem(sys.modules, name)


@dataclasses.dataclass(frozen=True)
class _Sized:
    steps: typing.Annotated[int, AtLeast(1), AtMost(1000)] = 10


def test_a_huge_size_is_refused_with_what_is_allowed() -> None:
    with pytest.raises(ValueError, match=r"steps must be <= 1000, got 100000000"):
        check_fields(_Sized(steps=100_000_000))
