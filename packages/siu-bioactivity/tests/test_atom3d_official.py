"""Atom3D LMDB files interoperate with Atom3D's own reader and writer, for both serialisation formats.

`atom3d_lmdb_read` / `atom3d_lmdb_write` below transcribe the behaviour of Atom3D's `LMDBDataset` and
`make_lmdb_dataset` (atom3d/datasets/datasets.py, as vendored by the SIU repository): written here from that
behaviour, not copied. What matters for interoperability:

- the reader opens the folder as a directory LMDB and reads three meta keys: `num_examples` (an integer in text),
  `serialization_format` (text) and `id_to_idx`, which it DEserialises WITH THAT FORMAT (pickle for pkl);
- entry `str(i)` is gzip(serialize(entry)); when the entry has a `types` map and the format is json, every key
  whose type string is str(pd.DataFrame) is rebuilt with pd.DataFrame(**value) (`types` must then name every key);
- the writer adds `types` ({key: str(type(value))}, itself included), compresses with gzip level 6, refuses to
  overwrite a key, maps entry['id'] -> index and serialises id_to_idx in the file's format.
"""

from __future__ import annotations

import gzip
import io
import json
import pickle

import lmdb
import numpy as np
import pandas as pd
import pytest

from iclr25.siu_bioactivity.formats import (
    atom3d_to_record,
    label_vector,
    read_atom3d_lmdb,
    to_atom3d_item,
    write_atom3d_lmdb,
)


def _serialize(x, fmt):
    if fmt == "pkl":
        return pickle.dumps(x)
    if fmt == "json":
        return json.dumps(x, default=lambda df: json.loads(df.to_json(orient="split", double_precision=6))).encode()
    raise RuntimeError(fmt)


def _deserialize(data, fmt):
    if fmt == "pkl":
        return pickle.loads(data)  # our own test data only
    if fmt == "json":
        return json.loads(data)
    raise RuntimeError(fmt)


def atom3d_lmdb_read(path):
    """Atom3D's LMDBDataset, transcribed: returns (id_to_idx, [entries])."""
    env = lmdb.open(str(path), max_readers=1, readonly=True, lock=False, readahead=False, meminit=False)
    try:
        with env.begin(write=False) as txn:
            n = int(txn.get(b"num_examples"))
            fmt = txn.get(b"serialization_format").decode()
            id_to_idx = _deserialize(txn.get(b"id_to_idx"), fmt)
            items = []
            for index in range(n):
                with gzip.GzipFile(fileobj=io.BytesIO(txn.get(str(index).encode())), mode="rb") as f:
                    item = _deserialize(f.read(), fmt)
                if "types" in item:
                    for key in list(item):
                        if fmt == "json" and item["types"][key] == str(pd.DataFrame):
                            item[key] = pd.DataFrame(**item[key])
                item.setdefault("file_path", str(path))
                item.setdefault("id", str(index))
                items.append(item)
    finally:
        env.close()
    return id_to_idx, items


def atom3d_lmdb_write(dataset, path, fmt):
    """Atom3D's make_lmdb_dataset, transcribed."""
    env = lmdb.open(str(path), map_size=1 << 28)
    with env.begin(write=True) as txn:
        id_to_idx, i = {}, 0
        try:
            for x in dataset:
                x = dict(x)
                x["types"] = {key: str(type(val)) for key, val in x.items()}
                x["types"]["types"] = str(type(x["types"]))
                buf = io.BytesIO()
                with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6) as f:
                    f.write(_serialize(x, fmt))
                if not txn.put(str(i).encode(), buf.getvalue(), overwrite=False):
                    raise RuntimeError(f"entry {i} exists")
                id_to_idx[x["id"]] = i
                i += 1
        finally:
            txn.put(b"num_examples", str(i).encode())
            txn.put(b"serialization_format", fmt.encode())
            txn.put(b"id_to_idx", _serialize(id_to_idx, fmt))
    env.close()


def _items(n=5, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(5, 12))
        out.append(
            to_atom3d_item(
                {
                    "atoms": [f"{e}{j + 1}" for j, e in enumerate(rng.choice(["C", "N", "O", "Cl"], size=k))],
                    "coordinates": [rng.normal(size=(k, 3))],
                    "pocket_atoms": list(rng.choice(["CA", "N", "O", "CB", "SG"], size=20)),
                    "pocket_coordinates": rng.normal(size=(20, 3)),
                    "source_data": f"P{i:05d},{i}abc",
                    "label": {"ki": float(rng.uniform(4, 9)), "ic50": float(rng.uniform(4, 9))},
                }
            )
        )
    return out


def _same_entry(a, b):
    for key in ("atoms_pocket", "atoms_ligand"):
        assert isinstance(b[key], pd.DataFrame), (key, type(b[key]))
        assert b[key]["element"].tolist() == a[key]["element"].tolist()
        assert np.allclose(b[key][["x", "y", "z"]].to_numpy(float), a[key][["x", "y", "z"]].to_numpy(float), atol=1e-5)
    assert b["scores"] == pytest.approx(a["scores"]) and b["id"] == a["id"] and b["source"] == a["source"]


@pytest.mark.parametrize("fmt", ["pkl", "json"])
def test_project_writer_opens_in_the_atom3d_reader(tmp_path, fmt):
    items = _items()
    write_atom3d_lmdb(items, tmp_path / "db", fmt=fmt)
    id_to_idx, back = atom3d_lmdb_read(tmp_path / "db")
    assert id_to_idx == {x["id"]: i for i, x in enumerate(items)}
    assert len(back) == len(items)
    for a, b in zip(items, back, strict=True):
        _same_entry(a, b)
        assert b["types"]["atoms_ligand"] == str(pd.DataFrame)


@pytest.mark.parametrize("fmt", ["pkl", "json"])
def test_atom3d_writer_opens_in_the_project_reader(tmp_path, fmt):
    items = _items(seed=1)
    atom3d_lmdb_write(items, tmp_path / "db", fmt)
    back = read_atom3d_lmdb(tmp_path / "db")
    assert len(back) == len(items)
    for i, (a, b) in enumerate(zip(items, back, strict=True)):
        _same_entry(a, b)
        rec = atom3d_to_record(b, f"entry {i}")
        assert label_vector(rec["label"]).tolist() == label_vector(a["scores"]).tolist()


def test_the_atom3d_reader_refuses_a_json_id_map_in_a_pkl_file(tmp_path):
    """The broken variant (id_to_idx always JSON, as this package wrote it before): Atom3D cannot open the file."""
    write_atom3d_lmdb(_items(2), tmp_path / "db", fmt="pkl")
    env = lmdb.open(str(tmp_path / "db"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        txn.put(b"id_to_idx", json.dumps({"P00000,0abc": 0}).encode())
    env.close()
    with pytest.raises(pickle.UnpicklingError):
        atom3d_lmdb_read(tmp_path / "db")
    assert len(read_atom3d_lmdb(tmp_path / "db")) == 2  # this package's reader does not depend on the map
