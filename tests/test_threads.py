"""Same command, same numbers: a reproduction pins the CPU threads its preset declares, so its values do not depend
on the machine's core count, on the threads the caller's environment asks for, or on `iclr25 reproduce --jobs`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iclr25.shared.compare import _is_timing
from iclr25.shared.device import THREADS_ENV, pinned_threads, run_threads
from iclr25.shared.results import _flatten


def test_the_run_thread_count_comes_from_the_preset() -> None:
    class Declares:
        threads = 3

    class DeclaresAll:
        threads = 0

    assert run_threads(Declares()) == 3
    assert run_threads(DeclaresAll()) == (os.cpu_count() or 1)
    assert run_threads(object()) == 1  # no field: one thread, on every machine


def test_pinned_threads_set_torch_and_blas_and_restore_them() -> None:
    torch = pytest.importorskip("torch")
    import numpy as np  # noqa: F401  (its BLAS pool is one of those pinned)
    from threadpoolctl import threadpool_info

    before_torch, before_env = torch.get_num_threads(), os.environ.get(THREADS_ENV)
    with pinned_threads(1) as pinned:
        assert pinned == {"torch": 1, "blas": 1}
        assert torch.get_num_threads() == 1 and os.environ[THREADS_ENV] == "1"
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    assert torch.get_num_threads() == before_torch and os.environ.get(THREADS_ENV) == before_env


def _reproduce(tmp: Path, name: str, threads: int) -> dict:
    """The quick eci-conformal reproduction in a fresh process whose environment asks for `threads` threads (as
    `iclr25 reproduce --jobs` and a machine's core count would)."""
    env = {**os.environ, THREADS_ENV: str(threads), "OMP_NUM_THREADS": str(threads), "ICLR25_QUIET": "1"}
    out = tmp / name
    subprocess.run(
        [sys.executable, "-m", "iclr25.eci_conformal.cli", "reproduce", "--scale", "quick", "--out", str(out)],
        env=env,
        check=True,
        capture_output=True,
    )
    return json.loads((out / "results.json").read_text())


@pytest.mark.claims
def test_a_reproduction_gives_identical_values_at_two_thread_settings(tmp_path: Path) -> None:
    one, two = _reproduce(tmp_path, "one", 1), _reproduce(tmp_path, "two", 2)
    assert one["environment"]["threads"] == two["environment"]["threads"] == {"torch": 1, "blas": 1}
    assert [(c["name"], c["ours"], c["holds"]) for c in one["claims"]] == [
        (c["name"], c["ours"], c["holds"]) for c in two["claims"]
    ]
    values = {k: v for k, v in _flatten(one["metrics"]).items() if not _is_timing(k)}
    assert values == {k: v for k, v in _flatten(two["metrics"]).items() if not _is_timing(k)}
