"""`table`: our results in the layout of the paper's Table 3, from reproduce results.json and study.json files."""

from __future__ import annotations

import json

import pytest

from iclr25.lrnn_state_tracking import studies
from iclr25.lrnn_state_tracking.claims import study_declared
from iclr25.lrnn_state_tracking.config import TrainConfig
from iclr25.lrnn_state_tracking.table import collect, format_table3
from iclr25.shared.claims import differences, evaluate
from iclr25.shared.results import Claim


def _write(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_table_layout_from_results_and_studies(tmp_path):
    results = _write(
        tmp_path / "results.json",
        {
            "scale": "quick",
            "config": {"grid_layers": 1, "grid_d_model": 32, "grid_batch": 64, "grid_steps_parity": 1000},
            "metrics": {"table3_scaled_accuracy": {"parity": {"deltanet [0,1]": [-0.01], "deltanet [-1,1]": [0.75]}}},
        },
    )
    study = _write(
        tmp_path / "study.json",
        {
            "study": "mod_arith",
            "setting": "1L d32",
            "cells": [
                {"task": "mod", "model": "deltanet", "eig_range": "[-1,1]", "values": [0.2, 0.4]},
                {"task": "s5_swaps", "model": "deltanet", "eig_range": "[-1,1]", "values": [1.0], "metric": "x"},
            ],
        },
    )
    text = format_table3(collect([results, study]))
    lines = text.splitlines()
    assert lines[0].startswith("| model | Parity: ours / paper | Mod. arith. w/o brackets")
    row = next(line for line in lines if line.startswith("| DeltaNet [-1,1]"))
    assert (
        row == "| DeltaNet [-1,1] | **0.750** (best of 1) / 1.000 | **0.400** (best of 2) / 0.971 | not run / 0.260 |"
    )
    assert "| mLSTM | not built / 0.087" in text
    assert "seeds 0.200, 0.400; 1L d32 (mod_arith)" in text
    assert "seeds 0.750; 1L d32, batch 64, 1000 steps (reproduce --scale quick)" in text
    assert [line.split("|")[1].strip() for line in lines[2:9]] == [
        "Transformer",
        "mLSTM",
        "sLSTM (ours: nn.LSTM)",
        "Mamba [0,1]",
        "Mamba [-1,1]",
        "DeltaNet [0,1]",
        "DeltaNet [-1,1]",
    ]


def test_table_rejects_foreign_files(tmp_path):
    with pytest.raises(ValueError, match="neither"):
        collect([_write(tmp_path / "a.json", {"x": 1})])
    (tmp_path / "b.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(ValueError, match="not a readable JSON"):
        collect([tmp_path / "b.json"])


def test_run_study_records_per_seed_values(monkeypatch):
    tiny = TrainConfig(task="parity", model="figure1", d_model=4, n_layers=1, steps=2, batch_size=4, warmup=0)
    monkeypatch.setitem(studies.STUDIES, "tiny", {"what": "tiny", "runs": [("a", tiny)], "seeds": (0, 1), "eval_n": 8})
    record = studies.run_study("tiny")
    (cell,) = record["cells"]
    assert cell["seeds"] == [0, 1] and len(cell["values"]) == 2 and cell["metric"] == "scaled_accuracy"
    assert all(-1 <= v <= 1 for v in cell["values"]) and record["cpu_s"] >= 0
    with pytest.raises(ValueError, match="study must be one of"):
        studies.run_study("nope")


@pytest.mark.slow
def test_a_study_in_processes_gives_the_numbers_of_one_process(monkeypatch, tmp_path):
    """jobs=2 trains the runs in two spawned processes: each run's value and details are those of jobs=1 (the
    workers get the run configs, so a study they cannot import by name, as here, runs too)."""
    from dataclasses import replace

    from iclr25.lrnn_state_tracking.config import WordConfig

    tiny = TrainConfig(task="parity", model="figure1", d_model=4, n_layers=1, steps=2, batch_size=4, warmup=0)
    word = WordConfig(d_model=16, n_heads=2, train_len=8, test_len=16, steps=3, batch_size=8, eval_n=16)
    runs = [("a", tiny), ("b", replace(tiny, eig_range="[0,1]")), ("w", word)]
    monkeypatch.setitem(studies.STUDIES, "tiny", {"what": "tiny", "runs": runs, "seeds": (0, 1), "eval_n": 8})
    one, two = (studies.run_study("tiny", jobs=jobs) for jobs in (1, 2))
    for record in (one, two):
        for cell in record["cells"]:
            for detail in cell["per_seed"]:
                detail.pop("cpu_s")
    assert [c["label"] for c in two["cells"]] == ["a", "b", "w"] and two["cells"][2]["metric"] == "seq_acc_2x_train_len"
    assert two["cells"][0]["per_seed"][0] != two["cells"][0]["per_seed"][1]  # the seeds differ
    assert two["cells"] == one["cells"]
    with pytest.raises(ValueError, match="--jobs must be >= 1"):
        studies.main(["tiny", "--out", str(tmp_path / "study"), "--jobs", "0"])


def test_study_claims_margins():
    def cell(r, values, label=None):
        return {"label": label or r, "eig_range": r, "model": "deltanet", "seeds": [1, 2], "values": values}

    record = {
        "study": "s5_swaps",
        "setting": "S5 swaps",
        "cells": [cell("[0,1]", [0.1, 0.2]), cell("[-1,1]", [0.9, 0.5])],
    }
    (claim,) = evaluate(study_declared("s5_swaps", (1, 2)), record, None)
    assert claim.holds and not claim.gated and "0.900 vs 0.200" in claim.ours
    record["cells"][1]["values"] = [0.3, 0.3]  # a gap below the margin (0.2) is reported as not holding
    assert not evaluate(study_declared("s5_swaps", (1, 2)), record, None)[0].holds
    budget = {
        "study": "deltanet_budget",
        "setting": "",
        "cells": [cell("[-1,1]", [0.7, 0.8], "1L 1000 steps"), cell("[-1,1]", [0.9, 0.9], "1L 3000 steps")],
    }
    (more, absent) = evaluate(study_declared("deltanet_budget", (1, 2)), budget, None)
    assert more.name == "budget_1L_3000_steps" and more.holds
    assert absent.name == "budget_2L_1000_steps" and not absent.measured  # a run missing from the record


def test_pilot_appends_a_record_with_its_command(tmp_path, capsys):
    tiny = ["model=figure1", "d_model=4", "steps=2", "batch_size=4", "warmup=0"]
    args = ["--out", str(tmp_path), "--eval-n", "8", *tiny]
    assert studies.main(["pilot", *args]) == 0
    assert studies.main(["pilot", *args, "seed=1"]) == 0
    lines = (tmp_path / "pilots.jsonl").read_text(encoding="utf-8").splitlines()
    first, second = (json.loads(line) for line in lines)
    assert first["command"].startswith("python -m iclr25.lrnn_state_tracking.studies pilot --out")
    assert first["config"]["model"] == "figure1" and second["config"]["seed"] == 1
    assert -1 <= first["test_scaled_accuracy"] <= 1 and first["test_lengths"] == "40-256" and first["cpu_s"] >= 0
    assert first["beyond_train_lengths"] == "41-80" and -1 <= first["beyond_train_scaled_accuracy"] <= 1
    assert '"test_scaled_accuracy"' in capsys.readouterr().out
    with pytest.raises(ValueError, match="--eval-n"):
        studies.main(["pilot", "--out", str(tmp_path), "--eval-n", "0"])


def test_pilot_appends_only_to_a_pilot_log(tmp_path, monkeypatch):
    """--out's pilots.jsonl is appended to only when it is a pilot log: a user's file of that name is refused
    before the pilot runs and keeps its bytes."""
    import hashlib

    def no_pilot(*args, **kwargs):
        raise AssertionError("the pilot ran before --out was checked")

    monkeypatch.setattr(studies, "pilot", no_pilot)

    mine = tmp_path / "pilots.jsonl"
    mine.write_text('{"my": "own rows"}\n', encoding="utf-8")
    before = hashlib.sha256(mine.read_bytes()).hexdigest()
    with pytest.raises(ValueError, match=r"not a pilots\.jsonl this command wrote"):
        studies.main(["pilot", "--out", str(tmp_path), "--eval-n", "8"])
    assert hashlib.sha256(mine.read_bytes()).hexdigest() == before


def test_a_study_writes_a_run_folder_and_never_a_users_file(tmp_path, monkeypatch):
    import hashlib

    def no_study(*args, **kwargs):
        raise AssertionError("the study started before --out was checked")

    monkeypatch.setattr(studies, "run_study", no_study)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "study.json").write_text("{}", encoding="utf-8")
    before = hashlib.sha256((mine / "study.json").read_bytes()).hexdigest()
    for extra in ([], ["--overwrite"]):
        with pytest.raises(ValueError, match="no iclr25 run made"):
            studies.main(["s5_swaps", "--out", str(mine), *extra])
        assert hashlib.sha256((mine / "study.json").read_bytes()).hexdigest() == before

    record = {"study": "s5_swaps", "setting": "tiny", "cells": [], "command": "c", "hardware": "h", "cpu_s": 1,
              "wall_s": 1}  # fmt: skip
    monkeypatch.setattr(studies, "run_study", lambda *args, **kwargs: dict(record))
    out = tmp_path / "study"
    assert studies.main(["s5_swaps", "--out", str(out)]) == 0
    assert json.loads((out / ".iclr25-run.json").read_text())["files"] == ["report.md", "study.json"]
    with pytest.raises(FileExistsError, match="already holds a complete run"):
        studies.main(["s5_swaps", "--out", str(out)])
    assert studies.main(["s5_swaps", "--out", str(out), "--overwrite"]) == 0


def test_committed_study_folders_are_run_folders_an_overwrite_may_replace():
    from pathlib import Path

    from iclr25.shared.run import check_run_folder

    root = Path(__file__).resolve().parents[1] / "results" / "studies"
    for name in ("deltanet_budget", "mamba_parity", "mod_arith", "s5_swaps"):
        check_run_folder(root / name, overwrite=True)


def test_committed_study_claims_are_the_declared_claims():
    """Each committed study's claims, evaluated again from its record, are the claims it stored."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "results" / "studies"
    for name in ("deltanet_budget", "mamba_parity", "mod_arith", "s5_swaps"):
        record = json.loads((root / name / "study.json").read_text())
        declared = study_declared(name, record["cells"][0]["seeds"])
        assert differences([Claim(**c) for c in record["claims"]], evaluate(declared, record, None)) == []
