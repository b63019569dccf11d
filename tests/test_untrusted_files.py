"""No code runs from a file a user loads: every command that reads a user's file refuses a crafted one.

For every command registered in LOADS, a malicious file of the kind it reads is built: a pickle whose
`__reduce__` would run `touch <marker>` (inside a checkpoint, an `.npy`/`.npz` object array, a CIFAR batch, or
posing as a tokenizer.json, a CSV, a JSON file), a YAML config with a `!!python/object/apply` tag, a model folder
whose config asks for remote code. Each command must answer it with exit code 2 and exactly one stderr line that
names the file, no traceback, and the marker must never appear.

Adding a package: register each of its commands that loads a file a user passes (a checkpoint, a data file, a
tokenizer, a results folder) in LOADS under its slug, as `Load(argv, kind)`. In `argv`, `{file}` is the crafted
file, `{dir}` the folder holding it (named `name`, default CRAFTERS' name for the kind) and `{out}` a fresh output
path. A package whose commands read no user file goes in NO_USER_FILES. Kinds are the keys of CRAFTERS; add one
there if a package reads a new format. The commands of all installed packages run in one batched subprocess, so a
new entry costs about a second.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from iclr25.shared.paper import discover_papers

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Load:
    """One command that loads a user's file: its argv (with {file}, {dir}, {out}) and the kind of file it reads."""

    argv: tuple[str, ...]
    kind: str
    name: str = ""  # the crafted file's name inside {dir} (default: the kind's usual name)
    also: tuple[str, ...] = ()  # more names in {dir} given the same crafted content (files read together)


