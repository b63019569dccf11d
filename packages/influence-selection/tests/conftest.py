"""Single-threaded BLAS and torch for this package's tests: the matrices are small and threads only contend."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        yield
    torch.set_num_threads(threads)
