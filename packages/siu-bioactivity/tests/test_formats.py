"""Spec §9.3-9.4: label order by name, LMDB / final_dic round-trips, element parsing, restricted unpickling."""

from __future__ import annotations

import gzip
import os
import pickle

import lmdb
import numpy as np
import pandas as pd
import pytest

from iclr25.shared.safeload import UnsafeFileError
from iclr25.siu_bioactivity.formats import (
    ATOM3D_ORDER,
    LABEL_TYPES,
    UNIMOL_ORDER,
    SIURecord,
    atom3d_to_record,
    convert_order,
    label_dict,
    label_vector,
    ligand_element,
    parse_source,
    pocket_element,
    read_atom3d_lmdb,
    read_final_dic,
    read_unimol_lmdb,
    to_atom3d_item,
    write_atom3d_lmdb,
    write_final_dic,
    write_unimol_lmdb,
)


def fake_records(n=8, seed=0):
    rng = np.random.default_rng(seed)
    recs = []
    for i in range(n):
        k = int(rng.integers(10, 20))
        types = rng.choice(list(LABEL_TYPES), size=int(rng.integers(1, 3)), replace=False)
        recs.append(
            {
                "atoms": [f"{e}{j + 1}" for j, e in enumerate(rng.choice(["C", "N", "O", "Cl", "F"], size=k))],
                "coordinates": [rng.normal(size=(k, 3)).astype(np.float32) for _ in range(int(rng.integers(1, 4)))],
                "pocket_atoms": list(rng.choice(["CA", "N", "O", "CB", "1HB", "SG", "OG"], size=30)),
                "pocket_coordinates": rng.normal(size=(30, 3)).astype(np.float32),
                "source_data": f"P{i // 3:05d},{i // 2}abc",
                "label": {str(t): float(rng.uniform(4, 9)) for t in types},
                "ik": f"IK{i}",
                "smi": "CCO",
            }
        )
    return recs


def assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if k == "coordinates":
            assert len(a[k]) == len(b[k]) and all(np.allclose(x, y) for x, y in zip(a[k], b[k], strict=True))
        elif isinstance(a[k], np.ndarray):
            assert np.allclose(a[k], b[k])
        else:
            assert a[k] == b[k]


def test_label_vector_by_name():
    v = label_vector({"ki": 7.1}, LABEL_TYPES)
    assert v[LABEL_TYPES.index("ki")] == 7.1 and (np.delete(v, LABEL_TYPES.index("ki")) == -1).all()
    a3 = label_vector({"ki": 7.1, "ec50": 5.0}, ATOM3D_ORDER)
    assert a3[ATOM3D_ORDER.index("ki")] == 7.1 and a3[ATOM3D_ORDER.index("ec50")] == 5.0
    canon = convert_order(a3, ATOM3D_ORDER, LABEL_TYPES)
    assert np.array_equal(canon, label_vector({"ki": 7.1, "ec50": 5.0}))
    back = convert_order(canon, LABEL_TYPES, ATOM3D_ORDER)
    assert np.array_equal(back, a3)
    rng = np.random.default_rng(0)
    many = np.where(rng.random((50, 5)) < 0.5, rng.uniform(3, 10, (50, 5)), -1.0)
    assert np.array_equal(convert_order(convert_order(many, ATOM3D_ORDER), LABEL_TYPES, ATOM3D_ORDER), many)
    assert UNIMOL_ORDER != ATOM3D_ORDER  # the two official orders differ: positions must never be mixed
    assert label_dict(canon) == {"ki": 7.1, "ec50": 5.0}
    with pytest.raises(ValueError, match="unknown label"):
        label_vector({"ic90": 1.0})
    assert label_vector(6.5, ("ki",)).tolist() == [6.5]


def test_parse_source_and_elements():
    assert parse_source("P12345,1abc") == ("P12345", "1abc")
    with pytest.raises(ValueError, match="UniProtID"):
        parse_source("P12345")
    table = {"C12": "C", "Cl3": "Cl", "N1": "N", "Br10": "Br", "O": "O"}
    assert {k: ligand_element(k) for k in table} == table
    ptable = {"CA": "C", "N": "N", "1HB": "H", "OG1": "O", "SG": "S", "2HD2": "H"}
    assert {k: pocket_element(k) for k in ptable} == ptable
    assert pocket_element("CA", ca_quirk=False) == "Ca" and pocket_element("CB", ca_quirk=False) == "C"


