"""Declared constraints: each rule checks through its `check_*` validator (same messages), refuses its own example of
a bad value, describes itself for `--help`, and a `Validated` dataclass checks every field on construction and on
`dataclasses.replace`."""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest

from iclr25.shared import cli
from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Finite,
    Increasing,
    InRange,
    IsBool,
    IsInt,
    IsText,
    NonEmpty,
    NonNegative,
    OneOf,
    OrNone,
    Positive,
    PositiveFloat,
    PositiveInt,
    Probability,
    Satisfies,
    Validated,
    ZeroOrAtLeast,
    check_int_at_least,
    field_constraints,
)

RULES = [
    # rule, a good value, a bad value, the error for the bad value, the description
    (AtLeast(3), 3, 2, "x must be an integer >= 3, got 2", "integer >= 3"),
    (ZeroOrAtLeast(2), 0, 1, "x must be 0 (skip) or an integer >= 2, got 1", "0 (skip) or integer >= 2"),
    (AtMost(3), 3, 4, "x must be <= 3, got 4", "<= 3"),
    (IsInt(), -4, 1.5, "x must be an integer, got 1.5", "integer"),
    (Positive(), 0.1, -1.0, "x must be > 0, got -1.0", "> 0"),
    (NonNegative(), 0.0, -0.5, "x must be >= 0, got -0.5", ">= 0"),
    (Finite(), -3.0, math.inf, "x must be a finite number, got inf", "finite number"),
    (InRange(0.0, 0.5, high_open=True), 0.0, 0.5, r"x must lie in [0, 0.5), got 0.5", "in [0, 0.5)"),
    (Probability(), 0.5, 0.0, "x must lie in (0, 1), got 0.0", "in (0, 1)"),
    (Probability(closed=True), 1.0, 1.5, "x must lie in [0, 1], got 1.5", "in [0, 1]"),
    (OneOf(("a", "b")), "b", "c", "x must be one of a, b; got 'c'", "one of a, b"),
    (NonEmpty(), (1,), (), "x must not be empty", "not empty"),
    (Each(AtLeast(1)), (1, 2), (1, 0), "x[1] must be an integer >= 1, got 0", "each integer >= 1"),
    (Increasing(), (1, 4), (1, 1), "x must be strictly increasing, got (1, 1)", "strictly increasing"),
    (IsBool(), True, 1, "x must be true or false, got 1", "true or false"),
    (IsText("a folder path"), "", None, "x must be a folder path, got None", "a folder path"),
    (OrNone(Positive()), None, 0.0, "x must be > 0, got 0.0", "none or > 0"),
    (Satisfies(check_int_at_least, "integer >= 2", 1, args=(2,)), 2, 1, "x must be an integer >= 2", "integer >= 2"),
]


@pytest.mark.parametrize(("rule", "good", "bad", "message", "description"), RULES)
def test_each_rule_checks_refuses_and_describes(rule, good, bad, message, description) -> None:
    rule.check("x", good)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        rule.check("x", bad)
    assert rule.describe() == description
    with pytest.raises(ValueError, match=r"^x"):  # the rule's own example of a refused value is refused
        rule.check("x", rule.refused(good))


@dataclass(frozen=True)
class Config(Validated):
    steps: PositiveInt = 3
    lr: PositiveFloat = 0.1
    mode: Literal["a", "b"] = "a"
    widths: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1))] = (2, 4)
    heads: PositiveInt = 2
    plain: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if any(w % self.heads for w in self.widths):
            raise ValueError(f"every width must be divisible by heads ({self.heads}), got {self.widths}")


def test_field_constraints_reads_annotations_and_literals() -> None:
    rules = field_constraints(Config)
    assert rules["steps"] == (AtLeast(1),)
    assert rules["mode"] == (OneOf(("a", "b")),)  # a Literal declares OneOf its values
    assert rules["widths"] == (NonEmpty(), Each(AtLeast(1)))
    assert rules["plain"] == ()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"steps": 0}, "steps must be an integer >= 1"),
        ({"lr": math.nan}, "lr must be a finite number"),
        ({"mode": "c"}, "mode must be one of a, b"),
        ({"widths": ()}, "widths must not be empty"),
        ({"widths": (2, 0)}, r"widths\[1\] must be an integer >= 1"),
        ({"widths": (2, 3)}, "divisible by heads"),  # the rule across fields, after the field rules
    ],
)
def test_validated_checks_on_construction_and_replace(change, message) -> None:
    with pytest.raises(ValueError, match=message):
        Config(**change)
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(Config(), **change)


def test_help_shows_what_each_flag_accepts() -> None:
    parser = argparse.ArgumentParser()
    cli.add_config_args(parser, Config())
    text = " ".join(parser.format_help().split())
    assert "--steps V (integer >= 1; default: 3)" in text
    assert "--mode V (one of a, b; default: a)" in text
    assert "--plain V (default: 0)" in text
    with pytest.raises(cli.CliError, match="steps must be an integer >= 1"):
        cli.config_from_args(parser.parse_args(["--steps", "0"]), Config())


def test_reproduce_help_lists_the_config_keys() -> None:
    parser = argparse.ArgumentParser(prog="demo reproduce")
    cli.add_run_args(parser, presets={"quick": Config(), "full": Config(steps=30)})
    text = parser.format_help()
    keys = text.split("config keys (key=value; value in the quick preset, then what it accepts):\n")[1].splitlines()
    assert keys[0].split() == ["steps", "3", "integer", ">=", "1"]
    assert keys[3].split() == ["widths", "2,4", "not", "empty;", "each", "integer", ">=", "1"]
    assert keys[-1].split() == ["plain", "0"]  # no declared constraint: nothing to say
