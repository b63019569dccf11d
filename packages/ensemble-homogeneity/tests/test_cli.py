"""The CLI: train -> analyze -> estimate on a tiny ensemble, and one-line errors (exit 2) on bad input."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.ensemble_homogeneity import __all__ as exported
from iclr25.ensemble_homogeneity.cli import main


def test_every_export_resolves():
    import iclr25.ensemble_homogeneity as pkg

    for name in exported:
        assert getattr(pkg, name) is not None, name


@pytest.fixture(scope="module")
def preds(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "preds.npz"
    args = ["train", "--dataset", "wine", "--width", "16", "--members", "4", "--max-epochs", "40"]
    assert main([*args, "--device", "cpu", "--out", str(path)]) == 0
    return path


def test_train_writes_predictions(preds, capsys):
    from iclr25.ensemble_homogeneity.data import EnsemblePredictions

    p = EnsemblePredictions.from_npz(preds)
    assert p.probs.shape == (4, 89, 3) and p.meta["dataset"] == "wine" and p.meta["width"] == 16
    np.testing.assert_allclose(p.probs.sum(-1), 1, atol=1e-9)


def test_analyze_and_estimate(preds, tmp_path, capsys):
    assert main(["analyze", "--preds", str(preds), "--sizes", "1,2,4", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "median pairwise KS p" in out and "brier_multiclass" in out
    assert (tmp_path / "a" / "analysis.json").is_file() and (tmp_path / "a" / "analysis.png").is_file()
    assert main(["estimate", "--preds", str(preds), "--pair", "0,3", "--sizes", "1,4", "--collapse"]) == 0
    assert "relative error" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["analyze", "--preds", "PREDS", "--sizes", "1,9"], "outside [1, 4]"),
        (["analyze", "--preds", "PREDS", "--sizes", "a,b"], "comma-separated integers"),
        (["estimate", "--preds", "PREDS", "--pair", "1,1"], "two different member ids"),
        (["estimate", "--preds", "MISSING"], "does not exist"),
        (["train", "--members", "1", "--out", "x.npz"], "--members must be >= 2"),
        (["train", "--out", "x.txt"], "must be a .npz"),
        (["train", "--dataset", "cifar10", "--model", "cnn", "--out", "x.npz"], "needs --data-dir"),
        (["train", "--dataset", "digits", "--model", "cnn", "--out", "x.npz"], "use model mlp"),
        (["train", "--model", "vit", "--out", "x.npz"], "invalid choice"),
        (["reproduce", "--scale", "ci", "sizes=4,2"], "sizes must be strictly increasing"),
        (["reproduce", "--scale", "ci", "runs=digits:mlp:64"], "dataset:model:width:members"),
        (["reproduce", "--scale", "ci", "nosuch=1"], "unknown override key"),
    ],
)
def test_bad_input_is_one_line(argv, message, preds, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [str(preds) if a == "PREDS" else str(tmp_path / "missing.npz") if a == "MISSING" else a for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse errors
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and message in err, err
    assert not (tmp_path / "runs").exists()


def test_refuses_to_overwrite(preds, capsys):
    assert main(["train", "--dataset", "wine", "--members", "2", "--out", str(preds)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err


def test_train_cnn_on_cifar_files(tmp_path, capsys):
    import pickle

    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        with open(folder / name, "wb") as f:
            batch = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": [0, 1, 2, 3]}
            pickle.dump(batch, f, protocol=2)
    out = tmp_path / "p.npz"
    argv = ["train", "--dataset", "cifar10", "--data-dir", str(tmp_path), "--model", "cnn", "--width", "2"]
    assert main([*argv, "--members", "2", "--max-epochs", "1", "--device", "cpu", "--out", str(out)]) == 0
    from iclr25.ensemble_homogeneity.data import EnsemblePredictions

    assert EnsemblePredictions.from_npz(out).probs.shape == (2, 4, 10)


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (np.array("{not json"), "member_meta is not valid JSON"),
        (np.array("[1, 2]"), "member_meta must be a JSON object"),
        (np.array("3"), "member_meta must be a JSON object"),
        (np.array(["{}", "{}"]), "member_meta must be one JSON text"),
        (np.arange(3), "member_meta must be one JSON text"),
    ],
)
def test_malformed_member_meta_is_one_line(meta, message, preds, tmp_path, capsys):
    from iclr25.ensemble_homogeneity.data import EnsemblePredictions

    good = EnsemblePredictions.from_npz(preds)
    bad = tmp_path / "bad_meta.npz"
    np.savez(bad, probs=good.probs, labels=good.labels, member_meta=meta)
    for argv in (["analyze", "--preds", str(bad), "--out", str(tmp_path / "a")], ["estimate", "--preds", str(bad)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and message in err, err
    assert not (tmp_path / "a").exists()
