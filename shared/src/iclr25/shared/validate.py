"""Config validators: each checks one value and raises a ValueError saying what was wrong and what is allowed.

Standard library only, so a package's `config.py` can reject bad values before torch or any data is loaded.
A config field declares its rule in its type (`steps: PositiveInt = 100`, `alpha: Annotated[float, Probability()]`)
and a `Validated` dataclass checks them all on construction; the `check_*` functions serve rules across fields and
code outside configs.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import numbers
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

T = TypeVar("T")


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def check_finite(name: str, value: Any) -> Any:
    """`value` is a finite real number (not NaN, not ±inf)."""
    if not math.isfinite(_real(name, value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def check_positive(name: str, value: Any) -> Any:
    """`value` is finite and > 0."""
    check_finite(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def check_nonnegative(name: str, value: Any) -> Any:
    """`value` is finite and >= 0."""
    check_finite(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def check_int_at_least(name: str, value: Any, minimum: int = 1) -> int:
    """`value` is an integer (not a bool) >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_in_range(
    name: str, value: Any, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> Any:
    """`value` is finite and lies in the interval from `low` to `high` (closed unless `*_open`)."""
    check_finite(name, value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return value


def check_probability(name: str, value: Any, *, closed: bool = False) -> Any:
    """`value` lies in (0, 1), or in [0, 1] with `closed`."""
    return check_in_range(name, value, 0.0, 1.0, low_open=not closed, high_open=not closed)


def check_one_of(name: str, value: T, allowed: Iterable[T]) -> T:
    """`value` is one of `allowed`."""
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")
    return value


def check_nonempty(name: str, values: Any) -> Any:
    """A tuple/list/str field holds at least one item."""
    if len(values) == 0:
        raise ValueError(f"{name} must not be empty")
    return values


def check_bool(name: str, value: Any) -> bool:
    """`value` is True or False (not 0/1 or a string)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def check_text(name: str, value: Any, what: str = "text", *, nonempty: bool = False) -> str:
    """`value` is a string (a path, a name; `nonempty`: not blank); the error says it must be `what`."""
    if not isinstance(value, str) or (nonempty and not value.strip()):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return value


def int_in(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse `type` for a size flag: an integer in [minimum, maximum]; argparse turns the refusal into one
    error line naming the flag, before any work."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {minimum} and <= {maximum}, got {text!r}"
            ) from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum} and <= {maximum}, got {value}")
        return value

    return parse


def int_at_most(maximum: int) -> Callable[[str], int]:
    """An argparse `type` for a size flag whose lower bound the command checks itself: an integer <= maximum."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer <= {maximum}, got {text!r}") from None
        if value > maximum:
            raise argparse.ArgumentTypeError(f"expected an integer <= {maximum}, got {value}")
        return value

    return parse


# --- Declared constraints ------------------------------------------------------------------------------------------
# A config field says what it accepts in its annotation, next to its default, and `Validated` checks every field on
# construction with the validators above (so the error messages are the same):
#
#     @dataclass(frozen=True)
#     class Config(Validated):
#         steps: PositiveInt = 1200
#         lr: PositiveFloat = 1e-3
#         prior: Annotated[str, OneOf(PRIORS)] = "rotation2d"
#         Ks: Annotated[tuple[int, ...], NonEmpty(), Each(AtLeast(1))] = (1, 4, 16)
#
#         def __post_init__(self) -> None:  # only for rules that tie fields together
#             super().__post_init__()
#             if self.d_model % self.n_heads: ...
#
# The same declarations give `--help` its allowed values and let one test feed every field of every package a value
# it must refuse (`Constraint.refused`).


class Constraint:
    """One rule a config field's value must obey, declared in the field's `Annotated[...]` type."""

    def check(self, name: str, value: Any) -> None:
        """Raise ValueError (naming `name`) when `value` breaks the rule."""
        raise NotImplementedError

    def describe(self) -> str:
        """The rule in a few words, for `--help`."""
        raise NotImplementedError

    def refused(self, value: Any) -> Any:
        """A value this rule refuses, of the kind `value` (the field's default) is: for tests of the checks."""
        raise NotImplementedError


@dataclass(frozen=True)
class AtLeast(Constraint):
    """An integer (not a bool) >= `minimum`."""

    minimum: int = 1

    def check(self, name: str, value: Any) -> None:
        check_int_at_least(name, value, self.minimum)

    def describe(self) -> str:
        return f"integer >= {self.minimum}"

    def refused(self, value: Any) -> Any:
        return self.minimum - 1


@dataclass(frozen=True)
class ZeroOrAtLeast(Constraint):
    """0 (the part is skipped) or an integer >= `minimum`."""

    minimum: int = 2

    def check(self, name: str, value: Any) -> None:
        is_int = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if not is_int or (value != 0 and value < self.minimum):
            raise ValueError(f"{name} must be 0 (skip) or an integer >= {self.minimum}, got {value!r}")

    def describe(self) -> str:
        return f"0 (skip) or integer >= {self.minimum}"

    def refused(self, value: Any) -> Any:
        return self.minimum - 1 if self.minimum > 1 else -1


@dataclass(frozen=True)
class AtMost(Constraint):
    """A finite number <= `maximum` (pair it with a lower bound or an integer rule)."""

    maximum: float

    def check(self, name: str, value: Any) -> None:
        check_finite(name, value)
        if value > self.maximum:
            raise ValueError(f"{name} must be <= {self.maximum:g}, got {value!r}")

    def describe(self) -> str:
        return f"<= {self.maximum:g}"

    def refused(self, value: Any) -> Any:
        return self.maximum + 1


@dataclass(frozen=True)
class IsInt(Constraint):
    """An integer (not a bool), of any sign."""

    def check(self, name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {value!r}")

    def describe(self) -> str:
        return "integer"

    def refused(self, value: Any) -> Any:
        return 0.5


@dataclass(frozen=True)
class Positive(Constraint):
    """A finite number > 0."""

    def check(self, name: str, value: Any) -> None:
        check_positive(name, value)

    def describe(self) -> str:
        return "> 0"

    def refused(self, value: Any) -> Any:
        return 0.0


@dataclass(frozen=True)
class NonNegative(Constraint):
    """A finite number >= 0."""

    def check(self, name: str, value: Any) -> None:
        check_nonnegative(name, value)

    def describe(self) -> str:
        return ">= 0"

    def refused(self, value: Any) -> Any:
        return -1.0


@dataclass(frozen=True)
class Finite(Constraint):
    """A finite real number (not NaN, not ±inf)."""

    def check(self, name: str, value: Any) -> None:
        check_finite(name, value)

    def describe(self) -> str:
        return "finite number"

    def refused(self, value: Any) -> Any:
        return math.nan


@dataclass(frozen=True)
class InRange(Constraint):
    """A finite number in the interval from `low` to `high` (closed unless `*_open`)."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False

    def check(self, name: str, value: Any) -> None:
        check_in_range(name, value, self.low, self.high, low_open=self.low_open, high_open=self.high_open)

    def describe(self) -> str:
        return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"

    def refused(self, value: Any) -> Any:
        return self.high if self.high_open else self.high + 1.0


@dataclass(frozen=True)
class Probability(InRange):
    """A number in (0, 1), or in [0, 1] with `closed`."""

    low: float = 0.0
    high: float = 1.0
    closed: bool = False
    low_open: bool = field(init=False)
    high_open: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "low_open", not self.closed)
        object.__setattr__(self, "high_open", not self.closed)


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of `choices`."""

    choices: tuple[Any, ...]

    def check(self, name: str, value: Any) -> None:
        check_one_of(name, value, self.choices)

    def describe(self) -> str:
        return "one of " + ", ".join(map(str, self.choices))

    def refused(self, value: Any) -> Any:
        return "<none of the choices>"


@dataclass(frozen=True)
class NonEmpty(Constraint):
    """A tuple, list or string with at least one item."""

    def check(self, name: str, value: Any) -> None:
        check_nonempty(name, value)

    def describe(self) -> str:
        return "not empty"

    def refused(self, value: Any) -> Any:
        return "" if isinstance(value, str) else ()


@dataclass(frozen=True)
class Each(Constraint):
    """Every item of a tuple or list obeys `rules` (the error names the item, e.g. `lrs[2]`)."""

    rules: tuple[Constraint, ...]

    def __init__(self, *rules: Constraint) -> None:
        object.__setattr__(self, "rules", rules)

    def check(self, name: str, value: Any) -> None:
        for i, item in enumerate(value):
            for rule in self.rules:
                rule.check(f"{name}[{i}]", item)

    def describe(self) -> str:
        return "each " + ", ".join(rule.describe() for rule in self.rules)

    def refused(self, value: Any) -> Any:
        item = value[0] if len(value) else None
        return (self.rules[0].refused(item),)


@dataclass(frozen=True)
class Increasing(Constraint):
    """A tuple or list whose items strictly increase (no repeats)."""

    def check(self, name: str, value: Any) -> None:
        if any(b <= a for a, b in itertools.pairwise(value)):
            raise ValueError(f"{name} must be strictly increasing, got {value!r}")

    def describe(self) -> str:
        return "strictly increasing"

    def refused(self, value: Any) -> Any:
        return (2, 1)


@dataclass(frozen=True)
class IsBool(Constraint):
    """True or False (not 0/1 or a string)."""

    def check(self, name: str, value: Any) -> None:
        check_bool(name, value)

    def describe(self) -> str:
        return "true or false"

    def refused(self, value: Any) -> Any:
        return "yes"


@dataclass(frozen=True)
class IsText(Constraint):
    """A string (`nonempty`: not blank); the error says it must be `what`."""

    what: str = "text"
    nonempty: bool = False

    def check(self, name: str, value: Any) -> None:
        check_text(name, value, self.what, nonempty=self.nonempty)

    def describe(self) -> str:
        return self.what

    def refused(self, value: Any) -> Any:
        return " " if self.nonempty else 3


@dataclass(frozen=True)
class OrNone(Constraint):
    """None, or a value that obeys `rule`."""

    rule: Constraint

    def check(self, name: str, value: Any) -> None:
        if value is not None:
            self.rule.check(name, value)

    def describe(self) -> str:
        return f"none or {self.rule.describe()}"

    def refused(self, value: Any) -> Any:
        return self.rule.refused(value)


@dataclass(frozen=True)
class Satisfies(Constraint):
    """A package's own validator `check(name, value, *args)` (raising ValueError), described by `description`."""

    check_fn: Callable[..., Any]
    description: str
    refused_value: Any
    args: tuple[Any, ...] = ()

    def check(self, name: str, value: Any) -> None:
        self.check_fn(name, value, *self.args)

    def describe(self) -> str:
        return self.description

    def refused(self, value: Any) -> Any:
        return self.refused_value


PositiveInt = Annotated[int, AtLeast(1)]
NonNegativeInt = Annotated[int, AtLeast(0)]
Integer = Annotated[int, IsInt()]
PositiveFloat = Annotated[float, Positive()]
NonNegativeFloat = Annotated[float, NonNegative()]
FiniteFloat = Annotated[float, Finite()]
OpenProbability = Annotated[float, Probability()]
ClosedProbability = Annotated[float, Probability(closed=True)]
Flag = Annotated[bool, IsBool()]
Text = Annotated[str, IsText()]


def field_constraints(cls: type) -> dict[str, tuple[Constraint, ...]]:
    """Each dataclass field of `cls` and the constraints its annotation declares (empty where it declares none); a
    `Literal[...]` type declares `OneOf` its values."""
    return dict(_field_constraints(cls))


@functools.cache
def _field_constraints(cls: type) -> tuple[tuple[str, tuple[Constraint, ...]], ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        rules = tuple(m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Constraint))
        base = typing.get_args(hint)[0] if rules else hint
        if typing.get_origin(base) is typing.Literal and not any(isinstance(r, OneOf) for r in rules):
            rules = (OneOf(typing.get_args(base)), *rules)
        out.append((f.name, rules))
    return tuple(out)


def check_fields(config: Any) -> None:
    """Check every field of dataclass `config` against the constraints its annotation declares."""
    for name, rules in _field_constraints(type(config)):
        value = getattr(config, name)
        for rule in rules:
            rule.check(name, value)


class Validated:
    """Base of a config dataclass whose fields declare their constraints: they are checked on construction and on
    every `dataclasses.replace`. A subclass's own `__post_init__` (for rules across fields) calls
    `super().__post_init__()` first."""

    def __post_init__(self) -> None:
        check_fields(self)
