"""The `iclr25-patch-train` CLI: verbs, outputs and one-line errors on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from iclr25.patch_train.cli import main


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse errors exit directly
        return int(e.code)


def test_cost_prints_plan(capsys):
    assert main(["cost", "--K", "4", "--lam", "2/3", "--budget", "equal-compute"]) == 0
    out = capsys.readouterr().out
    assert "= 0.5000 x" in out and "180000 steps x 256 seqs x 8192 tokens" in out and "90000 steps x 1024" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cost", "--lam", "3/2"], "must lie in [0, 1]"),
        (["cost", "--lam", "abc"], "fraction"),
        (["cost", "--K", "0"], "--K must be a positive integer"),
        (["reproduce", "--scale", "huge"], "invalid choice"),
        (["reproduce", "--scale", "ci", "nope=1"], "unknown override key 'nope'"),
        (["reproduce", "--scale", "ci", "lam=1.5"], "lam must lie in (0, 1)"),
        (["eval", "--ckpt", "no/such/folder"], "not a saved model folder"),
        (["train", "--corpus", "no-such-corpus", "--steps", "4"], "unknown corpus"),
        (["train", "--model", "7b", "--steps", "4"], "unknown model size '7b'"),
        (["train", "--T", "60", "--steps", "4"], "must be a multiple of K*T=240"),
        (["tokenize", "--corpus", "no/such/shards", "--out", "t.bin"], "does not exist"),
        (["reproduce", "lr=-1"], "lr must be > 0"),
        (["reproduce", "lr=nan"], "lr must be a finite number"),
        (["reproduce", "seeds=0"], "seeds must be an integer >= 1"),
        (["reproduce", "model=7b"], "unknown model size '7b'"),
        (["reproduce", "eval_windows=0"], "eval_windows must be an integer >= 1"),
        (["reproduce", "max_len=8"], "max_len must be 0 (= T) or >= T=64"),
        (["train", "--lr", "-1"], "lr must be > 0"),
        (["train", "--lr", "nan"], "lr must be a finite number"),
        (["train", "--steps", "1"], "steps must be an integer >= 2"),
        (["train", "--K", "x"], "K expects int"),
        (["train", "--warmup", "-0.1"], "warmup must be >= 0"),
        (["train", "--seed", "-1"], "--seed must be an integer"),
        (["train", "--tokenizer", "no/such/tokenizer.json"], "no/such/tokenizer.json does not exist"),
        (["eval", "--ckpt", "no/such/folder", "--windows", "0"], "not a saved model folder"),
        (["train", "--steps", "100000000"], "steps must be <= 1e+06"),
        (["train", "--T", "100000000"], "T must be <= 32768"),
        (["train", "--K", "100000000"], "K must be <= 64"),
        (["train", "--tokens-per-step", "10000000000"], "tokens_per_step must be <= 3.35544e+07"),
        (["reproduce", "token_steps=100000000"], "token_steps must be <= 1e+06"),
    ],
    ids=[
        "lam>1", "lam-txt", "K0", "scale", "key", "value", "eval-ckpt", "corpus", "model", "T", "tok",
        "lr<0", "lr-nan", "seeds0", "model-key", "windows0", "max_len", "train-lr<0", "train-lr-nan",
        "steps1", "K-txt", "warmup<0", "seed<0", "tokenizer", "eval-windows", "steps-max", "T-max", "K-max",
        "tokens-max", "token-steps-max",
    ],
)  # fmt: skip
def test_bad_input_one_line_exit_2(argv, message, capsys, tmp_path):
    if argv[0] == "train":
        argv = [*argv, "--out", str(tmp_path / "run")]
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and err.startswith("iclr25-patch-train") and "error:" in err


def test_train_refuses_a_bad_tokenizer_or_a_users_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a tokenizer\n")
    assert _exit_code(["train", "--tokenizer", "afile", "--out", "t"]) == 2
    err = capsys.readouterr().err
    assert "afile" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "t").exists()  # refused before the run folder was made
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for extra in ([], ["--overwrite"]):
        assert _exit_code(["train", "--out", "mine", *extra]) == 2
        assert "no iclr25 run made" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]


def test_tokenize_never_replaces_a_users_file(tmp_path, capsys):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(json.dumps({"text": "hello world"}) + "\n")
    out = tmp_path / "precious.bin"
    out.write_text("keep")
    for extra in ([], ["--overwrite"]):  # a user's file: refused with or without --overwrite
        assert _exit_code(["tokenize", "--corpus", str(corpus), "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(out) in err[0] and out.read_text() == "keep", err
    ours = tmp_path / "tokens.bin"
    assert _exit_code(["tokenize", "--corpus", str(corpus), "--out", str(ours), "--quiet"]) == 0
    assert ours.stat().st_size == 2 * len("hello world") + 2  # uint16: separator + 11 bytes
    assert _exit_code(["tokenize", "--corpus", str(corpus), "--out", str(ours), "--overwrite", "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "docs.jsonl",
        "precious.bin",
        "tokens.bin",
    ]


def test_train_then_eval(tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    docs = [" ".join(rng.choice(words, 60)) for _ in range(80)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    run = tmp_path / "run"
    argv = ["train", "--stage", "two-stage", "--K", "4", "--lam", "1/2", "--steps", "6", "--corpus", str(corpus)]
    argv += ["--T", "16", "--tokens-per-step", "128", "--lr", "1e-2", "--out", str(run), "--device", "cpu"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "patch K=4" in out and "token K=1" in out and (run / "model" / "config.json").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert [s["stage"] for s in summary] == ["patch", "token"] and summary[0]["block_tokens"] == 64
    assert main(argv) == 2  # the run folder exists: refused without --overwrite
    assert "already holds a complete run" in capsys.readouterr().err
    assert json.loads((run / ".iclr25-run.json").read_text())["status"] == "complete"

    task = tmp_path / "piqa.jsonl"
    task.write_text(json.dumps({"goal": "alpha", "sol1": " beta", "sol2": " zzzz", "label": 0}) + "\n")
    argv = ["eval", "--ckpt", str(run / "model"), "--corpus", str(corpus), "--T", "16", "--windows", "8"]
    assert main([*argv, "--task", str(task), "--device", "cpu"]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["nll"] < np.log(256) and res["n"] == 1 and 0 <= res["acc_norm"] <= 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sweep", "--out", "s", "--budgets", "a,b"], "--budgets must be comma-separated integers"),
        (["sweep", "--out", "s", "--budgets", "1,4"], "--budgets must be integers >= 2"),
        (["sweep", "--out", "s", "--seeds", "0"], "--seeds >= 1"),
        (["overhead", "--out", "o", "--steps", "2"], "--steps must be >= 5"),
        (["sweep", "--out", "no/such/sweep", "--resummarize"], "sweep.json does not exist"),
    ],
)
def test_new_verbs_refuse_bad_input(argv, message, capsys):
    assert _exit_code(argv) == 2
    assert message in capsys.readouterr().err


def test_scale_plan_and_sweep_budgets(capsys):
    from iclr25.patch_train.cli import SWEEP_BUDGETS
    from iclr25.patch_train.sweep import BUDGETS

    assert SWEEP_BUDGETS == BUDGETS
    assert main(["scale-plan", "--scale", "full-125m"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["runs"]["patch"]["devices_ok"] == [1, 2, 4, 8]


def _sha(path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _no_work(*args, **kwargs):
    raise AssertionError("the work started before --out was checked")


def test_sweep_never_replaces_a_users_files(tmp_path, capsys, monkeypatch):
    """A folder holding a user's rows.jsonl / sweep.png is refused at once, --overwrite or not, bytes unchanged."""
    import iclr25.patch_train.sweep as sweep

    monkeypatch.setattr(sweep, "run_sweep", _no_work)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "rows.jsonl").write_text('{"my": "rows"}\n')
    (mine / "sweep.png").write_bytes(b"my figure")
    before = {p.name: _sha(p) for p in mine.iterdir()}
    for extra in ([], ["--overwrite"], ["--resummarize"]):
        assert _exit_code(["sweep", "--out", str(mine), "--budgets", "2,4", "--seeds", "1", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(mine) in err[0], err
        assert {p.name: _sha(p) for p in mine.iterdir()} == before


def test_sweep_writes_a_run_folder_and_keeps_a_users_file_on_rerun(tmp_path, capsys, monkeypatch):
    import iclr25.patch_train.train as train

    def fake_seed_runs(plans, cfg, seed, stream, valid_ids, out, device, wandb):  # no training: the files only
        run = {"train_s": 1.0, "train_cpu_s": 1.0}
        return {"token": {"nll": 2.0, **run}, "patch": {"nll": 2.0 - 0.01 * cfg.token_steps, **run}}

    monkeypatch.setattr(train, "seed_runs", fake_seed_runs)
    out = tmp_path / "sweep"
    argv = ["sweep", "--out", str(out), "--budgets", "2,4", "--seeds", "1", "--quiet"]
    assert _exit_code(argv) == 0
    marker = json.loads((out / ".iclr25-run.json").read_text())
    assert marker["status"] == "complete" and marker["files"] == ["rows.jsonl", "sweep.json", "sweep.png"]
    assert len((out / "rows.jsonl").read_text().splitlines()) == 2
    capsys.readouterr()
    assert _exit_code(argv) == 2  # an earlier sweep: only with --overwrite
    assert "already holds a complete run" in capsys.readouterr().err
    (out / "notes.txt").write_text("my notes")
    assert _exit_code([*argv, "--overwrite"]) == 0
    assert (out / "notes.txt").read_text() == "my notes"
    rows = (out / "rows.jsonl").read_text()
    assert _exit_code(["sweep", "--out", str(out), "--resummarize"]) == 0  # redone in place, rows kept
    assert (out / "rows.jsonl").read_text() == rows and (out / "notes.txt").read_text() == "my notes"
    assert json.loads((out / "sweep.json").read_text())["summary"][0]["token_steps"] == 2


def test_overhead_checks_out_before_the_study_and_never_replaces_a_users_file(tmp_path, capsys, monkeypatch):
    import iclr25.patch_train.train as train

    monkeypatch.setattr(train, "overhead_study", _no_work)
    for bad in ("/proc/x", str(tmp_path / "afile")):
        (tmp_path / "afile").write_text("a file, not a folder")
        assert _exit_code(["overhead", "--out", bad]) == 2
        captured = capsys.readouterr()
        assert len(captured.err.strip().splitlines()) == 1 and captured.out == "", captured
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "overhead.json").write_text('{"mine": 1}')
    before = _sha(mine / "overhead.json")
    for extra in ([], ["--overwrite"]):
        assert _exit_code(["overhead", "--out", str(mine), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(mine) in err[0], err
        assert _sha(mine / "overhead.json") == before and [p.name for p in mine.iterdir()] == ["overhead.json"]
