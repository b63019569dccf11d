"""The full preset on GeneExp files: inputs checked before any work, and an end-to-end run on a toy genome in the
official layout and formats (FASTA, JSON, CSVs, ABC gene list, bedGraph + bigWig tracks, Hi-C h5, blacklist pickle)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from iclr25.seq2exp.cli import main
from iclr25.seq2exp.config import PRESETS
from iclr25.seq2exp.reproduce import run


def _tiny_full(root, **kw):
    return dataclasses.replace(
        PRESETS["full"],
        data_root=str(root),
        length=256,
        center_len=16,
        backbone="cnn",
        d=4,
        n_layers=1,
        epochs=1,
        batch_size=2,
        **kw,
    )


def test_full_preset_refuses_missing_inputs_before_any_work(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"fasta .*hg38\.ml\.fa.*xingyusu/GeneExp"):
        run("full", out, device="cpu", config=dataclasses.replace(PRESETS["full"], data_root=str(tmp_path / "no")))
    assert not out.exists()


def test_full_preset_without_files_trains_on_generated_windows_of_the_paper_sizes():
    cfg = PRESETS["full"]
    assert not cfg.files_given and cfg.real_data and cfg.data == "generated"
    assert (cfg.n_genes, cfg.length, cfg.center_len, cfg.n_rna, cfg.d, cfg.n_layers) == (
        18_377,
        200_000,
        2000,
        9,
        128,
        4,
    )
    from iclr25.seq2exp.data import GeneratedWindowDataset

    sets = [GeneratedWindowDataset(cfg.n_genes, 1024, s, center_len=64) for s in ("train", "valid", "test")]
    assert [len(s) for s in sets] == [12_864, 2_757, 2_756]
    window = sets[0][5]
    assert window["seq"].shape == (1024,) and window["signals"].shape == (1024, 3) and window["rna_feat"].shape == (9,)
    assert window["y"] == sets[0].target(5) == GeneratedWindowDataset(cfg.n_genes, 1024, center_len=64).target(5)
    assert not np.array_equal(sets[0][5]["seq"], sets[1][5]["seq"])  # each split its own windows


def test_full_preset_names_each_missing_file(genome, tmp_path):
    root, _ = genome
    (root / "promo_enhan_inter" / "ABC" / "K562" / "GeneList.txt").unlink()
    with pytest.raises(ValueError, match="GeneExp input missing") as err:
        run("full", tmp_path / "out", device="cpu", config=_tiny_full(root, dnase=str(tmp_path / "dnase.bw")))
    msg = str(err.value)
    assert "gene_list" in msg and "GeneList.txt" in msg and "dnase" in msg and "dnase.bw" in msg
    assert "fasta" not in msg.split("Get the")[0]  # only what is missing is named


def test_full_cli_one_line(tmp_path, capsys):
    code = main(["reproduce", "--scale", "full", "--out", str(tmp_path / "o"), f"data_root={tmp_path / 'none'}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "xingyusu/GeneExp" in err, err


def test_full_runs_end_to_end_on_toy_geneexp(genome, tmp_path):
    pyBigWig = pytest.importorskip("pyBigWig")
    root, _ = genome
    chroms = {"chr1": 300, "chr2": 157, "chrX": 90}
    dnase = tmp_path / "dnase.bigWig"
    rng = np.random.default_rng(1)
    with pyBigWig.open(str(dnase), "w") as bw:
        bw.addHeader(list(chroms.items()))
        for c, n in chroms.items():
            bw.addEntries(c, 0, values=rng.gamma(2.0, 0.5, n).tolist(), span=1, step=1)
    cfg = _tiny_full(root, dnase=str(dnase))
    report = run("full", tmp_path / "full", device="cpu", config=cfg)
    m = report.metrics
    assert m["data"] == "GeneExp" and m["summary"]["n_genes"] == {"train": 2, "valid": 1, "test": 1}
    assert set(m["models"]) == set(cfg.models)
    for name, res in m["models"].items():
        assert np.isfinite(res["mse"]) and res["n_test"] == 1, name
    assert 0 <= m["models"]["seq2exp-hard"]["mask_ratio"] <= 1
    names = {c.name for c in report.claims}
    assert "seq2exp-soft_beats_seq" in names and "generator_off_auprc" not in names  # no planted truth here
    assert not any(c.gated for c in report.claims)
