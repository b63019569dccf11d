"""Every package CLI answers bad input as a hostile user would give it with one stderr line and exit code 2: no
traceback, no work done first, and no file outside the run folder touched. New packages inherit the generic cases
(they are built from each discovered paper's `config.PRESETS`); add a package's own verbs to SPECIFIC."""

from __future__ import annotations

import dataclasses
import importlib
import typing
from pathlib import Path

import pytest

from iclr25.shared.paper import discover_papers

PAPERS = discover_papers()

# Cases the generic table cannot derive: (argv, what the error line must mention). Files named here are laid out
# by the `workspace` fixture: `afile` (plain text), `ragged.csv`, `mine/` (a user's folder, with a `rows.jsonl`,
# `sweep.png` and `overhead.json` of their own), the user's `mine.json`, `speed.json` and `speed.md`, and the
# malformed data files of `hostile_files` (`xy_ragged.npz`, `arch_str.pt`, `meta_bad.npz`, `nan.csv`, `bad.bw`,
# `atom3d_bad/`). The hostile-user cases of the reliability review are marked "hostile".
SPECIFIC: dict[str, list[tuple[list[str], str]]] = {
    "conditional-conformal": [
        (["fit-predict", "--data", "nan.csv", "--target", "y", "--out", "t"], "y"),  # hostile: NaN targets
        (["reproduce", "parts="], "parts"),  # hostile: an empty list
    ],
    "ensemble-homogeneity": [(["analyze", "--preds", "meta_bad.npz", "--out", "t"], "member_meta")],  # hostile
    "fair-conformal-sets": [(["reproduce", "alpha=1e400"], "alpha")],
    "hd-explain": [
        (["train", "--data", "xy_ragged.npz", "--out", "t"], "xy_ragged.npz"),  # hostile: X and y of other lengths
        (["debug", "--model", "arch_str.pt", "--train", "digits", "--out", "t"], "arch"),  # hostile: arch a string
    ],
    "seq2exp": [
        (["call-peaks", "--bigwig", "bad.bw", "--out", "x.bed"], "bad.bw"),  # hostile (fd level: its tests)
        (["generate", "--length", "100000000", "--out", "t"], "length"),  # hostile: was a 1.5 TiB allocation
    ],
    "compose-decompose": [(["reproduce", "steps=100000000"], "steps")],  # hostile: sizes have upper bounds
    "tsc-net": [(["reproduce", "train_steps=100000000"], "train_steps")],  # hostile
    "probe-pruning": [(["reproduce", "seq_len=100000000"], "seq_len")],  # hostile
    "siu-bioactivity": [
        (["train", "--data", "atom3d_bad", "--test", "atom3d_bad", "--out", "t"], "entry 1"),  # hostile: wrong types
    ],
    "etd-exploration": [
        (["reproduce", "maze_steps=0"], "maze_steps"),
        (["reproduce", "maze_lr=-1"], "maze_lr"),
        (["reproduce", "ppo_seeds=0"], "ppo_seeds"),
        (["eval", "afile"], "afile"),
        (["eval", "mine"], "mine"),
        (["overhead", "mine.json"], "mine.json"),  # hostile: the user's file stays
        (["train", "--frames", "10", "lr=nan"], "lr"),
        (["distance-map", "--steps", "0"], "steps"),
    ],
    "patch-train": [
        (["reproduce", "lr=-1"], "lr"),
        (["reproduce", "lr=nan"], "lr"),
        (["train", "--tokenizer", "afile", "--out", "t"], "afile"),
        (["train", "--lr", "-1"], "lr"),
        (["train", "--out", "."], "current folder"),
        (["sweep", "--seeds", "0", "--out", "t"], "seeds"),
        (["eval", "--ckpt", "nomodel", "--windows", "100000000"], "windows"),  # hostile: sizes have upper bounds
        (["sweep", "--out", "mine"], "mine"),  # hostile: the user's rows.jsonl and sweep.png stay
        (["overhead", "--out", "mine"], "mine"),  # hostile: the user's overhead.json stays
        (["overhead", "--out", "/proc/iclr25-no/x"], "cannot create"),  # hostile: refused before the study
    ],
    "highway-bp": [
        (["reproduce", "mlp_lr=nan"], "mlp_lr"),
        (["train", "--lr", "nan", "--out", "t"], "lr"),
        (["speed", "--lengths", "0", "--out", "t"], "lengths"),
        (["speed", "--out", "speed.json"], "speed"),  # hostile: the user's speed.json and speed.md stay
        (["train", "--depth", "100000000", "--out", "t"], "depth"),  # hostile: no more silent hang
        (["speed", "--threads", "100000000", "--out", "t"], "threads"),  # hostile: was an out-of-memory abort
    ],
    "sa-gfn": [
        (["reproduce", "eps=nan"], "eps"),
        (["train", "--R0", "nan", "--out", "t"], "R0"),
        (["bench", "--iters", "0", "--out", "t"], "iters"),
        (["reproduce", "correctness_objectives="], "correctness_objectives"),  # hostile: an empty list
        (["reproduce", "ndim=8", "height=64"], "ndim"),  # hostile: 64^8 grid states
    ],
    "lrnn-state-tracking": [
        (["eval", "--ckpt", "afile"], "afile"),
        (["train", "--out", "t", "lr=nan"], "lr"),
        (["train", "--out", "t", "--eig-range", "0,2"], "eig"),
        (["reproduce", "grid_tasks=parity", "grid_models="], "grid_models"),  # hostile: an empty list
    ],
    "dist-loss": [
        (["train", "--lr", "nan", "--out", "t"], "lr"),
        (["synth", "--out", "afile", "--overwrite"], "afile"),  # hostile: --overwrite never replaces a user's file
    ],
    "dynamical-diffusion": [
        (["paired", "--runs", "nosuchdir", "--out", "t"], "nosuchdir"),
        (["train", "steps=0"], "steps"),
        (["sample", "--checkpoint", "x.pt", "--out", "t", "--clip-x0", "nan"], "clip"),
        (["ts-bench", "--data", "x.csv", "--steps", "100000000"], "steps"),  # hostile: sizes have upper bounds
    ],
    "eci-conformal": [
        (["run", "--data", "ragged.csv", "--column", "y", "--lr", "0.1"], "ragged.csv"),
        (["tables", "--datasets", "nosuch", "--out", "t"], "nosuch"),
    ],
}


