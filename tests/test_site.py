"""The results site (`iclr25 site build`): generated from committed results, guarded output, one-line errors, and
the real site checked in headless Chromium through Playwright (pages, claims, figures, links, search).

The browser tests need the `docs` dependency group (`uv sync --group docs`) and a system Chromium (Debian's
`chromium` package; `ICLR25_CHROMIUM` names another binary). Without them they are skipped, except under `CI=true`,
where a missing browser fails them. Screenshots of each page type are saved under `test-artifacts/site/`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iclr25.shared.cli import main
from iclr25.shared.results import Claim, Report

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "site"
HAVE_MKDOCS = all(importlib.util.find_spec(m) is not None for m in ("mkdocs", "material"))
needs_mkdocs = pytest.mark.skipif(not HAVE_MKDOCS, reason="needs the docs dependency group: uv sync --group docs")


# ------------------------------------------------------------------------------------------------ tiny packages
def _png(width: int = 4, height: int = 3) -> bytes:
    """A small valid RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x80\x20\x20" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _tiny_package(root: Path, slug: str, claims: list[Claim], history: bool = False, record: str = "") -> Path:
    """packages/<slug>/ with a README (results block, analysis with an image, Not done), results/quick/ and a
    paper.toml; returns its results folder."""
    package = root / "packages" / slug
    results = package / "results" / "quick"
    results.mkdir(parents=True)
    report = Report(paper=slug, scale="quick", claims=claims, figures=["curve.png"], command=f"iclr25-{slug} reproduce")
    report.runtime_s, report.cpu_s = 75.0, 60.0
    (results / "results.json").write_text(json.dumps(report.to_dict(), indent=2))
    (results / "curve.png").write_bytes(_png())
    (results / "extra.png").write_bytes(_png(5, 5))
    (package / "README.md").write_text(
        f"# iclr25-{slug}\n\n## The idea\n\nskip me\n\n## Results (quick scale)\n\n"
        "<!-- results:quick begin (generated from results/quick/results.json) -->\n| generated |\n"
        "<!-- results:quick end -->\n\n"
        f"Analysis of {slug}: the margin is wide. See [the idea](#the-idea) and [code](src/x.py).\n\n"
        "![an extra figure](results/quick/extra.png)\n\n```\n[not a link](here)\n```\n\n"
        f"## Not done\n\n- {slug} full scale, never run.\n\n## Citation\n\nnone\n"
    )
    module = package / "src" / "iclr25" / slug.replace("-", "_")
    module.mkdir(parents=True)
    (module / "paper.toml").write_text(
        f'title = "The {slug} Paper on Widgets"\nauthors = "A. Author"\narxiv = "2401.00001"\n' + record
    )
    if history:
        line = {"paper": slug, "scale": "quick", "created": "2025-01-01T00:00:00", "claims": {claims[0].name: 0.5}}
        later = {**line, "created": "2025-02-01T00:00:00", "claims": {claims[0].name: 0.7}}
        (results / "history.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(later) + "\n")
    return results


def _claims() -> tuple[list[Claim], list[Claim]]:
    return (
        [
            Claim("coverage_a", "covers 1-alpha", 0.9, 0.8972, "|ours - 0.9| <= 0.015", True, True),
            Claim("narrower_a", "narrower than <baseline> | *not* bold", 0.5, 1.02, "<= 0.95x baseline", False, False),
        ],
        [Claim("speedup_b", "faster", "2x", "1.1x", ">= 1.5x", False, True, None)],
    )


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not JSON"),
        (json.dumps({"paper": "x", "scale": "quick", "schema_version": 1, "claims": [{"name": "a"}]}), "missing"),
        (json.dumps({"paper": "x", "scale": "quick", "schema_version": 1, "runtime_s": "soon"}), "runtime_s"),
        (json.dumps({"paper": "x", "scale": "quick", "schema_version": 7}), "schema version"),
        (json.dumps([1, 2]), "JSON object"),
    ],
)
def test_a_malformed_results_json_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    folder = tmp_path / "packages" / "broken" / "results" / "quick"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(content)
    code, _, err = _run(["site", "build", "--results", str(folder), "--out", str(tmp_path / "site")], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert str(folder / "results.json") in err and expected in err, err
    assert not (tmp_path / "site").exists()


def test_without_mkdocs_build_says_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _tiny_package(tmp_path, "alpha", _claims()[0])
    monkeypatch.setitem(sys.modules, "mkdocs", None)  # `import mkdocs...` now raises ImportError
    code, _, err = _run(["site", "build", "--results", str(results), "--out", str(tmp_path / "site")], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "uv sync --group docs" in err, err
    assert not (tmp_path / "site").exists()


@needs_mkdocs
def test_a_site_from_two_tiny_packages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claims_a, claims_b = _claims()
    record = (
        'openreview = "AbCdEfGh12"\ncode = "org/alpha-code"\ncode_commit = "05a1bf2"\nlicence = "MIT"\n'
        '[settings]\nmodel = "ResNet-18"\ndata = "CIFAR-10"\n'
    )
    a = _tiny_package(tmp_path, "alpha", claims_a, history=True, record=record)
    b = _tiny_package(tmp_path, "beta", claims_b)
    out = tmp_path / "site"
    build = ["site", "build", "--results", str(a), "--results", str(b), "--out", str(out)]
    code, stdout, err = _run(build, capsys)
    assert code == 0, err
    assert "2 papers" in stdout and not err, err
    index = (out / "index.html").read_text()
    assert "The alpha Paper on Widgets" in index and "papers/beta/" in index and "arxiv.org/abs/2401.00001" in index
    assert "1/1 gated" in index and "0/1 reported" in index and "0/1 gated" in index
    page = (out / "papers" / "alpha" / "index.html").read_text()
    assert "✓ holds" in page and "✗ not reproduced" in page and 'class="claim-fails"' in page
    # the page header reads the whole paper record: OpenReview, the code at its commit, licence, settings
    assert (
        "https://openreview.net/forum?id=AbCdEfGh12" in page
        and "https://github.com/org/alpha-code/tree/05a1bf2" in page
    )
    assert "(MIT)" in page and "model: ResNet-18; data: CIFAR-10" in page
    beta = (out / "papers" / "beta" / "index.html").read_text()
    assert "openreview.net" not in beta and "Main experiment settings" not in beta
    assert "narrower than &lt;baseline&gt; | *not* bold" in page  # statements are text, never markup
    assert "Analysis of alpha: the margin is wide." in page and "alpha full scale, never run." in page
    assert "skip me" not in page and "| generated |" not in page
    assert "iclr25-alpha reproduce" in page and "1.2 min" in page
    assert 'alt="alpha: curve (quick reproduction)"' in page
    assert (out / "papers" / "alpha" / "curve.png").read_bytes() == _png()
    assert (out / "papers" / "alpha" / "readme" / "results" / "quick" / "extra.png").is_file()
    assert (out / "papers" / "alpha" / "history-coverage_a.png").is_file() and "history of claim" in page
    assert "src/x.py" not in page  # no repository given: a relative README link becomes text
    claims = re.sub(r"<[^>]+>", "", (out / "claims" / "index.html").read_text())  # the text, without tags
    assert all(c.name in claims for c in claims_a + claims_b)
    vocabulary = (out / "vocabulary" / "index.html").read_text()
    assert all(word in vocabulary for word in ("gated", "reported", "margin", "holds", "status"))
    assert json.loads((out / ".iclr25-run.json").read_text())["command"] == "site build"

    # an earlier site is replaced only with --overwrite; a file a user added to it is kept
    code, _, err = _run(build, capsys)
    assert code == 2 and "--overwrite" in err
    (out / "mine.txt").write_text("keep")
    code, _, err = _run([*build, "--overwrite", "--repo-url", "https://github.com/org/iclr25"], capsys)
    assert code == 0, err
    assert (out / "mine.txt").read_text() == "keep"
    page = (out / "papers" / "alpha" / "index.html").read_text()
    assert "https://github.com/org/iclr25/blob/main/packages/alpha/src/x.py" in page
    assert "https://github.com/org/iclr25/blob/main/packages/alpha/README.md#the-idea" in page


@needs_mkdocs
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_folder_the_site_builder_did_not_make_is_never_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overwrite: bool
) -> None:
    results = _tiny_package(tmp_path, "alpha", _claims()[0])
    users = tmp_path / "notes"
    users.mkdir()
    (users / "thesis.md").write_text("mine")
    run = tmp_path / "run"
    run.mkdir()
    (run / ".iclr25-run.json").write_text(json.dumps({"iclr25_run": 1, "command": "reproduce", "files": []}))
    (run / "results.json").write_text("{}")
    for folder in (users, run):
        argv = ["site", "build", "--results", str(results), "--out", str(folder)]
        code, _, err = _run([*argv, "--overwrite"] if overwrite else argv, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(folder) in err, err
    assert [p.name for p in users.iterdir()] == ["thesis.md"] and (users / "thesis.md").read_text() == "mine"
    assert sorted(p.name for p in run.iterdir()) == [".iclr25-run.json", "results.json"]


def test_site_help_lists_build_and_serve(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["site", "--help"])
    assert exit_.value.code == 0
    assert "build" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ the browser
def _chromium() -> str | None:
    given = os.environ.get("ICLR25_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _need_browser() -> str:
    """The Chromium binary; skip (or, under CI=true, fail) when it or Playwright is missing."""
    missing = []
    if importlib.util.find_spec("playwright") is None:
        missing.append("Playwright for Python (uv sync --group docs)")
    if not HAVE_MKDOCS:
        missing.append("MkDocs + Material (uv sync --group docs)")
    chromium = _chromium()
    if chromium is None:
        missing.append("a system Chromium (apt-get install chromium, or ICLR25_CHROMIUM=/path/to/chrome)")
    if missing:
        reason = "browser tests need " + " and ".join(missing)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason + " (CI=true: not skipped)")
        pytest.skip(reason)
    assert chromium is not None
    return chromium


@pytest.fixture(scope="session")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of every installed paper's committed quick results, built once per session."""
    _need_browser()
    from iclr25.shared.site import build_site, installed_sources

    sources = installed_sources("quick")
    assert sources, "no installed paper has committed results/quick"
    out, warnings = build_site(sources, tmp_path_factory.mktemp("site") / "site")
    assert not warnings, warnings
    return out


@pytest.fixture(scope="session")
def base_url(real_site: Path) -> Iterator[str]:
    """The built site served by Python's http.server in a child process (the test process has no sockets)."""
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(real_site)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        match = re.search(r"port (\d+)", server.stdout.readline())
        assert match, "http.server did not start"
        yield f"http://127.0.0.1:{match.group(1)}/"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    chromium = _need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield instance
        instance.close()


def _papers() -> list[str]:
    return sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "results" / "quick" / "results.json").is_file())


