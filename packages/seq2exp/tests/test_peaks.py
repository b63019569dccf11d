"""Spec §9 check 5 and the caller's pieces: Poisson tail, BH q-values, merging, BED I/O."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammainc

from iclr25.seq2exp import call_peaks_macs_style, read_bed, write_bed
from iclr25.seq2exp.peaks import bh_qvalues, peaks_to_mask
from iclr25.seq2exp.reference import bh_reference, poisson_upper_reference


def _boxes(seed: int):
    rng = np.random.default_rng(seed)
    track = rng.gamma(2.0, 0.5, size=100_000)
    starts = rng.choice(np.arange(1000, 98_000, 4000), size=5, replace=False)
    box = np.zeros(track.size, bool)
    for s in starts:
        box[s : s + 300] = True
    track[box] += 4.0
    return track, starts, box


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_caller_finds_planted_boxes(seed):
    track, starts, box = _boxes(seed)
    mask, peaks = call_peaks_macs_style(track)
    assert all(mask[s : s + 300].mean() >= 0.5 for s in starts)
    assert mask[~box].mean() < 0.01
    assert len(peaks) >= 5
    strict, _ = call_peaks_macs_style(track, qvalue=0.001)
    assert np.all(strict <= mask)  # a lower q gives a subset


def test_count_scale_one_finds_nothing():
    track, starts, _ = _boxes(0)
    mask, _ = call_peaks_macs_style(track, count_scale=1.0)  # window means as counts: the pitfall of spec §10.2
    assert sum(mask[s : s + 300].mean() >= 0.5 for s in starts) == 0


def test_poisson_tail_and_bh():
    k = np.arange(0, 40)
    lam = np.full(k.shape, 12.5)
    assert np.allclose(gammainc(np.maximum(k, 1e-12), lam)[1:], poisson_upper_reference(k, lam)[1:])
    p = np.random.default_rng(0).random(60) ** 3
    assert np.allclose(bh_qvalues(p), bh_reference(p))
    rows = np.stack([p, p[::-1]])
    assert np.allclose(bh_qvalues(rows)[1], bh_reference(p[::-1]))


def test_rows_are_called_independently():
    track, _, _ = _boxes(1)
    rows = track[:40_000].reshape(2, 20_000)
    mask2d, _ = call_peaks_macs_style(rows)
    for i in range(2):
        assert np.array_equal(mask2d[i], call_peaks_macs_style(rows[i])[0])


def test_bed_roundtrip_and_narrowpeak(tmp_path):
    mask = np.zeros(100, np.uint8)
    mask[10:20] = mask[50:55] = 1
    assert write_bed(str(tmp_path / "m.bed"), "chr1", mask, offset=1000) == 2
    rows = read_bed(str(tmp_path / "m.bed"))
    assert rows == [("chr1", 1010, 1020), ("chr1", 1050, 1055)]
    assert np.array_equal(peaks_to_mask([(a, b) for _, a, b in rows], 100, offset=1000), mask)
    narrow = tmp_path / "x.narrowPeak"
    narrow.write_text("chr2\t5\t9\tpeak1\t100\t.\t5.1\t3.2\t2.1\t2\nchr1\t1\t3\tpeak2\t50\t.\t4\t3\t2\t1\n")
    assert read_bed(str(narrow), chrom="chr2") == [("chr2", 5, 9)]
    (tmp_path / "bad.bed").write_text("chr1\tx\t3\n")
    with pytest.raises(ValueError, match="line 1"):
        read_bed(str(tmp_path / "bad.bed"))


def test_bad_track():
    with pytest.raises(ValueError, match="track"):
        call_peaks_macs_style(np.zeros((2, 2, 2)))
