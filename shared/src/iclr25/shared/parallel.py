"""Work that is parallel by nature (seeds, ensemble members, conformal repetitions) in spawned processes, with the
results of the sequential loop: the same items, in the same order, each computed from its item alone.

    results = map_in_processes(train_member, members, workers=4, threads=1)

Every worker computes with the CPU kernels of the process that started it (portable when the command selected them,
native otherwise, so the results match the sequential loop of that process), pins its torch and BLAS threads to
`threads`, and exits when the command that started it is gone. `function` must be importable by
name (a module-level function, or a `functools.partial` of one): spawned processes import it afresh.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def check_workers(workers: int) -> int:
    """`workers` if it is an integer >= 1; a ValueError naming what is allowed otherwise."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1 (1: in this process), got {workers!r}")
    return workers


def map_in_processes(
    function: Callable[[T], R],
    items: Iterable[T],
    workers: int,
    *,
    threads: int = 1,
    desc: str = "runs",
    unit: str = "run",
    on_result: Callable[[int, R], None] | None = None,
) -> list[R]:
    """`[function(item) for item in items]`, in `workers` spawned processes when `workers` > 1 and there are two
    items or more (else in this process, untouched). `on_result(index, result)` sees each result in item order as it
    is ready (to log it); a failure cancels the items not yet started and is raised here."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from iclr25.shared.device import kernels_in_effect
    from iclr25.shared.progress import progress

    check_workers(workers)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads per worker must be an integer >= 1, got {threads!r}")
    todo: Sequence[T] = list(items)
    results: list[R] = []
    if workers == 1 or len(todo) < 2:
        for index, item in enumerate(progress(todo, desc=desc, unit=unit)):
            results.append(function(item))
            if on_result is not None:
                on_result(index, results[-1])
        return results
    context = multiprocessing.get_context("spawn")  # fork after torch has started threads can deadlock
    start = (_start_worker, (os.getpid(), threads, kernels_in_effect()["mode"]))
    with ProcessPoolExecutor(
        min(workers, len(todo)), mp_context=context, initializer=start[0], initargs=start[1]
    ) as pool:
        futures = [pool.submit(function, item) for item in todo]
        try:
            for index, future in enumerate(progress(futures, desc=desc, unit=unit)):
                results.append(future.result())
                if on_result is not None:
                    on_result(index, results[-1])
        except BaseException:
            pool.shutdown(cancel_futures=True)  # do not start the queued items after one has failed
            raise
    return results


def _start_worker(parent: int, threads: int, kernels: str) -> None:
    """A worker's first step: the parent's CPU kernels (`kernels`: its mode), `threads` threads, and an exit when
    the command is gone."""
    from iclr25.shared.cli import exit_with_parent
    from iclr25.shared.device import BLAS_ENV, KERNELS_ENV, THREADS_ENV, select_cpu_kernels

    if kernels == "native":  # a parent that computes with its libraries' own kernels: so do its workers
        os.environ[KERNELS_ENV] = "native"
    select_cpu_kernels()
    os.environ.update({key: str(threads) for key in (THREADS_ENV, *BLAS_ENV)})  # read by torch and BLAS on import
    exit_with_parent(parent)
