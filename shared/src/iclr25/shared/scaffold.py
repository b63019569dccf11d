"""`iclr25 new <slug>`: a new paper package that keeps the contract from its first line.

It writes `packages/<slug>/` in the shape the contract test asserts (pyproject, README with the paper-header and
results markers, a light `config.py`, a method with its slow reference form, `experiments` apart from the plan in
`reproduce`, the claims declared as data in `claims`, a CLI, and tests including one that shows the gate failing on a
broken method), then registers the package in the root `pyproject.toml`. Replace the
example method (a trimmed mean) with the paper's.
"""

from __future__ import annotations

import re
from pathlib import Path

from iclr25.shared.files import edit_source_file, write_text
from iclr25.shared.paper import Paper

SLUG_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

FILES: dict[str, str] = {
    "pyproject.toml": """[project]
name = "iclr25-{slug}"
version = "0.1.0"
description = "{title} (ICLR 2025), reimplemented: method, baselines, reproduction, CLI."
readme = "README.md"
requires-python = ">=3.11"
license = "MIT"
dependencies = [
    "iclr25-shared",
    "numpy>=1.26",
]

[project.scripts]
iclr25-{slug} = "iclr25.{module}.cli:main"

[project.entry-points."iclr25.papers"]
{slug} = "iclr25.{module}:PAPER"

[dependency-groups]
dev = ["pytest>=8.3", "pytest-socket>=0.7"]

[build-system]
requires = ["uv_build>=0.8,<0.14"]
build-backend = "uv_build"

[tool.uv.build-backend]
module-name = "iclr25.{module}"

[tool.uv.sources]
iclr25-shared = {{ workspace = true }}
""",
    "README.md": """# iclr25-{slug}

{paper_header}

A re-implementation of **{title}** (ICLR 2025). Fill in paper.toml (authors, arXiv and OpenReview ids, official
code, settings), then `uv run iclr25 readme {slug}` writes the header above.

## The idea

One paragraph: what the paper does and why it works.

## Install

From a clone: `uv run --package iclr25-{slug} iclr25-{slug} --help`, or `uv pip install ./shared ./packages/{slug}`
into any virtual environment.

## Quickstart

```python
import numpy as np

from iclr25.{module} import trimmed_mean

print(trimmed_mean(np.array([1.0, 2.0, 3.0, 100.0]), trim=0.25))
```

## Results

<!-- results:quick begin (generated from results/quick/results.json) -->
<!-- results:quick end -->

Command: `uv run iclr25-{slug} reproduce --scale quick` (2 CPU cores; runtime: fill in from results.json).

## Not done

List every part of the paper or the issue that is not built, and why.
""",
    "src/iclr25/{module}/__init__.py": '''"""{title} (ICLR 2025).

Public names are exported lazily: importing this package imports no numerical library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iclr25.shared.paper import Paper
from iclr25.shared.run import lazy_exports

PAPER = Paper.load(__name__)

if TYPE_CHECKING:  # the public API: real imports for type checkers, loaded lazily at run time
    from iclr25.{module}.method import trimmed_mean

__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
''',
    "src/iclr25/{module}/paper.toml": """# What `iclr25 list/info` and the package's `PAPER` say about the paper (read by Paper.load).
title = "{title}"
authors = ""
arxiv = ""
# openreview = ""  # the ICLR 2025 OpenReview forum id (the `id=` of its URL); leave out when unknown
# code = ""  # the official code on GitHub, "owner/name"; leave out when none is public
# code_commit = ""  # the official-code commit this package was checked against (hex); leave out when none
# licence = ""  # the official code's licence as its repository states it (e.g. "MIT"); leave out when unknown
summary = ""
scales = ["ci", "quick", "full"]

# The paper's main experiment settings as the README states them: 2-6 short entries, e.g.
# [settings]
# model = "ResNet-18"
# data = "CIFAR-10"
# steps = "200 epochs"
# batch = "128"
""",
    "src/iclr25/{module}/config.py": '''"""Presets of the reproduction. Standard library only: bad values are refused before numpy or torch load."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from iclr25.shared.validate import AtLeast, InRange, PositiveFloat, Validated


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-{slug} reproduce --scale quick` (seconds on 2 CPU cores). Every field declares what it
    accepts in its type; rules across fields go in `__post_init__`, after `super().__post_init__()`."""

    samples: Annotated[int, AtLeast(10)] = 2000
    outlier_fraction: Annotated[float, InRange(0.0, 0.5, high_open=True)] = 0.1
    trim: Annotated[float, InRange(0.0, 0.5, high_open=True)] = 0.2  # the method's default (cite the paper's section)
    tolerance: PositiveFloat = 0.1  # gate: |trimmed mean - true mean| <= tolerance


PRESETS: dict[str, Config] = {{
    "ci": Config(samples=500),
    "quick": Config(),
    "full": Config(samples=200_000),
}}
''',
    "src/iclr25/{module}/method.py": '''"""The paper's method in plain numpy (example: a trimmed mean and its standard error; replace them with the
paper's method, citing the equation or section each function implements)."""

from __future__ import annotations

import numpy as np


def _check_trim(trim: float) -> None:
    if not 0 <= trim < 0.5:
        raise ValueError(f"trim must lie in [0, 0.5), got {{trim}}")


def trimmed_mean(x: np.ndarray, trim: float = 0.2) -> float:
    """Mean of `x` after dropping the `trim` fraction of smallest and of largest values."""
    _check_trim(trim)
    x = np.sort(np.asarray(x, dtype=float))
    cut = int(trim * len(x))
    return float(x[cut : len(x) - cut].mean())


def trimmed_mean_se(x: np.ndarray, trim: float = 0.2) -> float:
    """Standard error of the trimmed mean (Tukey and McLaughlin, 1963): the winsorized standard deviation over
    (1 - 2 trim) sqrt(n); winsorizing sets the `trim` fraction of values at each end to the nearest kept one."""
    _check_trim(trim)
    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    if n < 2:
        raise ValueError(f"a standard error needs at least 2 values, got {{n}}")
    cut = int(trim * n)
    winsorized = np.clip(x, x[cut], x[n - cut - 1])
    return float(winsorized.std(ddof=1) / ((1 - 2 * trim) * np.sqrt(n)))
''',
    "src/iclr25/{module}/reference.py": '''"""Slow, obviously correct forms that the fast method is tested against."""

from __future__ import annotations


def trimmed_mean_loop(values: list[float], trim: float) -> float:
    """Trimmed mean by removing the extremes one at a time."""
    kept = sorted(values)
    for _ in range(int(trim * len(values))):
        kept = kept[1:-1]
    return sum(kept) / len(kept)
''',
    "src/iclr25/{module}/experiments.py": '''"""Experiments of the reproduction: plain metrics out, no judging (see `claims`) and no plan (see `reproduce`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from iclr25.{module}.config import Config
from iclr25.{module}.method import trimmed_mean, trimmed_mean_se


def measure_robustness(config: Config, seed: int) -> dict[str, Any]:
    """Draw data with outliers and estimate its mean with the method and with the plain mean."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, config.samples)
    outliers = rng.random(config.samples) < config.outlier_fraction
    x[outliers] += 50.0
    estimate, se = trimmed_mean(x, config.trim), trimmed_mean_se(x, config.trim)
    return {{"trimmed_mean": estimate, "trimmed_mean_se": se, "mean": float(x.mean()), "true_mean": 0.0}}
''',
    "src/iclr25/{module}/claims.py": '''"""The claims, as data: what the package claims, against which number of the paper, with what margin. The shared
layer (`iclr25.shared.claims`) evaluates them on the measured metrics; `iclr25 claims {slug}` lists them."""

from __future__ import annotations

from typing import Any

from iclr25.{module}.config import Config
from iclr25.shared.claims import AtMost, Declared, lookup


def estimate_error(metrics: dict[str, Any], config: Config) -> float:
    """|trimmed mean - true mean|: a computation beyond a look-up, so a small named function beside its claim."""
    return abs(lookup(metrics, "robustness.trimmed_mean") - lookup(metrics, "robustness.true_mean"))


def declared(config: Config) -> list[Declared]:
    """The claims of a run with `config`, in table order (which claims exist may depend on the config, never on the
    metrics: a claim whose metric is missing is reported as not measured)."""
    return [
        Declared(
            "robust_estimate",
            "the method recovers the mean despite outliers",
            metric=estimate_error,
            check=AtMost(config.tolerance),
            paper=None,  # the paper's value, when it gives one
            source="",  # where the paper gives it: "Table 2", "Fig. 3", "Sec. 5.1"
            gated=True,
        ),
    ]
''',
    "src/iclr25/{module}/reproduce.py": '''"""Reproduction plan: which experiments run at which scale, and the report (claims evaluated from `claims`)."""

from __future__ import annotations

from iclr25.{module}.claims import declared
from iclr25.{module}.config import PRESETS
from iclr25.{module}.experiments import measure_robustness
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report
from iclr25.shared.run import Run, reproduction

SLUG = "{slug}"


@reproduction(SLUG, PRESETS)
def run(run: Run) -> Report:
    """Run the `scale` preset (or `config`), write results.json + report.md into the run folder, return the report."""
    metrics = {{"robustness": measure_robustness(run.config, run.seed)}}
    return run.report(evaluate(declared(run.config), metrics, run.config), metrics)
''',
    "src/iclr25/{module}/cli.py": '''"""`iclr25-{slug}`: reproduce the paper's claims. Standard library only at module level: `--help` is instant."""

from __future__ import annotations

import sys

from iclr25.{module}.config import PRESETS
from iclr25.shared.cli import add_run_args, make_parser, package_main

PROG = "iclr25-{slug}"


def _parser():
    parser = make_parser(PROG, "{title} (ICLR 2025)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{{reproduce}}")
    reproduce = sub.add_parser("reproduce", help="run a preset and print its claims table")
    add_run_args(reproduce, scales=tuple(PRESETS), presets=PRESETS)
    return parser


main = package_main(PROG, _parser, {{}})


if __name__ == "__main__":
    sys.exit(main())
''',
    "tests/test_method.py": '''"""The method against its reference form, and its input checks."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.{module} import trimmed_mean
from iclr25.{module}.method import trimmed_mean_se
from iclr25.{module}.reference import trimmed_mean_loop


@pytest.mark.parametrize("trim", [0.0, 0.1, 0.25])
def test_fast_form_equals_reference(trim: float) -> None:
    x = np.random.default_rng(0).normal(size=41)
    assert trimmed_mean(x, trim) == pytest.approx(trimmed_mean_loop(list(x), trim))


def test_untrimmed_standard_error_is_the_plain_one() -> None:
    x = np.random.default_rng(1).normal(size=50)
    assert trimmed_mean_se(x, 0.0) == pytest.approx(x.std(ddof=1) / np.sqrt(len(x)))
    # [1, 2, 3, 4, 100] winsorized at 20 % is [2, 2, 3, 4, 4]: standard deviation 1, over 0.6 sqrt(5)
    assert trimmed_mean_se(np.array([1.0, 2, 3, 4, 100]), 0.2) == pytest.approx(1 / (0.6 * np.sqrt(5)))


def test_bad_trim_is_refused() -> None:
    with pytest.raises(ValueError, match="trim must lie"):
        trimmed_mean(np.ones(4), 0.5)
    with pytest.raises(ValueError, match="at least 2 values"):
        trimmed_mean_se(np.ones(1), 0.1)
''',
    "tests/test_reproduce.py": '''"""The claim gate on the ci preset, and proof that it fails on a broken method."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclr25.{module} import reproduce


@pytest.mark.claims
def test_gated_claims_hold(tmp_path: Path) -> None:
    report = reproduce.run("ci", tmp_path / "run")
    assert report.failed_gated == [], [c.name for c in report.failed_gated]


def test_the_gate_fails_on_a_broken_method(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("iclr25.{module}.experiments.trimmed_mean", lambda x, trim: float(x.mean()))
    report = reproduce.run("ci", tmp_path / "run")
    assert [c.name for c in report.failed_gated] == ["robust_estimate"]
''',
    "tests/test_cli.py": '''"""The CLI: a run, and one-line errors on bad input before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from iclr25.{module}.cli import main


def test_reproduce_ci(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--scale", "ci", "--out", str(tmp_path / "r")]) == 0
    assert "robust_estimate" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["trim=0.7", "samples=0", "tolerance=nan", "nosuch=1"])
def test_bad_values_are_one_line(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--out", str(tmp_path / "r"), bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "r").exists()  # refused before any work


def test_unknown_scale_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["reproduce", "--scale", "huge"])
    assert info.value.code == 2 and capsys.readouterr().err.count("\\n") == 1
''',
}


