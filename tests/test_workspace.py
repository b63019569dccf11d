"""Workspace invariants: membership, the PEP 420 namespace, wheels, entry points, fast CLIs, results."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from iclr25.shared.paper import discover_papers
from iclr25.shared.results import Report, readme_block

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())
SLUGS = [p.name for p in PACKAGES]
BIN = Path(sys.executable).parent


def _pyproject(path: Path) -> dict:
    return tomllib.loads((path / "pyproject.toml").read_text())


def _dist_names() -> list[str]:
    return ["iclr25-shared", *(f"iclr25-{slug}" for slug in SLUGS)]


def test_every_member_is_in_the_dev_group_and_sources() -> None:
    root = _pyproject(ROOT)
    dev = {re.split(r"[\[<>=;]", req)[0] for req in root["dependency-groups"]["dev"]}
    sources = root["tool"]["uv"]["sources"]
    for name in _dist_names():
        assert name in dev, f"{name} missing from the root dev group"
        assert sources.get(name) == {"workspace": True}, f"{name} missing from the root [tool.uv.sources]"
    assert root["tool"]["uv"]["workspace"]["members"] == ["shared", "packages/*"]


@pytest.mark.parametrize("package", PACKAGES, ids=SLUGS)
def test_package_names_map_one_to_one(package: Path) -> None:
    slug, slug_u = package.name, package.name.replace("-", "_")
    meta = _pyproject(package)
    assert meta["project"]["name"] == f"iclr25-{slug}"
    assert meta["project"]["scripts"] == {f"iclr25-{slug}": f"iclr25.{slug_u}.cli:main"}
    assert meta["project"]["entry-points"]["iclr25.papers"] == {slug: f"iclr25.{slug_u}:PAPER"}
    assert meta["tool"]["uv"]["build-backend"]["module-name"] == f"iclr25.{slug_u}"
    assert meta["tool"]["uv"]["sources"]["iclr25-shared"] == {"workspace": True}
    assert (package / "src" / "iclr25" / slug_u / "__init__.py").is_file()
    assert (package / "tests").is_dir() and list((package / "tests").glob("test_*.py"))
    assert (package / "README.md").is_file()


def test_namespace_is_pep420() -> None:
    stray = [p for p in ROOT.glob("**/src/iclr25/__init__.py") if ".venv" not in p.parts]
    assert stray == [], f"iclr25 must stay a namespace package; remove {stray}"


def test_every_package_registers_its_paper() -> None:
    papers = discover_papers()
    assert sorted(papers) == SLUGS
    for slug, paper in papers.items():
        assert paper.module == "iclr25." + slug.replace("-", "_")
        assert paper.cli == f"{paper.module}.cli:main"
        assert paper.reproduce == f"{paper.module}.reproduce:run"
        assert "quick" in paper.scales


def _best_wall_time(cmd: list[str], tries: int = 3) -> tuple[float, subprocess.CompletedProcess[str]]:
    best, result = float("inf"), None
    for _ in range(tries):
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        best = min(best, time.perf_counter() - start)
        if best < 1.0:
            break
    assert result is not None
    return best, result


def test_umbrella_list_is_fast() -> None:
    seconds, result = _best_wall_time([str(BIN / "iclr25"), "list"])
    assert result.returncode == 0, result.stderr
    for slug in SLUGS:
        assert slug in result.stdout
    assert seconds < 1.0, f"`iclr25 list` took {seconds:.2f} s"


@pytest.mark.parametrize("slug", SLUGS)
def test_package_help_is_fast(slug: str) -> None:
    seconds, result = _best_wall_time([str(BIN / f"iclr25-{slug}"), "--help"])
    assert result.returncode == 0, result.stderr
    assert "reproduce" in result.stdout
    assert seconds < 1.0, f"`iclr25-{slug} --help` took {seconds:.2f} s"


@pytest.mark.parametrize("slug", SLUGS)
def test_committed_results_match_readme(slug: str) -> None:
    results = ROOT / "packages" / slug / "results" / "quick" / "results.json"
    assert results.is_file(), f"{slug}: commit results/quick/results.json"
    report = Report.read(results)
    assert report.paper == slug and report.scale == "quick"
    assert report.claims, f"{slug}: the quick reproduction reports no claims"
    block = readme_block(report)
    readme = (ROOT / "packages" / slug / "README.md").read_text()
    assert block in readme, f"{slug}: README results block is stale; run `uv run iclr25 readme {slug}`"
    size = sum(p.stat().st_size for p in results.parent.rglob("*") if p.is_file())
    assert size < 1_000_000, f"{slug}: committed results are {size} bytes (limit 1 MB)"


@pytest.mark.parametrize("slug", SLUGS)
def test_readme_paper_header_matches_paper_toml(slug: str) -> None:
    """The header block right after the README's first heading is generated from the package's paper.toml."""
    from iclr25.shared.paper import README_HEADER_BEGIN, Paper

    paper = Paper.load("iclr25." + slug.replace("-", "_"))
    lines = (ROOT / "packages" / slug / "README.md").read_text().splitlines()
    assert lines[0].startswith("# ") and lines[2] == README_HEADER_BEGIN, (
        f"{slug}: README needs the paper header markers right after its first heading"
    )
    header = paper.readme_header()
    assert header in "\n".join(lines), f"{slug}: README paper header is stale; run `uv run iclr25 readme {slug}`"


def test_root_readme_table_matches_committed_results() -> None:
    readme = (ROOT / "README.md").read_text()
    for slug in SLUGS:
        row = next((line for line in readme.splitlines() if line.startswith(f"| [{slug}](packages/{slug})")), None)
        assert row is not None, f"root README table lacks {slug}"
        claims = Report.read(ROOT / "packages" / slug / "results" / "quick").claims
        gated = [c for c in claims if c.gated]
        reported = [c for c in claims if not c.gated]
        counts = f"{sum(c.holds for c in gated)}/{len(gated)} · {sum(c.holds for c in reported)}/{len(reported)}"
        assert row.rstrip().endswith(f"| {counts} |"), (
            f"{slug}: root README says {row.split('|')[-2]!r}, results say {counts}"
        )


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv")
def test_wheels_hold_only_their_own_module(tmp_path: Path) -> None:
    env = {**os.environ, "UV_OFFLINE": "1"}
    subprocess.run(
        ["uv", "build", "--all-packages", "--wheel", "--out-dir", str(tmp_path), "--quiet"],
        cwd=ROOT,
        check=True,
        env=env,
        timeout=300,
    )
    expected = {"shared": "iclr25/shared/", **{s.replace("-", "_"): f"iclr25/{s.replace('-', '_')}/" for s in SLUGS}}
    wheels = sorted(tmp_path.glob("*.whl"))
    assert len(wheels) == len(expected)
    for wheel in wheels:
        dist = wheel.name.split("-")[0]  # iclr25_eci_conformal
        module = dist.removeprefix("iclr25_")
        names = zipfile.ZipFile(wheel).namelist()
        files = [n for n in names if ".dist-info/" not in n and not n.endswith("/")]
        assert files, f"{wheel.name} is empty"
        assert all(n.startswith(expected[module]) for n in files), f"{wheel.name} holds {files}"
        assert "iclr25/__init__.py" not in files


@pytest.mark.skipif(not (BIN / "check-jsonschema").exists(), reason="needs check-jsonschema")
def test_workflows_match_the_github_schema() -> None:
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert {w.name for w in workflows} >= {"ci.yml", "bench.yml"}
    result = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, workflows)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ci_script_runs_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    for step in ("uv lock --check", "uv sync --locked", "ruff check", "ruff format --check"):
        assert step in script
    command = re.search(r"^uv run pytest.*$", readme, re.MULTILINE)
    assert command is not None, "README must show the test command"
    assert command.group(0) in script


def test_workflow_matrices_are_derived_from_the_packages_folder() -> None:
    import json

    import yaml

    workflows = ROOT / ".github" / "workflows"
    ci = yaml.safe_load((workflows / "ci.yml").read_text())
    bench = yaml.safe_load((workflows / "bench.yml").read_text())
    assert ci["jobs"]["packages"]["strategy"]["matrix"]["package"] == "${{ fromJSON(needs.discover.outputs.packages) }}"
    assert bench["jobs"]["reproduce"]["strategy"]["matrix"]["paper"] == "${{ fromJSON(needs.discover.outputs.papers) }}"
    assert ".ci/list-packages paths" in str(ci["jobs"]["discover"]) and ".ci/list-packages slugs" in str(bench)
    listing = [sys.executable, str(ROOT / ".ci" / "list-packages")]
    paths = json.loads(subprocess.run([*listing, "paths"], capture_output=True, text=True, check=True).stdout)
    slugs = json.loads(subprocess.run([*listing, "slugs"], capture_output=True, text=True, check=True).stdout)
    assert paths == ["shared", *(f"packages/{s}" for s in SLUGS)] and slugs == SLUGS


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("eci-conformal-v0.1.0", "dist=iclr25-eci-conformal"),
        ("shared-v0.1.0", "dist=iclr25-shared"),
        ("eci-conformal-v9.9.9", "tag says 9.9.9"),
        ("no-such-paper-v0.1.0", "no package 'no-such-paper'"),
        ("eci-conformal", "not of the form"),
    ],
)
def test_release_tags_map_to_one_package(tag: str, expected: str) -> None:
    result = subprocess.run([sys.executable, str(ROOT / ".ci" / "release-target"), tag], capture_output=True, text=True)
    assert expected in result.stdout + result.stderr
    assert (result.returncode == 0) == expected.startswith("dist=")
