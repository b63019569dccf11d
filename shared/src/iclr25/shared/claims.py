"""Claims as data: what a package claims, against which number of the paper, with what margin.

Each package's `claims` module holds one function, `declared(config) -> list[Declared]`, that lists its claims:
name, statement, the paper's value and where the paper gives it, the metric it reads from the measured results,
the check (with its margin), and whether it is gated (asserted by the tests) or reported. The shared layer
evaluates them (`evaluate`) against a run's metrics as results.json stores them, so that claims can be evaluated
again from any results.json (`iclr25 claims SLUG --results FILE`) without rerunning anything. A claim whose
metric is missing is reported as not measured (and, if gated, fails); it is never dropped.

    def declared(cfg: Config) -> list[Declared]:
        return [
            Declared("coverage", "split CP covers at 1 - alpha", metric="synthetic.coverage",
                     check=Between(0.89, 0.915), paper=0.9, source="Thm. 1", gated=True),
            Declared("gap_shrinks", "ESS narrows the gap", metric=gap_shrink, check=AtLeast(0.03), source="Fig. 3"),
        ]

A metric that needs a computation beyond a lookup is a small named function `(metrics, config) -> value`, kept
next to the declaration; it may return `Measured(shown, tested)` when the value shown differs from the one tested.
The two such functions every package needs are here: `rounded(path, digits)` and `difference(a, b, digits)`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from iclr25.shared.results import Claim, _jsonable

__all__ = [
    "Above",
    "AtLeast",
    "AtMost",
    "Below",
    "Between",
    "Check",
    "Declared",
    "IsTrue",
    "Measured",
    "MetricFunction",
    "MissingMetric",
    "Near",
    "Rule",
    "config_of",
    "difference",
    "differences",
    "evaluate",
    "lookup",
    "rounded",
    "stored_form",
]

Metrics = Mapping[str, Any]
# names as published claims tables use them: `coverage_eci`, `cosine_k0_below_0.9`, `success_DoorKey-16x16`
CLAIM_NAME = re.compile(r"[A-Za-z0-9_.\-/]+")
THROUGHPUT = "throughput"  # the path prefix under which claims read the run's throughput (timings)


class MissingMetric(KeyError):
    """A metric a claim reads is not in the results (the claim is then reported as not measured)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "missing metric"


class Measured(NamedTuple):
    """What a metric function returns when the value shown (`shown`, e.g. a string of several numbers) is not
    the one the check tests (`tested`)."""

    shown: Any
    tested: Any


def stored_form(metrics: Metrics) -> dict[str, Any]:
    """`metrics` exactly as results.json stores them (lists for arrays and tuples, plain numbers, non-finite
    floats as strings): claims are evaluated on this form, so evaluating them again from a results.json gives
    the same claims."""
    return json.loads(json.dumps(_jsonable(dict(metrics))))


def lookup(metrics: Metrics, path: str) -> Any:
    """The value at dotted `path` of nested `metrics` ("synthetic.lac.coverage"; a list item by its index,
    "coverage_g.0"). A key that itself holds dots is matched whole, longest first. Raises `MissingMetric`."""
    node: Any = metrics
    parts = path.split(".")
    i = 0
    while i < len(parts):
        for j in range(len(parts), i, -1):  # the longest run of parts that is one key
            key = ".".join(parts[i:j])
            if isinstance(node, Mapping) and key in node:
                node, i = node[key], j
                break
            if (
                isinstance(node, list)
                and j == i + 1
                and key.lstrip("-").isdigit()
                and -len(node) <= int(key) < len(node)
            ):
                node, i = node[int(key)], j
                break
        else:
            raise MissingMetric(f"no metric {path!r} (missing at {'.'.join(parts[i:]) or path!r})")
    return node


def _number(value: Any) -> float:
    """`value` as a float for a comparison ("nan" / "inf" strings, as results.json stores them, included)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    raise TypeError(f"a numeric check needs a number, got {value!r}")


def _g(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Check:
    """How a claim's measured value is tested; `describe()` is the margin shown beside it."""

    def holds(self, value: Any) -> bool:  # pragma: no cover - every check overrides it
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - every check overrides it
        raise NotImplementedError


@dataclass(frozen=True)
class AtLeast(Check):
    """ours >= bound."""

    bound: float

    def holds(self, value: Any) -> bool:
        return _number(value) >= self.bound

    def describe(self) -> str:
        return f"ours >= {_g(self.bound)}"


