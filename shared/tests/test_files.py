"""The guarded writer: new files, run folders the project made, never a user's file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclr25.shared.files import (
    LEDGER,
    UnsafeWriteError,
    append_to_log,
    check_writable,
    claim_path,
    save_arrays,
    write_json,
    write_text,
)
from iclr25.shared.run import MARKER, RunFolderError, open_run_folder, read_marker


def test_a_new_file_is_written_and_an_existing_one_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "speed.json"
    write_json(out, {"a": 1})
    assert json.loads(out.read_text()) == {"a": 1}
    with pytest.raises(UnsafeWriteError, match="already exists"):
        write_json(out, {"a": 2})
    assert json.loads(out.read_text()) == {"a": 1}


def test_overwrite_replaces_only_an_unchanged_file_the_project_wrote(tmp_path: Path) -> None:
    mine = tmp_path / "mine.json"
    mine.write_text("user data\n")
    with pytest.raises(UnsafeWriteError, match="not written by iclr25"):
        write_text(mine, "x", overwrite=True)
    assert mine.read_text() == "user data\n"

    ours = tmp_path / "ours.npz"
    save_arrays(ours, {"x": [1, 2]})
    save_arrays(ours, {"x": [3]}, overwrite=True)  # ours, unchanged since: replaced
    ours.write_bytes(b"edited by hand")
    with pytest.raises(UnsafeWriteError, match="changed since"):
        save_arrays(ours, {"x": [4]}, overwrite=True)
    assert ours.read_bytes() == b"edited by hand"


def test_a_folder_or_a_symlink_is_never_a_target(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(UnsafeWriteError, match="is a folder"):
        check_writable(tmp_path / "dir")
    target = tmp_path / "target.txt"
    target.write_text("keep")
    (tmp_path / "link.txt").symlink_to(target)
    with pytest.raises(UnsafeWriteError):
        write_text(tmp_path / "link.txt", "x", overwrite=True)
    assert target.read_text() == "keep"
    with pytest.raises(UnsafeWriteError, match="already exists"):
        claim_path(target)


def test_overwrite_of_a_run_folder_keeps_the_files_a_user_added(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with open_run_folder(out, paper="demo", command="train") as folder:
        write_text(folder / "result.json", "{}\n")
        write_text(folder / "sub" / "curve.csv", "1\n")
    assert read_marker(out)["files"] == ["result.json", "sub/curve.csv"]
    (out / "notes.txt").write_text("my notes")
    (out / "sub" / "mine.csv").write_text("mine")

    with open_run_folder(out, overwrite=True, paper="demo", command="train") as folder:
        write_text(folder / "result.json", '{"new": true}\n')
        with pytest.raises(UnsafeWriteError, match="never replaced"):
            write_text(folder / "notes.txt", "clobbered")
    assert (out / "notes.txt").read_text() == "my notes"
    assert (out / "sub" / "mine.csv").read_text() == "mine"
    assert json.loads((out / "result.json").read_text()) == {"new": True}
    assert not (out / "sub" / "curve.csv").exists()  # the old run's own file went with it
    assert read_marker(out)["files"] == ["result.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no staging or trash left behind

    with open_run_folder(out, overwrite=True, paper="demo", command="train") as folder:  # carried again
        write_text(folder / "result.json", "{}\n")
    assert (out / "notes.txt").read_text() == "my notes"


def test_a_failed_replacement_leaves_the_old_run_and_the_users_files(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with open_run_folder(out, paper="demo", command="train") as folder:
        write_text(folder / "result.json", "old\n")
    (out / "notes.txt").write_text("my notes")

    def failing_rerun() -> None:
        with open_run_folder(out, overwrite=True, paper="demo", command="train") as folder:
            write_text(folder / "result.json", "new\n")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing_rerun()
    assert (out / "result.json").read_text() == "old\n"
    assert (out / "notes.txt").read_text() == "my notes"


def test_a_run_folder_that_did_not_record_its_files_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "old-run"
    out.mkdir()
    (out / MARKER).write_text(json.dumps({"iclr25_run": 1, "status": "complete"}))
    (out / "results.json").write_text("{}")
    with pytest.raises(RunFolderError, match="did not record"):
        open_run_folder(out, overwrite=True, paper="demo", command="train").__enter__()
    assert (out / "results.json").read_text() == "{}"


def test_writes_inside_a_held_run_folder_need_no_overwrite(tmp_path: Path) -> None:
    with open_run_folder(tmp_path / "run", paper="demo", command="train") as folder:
        write_text(folder / "a.txt", "1")
        write_text(folder / "a.txt", "2")  # the run rewrites its own file
        assert not (folder / LEDGER).exists()
    with pytest.raises(UnsafeWriteError, match="already exists"):  # the run is over: the folder is no longer held
        write_text(tmp_path / "run" / "a.txt", "3")


def test_logs_are_appended_only_when_they_are_logs(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    is_log = lambda text: all(line.startswith("{") for line in text.splitlines())  # noqa: E731
    append_to_log(log, '{"a": 1}\n', is_log)
    append_to_log(log, '{"a": 2}\n', is_log)
    assert log.read_text() == '{"a": 1}\n{"a": 2}\n'
    other = tmp_path / "thesis.tex"
    other.write_text("\\section{x}\n")
    with pytest.raises(UnsafeWriteError, match="not a file this command appends to"):
        append_to_log(other, '{"a": 3}\n', is_log)
    assert other.read_text() == "\\section{x}\n"
