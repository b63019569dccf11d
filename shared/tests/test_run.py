"""The run layer: safe run folders (marker, lock, replacement), start_run/report, lazy exports, progress, validators."""

from __future__ import annotations

import io
import json
import math
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from iclr25.shared import progress as progresslib
from iclr25.shared import run as runlib
from iclr25.shared import validate
from iclr25.shared.progress import LABEL_ENV, Heartbeat, Progress, set_quiet
from iclr25.shared.results import Claim, Report, RunExistsError
from iclr25.shared.run import MARKER, RunFolder, RunFolderError, check_run_folder, start_run


@dataclass(frozen=True)
class Config:
    steps: int = 3
    lr: float = 0.1


PRESETS = {"quick": Config(), "full": Config(steps=30)}


def _claim(holds: bool = True) -> Claim:
    return Claim("works", "it works", paper=1.0, ours=1.0, margin="== 1", holds=holds, gated=True)


def _finished_run(path: Path, steps: int = 3) -> Report:
    with start_run("demo", "quick", PRESETS, out=path, config=Config(steps=steps)) as run:
        (run.dir / "data.txt").write_text(str(steps))
        return run.report([_claim()], {"steps": run.config.steps})


def test_data_loss_regression_current_folder_is_never_a_run_folder(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "precious").write_text("keep me")
    monkeypatch.chdir(tmp_path)
    for overwrite in (False, True):
        with pytest.raises(RunFolderError, match="current folder"):
            RunFolder(".", overwrite)
    with pytest.raises(RunFolderError, match="parent of the current folder"):
        check_run_folder("..", True)
    with pytest.raises(RunFolderError, match="home folder"):
        check_run_folder(Path.home(), True)
    with pytest.raises(RunFolderError):
        check_run_folder("/", True)
    assert (tmp_path / "precious").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious"]


def test_a_folder_no_run_made_is_never_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("x")
    for overwrite in (False, True):
        with pytest.raises(RunFolderError, match="no iclr25 run made"):
            RunFolder(mine, overwrite)
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunFolderError, match="not a folder"):
        check_run_folder(tmp_path / "file", True)


def test_report_marks_the_run_complete_with_times_and_command(tmp_path: Path) -> None:
    report = _finished_run(tmp_path / "r", steps=7)
    marker = json.loads((tmp_path / "r" / MARKER).read_text())
    assert marker["status"] == "complete" and marker["paper"] == "demo"
    saved = Report.read(tmp_path / "r")
    assert saved.command == "iclr25-demo reproduce --scale quick steps=7" == report.command
    assert saved.runtime_s > 0 and saved.cpu_s >= 0 and saved.environment["iclr25-shared"]
    assert (tmp_path / "r" / "data.txt").read_text() == "7"


def test_existing_run_needs_overwrite_and_a_failed_rerun_keeps_the_old_results(tmp_path: Path) -> None:
    path = tmp_path / "r"
    _finished_run(path, steps=1)
    with pytest.raises(RunExistsError, match="complete run; pass --overwrite"):
        _finished_run(path, steps=2)
    staging = []

    def failing_rerun() -> None:
        with start_run("demo", "quick", PRESETS, out=path, overwrite=True) as run:
            staging.append(run.dir)  # a replacement writes beside the old run
            (run.dir / "data.txt").write_text("partial")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        failing_rerun()
    assert staging[0] != path
    assert (path / "data.txt").read_text() == "1"  # the old run is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["r"]  # no staging folder is left behind
    with start_run("demo", "quick", PRESETS, out=path, overwrite=True, config=Config(steps=5)) as run:
        run.report([_claim()], {})
    assert not (path / "data.txt").exists() and Report.read(path).config["steps"] == 5
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


@pytest.mark.parametrize(("error", "status"), [(RuntimeError, "failed"), (KeyboardInterrupt, "interrupted")])
def test_a_run_that_stops_early_is_marked_incomplete(tmp_path: Path, error: type, status: str) -> None:
    path = tmp_path / "r"
    with pytest.raises(error), start_run("demo", "quick", PRESETS, out=path):
        raise error()
    assert json.loads((path / MARKER).read_text())["status"] == status
    with pytest.raises(RunExistsError, match=f"incomplete run \\({status}"):
        check_run_folder(path)
    check_run_folder(path, overwrite=True)  # a folder a run made may be replaced


def test_a_second_concurrent_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r"
    with start_run("demo", "quick", PRESETS, out=path):
        for overwrite in (False, True):
            with pytest.raises(RunFolderError, match="another run"):
                RunFolder(path, overwrite)
    assert json.loads((path / MARKER).read_text())["status"] == "incomplete"


def test_default_run_dirs_never_collide() -> None:
    names = {runlib.default_run_dir("demo", "reproduce", "quick") for _ in range(2000)}
    assert len(names) == 2000


