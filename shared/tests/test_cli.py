"""CLI helpers (config merging, overrides, one-line errors) and the umbrella `iclr25` command."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from iclr25.shared import cli, run
from iclr25.shared.paper import Paper


@dataclass(frozen=True)
class Config:
    steps: int = 10
    lr: float = 0.1
    name: str = "a"
    fast: bool = False
    widths: tuple[int, ...] = (1, 2)
    limit: float | None = None


def test_overrides_are_coerced_to_field_types() -> None:
    config = cli.build_config(Config(), None, ["steps=20", "lr=1e-3", "fast=true", "widths=3,4,5", "limit=none"])
    assert config == Config(steps=20, lr=1e-3, name="a", fast=True, widths=(3, 4, 5), limit=None)
    assert cli.build_config(Config(), None, ["limit=2.5"]).limit == 2.5


def test_yaml_config_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("steps: 5\nname: b\n")
    config = cli.build_config(Config(), path, ["steps=7"])
    assert (config.steps, config.name) == (7, "b")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["nope=1"], "unknown override key 'nope'"),
        (["steps=abc"], "steps expects int"),
        (["steps=1.5"], "steps expects int"),
        (["fast=maybe"], "fast expects bool"),
        (["justtext"], "not of the form key=value"),
    ],
)
def test_bad_overrides_raise_cli_errors(overrides: list[str], message: str) -> None:
    with pytest.raises(cli.CliError, match=message):
        cli.build_config(Config(), None, overrides)


def test_bad_config_files(tmp_path: Path) -> None:
    with pytest.raises(cli.CliError, match="does not exist"):
        cli.build_config(Config(), tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(cli.CliError, match="mapping"):
        cli.build_config(Config(), tmp_path / "list.yaml")
    (tmp_path / "bad.yaml").write_text("a: [1\n")
    with pytest.raises(cli.CliError, match="not valid YAML"):
        cli.build_config(Config(), tmp_path / "bad.yaml")


def test_guarded_turns_user_errors_into_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    @cli.guarded("prog")
    def main() -> int:
        raise ValueError("alpha must be in (0, 1), got 2")

    assert main() == 2
    err = capsys.readouterr().err
    assert err == "prog: error: alpha must be in (0, 1), got 2\n"


def test_parser_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.make_parser("prog", "demo")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.add_run_args(sub.add_parser("reproduce"))
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["reproduce", "--scale", "huge"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'huge'" in err
    args = parser.parse_args(["reproduce", "--seed", "3", "lr=0.5"])
    assert (args.scale, args.seed, args.wandb, args.overrides) == ("quick", 3, "off", ["lr=0.5"])


def test_default_run_dir_is_under_runs() -> None:
    path = run.default_run_dir("demo", "reproduce", "quick")
    assert path.parts[:2] == ("runs", "demo") and path.name.startswith("reproduce-quick-")


@pytest.fixture
def fake_paper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paper:
    """A paper whose reproduction writes a real report, importable from a temporary module."""
    (tmp_path / "fake_iclr25_paper.py").write_text(
        textwrap.dedent(
            """
            from iclr25.shared.results import Claim
            from iclr25.shared.run import start_run

            PRESETS = {"quick": {"steps": 1}, "full": {"steps": 2}}

            def run(scale, out, *, seed=0, device="auto", wandb="off", overwrite=False, config=None):
                with start_run("fake", scale, PRESETS, out=out, seed=seed, overwrite=overwrite, config=config) as run:
                    holds = scale != "full"
                    claim = Claim("works", "it works", paper=1.0, ours=float(seed), margin=">= 0", holds=holds, gated=True)
                    return run.report([claim], {})

            def main(argv=None):
                print("fake cli", argv)
                return 0
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "fake_iclr25_paper", raising=False)  # not another test's copy
    paper = Paper(
        slug="fake",
        title="A Fake Paper",
        authors="A. Author",
        arxiv="0000.00000",
        code="",
        cli="fake_iclr25_paper:main",
        reproduce="fake_iclr25_paper:run",
    )
    monkeypatch.setattr(cli, "discover_papers", lambda: {"fake": paper})
    return paper


