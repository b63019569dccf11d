"""The CLI: generate -> train -> eval -> mask, call-peaks, and bad input (one stderr line, exit 2)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.seq2exp.cli import main


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    data = root / "d.npz"
    assert main(["generate", "--n", "40", "--length", "768", "--center-len", "32", "--out", str(data)]) == 0
    run = root / "run"
    argv = ["train", "--model", "seq2exp-soft", "--data", str(data), "--epochs", "1", "--d", "4", "--layers", "1"]
    assert main([*argv, "--out", str(run), "--device", "cpu", "--quiet"]) == 0
    return root, data, run


def test_train_eval_mask(trained, capsys):
    root, data, run = trained
    assert (run / "model.pt").is_file() and (run / "metrics.json").is_file()
    capsys.readouterr()
    assert main(["eval", "--model", str(run / "model.pt"), "--data", str(data)]) == 0
    assert '"mse"' in capsys.readouterr().out
    bed = root / "mask.bed"
    assert main(["mask", "--model", str(run / "model.pt"), "--data", str(data), "--out", str(bed)]) == 0
    rows = [line.split("\t") for line in bed.read_text().splitlines()]
    assert rows and all(int(r[2]) > int(r[1]) for r in rows)
    assert main(["mask", "--model", str(run / "model.pt"), "--data", str(data), "--out", str(bed)]) == 2


def test_train_macs_mask_from_narrowpeak(trained):
    root, data, _ = trained
    peaks = root / "p.narrowPeak"
    peaks.write_text("0\t100\t300\tp\t1\t.\t1\t1\t1\t1\n3\t50\t90\tp\t1\t.\t1\t1\t1\t1\n")
    out = root / "macs"
    argv = ["train", "--model", "macs-mask", "--data", str(data), "--peaks", str(peaks), "--epochs", "1", "--d", "4"]
    assert main([*argv, "--layers", "1", "--out", str(out), "--device", "cpu", "--quiet"]) == 0


def test_call_peaks_npy_and_bedgraph(tmp_path, capsys):
    rng = np.random.default_rng(0)
    track = rng.gamma(2.0, 0.5, 30_000)
    track[10_000:10_300] += 4.0
    np.save(tmp_path / "t.npy", track)
    assert main(["call-peaks", "--bigwig", str(tmp_path / "t.npy"), "--out", str(tmp_path / "a.bed")]) == 0
    rows = [line.split("\t") for line in (tmp_path / "a.bed").read_text().splitlines()]
    assert any(int(r[1]) <= 10_150 <= int(r[2]) for r in rows)
    with open(tmp_path / "t.bedGraph", "w") as f:
        for i, v in enumerate(track):
            f.write(f"chr7\t{i}\t{i + 1}\t{v:.4f}\n")
    assert main(["call-peaks", "--bigwig", str(tmp_path / "t.bedGraph"), "--out", str(tmp_path / "b.bed")]) == 0
    assert (tmp_path / "b.bed").read_text().startswith("chr7\t")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "--lr", "nan"], "--lr"),
        (["train", "--model", "transformer"], "invalid choice"),
        (["train", "--data", "missing.npz", "--out", "t"], "missing.npz"),
        (["train", "--prior-scale", "-1", "--out", "t"], "prior-scale"),
        (["eval", "--model", "afile"], "afile"),
        (["mask", "--model", "afile", "--out", "m.bed"], "afile"),
        (["call-peaks", "--bigwig", "afile", "--out", "x.bed"], "afile"),
        (["call-peaks", "--bigwig", "nothere.bedGraph", "--out", "x.bed"], "nothere.bedGraph"),
        (["generate", "--out", "afile.npz"], "exists"),
        (["generate", "--out", "afile"], "exists"),  # np.savez's name for it, afile.npz, is the user's
        (["generate", "--out", "afile.npz", "--overwrite"], "not written by iclr25"),
        (["generate", "--n", "3", "--out", "g.npz"], "--n"),
        (["reproduce", "epochs=0"], "epochs"),
        (["reproduce", "truth=region"], "truth"),
    ],
)
def test_bad_input_one_line(argv, needle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a checkpoint\n")
    (tmp_path / "afile.npz").write_bytes(b"a user's archive")
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and needle in err, err
    assert (tmp_path / "afile.npz").read_bytes() == b"a user's archive"


def _bigwig(path, n=5000):
    pyBigWig = pytest.importorskip("pyBigWig")
    track = np.random.default_rng(0).gamma(2.0, 0.5, n)
    track[n // 3 : n // 3 + 300] += 4.0
    with pyBigWig.open(str(path), "w") as bw:
        bw.addHeader([("chr1", n)])
        bw.addEntries("chr1", 0, values=track.tolist(), span=1, step=1)
    return path


@pytest.mark.parametrize("damage", ["text", "truncated", "zeroed_index", "empty"])
def test_bad_bigwig_one_line_at_fd_level(damage, tmp_path):
    """A malformed bigWig gives exactly one stderr line and exit 2, also counting what the C library would print
    straight to file descriptor 2 (the CLI runs as a subprocess so its whole stderr is captured)."""
    import subprocess
    import sys

    good = _bigwig(tmp_path / "good.bw").read_bytes()
    bad = tmp_path / "bad.bigWig"
    if damage == "text":
        bad.write_text("chr1\t0\t10\t1.0\n")
    elif damage == "truncated":
        bad.write_bytes(good[:80])  # the magic number survives, the header does not
    elif damage == "zeroed_index":
        bad.write_bytes(good[:64] + bytes(len(good) - 64))
    else:
        bad.write_bytes(b"")
    proc = subprocess.run(
        [sys.executable, "-m", "iclr25.seq2exp.cli", "call-peaks", "--bigwig", str(bad), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "bad.bigWig" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()


def test_good_bigwig_calls_peaks(tmp_path):
    bw = _bigwig(tmp_path / "t.bw", 30_000)
    assert main(["call-peaks", "--bigwig", str(bw), "--out", str(tmp_path / "p.bed")]) == 0
    rows = [line.split("\t") for line in (tmp_path / "p.bed").read_text().splitlines()]
    assert rows and all(r[0] == "chr1" for r in rows) and any(int(r[1]) <= 10_150 <= int(r[2]) for r in rows)