# The registry: every command of every package that loads a file a user hands it. Extend it for a new package.
LOADS: dict[str, list[Load]] = {
    "dist-loss": [
        Load(("eval", "--model", "{file}"), "checkpoint"),
        Load(("eval", "--model", "{file}"), "pickle", name="model.pt"),
        Load(("train", "--stage", "rrt", "--pretrained", "{file}", "--out", "{out}"), "checkpoint"),
        Load(("train", "--data", "{file}", "--out", "{out}"), "npz"),
    ],
    "dynamical-diffusion": [
        Load(("sample", "--checkpoint", "{file}", "--out", "{out}"), "checkpoint"),
        Load(("eval-turbulence", "--checkpoint", "{file}", "--data", "{file}"), "checkpoint"),
        Load(("eval", "--run", "{dir}", "--n-context", "1"), "npy", name="samples.npy", also=("truth.npy",)),
    ],
    "eci-conformal": [
        Load(("run", "--data", "{file}", "--column", "y", "--lr", "0.1", "--out", "{out}"), "pickle", name="y.csv"),
        Load(("reproduce", "--config", "{file}", "--out", "{out}"), "yaml"),
        Load(("tables", "--data-dir", "{dir}", "--datasets", "elec2", "--out", "{out}"), "pickle", name="elec2.csv"),
    ],
    "etd-exploration": [
        Load(("eval", "{file}"), "checkpoint", name="policy.pt"),
        Load(("eval", "{dir}"), "pickle", name="policy.pt"),  # the example: a run folder's policy.pt
    ],
    "highway-bp": [  # pixel-CIFAR GRU part only: the batches are read before any training
        Load(
            (
                "reproduce",
                "--scale",
                "ci",
                "--out",
                "{out}",
                "fidelity=false",
                "mlp=false",
                "gru_task=cifar",
                "data_dir={dir}",
            ),
            "cifar-batch",
        ),
    ],
    "lrnn-state-tracking": [
        Load(("official-config", "{file}"), "yaml"),
        Load(("ppl", "--ckpt", "{file}", "--data", "{file}"), "checkpoint"),
        Load(("train-lm", "--data", "{file}", "--out", "{out}"), "pickle", name="corpus.jsonl"),
        Load(("eval", "--ckpt", "{file}"), "checkpoint"),
        Load(("eval", "--ckpt", "{file}"), "pickle", name="model.pt"),
    ],
    "patch-train": [
        Load(("tokenize", "--corpus", "{dir}", "--tokenizer", "{file}", "--out", "{out}"), "tokenizer"),
        Load(("eval", "--ckpt", "{file}"), "model-folder"),
        Load(("eval", "--ckpt", "{file}"), "model-folder-pickle"),
    ],
    "ensemble-homogeneity": [
        Load(("analyze", "--preds", "{file}"), "npz"),
        Load(("estimate", "--preds", "{file}"), "npz"),
        Load(
            ("train", "--dataset", "cifar10", "--model", "cnn", "--data-dir", "{dir}", "--out", "{out}.npz"),
            "cifar-batch",
            name="cifar-10-batches-py/data_batch_1",
            also=("cifar-10-batches-py/test_batch",),
        ),
        Load(
            ("train", "--dataset", "cifar100", "--model", "cnn", "--data-dir", "{dir}", "--out", "{out}.npz"),
            "cifar-batch",
            name="cifar-100-python/train",
            also=("cifar-100-python/test",),
        ),
    ],
    "compose-decompose": [
        Load(("eval", "{dir}"), "checkpoint", name="checkpoint.pt"),
        Load(("compose", "{dir}", "--zero-shot"), "pickle", name="checkpoint.pt"),
        Load(("cbm", "{file}"), "pickle", name="messages.jsonl"),
    ],
    "conditional-conformal": [
        Load(("fit-predict", "--data", "{file}", "--target", "y", "--out", "{out}"), "pickle", name="y.csv")
    ],
    "fair-conformal-sets": [Load(("sets", "--npz", "{file}", "--out", "{out}"), "npz")],
    "hd-explain": [
        Load(("debug", "--model", "{file}", "--train", "digits", "--out", "{out}"), "checkpoint"),
        Load(("debug", "--model", "{file}", "--train", "digits", "--out", "{out}"), "pickle", name="model.pt"),
    ],
    "icl-emergence": [
        Load(("eval", "--ckpt", "{file}", "--prompts", "{file}"), "checkpoint"),
        Load(("bound", "--report", "{file}"), "pickle", name="report.json"),
    ],
    "influence-selection": [
        Load(
            ("trim", "--data", "{dir}", "--out", "{out}"),
            "npy",
            name="X_train.npy",
            also=("y_train.npy", "X_val.npy", "y_val.npy", "X_test.npy", "y_test.npy"),
        ),
    ],
    "seq2exp": [
        Load(("eval", "--model", "{file}"), "checkpoint"),
        Load(("eval", "--model", "{file}"), "pickle", name="model.pt"),
        Load(("mask", "--model", "{file}", "--out", "{out}.bed"), "checkpoint"),
        Load(("train", "--data", "{file}", "--out", "{out}"), "npz"),
        Load(("call-peaks", "--bigwig", "{file}", "--out", "{out}.bed"), "npy"),
        Load(("call-peaks", "--bigwig", "{file}", "--out", "{out}.bed"), "pickle", name="track.bedGraph"),
    ],
    "probe-pruning": [
        Load(("prune", "--model", "{file}", "--out", "{out}"), "model-folder"),
        Load(("prune", "--model", "{file}", "--out", "{out}"), "model-folder-pickle"),
        Load(("eval", "--model", "{file}", "--out", "{out}"), "model-folder-pickle"),
        Load(("eval", "--model", "{dir}", "--tokenizer", "{file}", "--out", "{out}"), "tokenizer"),
        Load(("eval", "--model", "{dir}", "--data", "{file}", "--out", "{out}"), "pickle", name="wiki.test.raw"),
        Load(("prune", "--model", "{dir}", "--calib", "{file}", "--out", "{out}"), "pickle", name="c4.json.gz"),
        Load(("reproduce", "--config", "{file}", "--out", "{out}"), "yaml"),
    ],
    "sa-gfn": [
        Load(("eval", "{dir}"), "pickle", name="results.json"),
        Load(("reproduce", "--config", "{file}", "--out", "{out}"), "yaml"),
    ],
    "siu-bioactivity": [
        Load(("eval", "--pred", "{file}"), "npz"),
        Load(("eval", "--pred", "{file}"), "pickle", name="pred.npz"),
        Load(("eval", "--pred", "{dir}/pred.npz", "--data", "{file}"), "pickle", name="final_dic.pkl"),
        Load(("train", "--data", "{file}", "--test", "{file}", "--out", "{out}"), "pickle", name="train.lmdb"),
        Load(("train", "--data", "{dir}", "--test", "{dir}", "--out", "{out}"), "pickle", name="data.mdb"),
        Load(("vote", "--poses", "{file}"), "pickle", name="poses.json"),
    ],
    "tsc-net": [
        Load(("train", "--data", "{dir}", "--out", "{out}"), "pickle", name="train.pkl"),
        Load(("eval", "--model", "{file}", "--data", "{dir}"), "checkpoint"),
        Load(("eval", "--model", "{file}", "--data", "{dir}"), "pickle", name="model.pt"),
        Load(("predict", "--model", "{file}", "--data", "{dir}", "--out", "{out}"), "checkpoint"),
    ],
}

