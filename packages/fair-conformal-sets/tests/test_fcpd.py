"""Loader and analysis of the study data (FCPD) on tiny generated files."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from iclr25.fair_conformal_sets import fcpd

RESPONSE_HEADER = [
    "experiment", "participant_id", "prompt_idx", "response", "label", "label_text", "group", "group_text", "top1",
    "avgk_set", "conformal_marginal_set", "conformal_conditional_set",
]  # fmt: skip


def _write(path, header, rows):
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([header, *rows])


@pytest.fixture
def study_dir(tmp_path):
    """Two participants per treatment, four trials each; group 0 items 0-1, group 1 items 2-3."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "bios-bias"
    folder.mkdir()
    items = {0: (1, 0, "1 "), 1: (2, 0, "2 3 "), 2: (4, 1, "4 5 6 "), 3: (5, 1, "")}  # idx -> label, group, set
    rows, results = [], []
    pid = 0
    expected: dict = {}
    for t in fcpd.TREATMENTS:
        for _ in range(2):
            right = 0
            for idx, (label, group, shown) in items.items():
                response = label if rng.random() < 0.6 else (label + 1) % 10
                right += response == label
                expected.setdefault(t, {}).setdefault(group, []).append(response == label)
                rows.append([t, pid, idx, response, label, "x", f"{group}.0", "F" if group == 0 else "M", label,
                             shown, shown, shown])  # fmt: skip
            results.append([pid, pid, t, right, 10.5, "DATA_EXPIRED" if pid == 3 else 30, "Female", "White"])
            pid += 1
    results.append([pid, pid, "control", "CONSENT_REVOKED", 1, "x", "x", "x"])  # no number: skipped
    _write(folder / "individual_results.csv", RESPONSE_HEADER, rows)
    _write(folder / "results.csv", ["", "participant_id", "experiment", "num_correct", "time_taken", "Age", "Sex",
                                    "Ethnicity"], results)  # fmt: skip
    item_header = ["idx", "prompt", "label_text", "label", "original_label", "group", "group_text", "top1",
                   "topk_set", "avgk_set", "conformal_marginal_set", "conformal_conditional_set"]  # fmt: skip
    _write(folder / "bios.csv", item_header, [[i, "p", "x", l, l, g, "x", l, s, s, s, s]
                                              for i, (l, g, s) in items.items()])  # fmt: skip
    return tmp_path, expected


def test_parse_set():
    assert fcpd.parse_set("2 3 ") == (2, 3)
    assert fcpd.parse_set("") == ()
    with pytest.raises(ValueError, match="label ids"):
        fcpd.parse_set("a b")


def test_round_trip(study_dir):
    folder, expected = study_dir
    study = fcpd.load(folder, "bios")
    assert len(study.response) == 32 and set(study.group.tolist()) == {0, 1}
    assert fcpd._response("") == -1 and fcpd._response("3") == 3
    assert study.items[1]["conformal_marginal_set"] == (2, 3) and study.items[3]["avgk_set"] == ()
    result = fcpd.analyze(study, n_boot=50)
    for t in fcpd.TREATMENTS:
        for g in (0, 1):
            assert result["treatments"][t]["groups"][g]["accuracy"] == pytest.approx(np.mean(expected[t][g]))
    m = result["treatments"]["marginal"]["groups"]
    assert m[0]["size"] == 1.5 and m[0]["singleton"] == 0.5 and m[1]["coverage"] == 0.5
    delta = {g: np.mean(expected["marginal"][g]) - np.mean(expected["control"][g]) for g in (0, 1)}
    assert result["impact"]["marginal"]["Delta"] == pytest.approx(abs(delta[0] - delta[1]))
    acc = fcpd.treatment_accuracy_from_results(study.participants)
    total = sum(np.sum(expected["control"][g]) for g in (0, 1))
    assert acc["control"] == pytest.approx(total / 2 / 50)  # mean num_correct / 50 over 2 participants


def test_bad_inputs(study_dir, tmp_path):
    folder, _ = study_dir
    with pytest.raises(ValueError, match="task must be one of"):
        fcpd.load(folder, "imagenet")
    with pytest.raises(FileNotFoundError):
        fcpd.load(tmp_path / "nowhere", "bios")
    bad = tmp_path / "bad"
    bad.mkdir()
    _write(bad / "individual_results.csv", ["experiment", "participant_id"], [["control", 1]])
    with pytest.raises(ValueError, match="lacks columns"):
        fcpd.load(bad, "bios")
