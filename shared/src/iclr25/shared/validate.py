"""Config validators: each checks one value and raises a ValueError saying what was wrong and what is allowed.

Standard library only, so a package's `config.py` can reject bad values before torch or any data is loaded.
Use them in a config dataclass's `__post_init__`::

    def __post_init__(self) -> None:
        check_int_at_least("steps", self.steps, 1)
        check_positive("lr", self.lr)
        check_probability("alpha", self.alpha)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

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


def check_each(name: str, values: Iterable[Any], check: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Apply `check` to every item of a tuple/list field; the error names the item, e.g. `lrs[2]`."""
    for i, value in enumerate(values):
        check(f"{name}[{i}]", value, *args, **kwargs)


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
