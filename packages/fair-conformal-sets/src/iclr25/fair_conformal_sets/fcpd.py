"""Re-analysis of the released human-study data (FCPD, official repository `results/`, MIT).

Paper: Cresswell et al., "Conformal Prediction Sets Can Cause Disparate Impact", ICLR 2025 (arXiv 2410.01888).
Per task three CSV files: the items shown (`<task>.csv`), one row per response (`individual_results.csv`) and
one row per participant (`results.csv`, demographic cells may read DATA_EXPIRED / CONSENT_REVOKED). Sets are
space-separated label ids, often with a trailing space ("2 3 "). `analyze` gives per treatment x group decision
accuracy, delta, Delta (with a participant-clustered bootstrap CI, our design), adoption (response inside the
shown set), coverage, mean set size and singleton rate of the sets shown, and per-group odds ratios against
control with maxROR from a logistic GEE clustered by item (`gee.py`).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.fair_conformal_sets.gee import treatment_group_odds_ratios
from iclr25.fair_conformal_sets.metrics import bootstrap_disparate_impact

TASKS = {"bios": ("bios-bias", "bios.csv"), "facet": ("facet", "facet.csv"), "ravdess": ("ravdess", "ravdess.csv")}
TREATMENTS = ("control", "avgk", "marginal", "conditional")
SET_COLUMN = {"avgk": "avgk_set", "marginal": "conformal_marginal_set", "conditional": "conformal_conditional_set"}
ITEM_COLUMNS = ("idx", "label", "group", "top1", "avgk_set", "conformal_marginal_set", "conformal_conditional_set")
RESPONSE_COLUMNS = ("experiment", "participant_id", "prompt_idx", "response", "label", "group", *SET_COLUMN.values())
PARTICIPANT_COLUMNS = ("participant_id", "experiment", "num_correct")
TRIALS_PER_PARTICIPANT = 50


def parse_set(text: str) -> tuple[int, ...]:
    """'2 3 ' -> (2, 3); an empty cell is the empty set."""
    try:
        return tuple(int(t) for t in str(text).split())
    except ValueError:
        raise ValueError(f"prediction set {text!r} is not a space-separated list of label ids") from None


def _int(value: str, what: str) -> int:
    try:
        return int(float(value))
    except ValueError:
        raise ValueError(f"{what} {value!r} is not a number") from None


def _response(value: str) -> int:
    """A participant's answer; an empty or non-numeric cell (no answer) becomes -1, which is never correct."""
    try:
        return int(float(value))
    except ValueError:
        return -1


def _read_csv(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in required if c not in header]
        if missing:
            raise ValueError(f"{path} lacks columns {missing}; has {header}")
        return [{(k or "").strip(): v for k, v in row.items()} for row in reader]


@dataclass
class FCPDStudy:
    """One task of the study: responses as arrays, per-participant rows, and the item table when present."""

    task: str
    experiment: np.ndarray  # (N,) treatment of each response
    participant: np.ndarray  # (N,)
    item: np.ndarray  # (N,) prompt_idx
    response: np.ndarray  # (N,)
    label: np.ndarray  # (N,)
    group: np.ndarray  # (N,) int group id
    shown: dict[str, list[tuple[int, ...]]]  # set column -> the set of each response's item
    participants: list[dict[str, str]] = field(default_factory=list)
    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    group_names: dict[int, str] = field(default_factory=dict)


