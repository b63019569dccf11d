"""Device, precision and thread choice; throughput and model-FLOPs-utilisation measurement.

torch is imported inside the functions, never at module level.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Peak dense bf16/fp16 tensor throughput (FLOP/s) of common accelerators, for MFU.
PEAK_FLOPS = {
    "H100": 989e12,
    "H200": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "A10": 125e12,
    "4090": 165e12,
    "V100": 125e12,
    "T4": 65e12,
}


def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pick_device(preference: str = "auto") -> str:
    """Resolve "auto" | "cpu" | "cuda" | "mps" to a usable device name; errors if the asked one is absent."""
    import torch

    if preference not in ("auto", "cpu", "cuda", "mps"):
        raise ValueError(f"device must be one of auto, cpu, cuda, mps; got {preference!r}")
    if preference == "auto":
        if torch.cuda.is_available():
            return "cuda"
        return "cpu"
    if preference == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but no CUDA GPU is available")
    if preference == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device 'mps' was asked for but MPS is not available")
    return preference


def pick_precision(device: str) -> str:
    """Lightning precision string: bf16-mixed on GPUs that support it, else 32-true."""
    import torch

    if device == "cuda" and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return "bf16-mixed"
    return "32-true"


THREADS_ENV = "ICLR25_THREADS"  # the thread count of the run in this process (set by `pinned_threads`)
BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def run_threads(config: Any) -> int:
    """The CPU threads a run uses: its config's `threads` field where it declares one (0: every core of the
    machine), else 1. Fixed by the preset, never by the machine's core count or by `--jobs`, so that a
    reproduction gives the same numbers alone, beside others, or on another machine."""
    declared = getattr(config, "threads", None)
    if isinstance(declared, bool) or not isinstance(declared, int) or declared < 0:
        return 1
    return declared or os.cpu_count() or 1


@contextmanager
def pinned_threads(n: int) -> Iterator[dict[str, int]]:
    """Run a block with `n` threads for torch (intra-op) and for the BLAS/OpenMP pools of NumPy and SciPy (through
    threadpoolctl for libraries already loaded, the environment for those loaded later); restored afterwards.
    Yields what was set, for the run's recorded environment."""
    import sys

    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    saved_env = {k: os.environ.get(k) for k in (THREADS_ENV, *BLAS_ENV)}
    os.environ.update({k: str(n) for k in (THREADS_ENV, *BLAS_ENV)})
    torch = sys.modules.get("torch")
    previous = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits

        limits: Any = threadpool_limits(limits=n)
    except ImportError:  # pragma: no cover - a declared dependency; the environment still reaches later imports
        limits = None
    try:
        yield {"torch": n, "blas": n}
    finally:
        if limits is not None:
            limits.restore_original_limits()
        if torch is not None and previous is not None:
            torch.set_num_threads(previous)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


KERNELS_ENV = "ICLR25_KERNELS"  # "portable" (the default of every command) or "native"
# The CPU kernels of portable mode: the same code path, hence the same floats, on every x86-64 CPU with AVX2 (Intel
# or AMD, 2013 on). Each library picks its fastest kernels for the CPU it finds, and kernels of different vector
# widths round differently: a network trained on an AVX-512 Xeon drifts from one trained on an AVX2 EPYC.
PORTABLE_KERNELS = {
    "ATEN_CPU_CAPABILITY": "default",  # torch's own vectorised ops (exp, reductions, ...): the scalar build
    "MKL_CBWR": "COMPATIBLE",  # torch's BLAS (MKL): conditional numerical reproducibility, CPU-independent
    "ONEDNN_MAX_CPU_ISA": "SSE41",  # torch's convolutions and linear layers (oneDNN)
    "OPENBLAS_CORETYPE": "Haswell",  # NumPy's and SciPy's BLAS (OpenBLAS): one kernel set for every AVX2 CPU
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",  # NumPy's SIMD ufuncs: the baseline loops
}
_KERNELS_SELECTED: dict[str, Any] = {}


def _x86_with_avx2() -> bool:
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = next(
            line for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines() if line.startswith("flags")
        )
    except (OSError, StopIteration):
        return False
    return {"avx2", "fma"} <= set(flags.split(":", 1)[1].split())


