"""Load a user's files as data: nothing in a checkpoint, array file or dataset batch is ever run.

A pickle can name any importable callable and have it called while it loads (`__reduce__`), so a crafted
checkpoint or dataset batch would run code the moment it is read. Every loader here refuses that:

- `load_checkpoint`: `torch.load(weights_only=True)`: tensors, plain containers and numbers, plus the few
  types a package allow-lists itself (`allowed_types`);
- `load_npy` / `load_npz`: NumPy files with `allow_pickle=False` (object arrays are refused);
- `restricted_pickle_load`: for formats that really are pickles (CIFAR-10/100 and ImageNet32 python
  batches): only the globals those files contain (NumPy's array reconstruction) may be imported;
- `reading_file`: a context manager that turns any failure of another parser (a tokenizer.json, a model
  folder) into the same one-line error;
- `read_jsonl`: the records of a JSON-lines file (`.jsonl`, `.gz`, or `.zst` with `zstandard` installed), each
  with its `path:line` for the caller's own errors.

A missing, foreign, corrupt or unsafe file raises `UnsafeFileError` (a `ValueError`, which the package CLIs
report as one stderr line and exit code 2) whose one-line message names the path and what was wrong.
YAML configs go through `yaml.safe_load` (`iclr25.shared.cli.build_config`).

Standard library only at module level; torch and numpy are imported inside the functions.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import pickle
import re
import warnings
import zlib
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "NUMPY_ARRAY_GLOBALS",
    "MissingFileError",
    "UnsafeFileError",
    "error_summary",
    "load_checkpoint",
    "load_npy",
    "load_npz",
    "read_jsonl",
    "reading_file",
    "restricted_pickle_load",
]

# What a pickled NumPy array or scalar refers to, in the spellings of NumPy 1.x (`numpy.core`) and 2.x
# (`numpy._core`): protocol 0-4 rebuild an array with `_reconstruct(ndarray, shape, typecode)` +
# `ndarray.__setstate__`, protocol 5 with `_frombuffer`, a scalar (a label list of np.int64) with
# `scalar(dtype, raw bytes)`, and Python 3 protocol-2 pickles write bytes as `_codecs.encode(text, "latin1")`.
NUMPY_ARRAY_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("_codecs", "encode"),
    }
)

_MAX_REASON = 160


class UnsafeFileError(ValueError):
    """A file that cannot be loaded as data: missing, foreign, corrupt, or asking to run code. One-line message."""


class MissingFileError(UnsafeFileError, FileNotFoundError):
    """The file does not exist (both an `UnsafeFileError` and a `FileNotFoundError`)."""


def error_summary(exc: BaseException) -> str:
    """One short line describing `exc`: its first non-empty message line (or its type), ANSI codes stripped."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    line = lines[0]
    if isinstance(exc, LookupError | EOFError) or not re.search(r"[A-Za-z]{3}", line):
        line = f"{type(exc).__name__}: {line}"
    if len(line) > _MAX_REASON and ". " in line[:_MAX_REASON]:
        line = line[: line.index(". ", 0, _MAX_REASON)]
    return line if len(line) <= _MAX_REASON else line[: _MAX_REASON - 3] + "..."


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _check_file(path: Path, what: str) -> None:
    if not path.exists():
        raise MissingFileError(_one_line(f"{path} does not exist (expected a {what})"))
    if not path.is_file():
        raise UnsafeFileError(_one_line(f"{path} is not a file (expected a {what})"))


@contextlib.contextmanager
def reading_file(path: str | os.PathLike[str], what: str) -> Iterator[Path]:
    """Turn any failure while parsing `path` inside the block into a one-line `UnsafeFileError` naming it.

    Use around parsers that never run code but fail in their own ways (a `tokenizers` JSON, a model folder)::

        with reading_file(path, "tokenizer.json") as p:
            tok = Tokenizer.from_file(str(p))
    """
    path = Path(path)
    if not path.exists():
        raise MissingFileError(_one_line(f"{path} does not exist (expected a {what})"))
    try:
        yield path
    except UnsafeFileError:
        raise
    except Exception as e:  # any parser failure means "not a file of this kind"
        raise UnsafeFileError(_one_line(f"{path} is not a {what} ({error_summary(e)})")) from e


# -- JSON lines ---------------------------------------------------------------------------------------------------