# Installed packages whose commands read no file a user passes (besides `--config`, which is shared and tested
# through the packages above).
NO_USER_FILES: set[str] = set()

# Packages being built: register their load commands in LOADS (or list them in NO_USER_FILES), then drop them here.
PENDING: set[str] = set()


# -- crafted files -------------------------------------------------------------------------------------------------


class _Payload:
    """Unpickling this would run `touch <marker>`: the marker shows whether anything in a file was run."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _object_array(marker: Path) -> np.ndarray:
    arr = np.empty(2, dtype=object)
    arr[0], arr[1] = _Payload(marker), 0
    return arr


def _checkpoint(path: Path, marker: Path) -> None:
    import torch

    torch.save({"config": {"env_id": "x"}, "state_dict": {"w": torch.zeros(1)}, "arch": {}, "payload": _Payload(marker)}, path)  # fmt: skip


def _model_folder(path: Path, marker: Path, *, remote_code: bool) -> None:
    path.mkdir()
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 256}
    if remote_code:  # a config that asks for code shipped in the folder
        config["auto_map"] = {"AutoModelForCausalLM": "evil.EvilModel", "AutoConfig": "evil.EvilConfig"}
        (path / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n")
    (path / "config.json").write_text(json.dumps(config))
    (path / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(marker), protocol=2))


# kind -> (default file name, writer(path, marker))
CRAFTERS: dict[str, tuple[str, Callable[[Path, Path], None]]] = {
    "checkpoint": ("model.pt", _checkpoint),
    "pickle": ("data.pkl", lambda p, m: p.write_bytes(pickle.dumps(_Payload(m), protocol=2))),
    "npy": ("data.npy", lambda p, m: np.save(p, _object_array(m), allow_pickle=True)),
    "npz": ("data.npz", lambda p, m: np.savez(p, x=np.zeros(2), y=_object_array(m))),
    "cifar-batch": (
        "data_batch_1",
        lambda p, m: p.write_bytes(pickle.dumps({b"data": _Payload(m), b"labels": [0, 1]}, protocol=2)),
    ),
    "tokenizer": ("tokenizer.json", lambda p, m: p.write_bytes(pickle.dumps(_Payload(m), protocol=4))),
    "yaml": ("config.yaml", lambda p, m: p.write_text(f'seed: !!python/object/apply:os.system ["touch {m}"]\n')),
    "model-folder": ("model", lambda p, m: _model_folder(p, m, remote_code=True)),
    "model-folder-pickle": ("model", lambda p, m: _model_folder(p, m, remote_code=False)),
}

# Runs each job's `main(argv)` in this one process, capturing stderr at the file-descriptor level (so a warning
# or a C library's output counts too), and records the exit code and stderr.
DRIVER = r"""
import contextlib, importlib, io, json, os, sys, tempfile, traceback
jobs = json.load(open(sys.argv[1]))
results = []
for job in jobs:
    os.chdir(job["cwd"])
    with tempfile.TemporaryFile() as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        text = io.StringIO()
        try:
            with contextlib.redirect_stderr(text), contextlib.redirect_stdout(io.StringIO()):
                try:
                    code = importlib.import_module(job["module"]).main(job["argv"])
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else 1
                except BaseException:
                    traceback.print_exc()
                    code = "exception"
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        stderr = capture.read().decode(errors="replace") + text.getvalue()
    results.append({"code": code, "stderr": stderr})