def select_cpu_kernels() -> dict[str, Any]:
    """Choose portable CPU kernels for this process (unless `ICLR25_KERNELS=native`), so that a reproduction gives
    the same numbers on any x86-64 machine with AVX2, at a cost of about a quarter of the CPU speed. Must run before
    NumPy is imported and before torch's first operation: every command calls it first. Variables the user set
    are kept. Returns what `kernels_in_effect` will report."""
    import sys

    mode = os.environ.get(KERNELS_ENV, "portable")
    if mode not in ("portable", "native"):
        raise ValueError(f"{KERNELS_ENV} must be 'portable' or 'native', got {mode!r}")
    if not _KERNELS_SELECTED:
        portable = mode == "portable" and _x86_with_avx2()
        inherited = all(key in os.environ for key in PORTABLE_KERNELS)  # e.g. a worker of `iclr25 reproduce --jobs`
        # NumPy reads its variables when it loads: once it has, this process keeps the kernels it has (no mix).
        if portable and not inherited and "numpy" in sys.modules:
            portable = False
        if portable:
            for key, value in PORTABLE_KERNELS.items():
                os.environ.setdefault(key, value)
        _KERNELS_SELECTED.update(mode="portable" if portable else "native")
    return kernels_in_effect()


def kernels_in_effect() -> dict[str, Any]:
    """The CPU kernels this process computes with, for a run's recorded environment: "portable" only when they were
    selected before NumPy loaded and torch ran (else the libraries' own choice stands and the mode says "native")."""
    import sys

    report: dict[str, Any] = {"mode": _KERNELS_SELECTED.get("mode", "native")}
    report.update({key: os.environ[key] for key in PORTABLE_KERNELS if key in os.environ})
    torch = sys.modules.get("torch")
    if torch is not None:
        # Fixed at torch's first operation: "DEFAULT" unless something ran before the kernels were selected.
        report["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        if report["torch_cpu_capability"] != "DEFAULT":
            report["mode"] = "native"
    return report


def configure_torch(device: str, threads: int | None = None) -> None:
    """Thread count on CPU (`threads`, else the run's count that `pinned_threads` set, else every core) and TF32
    matmuls on CUDA."""
    import torch

    if device == "cpu":
        torch.set_num_threads(threads or int(os.environ.get(THREADS_ENV) or 0) or os.cpu_count() or 1)
    elif device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run a block with `n` intra-op torch threads, restoring the previous count afterwards.

    Small models on a few CPU cores often run fastest on one thread; tests sharing one process must not
    leak that setting into each other.
    """
    import torch

    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def peak_flops(device: str) -> float | None:
    """Peak FLOP/s of the current GPU if known, else None (CPU peaks are too machine-specific)."""
    if device != "cuda" or not cuda_available():
        return None
    import torch

    name = torch.cuda.get_device_name(0)
    return next((v for k, v in PEAK_FLOPS.items() if k in name), None)


def mfu(flops_per_item: float, items_per_s: float, device: str) -> float | None:
    """Model FLOPs utilisation: achieved FLOP/s over the device's peak, or None if the peak is unknown."""
    peak = peak_flops(device)
    return None if peak is None else flops_per_item * items_per_s / peak


def synchronize(device: str) -> None:
    """Wait for queued GPU work so that wall-clock timings are honest."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


@dataclass
class Throughput:
    """Accumulate items and seconds over timed sections: ``with meter.measure(n): ...``.

    Synchronises CUDA before and after each section.
    """

    device: str = "cpu"
    items: float = 0.0
    seconds: float = 0.0
    _start: float = field(default=0.0, repr=False)

    def measure(self, n_items: float) -> _Section:
        """Context manager timing a section that processes `n_items` items."""
        return _Section(self, n_items)

    @property
    def per_second(self) -> float:
        """Items per second over all measured sections (0 before any)."""
        return self.items / self.seconds if self.seconds > 0 else 0.0


class _Section:
    def __init__(self, meter: Throughput, n_items: float) -> None:
        self.meter, self.n_items = meter, n_items

    def __enter__(self) -> _Section:
        synchronize(self.meter.device)
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        synchronize(self.meter.device)
        self.meter.seconds += time.perf_counter() - self.start
        self.meter.items += self.n_items


def __getattr__(name: str) -> Any:
    # `requires_gpu` is built lazily so that importing this module never imports pytest or torch.
    if name == "requires_gpu":
        import pytest

        return pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