def test_start_run_checks_its_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        pytest.raises(ValueError, match="unknown scale 'huge'"),
        start_run("demo", "huge", PRESETS, out=tmp_path / "a"),
    ):
        pass
    with (
        pytest.raises(ValueError, match="device must be one of"),
        start_run("demo", "quick", PRESETS, out=tmp_path / "a", device="tpu"),
    ):
        pass
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with (
        pytest.raises(ValueError, match=r"pip install 'iclr25-shared\[wandb\]'"),
        start_run("demo", "quick", PRESETS, out=tmp_path / "a", wandb="offline"),
    ):
        pass
    assert not (tmp_path / "a").exists()  # nothing is created before the flags are checked


def test_open_run_folder_follows_the_same_rules(tmp_path: Path) -> None:
    with runlib.open_run_folder(tmp_path / "t", paper="demo", command="train") as folder:
        (folder / "model.txt").write_text("m")
    assert json.loads((tmp_path / "t" / MARKER).read_text())["status"] == "complete"
    with pytest.raises(RunExistsError):
        runlib.open_run_folder(tmp_path / "t").__enter__()
    with pytest.raises(ValueError, match="bad"), runlib.open_run_folder(tmp_path / "t", overwrite=True) as folder:
        raise ValueError("bad")
    assert (tmp_path / "t" / "model.txt").read_text() == "m"
    with runlib.open_run_folder(tmp_path / "t", overwrite=True) as folder:
        (folder / "other.txt").write_text("o")
    assert sorted(p.name for p in (tmp_path / "t").iterdir() if p.name != runlib.LOCK) == [MARKER, "other.txt"]


def _fake_package(root: Path, init: str) -> None:
    (root / "fake_lazy_pkg").mkdir()
    (root / "fake_lazy_pkg" / "__init__.py").write_text(init)
    (root / "fake_lazy_pkg" / "sub.py").write_text("THING = 42\n\n\ndef helper():\n    return 'h'\n")


