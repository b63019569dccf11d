"""Claims as data: metric look-up, the checks and their margins, not-measured claims, re-evaluation."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from iclr25.shared.claims import (
    Above,
    AtLeast,
    AtMost,
    Below,
    Between,
    Declared,
    IsTrue,
    Measured,
    MissingMetric,
    Near,
    Rule,
    config_of,
    difference,
    differences,
    evaluate,
    lookup,
    rounded,
    stored_form,
)
from iclr25.shared.results import Claim, Report

METRICS = {
    "synthetic": {"lac": {"coverage": 0.901, "coverage_g": [0.88, 0.92]}},
    "abs.conformal_p": {"median_width": 2.5},  # a key that holds a dot
    "flag": True,
    "broken": float("nan"),
}


@dataclasses.dataclass(frozen=True)
class Cfg:
    scores: tuple[str, ...] = ("lac",)
    n: int = 10


def gap(m: dict, cfg: Cfg) -> float:
    return lookup(m, "synthetic.lac.coverage_g.1") - lookup(m, "synthetic.lac.coverage_g.0")


def test_lookup_follows_paths_list_indices_and_dotted_keys() -> None:
    assert lookup(METRICS, "synthetic.lac.coverage") == 0.901
    assert lookup(METRICS, "synthetic.lac.coverage_g.1") == 0.92
    assert lookup(METRICS, "synthetic.lac.coverage_g.-1") == 0.92
    assert lookup(METRICS, "abs.conformal_p.median_width") == 2.5
    for missing in ("synthetic.aps.coverage", "synthetic.lac.coverage_g.2", "synthetic.lac.coverage.x", "nope"):
        with pytest.raises(MissingMetric, match="no metric"):
            lookup(METRICS, missing)


@pytest.mark.parametrize(
    ("check", "inside", "outside", "margin"),
    [
        (AtLeast(0.9), 0.9, 0.8999, "ours >= 0.9"),
        (AtMost(0.08), 0.08, 0.0801, "ours <= 0.08"),
        (Above(0), 1e-12, 0.0, "ours > 0"),
        (Below(1), 0.999, 1.0, "ours < 1"),
        (Between(0.89, 0.915), 0.915, 0.9151, "0.89 <= ours <= 0.915"),
        (Near(0.9, 0.015), 0.886, 0.8849, "|ours - 0.9| <= 0.015"),
        (Rule(lambda v: v % 2 == 0, "an even count"), 4, 3, "an even count"),
    ],
)
def test_checks_hold_on_their_boundary_and_fail_past_it(check, inside, outside, margin: str) -> None:
    assert check.holds(inside) and not check.holds(outside)
    assert check.describe() == margin


def test_checks_refuse_what_they_cannot_compare() -> None:
    with pytest.raises(TypeError):
        AtLeast(1).holds("high")
    with pytest.raises(TypeError):
        IsTrue().holds(1)
    with pytest.raises(ValueError, match="low <= high"):
        Between(2, 1)
    with pytest.raises(ValueError, match="tolerance"):
        Near(0, -1)
    with pytest.raises(ValueError, match="margin"):
        Rule(bool, " ")
    assert not AtLeast(0).holds("nan") and AtMost(1).holds("-inf")  # results.json stores non-finite floats as text


def test_declarations_are_validated() -> None:
    with pytest.raises(ValueError, match="claim name"):
        Declared("bad name", "s", metric="x", check=AtLeast(0))
    with pytest.raises(ValueError, match="statement"):
        Declared("a", " ", metric="x", check=AtLeast(0))
    with pytest.raises(ValueError, match="dotted path or a function"):
        Declared("a", "s", metric="", check=AtLeast(0))
    with pytest.raises(ValueError, match="must be a Check"):
        Declared("a", "s", metric="x", check=0.9)  # type: ignore[arg-type]


def test_evaluate_measures_each_declared_claim_in_order() -> None:
    declared = [
        Declared("coverage", "covers", metric="synthetic.lac.coverage", check=Near(0.9, 0.015), paper=0.9,
                 source="Thm. 1", gated=True, note="5 seeds", tolerance=1e-3),
        Declared("group_gap", "groups differ", metric=gap, check=Below(0.05)),
        Declared("flag", "a yes/no finding", metric="flag", check=IsTrue()),
    ]  # fmt: skip
    coverage, group_gap, flag = evaluate(declared, METRICS, Cfg())
    assert (coverage.name, coverage.ours, coverage.holds, coverage.gated) == ("coverage", 0.901, True, True)
    assert (coverage.paper, coverage.source, coverage.tolerance) == (0.9, "Thm. 1", 1e-3)
    assert coverage.margin == "|ours - 0.9| <= 0.015 (5 seeds)"
    assert group_gap.ours == pytest.approx(0.04) and group_gap.holds and not group_gap.gated
    assert flag.holds and flag.status == "holds (reported)"
    assert declared[1].reads == "gap()" and declared[0].reads == "synthetic.lac.coverage"


def test_a_claim_whose_metric_is_missing_is_reported_not_measured() -> None:
    def reads_a_missing_key(m: dict, cfg: Cfg) -> float:
        return m["never_measured"]["x"]

    declared = [
        Declared("absent", "a gated claim on a metric the run did not make", metric="synthetic.aps.coverage",
                 check=AtLeast(0.9), gated=True),
        Declared("absent_too", "read by a function", metric=reads_a_missing_key, check=AtLeast(0)),
    ]  # fmt: skip
    absent, absent_too = evaluate(declared, METRICS, Cfg())
    assert not absent.measured and not absent.holds and absent.ours is None
    assert absent.status == "not measured (gated)" and "not measured" in absent.margin
    assert "synthetic.aps.coverage" in absent.margin
    assert not absent_too.measured and absent_too.status == "not measured (reported)"
    report = Report(paper="demo", scale="quick", claims=[absent])
    assert report.failed_gated == [absent]  # a gated claim that was not measured fails
    assert Report.from_dict(report.to_dict()).claims[0].status == "not measured (gated)"


def test_measured_shows_one_value_and_tests_another() -> None:
    def shown_and_tested(m: dict, cfg: Cfg) -> Measured:
        return Measured("0.88 / 0.92", gap(m, cfg))

    (claim,) = evaluate([Declared("both", "s", metric=shown_and_tested, check=AtMost(0.01))], METRICS, Cfg())
    assert claim.ours == "0.88 / 0.92" and not claim.holds


def test_rounded_and_difference_show_rounded_values_and_test_unrounded_ones() -> None:
    metrics = {"a": 0.89996, "b": {"c": 0.5}, "bad": "nan"}
    at_threshold = [
        Declared("r", "s", metric=rounded("a"), check=AtLeast(0.9)),  # shows 0.9 but 0.89996 is below 0.9
        Declared("d", "s", metric=difference("a", "b.c", digits=2), check=AtLeast(0.4)),
        Declared("raw", "s", metric=difference("b.c", "a"), check=Below(0)),
        Declared("nan", "s", metric=rounded("bad", 2), check=AtMost(1)),
        Declared("gone", "s", metric=difference("a", "b.missing"), check=AtMost(1)),
    ]
    r, d, raw, nan, gone = evaluate(at_threshold, metrics, Cfg())
    assert (r.ours, r.holds) == (0.9, False)
    assert (d.ours, d.holds) == (0.4, False)  # 0.39996 shown as 0.4, tested unrounded
    assert raw.ours == pytest.approx(-0.39996) and raw.holds
    assert math.isnan(nan.ours) and not nan.holds
    assert not gone.measured and "b.missing" in gone.margin
    assert at_threshold[0].reads == "rounded(a, 4)" and at_threshold[2].reads == "difference(b.c, a)"


def test_nan_never_holds_and_names_are_unique() -> None:
    (claim,) = evaluate([Declared("nan", "s", metric="broken", check=Rule(lambda v: True, "anything"))], METRICS, Cfg())
    assert claim.ours == "nan" and not claim.holds  # evaluated on the stored form: a NaN is the string "nan"
    (claim,) = evaluate([Declared("nan", "s", metric=lambda m, c: math.nan, check=AtMost(1))], METRICS, Cfg())
    assert not claim.holds
    twice = [Declared("a", "s", metric="flag", check=IsTrue())] * 2
    with pytest.raises(ValueError, match="declared twice: a"):
        evaluate(twice, METRICS, Cfg())


def test_claims_see_the_metrics_as_results_json_stores_them() -> None:
    live = {"a": np.array([1.0, 2.0]), "b": (1, 2), "c": np.float32(0.1), "d": float("inf")}
    assert stored_form(live) == {"a": [1.0, 2.0], "b": [1, 2], "c": float(np.float32(0.1)), "d": "inf"}

    def kind(m: dict, cfg: Cfg) -> float:
        return float(isinstance(m["a"], list) and isinstance(m["b"], list))

    (claim,) = evaluate([Declared("kind", "s", metric=kind, check=AtLeast(1))], live, Cfg())
    assert claim.holds  # the same inputs whether evaluated live or again from a results.json


def test_config_of_rebuilds_the_config_of_a_results_file() -> None:
    presets = {"quick": Cfg(), "full": Cfg(n=1000)}
    assert config_of(presets, "full", {"scores": ["lac", "aps"], "n": 5}) == Cfg(scores=("lac", "aps"), n=5)
    assert config_of(presets, "my-run", {"n": 7}) == Cfg(n=7)  # a user-named scale starts from the first preset
    with pytest.raises(ValueError, match="unknown"):
        config_of(presets, "quick", {"bogus": 1})


def _claim(name: str, ours: float, holds: bool = True) -> Claim:
    return Claim(name, "s", paper=None, ours=ours, margin="m", holds=holds, gated=True)


def test_differences_name_what_changed() -> None:
    stored = [_claim("a", 1.0), _claim("b", float("nan"), holds=False)]
    assert differences(stored, [_claim("a", 1.0), _claim("b", float("nan"), holds=False)]) == []
    assert differences(stored, [_claim("a", 1.0 + 1e-15), stored[1]]) == ["a: ours 1.0 -> 1.000000000000001"]
    assert differences(stored, [stored[1], stored[0]]) == ["claim order differs"]
    assert differences(stored, [stored[0]]) == ["claim names differ: missing ['b'], new []"]
    changed = dataclasses.replace(stored[0], holds=False)
    assert differences(stored, [changed, stored[1]]) == ["a: holds True -> False"]


def test_a_broken_declaration_is_caught_by_re_evaluation() -> None:
    """The re-evaluation proof fails for the bug it names: a check turned round, or the wrong metric read."""
    right = [Declared("coverage", "covers", metric="synthetic.lac.coverage", check=AtLeast(0.9), gated=True)]
    stored = evaluate(right, METRICS, Cfg())
    turned = [dataclasses.replace(right[0], check=AtMost(0.9))]
    wrong_metric = [dataclasses.replace(right[0], metric="synthetic.lac.coverage_g.0")]
    assert differences(stored, evaluate(right, METRICS, Cfg())) == []
    assert differences(stored, evaluate(turned, METRICS, Cfg())) == ["coverage: holds True -> False"]
    assert differences(stored, evaluate(wrong_metric, METRICS, Cfg())) == [
        "coverage: ours 0.901 -> 0.88",
        "coverage: holds True -> False",
    ]


def test_claim_names_as_published_and_speed_claims_read_the_throughput() -> None:
    for name in ("cosine_k0_below_0.9", "success_DoorKey-16x16", "cost_lam2/3_K4"):
        assert Declared(name, "s", metric="flag", check=IsTrue()).name == name
    for bad in ("two words", "", "a|b"):
        with pytest.raises(ValueError, match="claim name"):
            Declared(bad, "s", metric="flag", check=IsTrue())
    speed = [Declared("speedup", "faster", metric="throughput.speedup", check=AtLeast(2))]
    (claim,) = evaluate(speed, METRICS, Cfg(), throughput={"speedup": 3.5})
    assert claim.ours == 3.5 and claim.holds
    (claim,) = evaluate(speed, METRICS, Cfg())
    assert not claim.measured  # without the run's throughput the claim is not measured
    with pytest.raises(ValueError, match="would hide"):
        evaluate(speed, {"throughput": 1}, Cfg(), throughput={"speedup": 3.5})