def _page_paths() -> list[str]:
    return ["", "claims/", "vocabulary/", *(f"papers/{slug}/" for slug in _papers())]


COLLECT = """() => ({
  ids: Array.from(document.querySelectorAll("[id]")).map(e => e.id),
  links: Array.from(document.querySelectorAll("a[href]")).map(a => a.href),
  images: Array.from(document.querySelectorAll("article img")).map(
    i => ({src: i.currentSrc || i.src, alt: i.alt, ok: i.complete && i.naturalWidth > 0})),
  claims: Array.from(document.querySelectorAll("div.claims table tbody tr")).map(
    r => Array.from(r.cells).map(c => c.textContent.replace(/\\s+/g, " ").trim())),
  holdsColors: Array.from(document.querySelectorAll(".claim-holds, .claim-fails")).map(
    s => [s.className, getComputedStyle(s).color]),
})"""


@pytest.fixture(scope="session")
def visited(browser: Any, base_url: str) -> dict[str, dict[str, Any]]:
    """Every page of the site loaded once: its console errors, failed requests, ids, links, images and claims."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    # a request still in flight when the next page is opened (the favicon) is aborted: not a failure of the site
    page.on(
        "requestfailed",
        lambda r: (
            problems.append(f"request failed: {r.url} ({r.failure})") if r.failure != "net::ERR_ABORTED" else None
        ),
    )
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    found: dict[str, dict[str, Any]] = {}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for path in _page_paths():
        problems.clear()
        page.goto(base_url + path, wait_until="load")
        data = page.evaluate(COLLECT)
        data["problems"] = list(problems)
        found[path] = data
        kind = {"": "index", "claims/": "claims", "vocabulary/": "vocabulary"}.get(path)
        if kind or path == "papers/eci-conformal/":
            page.screenshot(path=str(ARTIFACTS / f"{kind or 'paper'}.png"))
    context.close()
    return found


@pytest.mark.browser
def test_every_page_loads_without_a_console_error(visited: dict[str, dict[str, Any]]) -> None:
    assert set(visited) == set(_page_paths())
    bad = {path: data["problems"] for path, data in visited.items() if data["problems"]}
    assert not bad, bad


@pytest.mark.browser
def test_every_claim_appears_with_its_value(visited: dict[str, dict[str, Any]]) -> None:
    from iclr25.shared.site import FAILS_TEXT, HOLDS_TEXT, shown_value

    every = {tuple(row[1:]) for row in visited["claims/"]["claims"]}
    total = 0
    for slug in _papers():
        report = Report.read(ROOT / "packages" / slug / "results" / "quick")
        rows = {row[0]: row for row in visited[f"papers/{slug}/"]["claims"]}
        assert len(rows) == len(report.claims), slug
        for claim in report.claims:
            name = " ".join(claim.name.split())
            row = rows.get(name)
            assert row is not None, f"{slug}: claim {claim.name} missing"
            expected = [
                name,
                " ".join(claim.statement.split()),
                shown_value(claim.paper),
                shown_value(claim.ours),
                " ".join(claim.margin.split()),
                HOLDS_TEXT if claim.holds else FAILS_TEXT,
                "gated" if claim.gated else "reported",
            ]
            assert row == expected, f"{slug}: {claim.name}"
            assert tuple(expected) in every, f"{slug}: {claim.name} not on the every-claim page"
        total += len(report.claims)
    assert len(visited["claims/"]["claims"]) == total


@pytest.mark.browser
def test_failing_and_holding_claims_differ_in_colour_and_text(visited: dict[str, dict[str, Any]]) -> None:
    colours = dict(visited["claims/"]["holdsColors"])
    assert {"claim-holds", "claim-fails"} <= set(colours)
    assert colours["claim-holds"] != colours["claim-fails"]


@pytest.mark.browser
def test_every_image_loads_and_has_alt_text(visited: dict[str, dict[str, Any]]) -> None:
    images = [(path, image) for path, data in visited.items() for image in data["images"]]
    assert len(images) >= 19  # every paper shows at least one figure
    broken = [f"{path}: {image['src']}" for path, image in images if not image["ok"]]
    assert not broken, broken
    assert all(image["alt"].strip() for _, image in images)


@pytest.mark.browser
def test_every_internal_link_resolves(visited: dict[str, dict[str, Any]], browser: Any, base_url: str) -> None:
    ids = {base_url + path: set(data["ids"]) for path, data in visited.items()}
    targets = {link for data in visited.values() for link in data["links"] if link.startswith(base_url)}
    assert len(targets) > 3 * len(visited), sorted(targets)  # the navigation alone links every page
    context = browser.new_context()
    broken = []
    for link in sorted(targets):
        page, _, anchor = link.partition("#")
        if page in ids:
            if anchor and anchor not in ids[page]:
                broken.append(f"{link}: no element #{anchor}")
            continue
        response = context.request.get(page)
        if not response.ok:
            broken.append(f"{link}: HTTP {response.status}")
    context.close()
    assert not broken, broken


@pytest.mark.browser
def test_search_finds_a_paper_by_a_word_of_its_title(browser: Any, base_url: str) -> None:
    page = browser.new_page()
    page.goto(base_url, wait_until="load")
    box = page.locator("input.md-search__input")
    box.click()
    hit = page.locator(".md-search-result__item a[href*='papers/etd-exploration/']").first
    for attempt in range(4):  # a query typed before the search worker has loaded its index is not answered
        box.fill("")
        box.type("Episodic")
        try:
            hit.wait_for(state="attached", timeout=3_000)
            break
        except Exception:
            if attempt == 3:
                raise
    assert "Episodic Novelty" in page.locator(".md-search-result").inner_text()
    page.close()


@pytest.mark.browser
def test_claims_table_filters_and_sorts(browser: Any, base_url: str) -> None:
    from iclr25.shared.site import FAILS_TEXT

    page = browser.new_page()
    page.goto(base_url + "claims/", wait_until="load")
    page.select_option("select[data-column='holds']", FAILS_TEXT)
    page.select_option("select[data-column='gated']", "reported")
    visible = page.evaluate(
        """() => Array.from(document.querySelectorAll("div.claims tbody tr")).filter(r => !r.hidden)
             .map(r => [r.cells[6].textContent.trim(), r.cells[7].textContent.trim()])"""
    )
    assert visible and all(row == [FAILS_TEXT, "reported"] for row in visible)
    page.select_option("select[data-column='paper']", "tsc-net")
    assert all(
        r == "tsc-net"
        for r in page.evaluate(
            """() => Array.from(document.querySelectorAll("div.claims tbody tr")).filter(r => !r.hidden)
                 .map(r => r.cells[0].textContent.trim())"""
        )
    )
    page.click("div.claims th:nth-child(2)")  # sort by claim name
    names = page.evaluate(
        """() => Array.from(document.querySelectorAll("div.claims tbody tr")).map(r => r.cells[1].textContent.trim())"""
    )
    assert names == sorted(names, key=str.lower)
    page.close()


@pytest.mark.browser
def test_mobile_layout_and_dark_mode(browser: Any, base_url: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    page.goto(base_url + "papers/eci-conformal/", wait_until="load")
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
    assert page.locator("label.md-header__button[for='__drawer']").is_visible()  # the mobile navigation button
    page.screenshot(path=str(ARTIFACTS / "paper-mobile-dark.png"))
    context.close()
