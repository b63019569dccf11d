"""Files are data: a crafted checkpoint, array file or pickled batch is refused and never runs; good files load."""

from __future__ import annotations

import gzip
import io
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from iclr25.shared.safeload import (
    MissingFileError,
    UnsafeFileError,
    load_checkpoint,
    load_npy,
    load_npz,
    read_jsonl,
    reading_file,
    restricted_pickle_load,
)


class _Marker:
    """Unpickling this would run `touch <marker>` through `os.system`: the marker shows whether code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "MARKER"


def _assert_one_line(err: pytest.ExceptionInfo, path: Path) -> None:
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message


def _cifar_batch(n: int = 4) -> dict:
    rng = np.random.default_rng(0)
    return {
        b"batch_label": b"training batch 1 of 5",
        b"labels": [int(v) for v in rng.integers(0, 10, n)],
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        b"filenames": [f"img_{i}.png".encode() for i in range(n)],
    }


# -- torch checkpoints --------------------------------------------------------------------------------------------


def test_checkpoint_with_reduce_is_refused_and_never_runs(tmp_path: Path, marker: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"state_dict": {"w": torch.zeros(2)}, "evil": _Marker(marker)}, path)
    with pytest.raises(UnsafeFileError, match=r"refused.*system") as err:
        load_checkpoint(path)
    _assert_one_line(err, path)
    assert not marker.exists()


def test_plain_pickle_as_checkpoint_is_refused(tmp_path: Path, marker: Path) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    for protocol in (0, 2, 4, 5):
        path.write_bytes(pickle.dumps(_Marker(marker), protocol=protocol))
        with pytest.raises(UnsafeFileError) as err:
            load_checkpoint(path)
        _assert_one_line(err, path)
    assert not marker.exists()


def test_legacy_format_checkpoint_is_refused(tmp_path: Path, marker: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "old.pt"
    torch.save({"w": torch.zeros(2), "evil": _Marker(marker)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(UnsafeFileError, match="refused") as err:
        load_checkpoint(path)
    _assert_one_line(err, path)
    assert not marker.exists()
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    assert torch.equal(load_checkpoint(path)["w"], torch.ones(2))


def test_checkpoint_loads_and_checks_keys(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"config": {"width": 8, "mult": (1, 2), "name": "x"}, "state_dict": {"w": torch.ones(3)}}, path)
    ckpt = load_checkpoint(path, required_keys=("config", "state_dict"))
    assert ckpt["config"] == {"width": 8, "mult": (1, 2), "name": "x"}
    assert torch.equal(ckpt["state_dict"]["w"], torch.ones(3))
    with pytest.raises(UnsafeFileError, match="lacks 'arch'") as err:
        load_checkpoint(path, required_keys=("arch",), what="checkpoint written by `x train`")
    _assert_one_line(err, path)
    torch.save([1, 2], path)
    with pytest.raises(UnsafeFileError, match="not a dict"):
        load_checkpoint(path, required_keys=("arch",))


def test_checkpoint_allow_listed_types_load(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "arrays.pt"
    torch.save({"x": np.arange(3.0)}, path)
    with pytest.raises(UnsafeFileError, match="_reconstruct"):
        load_checkpoint(path)  # not allow-listed by default
    allowed = [np.ndarray, np.dtype, type(np.dtype(np.float64)), *_reconstruct_functions()]
    assert np.array_equal(load_checkpoint(path, allowed_types=allowed)["x"], np.arange(3.0))
    with pytest.raises(UnsafeFileError):
        load_checkpoint(path)  # the allow-list was scoped to the call


def _reconstruct_functions() -> list:
    core = getattr(np, "_core", None) or np.core
    return [core.multiarray._reconstruct]


@pytest.mark.parametrize(
    ("content", "match"),
    [(b"", "EOFError"), (b"definitely not a checkpoint", "not a PyTorch checkpoint"), (b"PK\x03\x04trunc", "not a")],
)
def test_corrupt_checkpoint_is_one_line(tmp_path: Path, content: bytes, match: str) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(UnsafeFileError, match=match) as err:
        load_checkpoint(path)
    _assert_one_line(err, path)


def test_truncated_checkpoint_is_one_line(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.zeros(100)}, path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(UnsafeFileError) as err:
        load_checkpoint(path)
    _assert_one_line(err, path)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="does not exist") as err:
        load_checkpoint(tmp_path / "nope.pt")
    assert isinstance(err.value, FileNotFoundError)
    assert isinstance(err.value, ValueError)
    with pytest.raises(UnsafeFileError, match="not a file"):
        load_npy(tmp_path)
    with pytest.raises(MissingFileError):
        restricted_pickle_load(tmp_path / "data_batch_1")


# -- NumPy files ---------------------------------------------------------------------------------------------------


def _object_array(marker: Path) -> np.ndarray:
    arr = np.empty(2, dtype=object)
    arr[0] = _Marker(marker)
    arr[1] = 1
    return arr


def test_npy_object_array_is_refused(tmp_path: Path, marker: Path) -> None:
    path = tmp_path / "x.npy"
    np.save(path, _object_array(marker), allow_pickle=True)
    for mmap_mode in (None, "r"):
        with pytest.raises(UnsafeFileError, match="pickled Python objects") as err:
            load_npy(path, mmap_mode=mmap_mode)
        _assert_one_line(err, path)
    assert not marker.exists()


def test_npz_object_array_is_refused(tmp_path: Path, marker: Path) -> None:
    path = tmp_path / "x.npz"
    np.savez(path, good=np.zeros(3), bad=_object_array(marker))
    with pytest.raises(UnsafeFileError, match="pickled Python objects") as err:
        load_npz(path)
    _assert_one_line(err, path)
    assert load_npz(path, keys=["good"])["good"].shape == (3,)  # only what is asked is read
    assert not marker.exists()


def test_pickle_posing_as_numpy_file_is_refused(tmp_path: Path, marker: Path) -> None:
    for name in ("x.npy", "x.npz"):
        path = tmp_path / name
        path.write_bytes(pickle.dumps(_Marker(marker), protocol=4))
        loader = load_npy if name.endswith(".npy") else load_npz
        with pytest.raises(UnsafeFileError, match="Python pickle") as err:
            loader(path)
        _assert_one_line(err, path)
    assert not marker.exists()


def test_numpy_files_load(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(6).reshape(2, 3))
    np.savez(tmp_path / "b.npz", x=np.ones(2), y=np.arange(3))
    assert load_npy(tmp_path / "a.npy").tolist() == [[0, 1, 2], [3, 4, 5]]
    assert load_npy(tmp_path / "a.npy", mmap_mode="r").shape == (2, 3)
    data = load_npz(tmp_path / "b.npz")
    assert sorted(data) == ["x", "y"]
    assert data["y"].tolist() == [0, 1, 2]
    with pytest.raises(UnsafeFileError, match="lacks arrays \\['z'\\]"):
        load_npz(tmp_path / "b.npz", keys=["x", "z"])
    with pytest.raises(UnsafeFileError, match=r"single .npy"):
        load_npz(tmp_path / "a.npy")
    with pytest.raises(UnsafeFileError, match=r".npz archive"):
        load_npy(tmp_path / "b.npz")
    (tmp_path / "c.npy").write_text("just text")
    with pytest.raises(UnsafeFileError, match=r"neither a .npy nor a .npz"):
        load_npy(tmp_path / "c.npy")


# -- pickled dataset batches ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_malicious_batch_is_refused(tmp_path: Path, marker: Path, protocol: int) -> None:
    path = tmp_path / "data_batch_1"
    batch = _cifar_batch()
    batch[b"data"] = _Marker(marker)
    path.write_bytes(pickle.dumps(batch, protocol=protocol))
    with pytest.raises(UnsafeFileError, match=r"refused: it would import .*system") as err:
        restricted_pickle_load(path, encoding="bytes")
    _assert_one_line(err, path)
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_cifar_batches_load(tmp_path: Path, protocol: int) -> None:
    batch = _cifar_batch()
    batch[b"mean"] = np.linspace(0, 1, 3072, dtype=np.float32)  # ImageNet32 train batches also hold a mean
    batch[b"fine_labels"] = list(np.arange(4, dtype=np.int64))  # NumPy scalars, as a hand-made batch may hold
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps(batch, protocol=protocol))
    loaded = restricted_pickle_load(path, encoding="bytes")
    assert loaded[b"labels"] == batch[b"labels"]
    assert np.array_equal(loaded[b"data"], batch[b"data"])
    assert loaded[b"data"].dtype == np.uint8
    assert np.array_equal(loaded[b"mean"], batch[b"mean"])
    assert loaded[b"fine_labels"] == [0, 1, 2, 3]
    with path.open("rb") as f:  # a file object works too
        assert restricted_pickle_load(f, encoding="bytes")[b"filenames"] == batch[b"filenames"]


def test_batch_written_by_numpy_1_loads(tmp_path: Path) -> None:
    """CIFAR's batches predate NumPy 2: their arrays refer to `numpy.core.multiarray._reconstruct`."""
    raw = pickle.dumps(_cifar_batch(), protocol=2)
    if b"numpy._core.multiarray" in raw:
        raw = raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    path = tmp_path / "test_batch"
    path.write_bytes(raw)
    loaded = restricted_pickle_load(path, encoding="bytes")
    assert loaded[b"data"].shape == (4, 3072)


