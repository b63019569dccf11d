"""The `iclr25-hd-explain` CLI: light --help, train -> explain -> hitrate -> debug, reproduce, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from iclr25.hd_explain.cli import main


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64) + 2 * (X[:, 1] > 0)
    np.savez(root / "train.npz", X=X, y=y)
    np.savez(root / "test.npz", X=X[:6] + 0.01, y=y[:6])
    args = ["train", "--data", str(root / "train.npz"), "--hidden", "16", "--epochs", "20", "--lr", "0.01"]
    assert main([*args, "--out", str(root / "model"), "--quiet"]) == 0
    return root


def test_train_explain_hitrate_debug(trained, capsys):
    root = trained
    model = str(root / "model" / "model.pt")
    train = str(root / "train.npz")
    assert (root / "model" / "train.json").is_file()
    out = root / "expl"
    assert (
        main(["explain", "--model", model, "--train", train, "--test", str(root / "test.npz"), "--out", str(out)]) == 0
    )
    rows = (out / "explanations.csv").read_text().splitlines()
    assert rows[0].startswith("test_index") and len(rows) == 1 + 6 * 3
    assert "test 0:" in capsys.readouterr().out
    for method in ("if", "rps", "sim", "hd*", "tracin"):
        target = root / f"e-{method.replace('*', 's')}"
        assert (
            main(
                [
                    "explain",
                    "--model",
                    model,
                    "--train",
                    train,
                    "--test",
                    train,
                    "--method",
                    method,
                    "--out",
                    str(target),
                ]
            )
            == 0
        )
    assert (
        main(
            [
                "hitrate",
                "--model",
                model,
                "--train",
                train,
                "--method",
                "hd",
                "if",
                "--probes",
                "20",
                "--out",
                str(root / "h"),
            ]
        )
        == 0
    )
    assert "hit rate" in capsys.readouterr().out
    assert (root / "h" / "hitrate.json").is_file()
    mask = np.zeros(120, bool)
    mask[:5] = True
    np.save(root / "mask.npy", mask)
    args = ["debug", "--model", model, "--train", train, "--method", "hd*", "--flipped", str(root / "mask.npy")]
    assert main([*args, "--top", "3", "--out", str(root / "d")]) == 0
    printed = capsys.readouterr().out
    assert "recall@5" in printed and "   1. #" in printed
    assert len((root / "d" / "debug.csv").read_text().splitlines()) == 121
    # a finished run folder is not replaced silently
    assert main([*args, "--out", str(root / "d")]) == 2


def test_builtin_data(tmp_path):
    assert main(["train", "--data", "rectangular", "--hidden", "8", "--epochs", "2", "--out", str(tmp_path / "m")]) == 0
    m = str(tmp_path / "m" / "model.pt")
    assert (
        main(
            [
                "explain",
                "--model",
                m,
                "--train",
                "rectangular",
                "--test",
                "moons",
                "--k",
                "2",
                "--out",
                str(tmp_path / "e"),
            ]
        )
        == 0
    )


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ["explain", "--model", "{root}/nope.pt", "--train", "{root}/train.npz", "--test", "{root}/test.npz"],
            "nope.pt",
        ),
        (
            ["explain", "--model", "{root}/train.npz", "--train", "{root}/train.npz", "--test", "{root}/test.npz"],
            "train.npz",
        ),
        (["explain", "--model", "{model}", "--train", "{root}/none.npz", "--test", "{root}/test.npz"], "none.npz"),
        (["explain", "--model", "{model}", "--train", "digits", "--test", "{root}/test.npz"], "features"),
        (
            ["explain", "--model", "{model}", "--train", "{root}/train.npz", "--test", "{root}/test.npz", "--k", "500"],
            "exceeds",
        ),
        (
            ["explain", "--model", "{model}", "--train", "{root}/train.npz", "--test", "{root}/test.npz", "--k", "0"],
            "integer >= 1",
        ),
        (
            ["explain", "--model", "{model}", "--train", "{root}/train.npz", "--test", "x", "--method", "shap"],
            "invalid choice",
        ),
        (
            ["explain", "--model", "{model}", "--train", "{root}/train.npz", "--test", "x", "--bandwidth", "wide"],
            "bandwidth",
        ),
        (["hitrate", "--model", "{model}", "--train", "{root}/train.npz", "--perturbation", "flip"], "images"),
        (["debug", "--model", "{model}", "--train", "{root}/train.npz", "--flipped", "{root}/train.npz"], "mask"),
        (["train", "--data", "{root}/evil.npz", "--out", "{root}/t"], "evil.npz"),
        (["train", "--data", "{root}/train.npz", "--hidden", "a,b"], "hidden"),
        (["train", "--data", "{root}/train.npz", "--lr", "nan"], "lr"),
        (["train", "--data", "{root}/uneven.npz", "--out", "{root}/t"], "same n"),
        (["debug", "--model", "{root}/arch_text.pt", "--train", "{root}/train.npz"], "arch must be a mapping"),
        (["reproduce", "probes=0"], "probes"),
        (["reproduce", "rect_bandwidth=wide"], "rect_bandwidth"),
    ],
)
def test_bad_input_is_one_line(trained, argv, needle, capsys):
    root = trained
    np.save(root / "evil.npz", np.array([object()], dtype=object), allow_pickle=True)
    (root / "evil.npz").write_bytes(pickle.dumps({"X": 1}))
    np.savez(root / "uneven.npz", X=np.zeros((10, 4), np.float32), y=np.zeros(9, np.int64))  # X and y lengths differ
    state = torch.load(root / "model" / "model.pt", weights_only=True)["state_dict"]
    torch.save({"arch": "mlp", "state_dict": state}, root / "arch_text.pt")  # arch a string, not a mapping
    filled = [a.format(root=root, model=root / "model" / "model.pt") for a in argv]
    try:
        code = main(filled)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and needle in err, err


def test_reproduce_small_override(tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(["reproduce", "--out", str(out), "sections=rectangular", "rect_seeds=2", "figures=false", "--quiet"])
    assert code in (0, 1)
    printed = capsys.readouterr().out
    assert "rect_hit_vs_baselines" in printed and "results written to" in printed
    assert (out / "results.json").is_file()