def _has_cuda() -> bool:
    from iclr25.shared.device import cuda_available

    return cuda_available()


def _takes_resume(slug: str) -> bool:
    """Whether the package's `reproduce` offers `--resume` (a checkpoint file is then checked before any work)."""
    import argparse

    module = importlib.import_module(f"{PAPERS[slug].module}.cli")
    parser = next(v for k, v in vars(module).items() if k in ("_parser", "build_parser"))()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return any("--resume" in action.option_strings for action in verbs["reproduce"]._actions)


def _config_cases(slug: str) -> list[tuple[list[str], str]]:
    """Every float field of the quick preset rejects nan; the run-folder flags refuse unsafe folders."""
    try:
        quick = importlib.import_module(f"{PAPERS[slug].module}.config").PRESETS["quick"]
    except ModuleNotFoundError:  # test_every_package_has_a_light_config says so
        quick = None
    hints = typing.get_type_hints(type(quick)) if quick is not None else {}
    fields = dataclasses.fields(quick) if quick is not None else ()
    cases = [(["reproduce", f"{f.name}=nan"], f.name) for f in fields if hints[f.name] is float]
    integers = [f.name for f in fields if typing.get_origin(hints[f.name]) is None and hints[f.name] is int]
    integers += [
        f.name
        for f in fields
        if int in typing.get_args(hints[f.name]) and typing.get_origin(hints[f.name]) is not tuple
    ]
    if integers:  # an integer written as 1e400 overflows a float: a user error, on the command line and in YAML
        cases += [(["reproduce", f"{integers[0]}=1e400"], integers[0])]
        cases += [(["reproduce", "--config", f"huge-{integers[0]}.yaml"], integers[0])]
    return [
        *cases,
        (["reproduce", "--scale", "huge"], "invalid choice"),
        (["reproduce", "no_such_key=1"], "no_such_key"),
        (["reproduce", "--config", "missing.yaml"], "missing.yaml"),
        (["reproduce", "--out", "afile"], "afile"),
        (["reproduce", "--out", "afile/run"], "afile"),
        (["reproduce", "--out", ".", "--overwrite"], "current folder"),  # the data-loss regression
        (["reproduce", "--out", "..", "--overwrite"], "parent of the current folder"),
        (["reproduce", "--out", "mine", "--overwrite"], "no iclr25 run made"),
        *([(["reproduce", "--resume", "afile", "--out", "t"], "afile")] if _takes_resume(slug) else []),
        *([(["reproduce", "--device", "cuda", "--out", "t"], "cuda")] if not _has_cuda() else []),
    ]