def test_corrupt_batch_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps(_cifar_batch(), protocol=2)[:100])
    with pytest.raises(UnsafeFileError, match="not a pickled data batch") as err:
        restricted_pickle_load(path, encoding="bytes")
    _assert_one_line(err, path)
    with pytest.raises(UnsafeFileError, match="<stream>"):
        restricted_pickle_load(io.BytesIO(b"garbage"))


def test_restricted_pickle_admits_only_the_allow_list(tmp_path: Path) -> None:
    path = tmp_path / "x.pkl"
    path.write_bytes(pickle.dumps({"a": [1, 2.5, "s", b"b", None, True, (1, 2)]}))
    assert restricted_pickle_load(path, allowed=set()) == {"a": [1, 2.5, "s", b"b", None, True, (1, 2)]}
    path.write_bytes(pickle.dumps(np.zeros(2), protocol=2))
    with pytest.raises(UnsafeFileError, match="_reconstruct"):
        restricted_pickle_load(path, allowed=set())
    path.write_bytes(pickle.dumps({1, 2}, protocol=2))  # a set needs builtins.set: not in CIFAR's files
    with pytest.raises(UnsafeFileError, match=r"builtin\w*\.set"):
        restricted_pickle_load(path)


# -- other parsers -------------------------------------------------------------------------------------------------


