"""SIU's file formats (spec §3.1): Uni-Mol LMDB, Atom3D LMDB, `final_dic.pkl`; labels, sources, elements.

Every pickle a user hands us is read with a restricted unpickler whose allow-list is exactly what SIU records
hold (NumPy arrays and scalars, plain containers; Atom3D's pandas DataFrames only for the Atom3D pkl format):
nothing in a file is ever run. Writing uses plain pickle (our own data).
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.files import claim_path, write_bytes
from iclr25.shared.safeload import NUMPY_ARRAY_GLOBALS, UnsafeFileError, restricted_pickle_load

# The canonical label order of this package (spec §3.1); the official code paths use two different orders.
LABEL_TYPES: tuple[str, ...] = ("ic50", "ki", "kd", "ec50", "potency")
UNIMOL_ORDER: tuple[str, ...] = ("ic50", "ki", "kd", "ec50", "potency")  # official Uni-Mol loss/task
ATOM3D_ORDER: tuple[str, ...] = ("ic50", "ec50", "kd", "ki", "potency")  # official Atom3D GNN dataset
MISSING = -1.0

# What pickled SIU records contain: NumPy arrays/scalars (+ plain containers, which need no import).
RECORD_GLOBALS: frozenset[tuple[str, str]] = NUMPY_ARRAY_GLOBALS
# Atom3D pkl entries also hold pandas DataFrames (atoms_pocket / atoms_ligand): their reconstruct functions,
# in the spellings of pandas 1.x-3.x; no other pandas name may be imported.
DATAFRAME_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("pandas", "DataFrame"),
        ("pandas.core.frame", "DataFrame"),
        ("pandas.core.internals.managers", "BlockManager"),
        ("pandas.core.internals.blocks", "new_block"),
        ("pandas._libs.internals", "_unpickle_block"),
        ("pandas.core.indexes.base", "_new_Index"),
        ("pandas.core.indexes.base", "Index"),
        ("pandas.core.indexes.range", "RangeIndex"),
        ("pandas", "Index"),
        ("pandas", "RangeIndex"),
        ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
        ("pandas.arrays", "StringArray"),
        ("pandas", "StringDtype"),
        ("pandas.core.arrays.string_", "StringArray"),
        ("pandas.core.arrays.string_", "StringDtype"),
        ("builtins", "slice"),
    }
)
ATOM3D_GLOBALS: frozenset[tuple[str, str]] = RECORD_GLOBALS | DATAFRAME_GLOBALS


@dataclass
class SIURecord:
    """One complex (one molecule x one pocket) in the official record layout (spec §3.1)."""

    atoms: list[str]
    coordinates: list[np.ndarray]  # several ligand conformations (the poses the vote kept)
    pocket_atoms: list[str]
    pocket_coordinates: np.ndarray
    source_data: str  # "<UniProtID>,<PDBID>"
    label: dict[str, float] | float
    ik: str = ""
    smi: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pocket_id(self) -> str:
        """The pocket id: the PDB id of `source_data` (the unit of the per-pocket metrics)."""
        return parse_source(self.source_data)[1]

    @property
    def uniprot(self) -> str:
        """The protein (UniProt id) of `source_data`."""
        return parse_source(self.source_data)[0]

    def to_dict(self) -> dict[str, Any]:
        """The official dict layout."""
        out = {
            "atoms": list(self.atoms),
            "coordinates": [np.asarray(c, dtype=np.float32) for c in self.coordinates],
            "pocket_atoms": list(self.pocket_atoms),
            "pocket_coordinates": np.asarray(self.pocket_coordinates, dtype=np.float32),
            "source_data": self.source_data,
            "label": dict(self.label) if isinstance(self.label, Mapping) else float(self.label),
            "ik": self.ik,
            "smi": self.smi,
        }
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SIURecord:
        """A record from the official dict layout; a missing required key is a ValueError naming it."""
        need = ("atoms", "coordinates", "pocket_atoms", "pocket_coordinates", "source_data", "label")
        missing = [k for k in need if k not in d]
        if missing:
            raise ValueError(f"an SIU record needs keys {list(need)}; this one lacks {missing}")
        coords = d["coordinates"]
        if isinstance(coords, np.ndarray) and coords.ndim == 2:
            coords = [coords]
        extra = {k: v for k, v in d.items() if k not in (*need, "ik", "smi")}
        return cls(
            atoms=list(d["atoms"]),
            coordinates=[np.asarray(c, dtype=np.float64) for c in coords],
            pocket_atoms=list(d["pocket_atoms"]),
            pocket_coordinates=np.asarray(d["pocket_coordinates"], dtype=np.float64),
            source_data=str(d["source_data"]),
            label=d["label"],
            ik=str(d.get("ik", "")),
            smi=str(d.get("smi", "")),
            extra=extra,
        )


# ------------------------------------------------------------------------------------------ small parsers
def parse_source(source_data: str) -> tuple[str, str]:
    """`"<UniProtID>,<PDBID>"` -> (uniprot, pdb); the pocket id is the PDB id (spec §3.1)."""
    parts = [p.strip() for p in str(source_data).split(",")]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"source_data must be '<UniProtID>,<PDBID>', got {source_data!r}")
    return parts[0], parts[1]


def ligand_element(name: str) -> str:
    """Ligand element = atom name with every digit removed (official), e.g. "Cl3" -> "Cl"."""
    return re.sub(r"\d", "", str(name))


def pocket_element(name: str, *, ca_quirk: bool = True) -> str:
    """Pocket element from a PDB atom name. Official rule (`ca_quirk=True`): the first character unless it is a
    digit, then the second ("1HB" -> "H"); so calcium "CA" and C-alpha "CA" both become "C". With
    `ca_quirk=False` a name that is exactly a two-letter ion (CA, MG, ZN, FE, MN, NA, CL, CU, CO, NI) keeps it."""
    name = str(name).strip()
    if not name:
        raise ValueError("an empty pocket atom name has no element")
    if not ca_quirk and name.upper() in _IONS:
        return name[0].upper() + name[1:].lower()
    return name[1] if name[0].isdigit() and len(name) > 1 else name[0]


_IONS = frozenset({"CA", "MG", "ZN", "FE", "MN", "NA", "CL", "CU", "CO", "NI"})


def label_vector(label: Mapping[str, float] | float, order: Sequence[str] = LABEL_TYPES) -> np.ndarray:
    """A label dict as a vector in `order` (missing = -1.0); converted by name, never by position (spec §3.1).
    A single-task float label is refused unless `order` has one entry."""
    order = tuple(order)
    if not isinstance(label, Mapping):
        if len(order) != 1:
            raise ValueError("a float label (single-task file) needs an order of length 1")
        return np.array([float(label)])
    unknown = [k for k in label if k.lower() not in LABEL_TYPES]
    if unknown:
        raise ValueError(f"unknown label types {unknown}; allowed: {', '.join(LABEL_TYPES)}")
    low = {k.lower(): float(v) for k, v in label.items()}
    return np.array([low.get(t, MISSING) for t in order], dtype=np.float64)


def convert_order(vectors: np.ndarray, src: Sequence[str], dst: Sequence[str] = LABEL_TYPES) -> np.ndarray:
    """Re-order label vectors (..., len(src)) from order `src` to `dst` by name (absent types = -1)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    out = np.full((*vectors.shape[:-1], len(dst)), MISSING)
    for j, t in enumerate(dst):
        if t in src:
            out[..., j] = vectors[..., list(src).index(t)]
    return out


