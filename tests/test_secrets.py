"""Secrets stay out of results: no environment variable, API key or token lands in a run folder.

Fake secrets are put in the environment (a wandb API key, a Hugging Face token, a generic token); a run through
the shared loggers and reports, and one real package CLI run with offline wandb, must leave no trace of them in
any file of the run folder (results.json, report.md, metrics, figures, wandb's offline files and logs) or in the
command's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iclr25.shared.paper import discover_papers

FAKE_SECRETS = {
    "WANDB_API_KEY": "fakewandbkey0123456789abcdef0123456789abcd",
    "HF_TOKEN": "hf_FakeTokenForTheSecretsTest0123456789",
    "ICLR25_TEST_SECRET_TOKEN": "sk-fake-secret-token-0123456789",
}


def _leaks(folder: Path, extra_text: str = "") -> list[str]:
    """`file: NAME` for every fake secret found in any file under `folder` (bytes, so binary logs count too)."""
    found = []
    files = [p for p in folder.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {name}" for name, v in FAKE_SECRETS.items() if v.encode() in data]
    found += [f"output: {name}" for name, value in FAKE_SECRETS.items() if value in extra_text]
    return found


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in FAKE_SECRETS.items():
        monkeypatch.setenv(name, value)
    return FAKE_SECRETS


def test_environment_records_no_environment_variables(secrets: dict[str, str]) -> None:
    from iclr25.shared.results import environment

    text = json.dumps(environment())
    assert not [name for name, value in secrets.items() if value in text]
    try:
        from iclr25.shared.run import run_environment
    except ImportError:
        return
    text = json.dumps(run_environment("secrets-test"), default=str)
    assert not [name for name, value in secrets.items() if value in text]


def test_shared_run_folder_holds_no_secret(tmp_path: Path, secrets: dict[str, str]) -> None:
    pytest.importorskip("wandb")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.shared.logging import MetricsLogger
    from iclr25.shared.results import Claim, Report, save_figure

    run = tmp_path / "run"
    with MetricsLogger(run, wandb="offline", name="secrets-test", config={"lr": 0.1, "steps": 2}) as logger:
        for step in range(3):
            logger.log({"loss": 1.0 / (step + 1)}, step=step)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    save_figure(fig, run / "curve.png")
    claim = Claim("loss_drops", "the loss drops", None, 0.33, "< 1", True, True)
    Report(paper="secrets-test", scale="ci", claims=[claim], metrics={"loss": 0.33}, figures=["curve.png"]).write(run)
    names = {p.name for p in run.rglob("*") if p.is_file()}
    assert {"results.json", "report.md", "metrics.csv", "metrics.jsonl", "curve.png"} <= names
    assert any(p.suffix == ".wandb" for p in run.rglob("*")), "wandb wrote no offline run here"
    assert not _leaks(run)


def test_package_cli_run_holds_no_secret(tmp_path: Path) -> None:
    """A real package command in a subprocess, with offline wandb: the run folder and output hold no secret."""
    if "sa-gfn" not in discover_papers():
        pytest.skip("iclr25-sa-gfn is not installed here")
    pytest.importorskip("wandb")
    env = {**os.environ, **FAKE_SECRETS, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    run = tmp_path / "run"
    argv = ["train", "--H", "4", "--iters", "20", "--hidden", "16", "--eval-every", "10", "--device", "cpu"]
    argv += ["--wandb", "offline", "--out", str(run)]
    code = f"from iclr25.sa_gfn.cli import main; raise SystemExit(main({argv!r}))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert any(p.is_file() for p in run.rglob("*"))
    assert not _leaks(run, proc.stdout + proc.stderr)