def test_unimol_lmdb_roundtrip(tmp_path):
    recs = fake_records(12)
    assert write_unimol_lmdb(recs, tmp_path / "train.lmdb") == 12
    back = read_unimol_lmdb(tmp_path / "train.lmdb")
    for a, b in zip(recs, back, strict=True):
        assert_same(a, b)
    rec = SIURecord.from_dict(back[0])
    assert rec.pocket_id == "0abc" and rec.uniprot == "P00000"
    assert_same(SIURecord.from_dict(recs[1]).to_dict(), recs[1])


@pytest.mark.parametrize("fmt", ["pkl", "json"])
def test_atom3d_lmdb_roundtrip(tmp_path, fmt):
    recs = fake_records(6)
    items = [to_atom3d_item(r) for r in recs]
    write_atom3d_lmdb(items, tmp_path / "train", fmt=fmt)
    back = read_atom3d_lmdb(tmp_path / "train")
    assert len(back) == 6
    for a, b in zip(items, back, strict=True):
        for key in ("atoms_pocket", "atoms_ligand"):
            assert isinstance(b[key], pd.DataFrame) and list(b[key].columns) == ["element", "x", "y", "z"]
            assert list(a[key]["element"]) == list(b[key]["element"])
            assert np.allclose(a[key][["x", "y", "z"]].to_numpy(), b[key][["x", "y", "z"]].to_numpy(), atol=1e-5)
        assert b["scores"] == pytest.approx(a["scores"]) and b["id"] == a["id"] == b["source"]
        assert b["types"]["atoms_pocket"] == str(pd.DataFrame)
    rec = atom3d_to_record(back[0])
    assert label_vector(rec["label"]).tolist() == label_vector(recs[0]["label"]).tolist()


def test_final_dic_roundtrip(tmp_path):
    recs = fake_records(7)
    dic = {}
    for r in recs:
        dic.setdefault(parse_source(r["source_data"])[0], []).append(r)
    write_final_dic(dic, tmp_path / "final_dic.pkl")
    back = read_final_dic(tmp_path / "final_dic.pkl")
    assert back.keys() == dic.keys()
    for k in dic:
        for a, b in zip(dic[k], back[k], strict=True):
            assert_same(a, b)


class _Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_lmdb_value_is_refused(tmp_path):
    marker = tmp_path / "MARKER"
    env = lmdb.open(str(tmp_path / "evil.lmdb"), subdir=False, map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"0", pickle.dumps({"atoms": _Payload(marker)}))
    env.close()
    with pytest.raises(UnsafeFileError, match=r"posix.system|os.system|refused"):
        read_unimol_lmdb(tmp_path / "evil.lmdb")
    assert not marker.exists()
    # Atom3D: gzip(pickle) entry
    env = lmdb.open(str(tmp_path / "evil3d"), map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"num_examples", b"1")
        txn.put(b"serialization_format", b"pkl")
        txn.put(b"0", gzip.compress(pickle.dumps({"x": _Payload(marker)})))
    env.close()
    with pytest.raises(UnsafeFileError, match="refused"):
        read_atom3d_lmdb(tmp_path / "evil3d")
    (tmp_path / "final_dic.pkl").write_bytes(pickle.dumps({"P1": [_Payload(marker)]}))
    with pytest.raises(UnsafeFileError, match="refused"):
        read_final_dic(tmp_path / "final_dic.pkl")
    assert not marker.exists()


def test_dataframes_only_in_atom3d(tmp_path):
    """The Uni-Mol reader's allow-list has no pandas: a DataFrame there is refused (not part of the format)."""
    env = lmdb.open(str(tmp_path / "df.lmdb"), subdir=False, map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"0", pickle.dumps({"atoms": pd.DataFrame({"a": [1]})}))
    env.close()
    with pytest.raises(UnsafeFileError, match="pandas"):
        read_unimol_lmdb(tmp_path / "df.lmdb")


def test_not_an_lmdb(tmp_path):
    (tmp_path / "x.lmdb").write_text("hello")
    with pytest.raises(UnsafeFileError, match=r"x\.lmdb"):
        read_unimol_lmdb(tmp_path / "x.lmdb")
    with pytest.raises(UnsafeFileError, match=r"does not exist"):
        read_unimol_lmdb(tmp_path / "missing.lmdb")