def test_lazy_exports_come_from_the_type_checking_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_package(
        tmp_path,
        "from typing import TYPE_CHECKING\n"
        "from iclr25.shared.run import lazy_exports\n"
        "PAPER = 'p'\n"
        "if TYPE_CHECKING:\n"
        "    from fake_lazy_pkg.sub import THING\n"
        "    from .sub import helper as assist\n"
        "__all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, 'PAPER')\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("fake_lazy_pkg", "fake_lazy_pkg.sub"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import fake_lazy_pkg

    assert fake_lazy_pkg.__all__ == ["PAPER", "THING", "assist"]
    assert "fake_lazy_pkg.sub" not in sys.modules  # nothing is imported before it is used
    assert fake_lazy_pkg.THING == 42 and fake_lazy_pkg.assist() == "h"
    assert {"THING", "assist"} <= set(dir(fake_lazy_pkg))
    with pytest.raises(AttributeError, match="no attribute 'other'"):
        fake_lazy_pkg.other  # noqa: B018
    for name in ("fake_lazy_pkg", "fake_lazy_pkg.sub"):
        monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.mark.parametrize(
    ("block", "message"),
    [("", "no 'if TYPE_CHECKING:' block"), ("if TYPE_CHECKING:\n    import fake_lazy_pkg.sub\n", "only 'from")],
)
def test_lazy_exports_refuse_an_init_without_a_block_of_imports(tmp_path: Path, block: str, message: str) -> None:
    init = tmp_path / "__init__.py"
    init.write_text(f"from typing import TYPE_CHECKING\n{block}")
    with pytest.raises(ValueError, match=message):
        runlib.lazy_exports("fake_lazy_pkg", str(init))


def test_reproduction_gives_the_standard_entry_point(tmp_path: Path) -> None:
    import inspect

    seen: list[str] = []

    def refuse_big(scale: str, config: Config) -> None:
        seen.append(scale)
        if config.steps > 10:
            raise ValueError("too many steps")

    @runlib.reproduction("demo", PRESETS, check=refuse_big)
    def run(active: runlib.Run) -> Report:
        """Docs of the body."""
        return active.report([_claim()], {"steps": active.config.steps, "seed": active.seed})

    assert list(inspect.signature(run).parameters) == [
        *("scale", "out", "seed", "device", "wandb", "overwrite", "config", "scale_out")
    ]
    assert run.__doc__ == "Docs of the body." and run.__name__ == "run"
    report = run("quick", tmp_path / "a", seed=7)
    assert report.metrics == {"steps": 3, "seed": 7} and seen == ["quick"]
    assert json.loads((tmp_path / "a" / MARKER).read_text())["status"] == "complete"
    with pytest.raises(ValueError, match="too many steps"):
        run("full", tmp_path / "b")
    assert not (tmp_path / "b").exists()  # refused before the run folder is made
    from iclr25.shared.fabric import ScaleOut

    with pytest.raises(ValueError, match="--resume takes 'auto'"):
        run("quick", tmp_path / "c", scale_out=ScaleOut(resume="some.ckpt"))


def test_progress_lines_in_logs_and_silence_when_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    bar = Progress(range(4), desc="train", unit="step", interval=0.0, stream=stream, quiet=False)
    assert list(bar) == [0, 1, 2, 3]
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("train: 4/4 step (100%)") and "ETA" in lines[-1]
    set_quiet(True)
    try:
        stream = io.StringIO()
        list(Progress(range(4), interval=0.0, stream=stream))
        assert stream.getvalue() == ""
    finally:
        set_quiet(False)


def test_one_log_clock_for_all_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two loops of 9 s each with a 10 s interval: the log still gets a line, ~10 s in, from the second loop."""
    now = [0.0]
    monkeypatch.setattr(progresslib, "time", type("FakeTime", (), {"perf_counter": staticmethod(lambda: now[0])}))
    monkeypatch.setattr(progresslib, "_CLOCK", progresslib._LogClock())  # last line at t=0
    stream = io.StringIO()
    for desc in ("first", "second"):
        for _ in Progress(range(3), desc=desc, unit="step", interval=10.0, stream=stream, quiet=False):
            now[0] += 3.0
    lines = stream.getvalue().splitlines()
    assert lines == ["second: 1/3 step (33%), 0.333 step/s, elapsed 00:03, ETA 00:06"]


def test_heartbeat_fills_silence_in_logs_and_is_quiet_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setenv(LABEL_ENV, "demo")
    with Heartbeat("demo reproduce", interval=0.1, quiet=False, stream=stream):
        bar = Progress(total=10, desc="train", unit="step", interval=60.0, stream=io.StringIO(), quiet=False)
        bar.update(3)
        time.sleep(0.45)  # one long step: the loop itself reports nothing
        bar.close()
        time.sleep(0.3)  # between loops
    lines = stream.getvalue().splitlines()
    loop = [ln for ln in lines if ln.startswith("[demo] train: 3/10 step (30%)")]
    between = [ln for ln in lines if ln.startswith("[demo] demo reproduce: still working, elapsed 00:00")]
    assert len(loop) >= 2 and len(between) >= 1 and len(loop) + len(between) == len(lines), lines
    assert lines.index(between[0]) > lines.index(loop[-1])
    quiet = io.StringIO()
    with Heartbeat("demo reproduce", interval=0.05, quiet=True, stream=quiet) as beat:
        time.sleep(0.2)
        assert beat._thread is None
    assert quiet.getvalue() == ""


def test_a_run_says_it_is_alive_during_a_long_silent_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(progresslib.INTERVAL_ENV, "0.1")
    with start_run("demo", "quick", PRESETS, out=tmp_path / "a") as run:
        time.sleep(0.35)
        run.report([], {})
    assert "demo reproduce: still working, elapsed 00:00" in capsys.readouterr().err
    time.sleep(0.25)  # the heartbeat stopped with the run
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("check", "args", "message"),
    [
        (validate.check_positive, ("lr", -1.0), "lr must be > 0"),
        (validate.check_positive, ("lr", float("nan")), "lr must be a finite number"),
        (validate.check_nonnegative, ("wd", -0.1), "wd must be >= 0"),
        (validate.check_int_at_least, ("steps", 0), "steps must be an integer >= 1"),
        (validate.check_int_at_least, ("steps", True), "steps must be an integer >= 1"),
        (validate.check_int_at_least, ("steps", 2.5), "steps must be an integer >= 1"),
        (validate.check_probability, ("alpha", 1.0), r"alpha must lie in \(0, 1\)"),
        (validate.check_in_range, ("r", 2.0, 0.0, 1.0), r"r must lie in \[0, 1\]"),
        (validate.check_one_of, ("mode", "x", ("a", "b")), "mode must be one of a, b"),
        (validate.check_finite, ("eps", "0.1"), "eps must be a number"),
        (validate.check_nonempty, ("seeds", ()), "seeds must not be empty"),
        (validate.check_bool, ("figures", 1), "figures must be true or false, got 1"),
        (validate.check_text, ("data_dir", None, "a folder path"), "data_dir must be a folder path, got None"),
        (partial(validate.check_text, nonempty=True), ("corpus", " ", "a name"), "corpus must be a name, got ' '"),
    ],
)
def test_validators_reject_bad_values(check, args, message) -> None:
    with pytest.raises(ValueError, match=message):
        check(*args)


def test_validators_accept_good_values() -> None:
    assert validate.check_positive("lr", 0.5) == 0.5
    assert validate.check_int_at_least("steps", 3) == 3
    assert validate.check_probability("alpha", 0.0, closed=True) == 0.0
    assert validate.check_bool("figures", False) is False
    assert (
        validate.check_text("data_dir", "") == "" and validate.check_text("corpus", "c.txt", nonempty=True) == "c.txt"
    )


def test_log_scalars_logs_every_finite_number_of_a_nested_dict(tmp_path: Path) -> None:
    import numpy as np

    with start_run("demo", "quick", PRESETS, out=tmp_path / "run") as run:
        results = {"coverage": np.float64(0.9), "widths": {"mean": 2.5, "all": [1.0, 2.0]}, "ok": True, "nan": math.nan}
        run.log_scalars(results, step=3, prefix="seed/")
        run.report([], {})
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert rows == [{"seed/coverage": 0.9, "seed/widths/mean": 2.5, "step": 3}]