def test_umbrella_list_info_and_forwarding(fake_paper: Paper, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list"]) == 0
    assert "fake  A Fake Paper" in capsys.readouterr().out
    assert cli.main(["info", "fake"]) == 0
    out = capsys.readouterr().out
    assert "uv pip install ./shared ./packages/fake" in out and "import iclr25.fake" in out
    assert cli.main(["fake", "train", "--x"]) == 0
    assert "fake cli ['train', '--x']" in capsys.readouterr().out
    assert cli.main(["info", "other"]) == 2
    assert "unknown paper 'other'" in capsys.readouterr().err


def test_umbrella_reproduce_all_prints_claims_table(
    fake_paper: Paper, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs"
    assert cli.main(["reproduce", "--all", "--out", str(out), "--seed", "4"]) == 0
    printed = capsys.readouterr().out
    assert "| fake | works | 1 | 4 | >= 0 | holds (gated) |" in printed
    assert (out / "fake" / "results.json").is_file()  # --all: one folder per paper
    # the folder exists now: a second run refuses to overwrite it and says so
    assert cli.main(["reproduce", "fake", "--out", str(out / "fake")]) == 2
    assert "already holds a complete run" in capsys.readouterr().err
    assert cli.main(["reproduce", "fake", "--out", str(out / "fake"), "--overwrite", "--scale", "full"]) == 1
    assert "gated claim 'works' does not hold" in capsys.readouterr().err
    assert cli.main(["reproduce"]) == 2
    # several papers by name: a folder per paper; a name given twice runs once; an unknown name is one line
    assert cli.main(["reproduce", "fake", "fake", "--out", str(tmp_path / "named")]) == 0
    assert (tmp_path / "named" / "results.json").is_file()
    assert cli.main(["reproduce", "fake", "nosuch", "--out", str(tmp_path / "two")]) == 2
    assert "unknown paper 'nosuch'" in capsys.readouterr().err and not (tmp_path / "two").exists()


def test_reproduce_command_helper(fake_paper: Paper, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = fake_paper.load_reproduce()
    args = argparse.Namespace(
        scale="quick",
        config=None,
        overrides=["steps=3"],
        out=tmp_path / "r",
        seed=1,
        device="cpu",
        wandb="off",
        overwrite=False,
    )
    assert cli.reproduce_command("fake", args, run, {"quick": Config()}) == 0
    assert "| works |" in capsys.readouterr().out


def test_umbrella_with_no_papers(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "discover_papers", dict)
    assert cli.main(["list"]) == 0
    assert "No iclr25 paper packages are installed" in capsys.readouterr().out
    assert cli.main(["reproduce", "--all"]) == 0
    assert "nothing to reproduce" in capsys.readouterr().out


def test_umbrella_console_script_answers_bad_input_without_traceback() -> None:
    result = subprocess.run([sys.executable, "-m", "iclr25.shared.cli", "bogus"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_paper_validates_its_fields() -> None:
    with pytest.raises(ValueError, match="kebab-case"):
        Paper(slug="Bad Slug", title="t", authors="a", arxiv="x", code="", cli="m:f", reproduce="m:g")
    with pytest.raises(ValueError, match="module:function"):
        Paper(slug="ok", title="t", authors="a", arxiv="x", code="", cli="m.f", reproduce="m:g")
    paper = Paper(slug="my-paper", title="t", authors="a", arxiv="x", code="", cli="m:f", reproduce="m:g")
    assert (paper.module, paper.distribution) == ("iclr25.my_paper", "iclr25-my-paper")


def test_resolve_preset() -> None:
    presets = {"quick": Config(steps=1), "full": Config(steps=2)}
    assert run.resolve_preset(presets, "full") == Config(steps=2)
    own = Config(steps=9)
    assert run.resolve_preset(presets, "quick", own) is own
    with pytest.raises(ValueError, match="unknown scale 'huge': scale must be one of quick, full"):
        run.resolve_preset(presets, "huge")


def test_umbrella_readme_refreshes_the_results_block(
    fake_paper: Paper, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fake paper's module sits in tmp_path; make tmp_path its source checkout.
    assert cli.main(["readme", "fake"]) == 2
    assert "no source checkout" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "iclr25-fake"\n')
    readme = tmp_path / "README.md"
    readme.write_text(
        "# fake\n\n<!-- paper:begin (generated from paper.toml) -->\n<!-- paper:end -->\n\n"
        "<!-- results:quick begin (old) -->\n| stale |\n<!-- results:quick end -->\n\nmore\n"
    )
    assert cli.main(["readme", "fake"]) == 2
    assert "no committed results" in capsys.readouterr().err
    fake_paper.load_reproduce()("quick", tmp_path / "results" / "quick", seed=3)
    assert cli.main(["readme", "fake", "--check"]) == 1
    assert "fake: README results block differs" in capsys.readouterr().err
    assert cli.main(["readme", "--all"]) == 0
    assert "updated" in capsys.readouterr().out
    text = readme.read_text()
    assert "| stale |" not in text and "| works | 1 | 3 | >= 0 | holds (gated) |" in text and text.endswith("more\n")
    assert cli.main(["readme", "fake", "--check"]) == 0
    assert cli.main(["readme", "fake"]) == 0
    assert "already up to date" in capsys.readouterr().out
    readme.write_text("# fake, no block\n")
    assert cli.main(["readme", "fake"]) == 2
    assert "no results block for scale 'quick'" in capsys.readouterr().err
    assert cli.main(["readme"]) == 2


def test_umbrella_readme_renders_and_checks_the_paper_header(
    fake_paper: Paper, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "iclr25-fake"\n')
    fake_paper.load_reproduce()("quick", tmp_path / "results" / "quick", seed=3)
    readme = tmp_path / "README.md"
    readme.write_text("# fake\n\n<!-- results:quick begin (x) -->\n<!-- results:quick end -->\n\nmore\n")
    assert cli.main(["readme", "fake", "--check"]) == 1
    assert "fake: README paper header differs from paper.toml" in capsys.readouterr().err
    assert cli.main(["readme", "fake"]) == 2  # no markers: say where they belong
    assert "no paper header block" in capsys.readouterr().err
    readme.write_text(
        "# fake\n\n<!-- paper:begin (generated from paper.toml) -->\nold\n<!-- paper:end -->\n\n"
        "<!-- results:quick begin (x) -->\n<!-- results:quick end -->\n\nmore\n"
    )
    assert cli.main(["readme", "fake"]) == 0
    assert "README paper header updated" in capsys.readouterr().out
    text = readme.read_text()
    assert fake_paper.readme_header() in text and "\nold\n" not in text and text.endswith("more\n")
    assert "**A Fake Paper**" in text and "arXiv [0000.00000](https://arxiv.org/abs/0000.00000)" in text
    assert cli.main(["readme", "--all", "--check"]) == 0
    # The record changes (a new field): the header is stale until `iclr25 readme` runs again.
    changed = replace(fake_paper, openreview="AbCdEfGh12", settings={"model": "MLP", "steps": "10"})
    monkeypatch.setattr(cli, "discover_papers", lambda: {"fake": changed})
    assert cli.main(["readme", "--all", "--check"]) == 1
    assert "fake: README paper header differs" in capsys.readouterr().err
    assert cli.main(["readme", "fake"]) == 0
    text = readme.read_text()
    assert "[AbCdEfGh12](https://openreview.net/forum?id=AbCdEfGh12)" in text and "  - model: MLP\n" in text
    assert cli.main(["readme", "--all", "--check"]) == 0


def test_rerun_command_names_the_seed_and_every_changed_field() -> None:
    presets = {"quick": Config()}
    assert run.rerun_command("demo", "quick", Config(), presets) == "iclr25-demo reproduce --scale quick"
    changed = Config(steps=5, widths=(3, 4), limit=0.5, fast=True)
    command = run.rerun_command("demo", "quick", changed, presets, seed=2)
    assert command == "iclr25-demo reproduce --scale quick --seed 2 steps=5 fast=True widths=3,4 limit=0.5"
    assert cli.build_config(presets["quick"], None, command.split()[6:]) == changed  # read back as it was
    # a config given without a preset of that name: only the scale is known
    assert run.rerun_command("demo", "custom", changed, presets) == "iclr25-demo reproduce --scale custom"


def test_verb_flags_come_from_the_config_dataclass() -> None:
    parser = cli.make_parser("prog", "demo")
    cli.add_config_args(parser, Config(), exclude=("limit",))
    assert "(default: 1,2)" in parser.format_help() and "--limit" not in parser.format_help()
    args = parser.parse_args(["--steps", "7", "--widths", "3,4"])
    assert cli.config_from_args(args, Config()) == Config(steps=7, widths=(3, 4))
    with pytest.raises(cli.CliError, match="steps expects int"):
        cli.config_from_args(parser.parse_args(["--steps", "x"]), Config())


def test_ctrl_c_exits_130_and_all_prints_the_papers_that_finished(
    fake_paper: Paper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    module = __import__("fake_iclr25_paper")

    def interrupted(**kwargs: object) -> None:
        raise KeyboardInterrupt

    module.interrupted = interrupted
    second = dataclasses.replace(fake_paper, slug="zz-fake", reproduce="fake_iclr25_paper:interrupted")
    monkeypatch.setattr(cli, "discover_papers", lambda: {"fake": fake_paper, "zz-fake": second})
    assert cli.main(["reproduce", "--all", "--out", str(tmp_path / "runs")]) == 130
    captured = capsys.readouterr()
    assert "| fake | works |" in captured.out
    assert "iclr25: interrupted (1 of 2 papers finished)" in captured.err
    assert cli.main(["reproduce", "zz-fake", "--out", str(tmp_path / "one")]) == 130
    assert "interrupted (0 of 1 papers finished)" in capsys.readouterr().err


def test_a_binary_config_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(cli.CliError, match=r"bin\.yaml is not a text file"):
        cli.build_config(Config(), tmp_path / "bin.yaml")


def test_package_main_dispatches_verbs_and_applies_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from iclr25.shared import progress

    def parser() -> argparse.ArgumentParser:
        top = cli.make_parser("iclr25-demo", "demo")
        sub = top.add_subparsers(dest="command", required=True)
        cli.add_verb_args(sub.add_parser("hello"))
        return top

    calls: list[tuple[str, bool]] = []

    def hello(args: argparse.Namespace) -> int:
        calls.append((args.command, progress.is_quiet()))
        if args.seed == 3:
            raise ValueError("bad value for hello")
        return 0

    main = cli.package_main("iclr25-demo", parser, {"hello": hello})
    assert main.__doc__ == "Entry point of `iclr25-demo`."
    monkeypatch.delenv(progress.QUIET_ENV, raising=False)  # restored after the test
    assert main(["hello", "--quiet"]) == 0 and calls == [("hello", True)]
    assert main(["hello", "--seed", "3"]) == 2
    assert capsys.readouterr().err == "iclr25-demo: error: bad value for hello\n"


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ({"runtime_s": 700.0, "cpu_s": 100.0}, 100.0),  # one thread on a busy machine: its CPU time
        ({"runtime_s": 100.0, "cpu_s": 190.0}, 100.0),  # two threads on an idle machine: its wall time
        ({"runtime_s": 50.0}, 50.0),
        ({"runtime_s": 0.0, "cpu_s": True}, None),
    ],
)
def test_all_estimates_a_paper_from_its_recorded_run(
    fake_paper: Paper,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    recorded: dict[str, float],
    expected: float | None,
) -> None:
    (tmp_path / "results" / "quick").mkdir(parents=True)
    (tmp_path / "results" / "quick" / "results.json").write_text(json.dumps(recorded))
    monkeypatch.setattr(cli, "package_root", lambda paper: tmp_path)
    assert cli._recorded_runtime(fake_paper, "quick") == expected


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads process states from /proc (Linux)")
def test_a_jobs_worker_ends_when_its_command_is_killed(tmp_path: Path) -> None:
    """A worker of `reproduce --jobs` watches the command that started it: killed with SIGTERM (no Ctrl-C reaching
    the workers), the command leaves no worker running on unseen."""
    import subprocess
    import sys
    import time

    worker = (
        "import os, time\n"
        "from iclr25.shared.cli import exit_with_parent\n"
        "exit_with_parent(os.getppid(), every=0.1)\n"
        "time.sleep(30)\n"
    )
    command = (
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', {worker!r}])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(30)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", command], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(1.0)
    assert _alive(child)  # the worker runs while its command does
    parent.terminate()
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie waiting to be reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"
