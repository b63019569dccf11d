"""Work spread over processes gives the sequential loop's results, in order, and fails as the loop would."""

from __future__ import annotations

import functools
import importlib
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from iclr25.shared.parallel import check_workers, map_in_processes

WORKER = '''
import os

import numpy as np


def seeded_draw(seed: int, size: int = 5) -> list[float]:
    """A result that depends on its item alone (as a seed, member or repetition does)."""
    return np.random.default_rng(seed).normal(size=size).tolist()


def worker_threads(_: int) -> str:
    return os.environ["OMP_NUM_THREADS"]


def kernel_mode(_: int) -> str:
    from iclr25.shared.device import kernels_in_effect

    return kernels_in_effect()["mode"]


def fail_on_three(item: int) -> int:
    if item == 3:
        raise ValueError("item 3 is bad")
    return item
'''


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The functions the workers run, in a module of their own that spawned processes can import by name."""
    name = f"parallel_worker_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(WORKER)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned processes inherit sys.path
    return importlib.import_module(name)


def test_processes_give_the_sequential_results_in_order(worker: ModuleType) -> None:
    seen: list[int] = []
    sequential = map_in_processes(worker.seeded_draw, range(6), workers=1)
    parallel = map_in_processes(functools.partial(worker.seeded_draw, size=5), range(6), workers=2,
                                on_result=lambda i, _: seen.append(i))  # fmt: skip
    assert parallel == sequential == [worker.seeded_draw(s) for s in range(6)]
    assert seen == list(range(6))


def test_workers_pin_their_threads(worker: ModuleType) -> None:
    assert map_in_processes(worker.worker_threads, range(2), workers=2, threads=3) == ["3", "3"]


def test_workers_compute_with_the_kernels_of_their_parent(worker: ModuleType) -> None:
    from iclr25.shared.device import kernels_in_effect

    parent = kernels_in_effect()["mode"]  # native here: the test process never selected portable kernels
    assert map_in_processes(worker.kernel_mode, range(2), workers=2) == [parent, parent]


def test_a_failure_in_a_worker_is_raised_here(worker: ModuleType) -> None:
    with pytest.raises(ValueError, match="item 3 is bad"):
        map_in_processes(worker.fail_on_three, range(6), workers=2)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_bad_worker_counts_are_refused(workers: object) -> None:
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        check_workers(workers)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads per worker"):
        map_in_processes(sum, [[1], [2]], workers=2, threads=0)