def task_folder(folder: str | Path, task: str) -> Path:
    """The folder with a task's files: `folder` itself or its `bios-bias`/`facet`/`ravdess` sub-folder."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: task must be one of {', '.join(TASKS)}")
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no such folder: {folder}")
    sub = folder / TASKS[task][0]
    return sub if (sub / "individual_results.csv").is_file() else folder


def load(folder: str | Path, task: str) -> FCPDStudy:
    """Read a task's `individual_results.csv`, `results.csv` and (if present) `<task>.csv`."""
    root = task_folder(folder, task)
    rows = _read_csv(root / "individual_results.csv", RESPONSE_COLUMNS)
    if not rows:
        raise ValueError(f"{root / 'individual_results.csv'} has no responses")
    unknown = sorted({r["experiment"] for r in rows} - set(TREATMENTS))
    if unknown:
        raise ValueError(f"unknown experiments {unknown}; allowed: {', '.join(TREATMENTS)}")
    study = FCPDStudy(
        task=task,
        experiment=np.array([r["experiment"] for r in rows]),
        participant=np.array([_int(r["participant_id"], "participant_id") for r in rows]),
        item=np.array([_int(r["prompt_idx"], "prompt_idx") for r in rows]),
        response=np.array([_response(r["response"]) for r in rows]),
        label=np.array([_int(r["label"], "label") for r in rows]),
        group=np.array([_int(r["group"], "group") for r in rows]),
        shown={c: [parse_set(r[c]) for r in rows] for c in SET_COLUMN.values()},
    )
    study.group_names = {_int(r["group"], "group"): r.get("group_text", "").strip() for r in rows}
    study.participants = _read_csv(root / "results.csv", PARTICIPANT_COLUMNS)
    items_path = root / TASKS[task][1]
    if items_path.is_file():
        for r in _read_csv(items_path, ITEM_COLUMNS):
            idx = _int(r["idx"], "idx")
            study.items[idx] = {
                "label": _int(r["label"], "label"),
                "group": _int(r["group"], "group"),
                "top1": _int(r["top1"], "top1"),
                **{c: parse_set(r[c]) for c in ("avgk_set", *SET_COLUMN.values(), "topk_set") if c in r},
            }
    return study


def treatment_accuracy_from_results(participants: list[dict[str, str]]) -> dict[str, float]:
    """Mean of num_correct / 50 per treatment over `results.csv` (rows without a number are skipped)."""
    out: dict[str, list[float]] = {}
    for r in participants:
        try:
            value = float(r["num_correct"])
        except ValueError:
            continue
        out.setdefault(r["experiment"].strip(), []).append(value / TRIALS_PER_PARTICIPANT)
    return {t: float(np.mean(v)) for t, v in out.items()}