def label_dict(vector: Sequence[float], order: Sequence[str] = LABEL_TYPES) -> dict[str, float]:
    """The inverse of `label_vector`: a dict of the present (>= 0) entries."""
    return {t: float(v) for t, v in zip(order, vector, strict=True) if v >= 0}


# ------------------------------------------------------------------------------------------ Uni-Mol LMDB
def _open_lmdb(path: Path, subdir: bool, what: str) -> Any:
    import lmdb

    if not path.exists():
        raise UnsafeFileError(f"{path} does not exist (expected a {what})")
    if subdir and not path.is_dir():
        raise UnsafeFileError(f"{path} is not a folder (expected a {what} directory holding data.mdb)")
    if not subdir and not path.is_file():
        raise UnsafeFileError(f"{path} is not a file (expected a single-file {what})")
    try:
        return lmdb.open(
            str(path), subdir=subdir, readonly=True, lock=False, readahead=False, meminit=False, max_readers=64
        )
    except lmdb.Error as e:
        shown = path / "data.mdb" if subdir else path
        raise UnsafeFileError(f"{shown} is not a {what} ({' '.join(str(e).split())[:160]})") from e


def _load_pickle_bytes(data: bytes, source: str, allowed: frozenset[tuple[str, str]], what: str) -> Any:
    buf = io.BytesIO(data)
    buf.name = source  # type: ignore[attr-defined]
    return restricted_pickle_load(buf, allowed, encoding="latin1", what=what)


