"""The CLI: every verb on tiny data, and bad input answered with one line and exit code 2."""

from __future__ import annotations

import json
import os
import pickle
import sys

import numpy as np
import pytest

from iclr25.siu_bioactivity.cli import main

BIN = os.path.join(os.path.dirname(sys.executable), "iclr25-siu-bioactivity")


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLR25_QUIET", "1")
    return tmp_path


def _one_line_error(capsys, code, needle):
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and needle in err, err


def test_generate_train_eval(here, capsys):
    assert main(["generate", "--out", "d", "--train-pockets", "6", "--test-pockets", "3", "--ligands", "6"]) == 0
    assert (here / "d" / "train.lmdb").is_file() and (here / "d" / "test.lmdb").is_file()
    assert main(["train", "--model", "complex", "--data", "d/train.lmdb", "--test", "d/test.lmdb", "--out", "t"]) == 0
    pred = np.load(here / "t" / "pred.npz")
    assert pred["pred"].shape[1] == 5
    capsys.readouterr()
    assert main(["eval", "--pred", "t/pred.npz", "--data", "d/test.lmdb"]) == 0
    out = capsys.readouterr().out
    assert "Pearson*" in out and "ic50" in out
    assert main(["eval", "--pred", "t/pred.npz"]) == 0  # target and pocket ids stored in the npz
    for fmt in ("atom3d", "final_dic"):
        assert (
            main(
                [
                    "generate",
                    "--out",
                    fmt,
                    "--train-pockets",
                    "4",
                    "--test-pockets",
                    "2",
                    "--ligands",
                    "4",
                    "--format",
                    fmt,
                ]
            )
            == 0
        )
    assert main(["train", "--model", "pocket", "--data", "atom3d/train", "--test", "atom3d/test", "--out", "t2"]) == 0
    data = "final_dic/train/final_dic.pkl"
    assert main(["train", "--model", "ligand", "--data", data, "--test", data, "--out", "t3"]) == 0


def test_train_generated_pocket_only_is_nan(here, capsys):
    assert main(["train", "--model", "pocket", "--regime", "pdbbind", "--out", "t"]) == 0
    metrics = json.loads((here / "t" / "metrics.json").read_text())
    assert all(metrics[t]["pearson_star"] is None for t in ("ic50", "ki", "kd", "ec50"))
    assert all(metrics[t]["pearson_all"] > 0.5 for t in ("ic50", "ki", "kd", "ec50"))


