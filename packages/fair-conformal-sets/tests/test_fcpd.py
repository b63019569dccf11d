"""Loader and analysis of the study data (FCPD) on tiny generated files."""

from __future__ import annotations

import csv
import re

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


# ---------------------------------------------------------------------------- shipped results.csv (fcpd_data/)
SPEC_ACCURACY = {  # spec §5, computed from the released results.csv (3 decimals)
    "bios": (0.608, 0.703, 0.697, 0.703),
    "facet": (0.761, 0.782, 0.790, 0.782),
    "ravdess": (0.618, 0.678, 0.687, 0.673),
}
FIRST_PARTICIPANT = {"bios": 0, "facet": 200, "ravdess": 400}


@pytest.mark.parametrize("task", list(fcpd.TASKS))
def test_shipped_participant_files(task):
    path = fcpd.shipped_results_csv(task)
    assert path.is_file() and path.stat().st_size < 10_000
    assert (fcpd.SHIPPED_DIR / "LICENSE").read_text().startswith("MIT License")
    assert "05a1bf2591f8a8e5a4eec94a9887915f02f365d7" in (fcpd.SHIPPED_DIR / "SOURCE.md").read_text()
    p = fcpd.load_participants(path, task)
    assert len(p.participant) == 200
    assert p.participant.min() == FIRST_PARTICIPANT[task] and len(np.unique(p.participant)) == 200
    assert all((p.experiment == t).sum() == 50 for t in fcpd.TREATMENTS)
    r = fcpd.analyze_participants(p, n_boot=200)
    acc = [r["treatments"][t]["accuracy"] for t in fcpd.TREATMENTS]
    assert np.allclose(acc, SPEC_ACCURACY[task], atol=5e-4)
    for t in fcpd.TREATMENTS[1:]:
        lo, hi = r["treatments"][t]["gain_ci95"]
        assert lo < r["treatments"][t]["gain"] < hi
    # the older reader of results.csv agrees
    rows = fcpd._read_csv(path, fcpd.PARTICIPANT_COLUMNS)
    old = fcpd.treatment_accuracy_from_results(rows)
    assert np.allclose([old[t] for t in fcpd.TREATMENTS], acc)


def test_bios_shipped_accuracy_to_four_decimals():
    r = fcpd.analyze_participants(fcpd.load_participants(fcpd.shipped_results_csv("bios")), n_boot=10)
    got = [r["treatments"][t]["accuracy"] for t in fcpd.TREATMENTS]
    assert np.allclose(got, (0.6076, 0.7032, 0.6972, 0.7028), atol=1e-9)


GOOD = ",participant_id,experiment,num_correct,time_taken,Age,Sex,Ethnicity\n0,0,control,30,1.0,20,Female,White\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "is empty"),
        (",participant_id,experiment,time_taken\n0,0,control,1.0\n", "lacks columns ['num_correct']"),
        (GOOD.splitlines()[0] + "\n", "no participants"),
        (GOOD + "1,1,control,31\n", "line 3 has 4 fields"),
        (GOOD + "1,1,treatment,31,1.0,20,Male,White\n", "experiment 'treatment'"),
        (GOOD + "1,x1,control,31,1.0,20,Male,White\n", "participant_id 'x1'"),
        (GOOD + "1,1,control,51,1.0,20,Male,White\n", "num_correct '51'"),
        (GOOD + "1,1,control,-3,1.0,20,Male,White\n", "num_correct '-3'"),
        (GOOD + "1,1,control,CONSENT_REVOKED,1.0,20,Male,White\n", "num_correct 'CONSENT_REVOKED'"),
        (GOOD + "1,0,avgk,31,1.0,20,Male,White\n", "participant_id 0 appears more than once"),
    ],
)
def test_load_participants_refuses_malformed(tmp_path, text, needle):
    path = tmp_path / "results.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(needle)) as e:
        fcpd.load_participants(path)
    assert str(path) in str(e.value)


def test_load_participants_refuses_binary_and_missing(tmp_path):
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="UTF-8"):
        fcpd.load_participants(tmp_path / "bin.csv")
    with pytest.raises(FileNotFoundError, match=r"nope\.csv"):
        fcpd.load_participants(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="unknown task"):
        fcpd.shipped_results_csv("mnist")