def test_reading_file_turns_parser_errors_into_one_line(tmp_path: Path) -> None:
    import json

    path = tmp_path / "tokenizer.json"
    path.write_bytes(pickle.dumps({"x": 1}))
    with pytest.raises(UnsafeFileError, match=r"is not a tokenizer.json") as err, reading_file(path, "tokenizer.json"):
        json.loads(path.read_bytes())
    _assert_one_line(err, path)
    with pytest.raises(MissingFileError), reading_file(tmp_path / "none.json", "tokenizer.json"):
        pass


def test_yaml_configs_use_the_safe_loader(tmp_path: Path, marker: Path) -> None:
    """`--config` goes through yaml.safe_load: a python/object tag is an error, not a call."""
    from dataclasses import dataclass

    from iclr25.shared.cli import CliError, build_config

    @dataclass(frozen=True)
    class Config:
        steps: int = 1

    path = tmp_path / "evil.yaml"
    path.write_text(f'steps: !!python/object/apply:os.system ["touch {marker}"]\n')
    with pytest.raises((CliError, ValueError)) as err:
        build_config(Config(), path)
    assert "\n" not in str(err.value)
    assert not marker.exists()


def test_read_jsonl_yields_records_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "a"}\n\n  \n[1, 2]\n', encoding="utf-8")
    assert list(read_jsonl(path)) == [(f"{path}:1", {"text": "a"}), (f"{path}:4", [1, 2])]


def test_read_jsonl_reads_gzip_shards(tmp_path: Path) -> None:
    path = tmp_path / "c4.json.gz"
    path.write_bytes(gzip.compress(b'{"text": "a"}\n{"text": "b"}\n'))
    assert [record["text"] for _, record in read_jsonl(path)] == ["a", "b"]
    path.write_bytes(b"not gzip at all")
    with pytest.raises(UnsafeFileError, match="not a gzip stream"):
        list(read_jsonl(path))


def test_read_jsonl_reads_zstd_shards(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    path = tmp_path / "a.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "a"}\n{"text": "b"}\n'))
    assert [record["text"] for _, record in read_jsonl(path)] == ["a", "b"]
    path.write_bytes(b"not zstd at all")
    with pytest.raises(UnsafeFileError, match="not a zstandard stream"):
        list(read_jsonl(path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"text": "ok"}\n{broken\n', r"b\.jsonl:2: not valid JSON"),
        (b'{"text": "ok"}\n\xff\xfe\x00\x80\n', r"b\.jsonl: not UTF-8 text \(expected a JSON-lines file\)"),
    ],
)
def test_read_jsonl_names_the_bad_line(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "b.jsonl").write_bytes(content)
    with pytest.raises(UnsafeFileError, match=message):
        list(read_jsonl(tmp_path / "b.jsonl"))
    with pytest.raises(MissingFileError, match="does not exist"):
        list(read_jsonl(tmp_path / "missing.jsonl"))