def test_vote(here, capsys):
    x = np.random.default_rng(0).normal(size=(10, 3))
    poses = {
        "glide": x.tolist(),
        "gold": (x + np.array([1.0, 0, 0])).tolist(),
        "vina": (x + np.array([6.0, 0, 0])).tolist(),
    }
    (here / "poses.json").write_text(json.dumps([poses, {"a": x.tolist(), "b": None}]))
    assert main(["vote", "--poses", "poses.json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res[0]["accepted"] and res[0]["agreeing"] == ["glide", "gold"] and not res[1]["accepted"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["vote", "--poses", "missing.json"], "missing.json"),
        (["vote", "--poses", "bad.json"], "bad.json"),
        (["vote", "--poses", "ragged.json"], "ragged.json"),
        (["vote", "--poses", "p.json", "--threshold", "-1"], "threshold"),
        (["train", "--data", "afile"], "--test"),
        (["train", "--data", "afile", "--test", "afile", "--out", "o"], "afile"),
        (["train", "--data", "evil.pkl", "--test", "evil.pkl", "--out", "o"], "evil.pkl"),
        (["eval", "--pred", "afile"], "afile"),
        (["eval", "--pred", "nopred.npz"], "pred"),
        (["eval", "--pred", "wrong.npz", "--data", "d.lmdb"], "shape"),
        (["generate", "--out", "mine", "--overwrite"], "no iclr25 run made"),
        (["generate", "--ligands", "0"], "integer >= 1"),
        (["reproduce", "seeds=", "--out", "o"], "seeds"),
        (["reproduce", "model=svm", "--out", "o"], "model"),
        (["reproduce", "--scale", "full", "--out", "o"], "data_dir"),
    ],
)
def test_bad_input_one_line(here, capsys, argv, needle):
    (here / "afile").write_text("not data\n")
    (here / "bad.json").write_text("{nope")
    (here / "ragged.json").write_text(json.dumps({"a": [[0, 0, 0]], "b": [[0, 0]]}))
    (here / "p.json").write_text("{}")
    marker = here / "MARKER"
    (here / "evil.pkl").write_bytes(
        pickle.dumps({"P": [type("E", (), {"__reduce__": lambda s: (os.system, (f"touch {marker}",))})()]})
    )
    (here / "mine").mkdir()
    (here / "mine" / "keep.txt").write_text("x")
    np.savez(here / "nopred.npz", x=np.zeros(3))
    from iclr25.siu_bioactivity.cli import main as m
    from iclr25.siu_bioactivity.config import PRESETS
    from iclr25.siu_bioactivity.data import make_world
    from iclr25.siu_bioactivity.formats import write_unimol_lmdb

    if "d.lmdb" in argv:
        from dataclasses import replace

        w = make_world(
            replace(PRESETS["ci"], train_pockets=4, test_pockets=2, ligands_per_pocket=3, test_ligands_per_pocket=3), 0
        )
        write_unimol_lmdb(w.test.to_records(), here / "d.lmdb")
        np.savez(here / "wrong.npz", pred=np.zeros((2, 5)))
    try:
        code = m(argv)
    except SystemExit as e:
        code = e.code
    _one_line_error(capsys, code, needle)
    assert not marker.exists()
    assert (here / "mine" / "keep.txt").read_text() == "x"


def _good_atom3d_item():
    import pandas as pd

    frame = pd.DataFrame({"element": ["C", "N"], "x": [0.0, 1.0], "y": [0.0, 0.5], "z": [0.0, 0.2]})
    return {"atoms_pocket": frame, "atoms_ligand": frame.copy(), "scores": {"ki": 7.0}, "source": "P1,1abc", "id": "P1"}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"atoms_ligand": [["C", 0.0, 0.0, 0.0]]}, "atoms_ligand is a list, not a DataFrame"),
        ({"atoms_pocket": "C 0 0 0"}, "atoms_pocket is a str, not a DataFrame"),
        ({"atoms_ligand": None}, "atoms_ligand is a NoneType"),
        ({"atoms_ligand": "drop"}, "has no atoms_ligand field"),
        ({"scores": [7.0]}, "scores is a list"),
        ({"scores": {"ki": "high"}}, "scores must map label types to numbers"),
        ({"source": 17, "id": 17}, "source (or id) must be"),
        ({"atoms_ligand": "nocolumn"}, "lacks columns ['z']"),
        ({"atoms_ligand": "textcoords"}, "coordinates x, y, z must be numbers"),
        ({"atoms_ligand": "intelements"}, "element must hold element names"),
    ],
)
@pytest.mark.parametrize("fmt", ["pkl", "json"])
def test_atom3d_entry_of_wrong_types_one_line(here, capsys, change, needle, fmt):
    """An Atom3D LMDB whose entries hold fields of the wrong types: one line naming the entry and field, exit 2."""
    from iclr25.siu_bioactivity.formats import write_atom3d_lmdb

    bad = _good_atom3d_item()
    for key, value in change.items():
        if value == "drop":
            del bad[key]
        elif value == "nocolumn":
            bad[key] = bad[key].drop(columns=["z"])
        elif value == "textcoords":
            bad[key] = bad[key].assign(x=["a", "b"])
        elif value == "intelements":
            bad[key] = bad[key].assign(element=[6, 7])
        else:
            bad[key] = value
    write_atom3d_lmdb([_good_atom3d_item(), bad], here / "db", fmt=fmt)
    code = main(["train", "--data", "db", "--test", "db", "--out", "o"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert needle in err and "db (entry 1)" in err, err
    assert not (here / "o").exists()