CASES = [
    pytest.param(slug, argv, needle, id=f"{slug}:{' '.join(argv)}")
    for slug in PAPERS
    for argv, needle in [*_config_cases(slug), *SPECIFIC.get(slug, [])]
]


def _snapshot(folder: Path) -> dict[str, str]:
    """Every path under `folder` with the SHA-256 of its bytes (folders: "dir")."""
    import hashlib

    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in folder.rglob("*")
    }


@pytest.fixture(scope="session")
def hostile_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Malformed data files a hostile user hands the commands, made once (numpy, torch, lmdb where installed)."""
    import numpy as np

    folder = tmp_path_factory.mktemp("hostile")
    np.savez(folder / "xy_ragged.npz", X=np.zeros((3, 2)), y=np.zeros(2, dtype=int))
    np.savez(
        folder / "meta_bad.npz", probs=np.full((2, 3, 2), 0.5), labels=np.zeros(3, int), member_meta=np.array("[1]")
    )
    (folder / "nan.csv").write_text("x,y\n" + "".join(f"{i},{'nan' if i == 7 else i}\n" for i in range(40)))
    (folder / "bad.bw").write_text("not a bigWig\n")
    try:
        import torch

        torch.save({"arch": "mlp", "state_dict": {}}, folder / "arch_str.pt")
    except ImportError:
        pass
    try:
        import pandas as pd

        from iclr25.siu_bioactivity.formats import write_atom3d_lmdb

        frame = pd.DataFrame({"element": ["C", "N"], "x": [0.0, 1.0], "y": [0.0, 0.5], "z": [0.0, 0.2]})
        good = {"atoms_pocket": frame, "atoms_ligand": frame, "scores": {"ki": 7.0}, "source": "P1,1abc", "id": "P1"}
        write_atom3d_lmdb([good, {**good, "atoms_ligand": [["C", 0.0, 0.0, 0.0]]}], folder / "atom3d_bad")
    except ImportError:
        pass
    return folder


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hostile_files: Path) -> Path:
    """A current folder holding a user's files that no command may touch."""
    import shutil

    for item in hostile_files.iterdir():
        (shutil.copytree if item.is_dir() else shutil.copy)(item, tmp_path / item.name)
    (tmp_path / "mine.json").write_text('{"mine": 1}\n')
    (tmp_path / "speed.json").write_text('{"my": "timings"}\n')
    (tmp_path / "speed.md").write_text("my timings\n")
    (tmp_path / "precious.txt").write_text("a user's file")
    (tmp_path / "afile").write_text("not a checkpoint, tokenizer or data set\n")
    (tmp_path / "ragged.csv").write_text("t,y\n1,2\n3\n4,5,6\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("years of work")
    (tmp_path / "mine" / "rows.jsonl").write_text('{"my": "row"}\n')
    (tmp_path / "mine" / "overhead.json").write_text('{"my": "overhead"}\n')
    (tmp_path / "mine" / "sweep.png").write_bytes(b"my figure")
    for slug in PAPERS:  # `--config` files that give an integer key the overflowing value 1e400
        for argv, needle in _config_cases(slug):
            if argv[1:2] == ["--config"] and argv[2].startswith("huge-"):
                (tmp_path / argv[2]).write_text(f"{needle}: 1e400\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLR25_QUIET", "1")
    return tmp_path


@pytest.mark.parametrize("slug", sorted(PAPERS))
def test_every_package_has_a_light_config(slug: str) -> None:
    """`<package>.config.PRESETS` holds validated dataclass presets and imports neither numpy nor torch."""
    import subprocess
    import sys

    code = (
        f"import sys, dataclasses; from {PAPERS[slug].module}.config import PRESETS; "
        "assert all(dataclasses.is_dataclass(c) for c in PRESETS.values()), 'presets must be dataclasses'; "
        "heavy = [m for m in ('numpy', 'torch') if m in sys.modules]; assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1:]


def test_every_discovered_paper_has_cases() -> None:
    assert {param.values[0] for param in CASES} == set(PAPERS)


@pytest.mark.parametrize(("slug", "argv", "needle"), CASES)
def test_bad_input_is_one_line_and_touches_nothing(
    slug: str, argv: list[str], needle: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(workspace)
    try:
        code = PAPERS[slug].load_cli()(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, f"exit code {code}; stderr: {err}"
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"iclr25-{slug}") and needle in err, err
    after = _snapshot(workspace)
    assert {k: v for k, v in after.items() if k in before} == before, "a file outside the run folder changed"
    created = sorted(set(after) - set(before))
    assert all(Path(c).parts[0] in ("t", "runs") for c in created), f"created {created}"


def test_wandb_missing_names_the_extra(workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "wandb" else object())
    slug = sorted(PAPERS)[0]
    assert PAPERS[slug].load_cli()(["reproduce", "--wandb", "offline", "--out", "t"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'iclr25-shared[wandb]'" in err


def _verbs(slug: str) -> list[str]:
    import argparse

    module = importlib.import_module(f"{PAPERS[slug].module}.cli")
    parser = next(v for k, v in vars(module).items() if k in ("_parser", "build_parser"))()
    return [*next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices]


@pytest.mark.parametrize("slug", sorted(PAPERS))
def test_help_lists_every_verb_without_heavy_imports(slug: str) -> None:
    """`iclr25-<slug> --help` names every verb and imports neither torch nor numpy (it answers at once)."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", f"{PAPERS[slug].module}.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(verb in result.stdout for verb in _verbs(slug)), result.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines()}
    assert not {"torch", "numpy"} & imported


@pytest.mark.parametrize("slug", sorted(PAPERS))
def test_reproduce_help_lists_every_config_key(slug: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`iclr25-<slug> reproduce --help` names every key a `key=value` override may set, with what it accepts."""
    quick = importlib.import_module(f"{PAPERS[slug].module}.config").PRESETS["quick"]
    with pytest.raises(SystemExit):
        PAPERS[slug].load_cli()(["reproduce", "--help"])
    keys = capsys.readouterr().out.split("config keys", 1)[-1].splitlines()[1:]
    assert [line.split()[0] for line in keys] == [f.name for f in dataclasses.fields(quick)]


@pytest.mark.parametrize("slug", sorted(PAPERS))
def test_bad_values_are_refused_before_torch_loads(slug: str, workspace: Path) -> None:
    """Every case above that names no file and no accelerator is refused before torch is imported."""
    import json
    import subprocess
    import sys

    light = [
        argv
        for param in CASES
        if param.values[0] == slug
        for argv in [param.values[1]]
        if not {"afile", "afile/run", "ragged.csv", "mine", "mine.json", "speed.json", "--device", "--config"}
        & set(argv)
        and not any(name in argv for name in ("xy_ragged.npz", "arch_str.pt", "meta_bad.npz", "nan.csv", "bad.bw"))
        and "atom3d_bad" not in argv
        and not any(a.endswith((".csv", ".npy", ".npz", ".pt", ".lmdb", ".bw")) for a in argv)
    ]
    code = (
        f"import json, sys; from {PAPERS[slug].module}.cli import main\n"
        "def run(argv):\n    try:\n        return main(argv)\n    except SystemExit as e:\n        return e.code\n"
        f"codes = [run(argv) for argv in json.loads({json.dumps(json.dumps(light))})]\n"
        "print(json.dumps([codes, 'torch' in sys.modules]))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    codes, torch_loaded = json.loads(result.stdout.splitlines()[-1])
    assert codes == [2] * len(light) and not torch_loaded, (codes, torch_loaded)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["reproduce", "PAPER", "--seed", "-1"], "--seed"),
        (["reproduce", "PAPER", "--scale", "gigantic"], "gigantic"),
        (["compare", "listed", "listed"], "JSON object"),
        (["compare", "afile", "afile"], "afile"),
    ],
)
def test_the_umbrella_refuses_bad_input_with_one_line(
    argv: list[str], needle: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from iclr25.shared import cli

    (workspace / "listed").mkdir()
    (workspace / "listed" / "results.json").write_text("[1, 2]\n")
    before = _snapshot(workspace)
    argv = [sorted(PAPERS)[0] if a == "PAPER" else a for a in argv]
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err and "Traceback" not in err, (code, err)
    assert _snapshot(workspace) == before
