"""The one guarded writer: every file any command writes (results, figures, sweeps, benchmarks, generated data,
checkpoints) goes through `write_text`, `write_bytes`, `write_json`, `write_with`, `append_text` or `claim_path`.

A path may be written when it is
- inside a run folder this process holds (`iclr25.shared.run.RunFolder`): the folder records what its run wrote,
  and a file it carried over from the user is never written over; or
- a new file anywhere else, created without replacing anything (a file that appears meanwhile is not clobbered).

An existing file outside a run folder is replaced only with `overwrite=True` and only when this project wrote it
and nobody changed it since: each folder that receives such a file keeps a ledger (`.iclr25-files.json`) of the
SHA-256 of what the project wrote there. Anything else is refused with one line naming the file, before writing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

LEDGER = ".iclr25-files.json"


class UnsafeWriteError(ValueError):
    """A write that would replace a file the project did not write (or one a user changed since)."""


class HeldFolder(Protocol):
    """What the guard needs of a run folder this process holds (see `iclr25.shared.run.RunFolder`)."""

    work: Path

    def is_foreign(self, relative: str) -> bool: ...


_HELD: list[HeldFolder] = []


def hold(folder: HeldFolder) -> None:
    """Let files be written into `folder.work` (called by the run layer when it claims a run folder)."""
    _HELD.append(folder)


def release(folder: HeldFolder) -> None:
    """Stop writing into `folder` (idempotent)."""
    if folder in _HELD:
        _HELD.remove(folder)


def _holder(path: Path) -> tuple[HeldFolder, str] | None:
    """The held run folder `path` lies in (innermost first) and the path relative to it."""
    resolved = path.resolve()
    for folder in reversed(_HELD):
        work = folder.work.resolve()
        if resolved != work and resolved.is_relative_to(work):
            return folder, resolved.relative_to(work).as_posix()
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ledger(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / LEDGER).read_text())
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}
    )


def _note_in_ledger(path: Path) -> None:
    """Record that the project wrote `path` (as its current content), so `overwrite=True` may replace it later."""
    entries = _ledger(path.parent)
    entries[path.name] = _sha256(path)
    _atomic(path.parent / LEDGER, lambda f: f.write((json.dumps(entries, indent=1, sort_keys=True) + "\n").encode()))


def check_writable(path: str | Path, overwrite: bool = False) -> Path:
    """Refuse, with one line, a write to `path` that could replace a file the project did not write; else return it.

    Call it before any long work whose output goes to `path`, so a bad output path fails at once."""
    path = Path(path)
    held = _holder(path)
    if held is not None:
        folder, relative = held
        if folder.is_foreign(relative):
            raise UnsafeWriteError(
                f"{path} is a file this run folder kept from before (not written by an iclr25 run); it is never "
                "replaced: move it away or choose another --out"
            )
        return path
    if path.is_dir():
        raise UnsafeWriteError(f"{path} is a folder; give a file name to write")
    if not path.exists() and not path.is_symlink():
        return path
    if not overwrite:
        raise UnsafeWriteError(
            f"{path} already exists; choose another path, or pass --overwrite where an earlier iclr25 run wrote it "
            "(nothing was changed)"
        )
    if path.is_symlink() or not path.is_file() or _ledger(path.parent).get(path.name) != _sha256(path):
        raise UnsafeWriteError(
            f"{path} was not written by iclr25 (or was changed since), so --overwrite does not replace it; "
            "choose another path"
        )
    return path


def _atomic(path: Path, fill: Callable[[IO[bytes]], Any], *, replace: bool = True) -> None:
    """Write through a temporary file in the same folder; rename it onto `path` (or, with `replace=False`, link it
    there, which fails rather than replace a file that appeared meanwhile). Permissions follow the umask."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        if replace:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise UnsafeWriteError(f"{path} appeared while it was being written; nothing was replaced") from None
        except OSError:  # a file system without hard links
            if path.exists():
                raise UnsafeWriteError(f"{path} appeared while it was being written; nothing was replaced") from None
            os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_with(
    path: str | Path, fill: Callable[[IO[bytes]], Any], *, overwrite: bool = False, record: bool = True
) -> Path:
    """Write `path` atomically by calling `fill(binary_file)` (e.g. `lambda f: np.savez(f, **arrays)`), after the
    guard's check; the one primitive every other writer here uses. Outside a run folder the file is noted in the
    folder's ledger (so `overwrite=True` may replace it later) unless `record` is False (new source files)."""
    path = check_writable(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    inside = _holder(path) is not None
    existed = path.exists()
    _atomic(path, fill, replace=inside or existed)
    if not inside and record:
        _note_in_ledger(path)
    return path


def write_bytes(path: str | Path, data: bytes, *, overwrite: bool = False, record: bool = True) -> Path:
    """Write `data` to `path` atomically, through the guard."""
    return write_with(path, lambda f: f.write(data), overwrite=overwrite, record=record)


def write_text(path: str | Path, text: str, *, overwrite: bool = False, record: bool = True) -> Path:
    """Write `text` (UTF-8) to `path` atomically, through the guard."""
    return write_bytes(path, text.encode("utf-8"), overwrite=overwrite, record=record)


def write_json(path: str | Path, data: Any, *, overwrite: bool = False, indent: int = 2) -> Path:
    """Write `data` as JSON (NaN/inf refused) atomically, through the guard."""
    from iclr25.shared.results import _jsonable

    return write_text(path, json.dumps(_jsonable(data), indent=indent, allow_nan=False) + "\n", overwrite=overwrite)


def save_arrays(path: str | Path, arrays: dict[str, Any], *, compressed: bool = False, overwrite: bool = False) -> Path:
    """Save NumPy arrays as an `.npz` file, through the guard."""
    import numpy as np

    save = np.savez_compressed if compressed else np.savez
    return write_with(path, lambda f: save(f, **arrays), overwrite=overwrite)


def save_torch(path: str | Path, obj: Any, *, overwrite: bool = False) -> Path:
    """`torch.save(obj)` into `path`, through the guard (checkpoints stay inside run folders)."""
    import torch

    return write_with(path, lambda f: torch.save(obj, f), overwrite=overwrite)


def append_text(path: str | Path, text: str) -> Path:
    """Append `text` to a file inside a run folder this process holds (partial results as they come)."""
    path = Path(path)
    if _holder(path) is None:
        raise UnsafeWriteError(f"{path} is not inside a run folder this run holds; appending there is refused")
    check_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(text)
    return path


def append_to_log(path: str | Path, text: str, is_log: Callable[[str], bool] | None = None) -> Path:
    """Append `text` to a log file the user named for appending (a history file, a CI step summary): a new file, or
    an existing one that `is_log(content)` recognises as such a log (any file when `is_log` is None: the flag's
    contract is to append). Earlier content is never rewritten."""
    path = Path(path)
    if path.exists():
        if path.is_symlink() or not path.is_file():
            raise UnsafeWriteError(f"{path} is not a regular file to append to")
        if is_log is not None and not is_log(path.read_text(encoding="utf-8", errors="replace")):
            raise UnsafeWriteError(f"{path} is not a file this command appends to; choose another path")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(text)
    return path


def remove_own_file(path: str | Path) -> None:
    """Delete a file the project wrote (an old checkpoint): inside a held run folder and not a user's file there, or
    elsewhere only while the ledger says the project wrote it unchanged. Anything else is refused."""
    path = Path(path)
    if not path.exists():
        return
    held = _holder(path)
    ours = (
        not held[0].is_foreign(held[1])
        if held is not None
        else path.is_file() and not path.is_symlink() and _ledger(path.parent).get(path.name) == _sha256(path)
    )
    if not ours or path.is_dir():
        raise UnsafeWriteError(f"{path} was not written by this project's run; it is not deleted")
    path.unlink()


def claim_path(path: str | Path, *, overwrite: bool = False) -> Path:
    """Check `path` for a writer this module cannot wrap (a database environment a library creates, a third-party
    file format writer) and return it; the caller then creates it. Outside run folders it must not exist."""
    path = Path(path)
    if _holder(path) is None and path.exists():
        raise UnsafeWriteError(f"{path} already exists; choose another path (nothing was changed)")
    return check_writable(path, overwrite)


def edit_source_file(path: str | Path, text: str) -> Path:
    """Replace the text of an existing file of a source checkout that a command exists to edit (a package README's
    generated block, by `iclr25 readme`), atomically. Never for a command's outputs: those use the writers above."""
    path = Path(path)
    if not path.is_file():
        raise UnsafeWriteError(f"{path} is not an existing file to edit")
    _atomic(path, lambda f: f.write(text.encode("utf-8")))
    return path