def analyze(study: FCPDStudy, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Per treatment x group accuracy, delta, Delta (+ bootstrap CI), adoption, coverage, size, singletons."""
    correct = study.response == study.label
    groups = np.unique(study.group)
    per: dict[str, dict[str, Any]] = {}
    for t in TREATMENTS:
        rows_t = study.experiment == t
        if not rows_t.any():
            continue
        entry: dict[str, Any] = {"accuracy": float(correct[rows_t].mean()), "n": int(rows_t.sum()), "groups": {}}
        for g in groups:
            rows = rows_t & (study.group == g)
            stats = {"n": int(rows.sum()), "accuracy": float(correct[rows].mean()) if rows.any() else float("nan")}
            if t in SET_COLUMN and rows.any():
                sets = [study.shown[SET_COLUMN[t]][i] for i in np.flatnonzero(rows)]
                size = np.array([len(s) for s in sets])
                stats["adoption"] = float(np.mean([r in s for r, s in zip(study.response[rows], sets, strict=True)]))
                stats["coverage"] = float(np.mean([y in s for y, s in zip(study.label[rows], sets, strict=True)]))
                stats["size"] = float(size.mean())
                stats["singleton"] = float((size == 1).mean())
            entry["groups"][int(g)] = stats
        per[t] = entry
    # per-participant counts for the clustered bootstrap
    pids = np.unique(study.participant)
    p_index = {p: i for i, p in enumerate(pids)}
    g_index = {g: j for j, g in enumerate(groups)}
    hits = np.zeros((len(pids), len(groups)))
    count = np.zeros((len(pids), len(groups)))
    p_rows = np.array([p_index[p] for p in study.participant])
    g_rows = np.array([g_index[g] for g in study.group])
    np.add.at(hits, (p_rows, g_rows), correct)
    np.add.at(count, (p_rows, g_rows), 1)
    treatment_of = {}
    for p, t in zip(study.participant, study.experiment, strict=True):
        treatment_of.setdefault(p, t)
    impact = bootstrap_disparate_impact(
        hits,
        count,
        np.array([treatment_of[p] for p in pids]),
        [int(g) for g in groups],
        n_boot=n_boot,
        rng=np.random.default_rng(seed),
    )
    odds = treatment_group_odds_ratios(correct, study.experiment, study.group, study.item)  # clustered by item
    return {
        "task": study.task,
        "treatments": per,
        "impact": impact,
        "odds_ratios": odds,
        "accuracy_from_results_csv": treatment_accuracy_from_results(study.participants),
        "group_names": study.group_names,
        "participants": len(pids),
        "missing_responses": int((study.response < 0).sum()),
    }


# ------------------------------------------------------------------------------------------ shipped results.csv
# The three per-participant files of the FCPD (official repository `results/<task>/results.csv`, MIT licence; see
# fcpd_data/SOURCE.md) ship with the package. The per-response files (about 0.55 MB each) do not.
SHIPPED_DIR = Path(__file__).with_name("fcpd_data")


@dataclass
class Participants:
    """One task's `results.csv`: one row per participant (treatment and number of correct answers out of 50)."""

    task: str
    participant: np.ndarray  # (P,) int
    experiment: np.ndarray  # (P,) treatment name
    num_correct: np.ndarray  # (P,) int in [0, 50]


def shipped_results_csv(task: str) -> Path:
    """The path of a task's shipped `results.csv` (bios, facet, ravdess)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: task must be one of {', '.join(TASKS)}")
    return SHIPPED_DIR / TASKS[task][0] / "results.csv"


def load_participants(path: str | Path, task: str = "") -> Participants:
    """A validated `results.csv`: the header names participant_id, experiment and num_correct; every row has the
    header's number of fields; participant ids are unique integers; experiments are the study's four treatments;
    num_correct is an integer in [0, 50]. Anything else is a ValueError naming the file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text CSV file") from None
    except csv.Error as e:
        raise ValueError(f"{path} is not a readable CSV file ({e})") from None
    if not rows:
        raise ValueError(f"{path} is empty (expected a header with {', '.join(PARTICIPANT_COLUMNS)})")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in PARTICIPANT_COLUMNS if c not in header]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}; has {header}")
    col = {c: header.index(c) for c in PARTICIPANT_COLUMNS}
    body = [(line, r) for line, r in enumerate(rows[1:], start=2) if any(cell.strip() for cell in r)]
    if not body:
        raise ValueError(f"{path} has a header but no participants")
    pids, exps, correct = [], [], []
    for line, r in body:
        if len(r) != len(header):
            raise ValueError(f"{path} line {line} has {len(r)} fields; the header has {len(header)}")
        where = f"{path} line {line}"
        exp = r[col["experiment"]].strip()
        if exp not in TREATMENTS:
            raise ValueError(f"{where}: experiment {exp!r} is not one of {', '.join(TREATMENTS)}")
        pid, n = r[col["participant_id"]].strip(), r[col["num_correct"]].strip()
        if not pid.isdigit():
            raise ValueError(f"{where}: participant_id {pid!r} is not a non-negative integer")
        if not n.isdigit() or int(n) > TRIALS_PER_PARTICIPANT:
            raise ValueError(f"{where}: num_correct {n!r} is not an integer in [0, {TRIALS_PER_PARTICIPANT}]")
        pids.append(int(pid))
        exps.append(exp)
        correct.append(int(n))
    participant = np.array(pids)
    uniq, counts = np.unique(participant, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{path}: participant_id {int(uniq[counts > 1][0])} appears more than once")
    return Participants(task, participant, np.array(exps), np.array(correct))


def analyze_participants(p: Participants, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Per treatment: participants, decision accuracy (mean num_correct / 50) with a 95% bootstrap CI over
    participants, and the gain over control (delta_t on the whole population, §3 of the paper) with a CI from
    independent resamples of both treatments."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    rng = np.random.default_rng(seed)
    acc = p.num_correct / TRIALS_PER_PARTICIPANT
    boot: dict[str, np.ndarray] = {}
    out: dict[str, Any] = {"task": p.task, "participants": len(acc), "treatments": {}}
    for t in TREATMENTS:
        a = acc[p.experiment == t]
        if not len(a):
            continue
        boot[t] = a[rng.integers(0, len(a), size=(n_boot, len(a)))].mean(1)
        out["treatments"][t] = {
            "n": len(a),
            "accuracy": float(a.mean()),
            "sd": float(a.std(ddof=1)) if len(a) > 1 else float("nan"),
            "ci95": [float(v) for v in np.percentile(boot[t], [2.5, 97.5])],
        }
    if "control" in boot:
        base = out["treatments"]["control"]["accuracy"]
        for t in TREATMENTS[1:]:
            if t in boot:
                gain = boot[t] - boot["control"]
                out["treatments"][t]["gain"] = out["treatments"][t]["accuracy"] - base
                out["treatments"][t]["gain_ci95"] = [float(v) for v in np.percentile(gain, [2.5, 97.5])]
    return out