def read_jsonl(path: str | os.PathLike[str], what: str = "JSON-lines file") -> Iterator[tuple[str, Any]]:
    """Yield `(where, record)` for each non-blank line of a `.jsonl` file (or a gzip `.gz` or zstd `.zst` one).

    `where` is `path:line`, for the caller's errors about a record. A missing file, a binary or non-UTF-8 file,
    a bad zstd stream or a line that is not JSON raises a one-line `UnsafeFileError` naming the path and line.
    """
    path = Path(path)
    _check_file(path, what)
    try:
        for n, line in enumerate(_text_lines(path), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise UnsafeFileError(f"{path}:{n}: not valid JSON ({e.msg})") from None
            yield f"{path}:{n}", record
    except UnicodeDecodeError:  # a binary file (a pickle, an archive) is no JSON-lines file
        raise UnsafeFileError(f"{path}: not UTF-8 text (expected a {what})") from None


def _text_lines(path: Path) -> Iterator[str]:
    if path.suffix == ".gz":
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                yield from f
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise UnsafeFileError(_one_line(f"{path}: not a gzip stream ({e})")) from None
        return
    if path.suffix != ".zst":
        with path.open(encoding="utf-8") as f:
            yield from f
        return
    try:
        import zstandard
    except ImportError:
        raise UnsafeFileError(
            f"{path}: reading .zst files needs the zstandard package (pip install zstandard)"
        ) from None
    with path.open("rb") as raw:
        try:
            yield from io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8")
        except zstandard.ZstdError as e:
            raise UnsafeFileError(_one_line(f"{path}: not a zstandard stream ({e})")) from None


# -- PyTorch checkpoints ----------------------------------------------------------------------------------------


def _torch_reason(exc: BaseException) -> tuple[bool, str]:
    """(unsafe, reason) for a failed `torch.load(weights_only=True)`."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    found = re.search(r"GLOBAL ([\w.]+)", text)
    if found:
        return True, f"it would import {found.group(1)}, which is not an allowed type"
    found = re.search(r"WeightsUnpickler error:\s*(.+)", text.replace("\n", " "))
    if found or "Weights only load failed" in text:
        detail = _one_line(found.group(1)).split(" Check the documentation")[0] if found else "not weights-only"
        return False, f"weights-only loading cannot read it ({detail[:_MAX_REASON]})"
    if isinstance(exc, IsADirectoryError):
        return False, "it is a directory"
    return False, error_summary(exc)


def load_checkpoint(
    path: str | os.PathLike[str],
    *,
    allowed_types: Iterable[Any] = (),
    map_location: Any = "cpu",
    required_keys: Collection[str] = (),
    what: str = "PyTorch checkpoint",
) -> Any:
    """`torch.load(path, weights_only=True)`: tensors, containers and numbers only; nothing in the file runs.

    `allowed_types`: a package's own small, allow-listed classes or functions (as for
    `torch.serialization.safe_globals`) that its checkpoints legitimately contain. `required_keys`: when given,
    the file must hold a dict with these keys (else it is a foreign file). `what` names the expected kind of file
    in the error message, e.g. "checkpoint written by `iclr25-x train`".

    Raises `UnsafeFileError` (one line, naming `path`) for a missing, foreign, corrupt or unsafe file.
    """
    path = Path(path)
    _check_file(path, what)
    import torch

    allowed = list(allowed_types)
    serialization = torch.serialization
    if allowed and hasattr(serialization, "safe_globals"):
        scope: Any = serialization.safe_globals(allowed)
    else:
        if allowed:  # torch < 2.5: no scoped form
            serialization.add_safe_globals(allowed)
        scope = contextlib.nullcontext()
    try:
        with scope, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. torch's pickle-protocol notes: the CLI's stderr stays one line
            obj = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # unpickling errors have many types; each means "not a loadable checkpoint"
        unsafe, reason = _torch_reason(e)
        verdict = "refused" if unsafe else f"not a {what}"
        suffix = "; nothing in it was run" if unsafe else ""
        raise UnsafeFileError(_one_line(f"{path} is {verdict}: {reason}{suffix}")) from e
    if required_keys:
        if not isinstance(obj, dict):
            raise UnsafeFileError(_one_line(f"{path} is not a {what}: it holds a {type(obj).__name__}, not a dict"))
        missing = [k for k in required_keys if k not in obj]
        if missing:
            raise UnsafeFileError(_one_line(f"{path} is not a {what}: it lacks {', '.join(map(repr, missing))}"))
    return obj


# -- NumPy files ---------------------------------------------------------------------------------------------------


def _numpy_error(path: Path, what: str, exc: BaseException) -> UnsafeFileError:
    text = str(exc)
    if "Object arrays" in text or "Python objects" in text:
        msg = f"{path} is refused: it holds pickled Python objects (object arrays), which are never loaded"
    elif "pickled" in text:  # neither .npy nor .npz: NumPy would have unpickled it
        is_pickle = False
        with contextlib.suppress(OSError), path.open("rb") as f:
            is_pickle = f.read(1) == b"\x80"
        msg = (
            f"{path} is refused: it is a Python pickle, which is never loaded"
            if is_pickle
            else f"{path} is not a {what} (neither a .npy nor a .npz file)"
        )
    else:
        msg = f"{path} is not a {what} ({error_summary(exc)})"
    return UnsafeFileError(_one_line(msg))


def load_npy(path: str | os.PathLike[str], *, mmap_mode: str | None = None, what: str = "NumPy .npy file") -> Any:
    """`np.load(path, allow_pickle=False)` of a `.npy` array (optionally memory-mapped); object arrays refused."""
    path = Path(path)
    _check_file(path, what)
    import numpy as np

    try:
        arr = np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except Exception as e:
        raise _numpy_error(path, what, e) from e
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise UnsafeFileError(_one_line(f"{path} is not a {what}: it is a .npz archive of several arrays"))
    return arr


def load_npz(
    path: str | os.PathLike[str], *, keys: Iterable[str] | None = None, what: str = "NumPy .npz archive"
) -> dict[str, Any]:
    """Every array of a `.npz` (or just `keys`) as a dict, read eagerly with `allow_pickle=False`.

    Object arrays are refused; a requested key the archive lacks is an `UnsafeFileError` naming what it has.
    """
    path = Path(path)
    _check_file(path, what)
    import numpy as np

    try:
        archive = np.load(path, allow_pickle=False)
    except Exception as e:
        raise _numpy_error(path, what, e) from e
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise UnsafeFileError(_one_line(f"{path} is not a {what}: it is a single .npy array"))
    with archive:
        names = list(archive.files)
        wanted = names if keys is None else list(keys)
        missing = [k for k in wanted if k not in names]
        if missing:
            raise UnsafeFileError(_one_line(f"{path} lacks arrays {missing}; it has {names}"))
        try:
            return {k: archive[k] for k in wanted}
        except Exception as e:
            raise _numpy_error(path, what, e) from e


# -- pickles that are a data format ------------------------------------------------------------------------------


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file: IO[bytes], allowed: Collection[tuple[str, str]], source: str, what: str, **kw: Any):
        super().__init__(file, **kw)
        self._allowed = allowed
        self._source = source
        self._what = what

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._allowed:
            raise UnsafeFileError(
                _one_line(
                    f"{self._source} is refused: it would import {module}.{name}, which a {self._what} does not "
                    "contain; nothing in it was run"
                )
            )
        if module.startswith("numpy.core"):  # NumPy 2 keeps the old module only as a warning shim
            import numpy as np

            if hasattr(np, "_core"):
                module = "numpy._core" + module[len("numpy.core") :]
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafeFileError(
            _one_line(f"{self._source} is refused: it uses persistent ids, which a {self._what} does not")
        )


def restricted_pickle_load(
    fileobj_or_path: str | os.PathLike[str] | IO[bytes],
    allowed: Collection[tuple[str, str]] = NUMPY_ARRAY_GLOBALS,
    *,
    encoding: str = "ASCII",
    what: str = "pickled data batch",
) -> Any:
    """Unpickle a file that is a pickle by format (CIFAR-10/100, ImageNet32 python batches) as data only.

    Only the `(module, name)` globals in `allowed` may be imported (by default NumPy's array reconstruction);
    dicts, lists, tuples, str, bytes, numbers and booleans need no import. Anything else (a `__reduce__` that
    calls `os.system`, `eval`, ...) raises `UnsafeFileError` before it is called. `encoding="bytes"` reads
    Python 2 pickles (CIFAR's) with byte-string keys.
    """
    if isinstance(fileobj_or_path, str | os.PathLike):
        path = Path(fileobj_or_path)
        _check_file(path, what)
        with path.open("rb") as f:
            return restricted_pickle_load(f, allowed, encoding=encoding, what=what)
    source = str(getattr(fileobj_or_path, "name", "<stream>"))
    unpickler = _RestrictedUnpickler(
        fileobj_or_path, frozenset(allowed), source, what, encoding=encoding, fix_imports=True
    )
    try:
        return unpickler.load()
    except UnsafeFileError:
        raise
    except Exception as e:  # UnpicklingError, EOFError, ValueError, ... : a corrupt or foreign file
        raise UnsafeFileError(_one_line(f"{source} is not a {what} ({error_summary(e)})")) from e