@dataclass(frozen=True)
class AtMost(Check):
    """ours <= bound."""

    bound: float

    def holds(self, value: Any) -> bool:
        return _number(value) <= self.bound

    def describe(self) -> str:
        return f"ours <= {_g(self.bound)}"


@dataclass(frozen=True)
class Above(Check):
    """ours > bound (strictly)."""

    bound: float

    def holds(self, value: Any) -> bool:
        return _number(value) > self.bound

    def describe(self) -> str:
        return f"ours > {_g(self.bound)}"


@dataclass(frozen=True)
class Below(Check):
    """ours < bound (strictly)."""

    bound: float

    def holds(self, value: Any) -> bool:
        return _number(value) < self.bound

    def describe(self) -> str:
        return f"ours < {_g(self.bound)}"


@dataclass(frozen=True)
class Between(Check):
    """low <= ours <= high."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise ValueError(f"Between needs low <= high, got {self.low} and {self.high}")

    def holds(self, value: Any) -> bool:
        return self.low <= _number(value) <= self.high

    def describe(self) -> str:
        return f"{_g(self.low)} <= ours <= {_g(self.high)}"


@dataclass(frozen=True)
class Near(Check):
    """|ours - target| <= tolerance."""

    target: float
    tolerance: float

    def __post_init__(self) -> None:
        if not self.tolerance >= 0:
            raise ValueError(f"Near needs a tolerance >= 0, got {self.tolerance}")

    def holds(self, value: Any) -> bool:
        return abs(_number(value) - self.target) <= self.tolerance

    def describe(self) -> str:
        return f"|ours - {_g(self.target)}| <= {_g(self.tolerance)}"


@dataclass(frozen=True)
class IsTrue(Check):
    """The measured value is true (a yes/no finding, e.g. "every seed ordered the methods as the paper")."""

    def holds(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"IsTrue needs a bool, got {value!r}")
        return value

    def describe(self) -> str:
        return "ours is true"


@dataclass(frozen=True)
class Rule(Check):
    """A test no comparison above expresses: a small named function `value -> bool`, and its margin in words."""

    test: Callable[[Any], bool]
    margin: str

    def __post_init__(self) -> None:
        if not self.margin.strip():
            raise ValueError("Rule needs its margin in words")

    def holds(self, value: Any) -> bool:
        return bool(self.test(value))

    def describe(self) -> str:
        return self.margin


MetricFunction = Callable[[dict[str, Any], Any], Any]


def rounded(path: str, digits: int = 4) -> MetricFunction:
    """A metric function: the number at `path`, shown to `digits` decimals and tested unrounded (so a value just
    under a threshold is never rounded onto it)."""

    def metric(metrics: dict[str, Any], config: Any) -> Measured:
        value = _number(lookup(metrics, path))
        return Measured(round(value, digits), value)

    metric.__name__ = metric.__qualname__ = f"rounded({path}, {digits})"  # what `iclr25 claims` shows it reads
    return metric


def difference(a: str, b: str, digits: int | None = None) -> MetricFunction:
    """A metric function: the number at path `a` minus the number at path `b` (a gap between two methods or two
    settings of one run), shown to `digits` decimals when given and always tested unrounded."""

    def metric(metrics: dict[str, Any], config: Any) -> Any:
        value = _number(lookup(metrics, a)) - _number(lookup(metrics, b))
        return value if digits is None else Measured(round(value, digits), value)

    metric.__name__ = metric.__qualname__ = f"difference({a}, {b})"
    return metric


@dataclass(frozen=True)
class Declared:
    """One claim as data.

    `metric`: the dotted path of the value in the measured metrics, or a small named function
    `(metrics, config) -> value` (or `Measured(shown, tested)`). `paper`: the paper's value (None when the paper
    gives no number); `source`: where the paper gives it ("Table 2", "Fig. 3", "Sec. 5.1"; "" when it does not).
    `note` follows the margin in parentheses. `tolerance`: how far `iclr25 compare` lets the value move between
    machines (measured from a spread; None: within float noise).
    """

    name: str
    statement: str
    metric: str | MetricFunction
    check: Check
    paper: float | str | None = None
    source: str = ""
    gated: bool = False
    note: str = ""
    tolerance: float | None = None

    def __post_init__(self) -> None:
        if not CLAIM_NAME.fullmatch(self.name):
            raise ValueError(
                f"a claim name is a non-empty word of letters, digits and '_', '.', '-', '/' (no spaces), got {self.name!r}"
            )
        if not self.statement.strip():
            raise ValueError(f"claim {self.name!r} needs a statement")
        if not (isinstance(self.metric, str) and self.metric) and not callable(self.metric):
            raise ValueError(f"claim {self.name!r}: metric must be a dotted path or a function, got {self.metric!r}")
        if not isinstance(self.check, Check):
            raise ValueError(f"claim {self.name!r}: check must be a Check (AtLeast, Between, ...), got {self.check!r}")

    @property
    def margin(self) -> str:
        """The margin shown beside the value: the check in words, then the note."""
        return self.check.describe() + (f" ({self.note})" if self.note else "")

    @property
    def reads(self) -> str:
        """What the claim reads: its metric path, or the name of its metric function."""
        if isinstance(self.metric, str):
            return self.metric
        name = getattr(self.metric, "__name__", "function")
        return name if "(" in name else f"{name}()"

    def evaluate(self, metrics: dict[str, Any], config: Any) -> Claim:
        """The claim measured on `metrics` (in their stored form, see `stored_form`)."""
        try:
            value = lookup(metrics, self.metric) if isinstance(self.metric, str) else self.metric(metrics, config)
        except KeyError as e:  # MissingMetric, or a metric function reading a key the run did not measure
            message = e.args[0] if e.args else "missing metric"
            return Claim(
                self.name,
                self.statement,
                self.paper,
                None,
                f"{self.margin}; not measured: {message}",
                holds=False,
                gated=self.gated,
                tolerance=self.tolerance,
                source=self.source,
                measured=False,
            )
        shown, tested = (value.shown, value.tested) if isinstance(value, Measured) else (value, value)
        try:
            holds = self.check.holds(tested)
        except TypeError as e:
            raise ValueError(f"claim {self.name!r}: {e}") from None
        if tested == "nan" or (isinstance(tested, float) and math.isnan(tested)):
            holds = False  # a NaN (stored as "nan" in results.json) never holds, whatever the check
        return Claim(
            self.name,
            self.statement,
            self.paper,
            shown,
            self.margin,
            holds=holds,
            gated=self.gated,
            tolerance=self.tolerance,
            source=self.source,
        )


def evaluate(
    declared: Sequence[Declared], metrics: Metrics, config: Any, throughput: Mapping[str, float] | None = None
) -> list[Claim]:
    """Every declared claim measured on `metrics` (taken in the form results.json stores them), in order. A claim
    about speed reads the run's `throughput` (results.json's own field) under the path `throughput.<key>`."""
    names = [d.name for d in declared]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"claims declared twice: {', '.join(duplicated)}")
    if throughput is not None and THROUGHPUT in metrics:
        raise ValueError(f"the metrics hold a key {THROUGHPUT!r}, which would hide the run's throughput")
    stored = stored_form({**metrics, THROUGHPUT: dict(throughput)} if throughput is not None else metrics)
    return [d.evaluate(stored, config) for d in declared]


def config_of(presets: Mapping[str, Any], scale: str, config: Mapping[str, Any]) -> Any:
    """The Config a results.json was made with: its stored `config` fields applied to the package's preset of
    the same scale (or its first preset, for a user-named scale), each coerced back to its field's type."""
    from iclr25.shared.cli import CliError, apply_overrides

    if not presets:
        raise ValueError("the package declares no presets")
    base = presets.get(scale) or next(iter(presets.values()))
    try:
        return apply_overrides(base, dict(config), source="results.json config")
    except CliError as e:
        raise ValueError(str(e)) from None


CLAIM_FIELDS = ("paper", "ours", "holds", "gated", "tolerance")


def differences(stored: Sequence[Claim], evaluated: Sequence[Claim]) -> list[str]:
    """Where `evaluated` claims differ from `stored` ones (names, order, or a value of CLAIM_FIELDS); [] when
    they are the same claims with the same values. Statements and margins (words) are not compared."""
    out = []
    old, new = [c.name for c in stored], [c.name for c in evaluated]
    if old != new:
        missing, extra = [n for n in old if n not in new], [n for n in new if n not in old]
        out.append(f"claim names differ: missing {missing}, new {extra}" if missing or extra else "claim order differs")
    evaluated_by_name = {c.name: c for c in evaluated}
    for claim in stored:
        other = evaluated_by_name.get(claim.name)
        if other is None:
            continue
        for attr in CLAIM_FIELDS:
            a, b = getattr(claim, attr), getattr(other, attr)
            if a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
                out.append(f"{claim.name}: {attr} {a!r} -> {b!r}")
    return out