def workspace_root(start: Path) -> Path:
    """The uv workspace root at or above `start` (the folder whose pyproject.toml declares the workspace)."""
    for folder in (start.resolve(), *start.resolve().parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "[tool.uv.workspace]" in pyproject.read_text():
            return folder
    raise ValueError(f"{start} is not inside an iclr25 source checkout (no workspace pyproject.toml above it)")


def _register(root: Path, slug: str) -> None:
    """Add the package to the root dev group and [tool.uv.sources], keeping both lists sorted."""
    path = root / "pyproject.toml"
    lines = path.read_text().splitlines()
    dist = f"iclr25-{slug}"

    def insert(is_member: re.Pattern[str], line: str) -> None:
        rows = [i for i, text in enumerate(lines) if is_member.match(text)]
        if not rows:
            raise ValueError(f"{path} has no list of workspace packages to add {dist} to")
        at = next((i for i in rows if lines[i] > line), rows[-1] + 1)
        lines.insert(at, line)

    insert(re.compile(r'^    "iclr25-(?!shared)[a-z0-9-]+",$'), f'    "{dist}",')
    insert(re.compile(r"^iclr25-(?!shared)[a-z0-9-]+ = \{ workspace = true \}$"), f"{dist} = {{ workspace = true }}")
    edit_source_file(path, "\n".join(lines) + "\n")


def new_package(root: Path, slug: str, title: str) -> Path:
    """Write `packages/<slug>/` from the templates and register it in the root pyproject; returns its folder."""
    if not SLUG_PATTERN.fullmatch(slug) or slug == "shared":
        raise ValueError(f"slug must be lower-case kebab-case such as 'my-paper' (not 'shared'), got {slug!r}")
    if not title.strip() or '"' in title or "\\" in title:
        raise ValueError("--title must be non-empty and hold no double quotes or backslashes")
    folder = root / "packages" / slug
    if folder.exists():
        raise ValueError(f"{folder} already exists; choose another slug")
    values = {"slug": slug, "module": slug.replace("-", "_"), "title": title.strip()}
    paper_toml = FILES["src/iclr25/{module}/paper.toml"].format(**values)
    values["paper_header"] = Paper.from_toml(paper_toml, slug, source="paper.toml").readme_header()
    for relative, template in FILES.items():
        path = folder / relative.format(**values)
        write_text(path, template.format(**values), record=False)  # new source files only, no ledger beside them
    _register(root, slug)
    return folder