def _key_order(key: bytes) -> tuple[int, bytes]:
    """Keys `str(i)` in numeric order (LMDB sorts bytes: "10" before "2")."""
    return (int(key), b"") if key.isdigit() else (1 << 62, key)


def read_unimol_lmdb(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Records of a Uni-Mol-format single-file LMDB (`subdir=False`, keys `str(i)`, values pickled dicts)."""
    path = Path(path)
    what = "Uni-Mol LMDB"
    env = _open_lmdb(path, subdir=False, what=what)
    out: list[dict[str, Any]] = []
    try:
        with env.begin() as txn:
            keys = sorted((bytes(k) for k in txn.cursor().iternext(values=False)), key=_key_order)
            for key in keys[:limit]:
                value = txn.get(key)
                rec = _load_pickle_bytes(
                    bytes(value), f"{path} (key {key.decode(errors='replace')})", RECORD_GLOBALS, what
                )
                if not isinstance(rec, dict):
                    raise UnsafeFileError(f"{path} is not a {what}: entry {key!r} holds a {type(rec).__name__}")
                out.append(rec)
    finally:
        env.close()
    return out


def write_unimol_lmdb(records: Iterable[Mapping[str, Any] | SIURecord], path: str | Path) -> int:
    """Write records as a Uni-Mol single-file LMDB; returns how many were written."""
    import lmdb

    path = claim_path(path)  # a new file (or one inside the run folder): an existing user file is refused
    path.parent.mkdir(parents=True, exist_ok=True)
    items = [r.to_dict() if isinstance(r, SIURecord) else dict(r) for r in records]
    size = sum(len(pickle.dumps(r)) for r in items) * 2 + (1 << 20)
    env = lmdb.open(str(path), subdir=False, map_size=size, lock=False)  # lock=False: no "-lock" file is made
    try:
        with env.begin(write=True) as txn:
            for i, rec in enumerate(items):
                txn.put(str(i).encode("ascii"), pickle.dumps(rec, protocol=4))
    finally:
        env.close()
    return len(items)


# ------------------------------------------------------------------------------------------ Atom3D LMDB
def _serialize(x: Any, fmt: str) -> bytes:
    if fmt == "pkl":
        return pickle.dumps(x, protocol=4)
    return json.dumps(x, default=lambda df: json.loads(df.to_json(orient="split", double_precision=6))).encode()


def _deserialize(data: bytes, fmt: str, source: str) -> Any:
    what = "Atom3D LMDB entry"
    if fmt == "pkl":
        return _load_pickle_bytes(data, source, ATOM3D_GLOBALS, what)
    if fmt == "json":
        try:
            return json.loads(data)
        except ValueError as e:
            raise UnsafeFileError(f"{source} is not a {what} (bad JSON: {e})") from e
    raise UnsafeFileError(f"{source}: unknown serialization_format {fmt!r} (allowed: pkl, json)")


def to_atom3d_item(record: Mapping[str, Any] | SIURecord, conformation: int = 0) -> dict[str, Any]:
    """An Atom3D LBA-style entry of a record: `atoms_pocket` / `atoms_ligand` DataFrames (element,x,y,z),
    `scores` (label dict), `source` and `id` (= source_data)."""
    import pandas as pd

    rec = record if isinstance(record, SIURecord) else SIURecord.from_dict(record)
    lig = np.asarray(rec.coordinates[conformation])
    poc = np.asarray(rec.pocket_coordinates)
    atoms_ligand = pd.DataFrame(
        {"element": [ligand_element(a) for a in rec.atoms], "x": lig[:, 0], "y": lig[:, 1], "z": lig[:, 2]}
    )
    atoms_pocket = pd.DataFrame(
        {"element": [pocket_element(a) for a in rec.pocket_atoms], "x": poc[:, 0], "y": poc[:, 1], "z": poc[:, 2]}
    )
    scores = dict(rec.label) if isinstance(rec.label, Mapping) else float(rec.label)
    return {
        "atoms_pocket": atoms_pocket,
        "atoms_ligand": atoms_ligand,
        "scores": scores,
        "source": rec.source_data,
        "id": rec.source_data,
    }


def write_atom3d_lmdb(items: Iterable[Mapping[str, Any]], path: str | Path, fmt: str = "pkl") -> int:
    """Write Atom3D entries (see `to_atom3d_item`) as a directory LMDB: gzip(serialize(entry)) per `str(i)`, each
    with a `types` map, plus the meta keys num_examples, serialization_format, id_to_idx. Every value, the
    id_to_idx map included, is serialised in `fmt`: Atom3D's `LMDBDataset` deserialises id_to_idx with the
    file's serialization_format, so a JSON map in a pkl file cannot be opened there."""
    import lmdb

    if fmt not in ("pkl", "json"):
        raise ValueError(f"fmt must be one of pkl, json; got {fmt!r}")
    path = claim_path(path)  # a new folder (or one inside the run folder): an existing one is refused
    path.mkdir(parents=True, exist_ok=True)
    blobs, id_to_idx = [], {}
    for i, item in enumerate(items):
        x = dict(item)
        x["types"] = {key: str(type(val)) for key, val in x.items()}
        x["types"]["types"] = str(type(x["types"]))
        blobs.append(gzip.compress(_serialize(x, fmt)))
        id_to_idx[str(x.get("id", i))] = i
    env = lmdb.open(str(path), map_size=sum(map(len, blobs)) * 2 + (1 << 20), lock=False)  # no lock.mdb made
    try:
        with env.begin(write=True) as txn:
            for i, blob in enumerate(blobs):
                txn.put(str(i).encode(), blob)
            txn.put(b"num_examples", str(len(blobs)).encode())
            txn.put(b"serialization_format", fmt.encode())
            txn.put(b"id_to_idx", _serialize(id_to_idx, fmt))
    finally:
        env.close()
    return len(blobs)


def read_atom3d_lmdb(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Entries of an Atom3D directory LMDB; DataFrames rebuilt from `types` when the format is json."""
    import pandas as pd

    path = Path(path)
    what = "Atom3D LMDB"
    env = _open_lmdb(path, subdir=True, what=what)
    out: list[dict[str, Any]] = []
    try:
        with env.begin() as txn:
            raw_n = txn.get(b"num_examples")
            if raw_n is None:
                raise UnsafeFileError(f"{path} is not an {what}: it has no num_examples key")
            try:
                n = int(bytes(raw_n))
            except ValueError:
                raise UnsafeFileError(f"{path} is not an {what}: num_examples is not an integer") from None
            fmt = bytes(txn.get(b"serialization_format") or b"pkl").decode(errors="replace")
            for i in range(n if limit is None else min(n, limit)):
                blob = txn.get(str(i).encode())
                source = f"{path} (entry {i})"
                if blob is None:
                    raise UnsafeFileError(f"{source} is missing")
                try:
                    data = gzip.decompress(bytes(blob))
                except (OSError, EOFError) as e:
                    raise UnsafeFileError(f"{source} is not gzip-compressed ({e})") from e
                item = _deserialize(data, fmt, source)
                if not isinstance(item, dict):
                    raise UnsafeFileError(f"{source} holds a {type(item).__name__}, not an entry dict")
                types = item.get("types", {})
                if fmt == "json" and isinstance(types, dict):
                    for key, kind in types.items():
                        if kind == str(pd.DataFrame) and isinstance(item.get(key), dict):
                            try:
                                item[key] = pd.DataFrame(**item[key])
                            except (TypeError, ValueError) as e:
                                raise UnsafeFileError(f"{source}: {key} is not a DataFrame ({e})") from e
                out.append(item)
    finally:
        env.close()
    return out


ATOM3D_FRAME_COLUMNS: tuple[str, ...] = ("element", "x", "y", "z")


def _atom3d_frame(item: Mapping[str, Any], key: str, where: str) -> tuple[list[str], np.ndarray]:
    """The elements and (n, 3) coordinates of one atoms DataFrame of an Atom3D entry; a ValueError naming the
    entry and the field when it is absent, not a DataFrame, lacks a column or holds non-numeric coordinates."""
    import pandas as pd

    if key not in item:
        raise ValueError(f"{where} has no {key} field (an Atom3D SIU entry needs atoms_pocket and atoms_ligand)")
    frame = item[key]
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(
            f"{where}: {key} is a {type(frame).__name__}, not a DataFrame with columns {', '.join(ATOM3D_FRAME_COLUMNS)}"
        )
    missing = [c for c in ATOM3D_FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: {key} lacks columns {missing} (has {[str(c) for c in frame.columns]})")
    if len(frame) == 0:
        raise ValueError(f"{where}: {key} has no atoms")
    elements = frame["element"].tolist()
    bad = [e for e in elements if not isinstance(e, str) or not e]
    if bad:
        raise ValueError(f"{where}: {key}.element must hold element names (text), found {bad[0]!r}")
    try:
        xyz = frame[["x", "y", "z"]].to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {key} coordinates x, y, z must be numbers") from None
    if not np.isfinite(xyz).all():
        raise ValueError(f"{where}: {key} coordinates x, y, z must be finite numbers")
    return elements, xyz


def atom3d_to_record(item: Mapping[str, Any], where: str = "Atom3D entry") -> dict[str, Any]:
    """An Atom3D entry back to the record layout (element names as atom names; one conformation). An entry of the
    wrong shape or types is a ValueError saying what was wrong (`where` names the entry in the message)."""
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} is a {type(item).__name__}, not an entry dict")
    lig_el, lig_xyz = _atom3d_frame(item, "atoms_ligand", where)
    poc_el, poc_xyz = _atom3d_frame(item, "atoms_pocket", where)
    if "scores" not in item:
        raise ValueError(f"{where} has no scores field (the label dict, e.g. {{'ki': 7.1}})")
    scores = item["scores"]
    if isinstance(scores, Mapping):
        bad = {k: v for k, v in scores.items() if not isinstance(k, str) or not _is_number(v)}
        if bad:
            raise ValueError(f"{where}: scores must map label types to numbers, found {bad}")
        scores = {k: float(v) for k, v in scores.items()}
    elif _is_number(scores):
        scores = float(scores)
    else:
        raise ValueError(f"{where}: scores is a {type(scores).__name__}; allowed: a dict of label type -> number")
    source = item.get("source", item.get("id"))
    if not isinstance(source, str):
        raise ValueError(f"{where}: source (or id) must be '<UniProtID>,<PDBID>' text, got {source!r}")
    return {
        "atoms": lig_el,
        "coordinates": [lig_xyz],
        "pocket_atoms": poc_el,
        "pocket_coordinates": poc_xyz,
        "source_data": source,
        "label": scores,
    }


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)


# ------------------------------------------------------------------------------------------ final_dic.pkl
def read_final_dic(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """`final_dic.pkl`: dict[uniprot -> list[record]], read with the restricted unpickler."""
    path = Path(path)
    obj = restricted_pickle_load(path, RECORD_GLOBALS, encoding="latin1", what="SIU final_dic.pkl")
    if not isinstance(obj, dict) or not all(isinstance(v, list) for v in obj.values()):
        raise UnsafeFileError(f"{path} is not an SIU final_dic.pkl: expected a dict of UniProt id -> list of records")
    return obj


def write_final_dic(dic: Mapping[str, Sequence[Mapping[str, Any] | SIURecord]], path: str | Path) -> None:
    """Write a `final_dic.pkl` (dict[uniprot -> list[record dict]])."""
    out = {k: [r.to_dict() if isinstance(r, SIURecord) else dict(r) for r in v] for k, v in dic.items()}
    write_bytes(path, pickle.dumps(out, protocol=4))