json.dump(results, open(sys.argv[2], "w"))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(WANDB_MODE="offline", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
    return env


def _installed() -> dict[str, str]:
    """slug -> the module of its CLI, for the paper packages installed here."""
    return {slug: paper.cli.partition(":")[0] for slug, paper in discover_papers().items()}


def _build(slug: str, index: int, load: Load, root: Path) -> tuple[dict, list[Path], Path, str]:
    """Lay out one job's crafted files; returns (job, crafted paths, marker, test id)."""
    default_name, craft = CRAFTERS[load.kind]
    folder = root / f"{slug}-{index}"
    folder.mkdir(parents=True)
    marker = root / f"MARKER-{slug}-{index}"
    crafted = folder / (load.name or default_name)
    crafted.parent.mkdir(parents=True, exist_ok=True)
    craft(crafted, marker)
    for name in load.also:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        craft(folder / name, marker)
    fill = {"file": str(crafted), "dir": str(folder), "out": str(root / f"out-{slug}-{index}")}
    argv = [arg.format(**fill) for arg in load.argv]
    job = {"module": _installed()[slug], "argv": argv, "cwd": str(folder)}
    crafted_all = [crafted, *(folder / name for name in load.also)]
    return job, crafted_all, marker, f"{slug}: {' '.join(load.argv)} [{load.kind}]"


def test_every_registered_command_refuses_crafted_files(tmp_path: Path) -> None:
    installed = _installed()
    built = [
        _build(slug, i, load, tmp_path / "files")
        for slug, loads in LOADS.items()
        if slug in installed
        for i, load in enumerate(loads)
    ]
    if not built:
        pytest.skip("no registered package is installed")
    jobs_file, results_file = tmp_path / "jobs.json", tmp_path / "results.json"
    jobs_file.write_text(json.dumps([job for job, *_ in built]))
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(jobs_file), str(results_file)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(results_file.read_text())
    problems = []
    for (_, crafted, marker, name), result in zip(built, results, strict=True):
        lines = result["stderr"].strip().splitlines()
        if marker.exists():
            problems.append(f"{name}: RAN CODE FROM THE FILE")
        if result["code"] != 2:
            problems.append(f"{name}: exit code {result['code']}, not 2")
        if len(lines) != 1 or "Traceback" in result["stderr"]:
            problems.append(f"{name}: stderr is not one line: {result['stderr'][-600:]!r}")
        elif not any(str(path) in lines[0] for path in crafted):
            problems.append(f"{name}: the error does not name the file: {lines[0]!r}")
    assert not problems, "\n".join(problems)


def test_every_installed_package_registers_its_loads() -> None:
    """A new package inherits this check: it lists its load commands in LOADS (or says it has none)."""
    unregistered = set(_installed()) - set(LOADS) - NO_USER_FILES - PENDING
    assert not unregistered, (
        f"{sorted(unregistered)}: register each command that loads a user's file in LOADS of "
        "tests/test_untrusted_files.py, or add the package to NO_USER_FILES there"
    )
    assert set(CRAFTERS) >= {load.kind for loads in LOADS.values() for load in loads}


def test_console_script_refuses_a_crafted_policy(tmp_path: Path) -> None:
    """The issue's example, through the installed console script: a run folder whose policy.pt runs a command."""
    script = BIN / "iclr25-etd-exploration"
    if "etd-exploration" not in _installed() or not script.exists():
        pytest.skip("iclr25-etd-exploration is not installed here")
    marker = tmp_path / "MARKER"
    run = tmp_path / "run"
    run.mkdir()
    (run / "policy.pt").write_bytes(pickle.dumps(_Payload(marker), protocol=2))
    proc = subprocess.run([str(script), "eval", str(run)], capture_output=True, text=True, env=_env(), timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert not marker.exists()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(run / "policy.pt") in lines[0]
