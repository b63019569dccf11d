"""Same numbers on another machine: every command selects portable CPU kernels before NumPy loads and torch runs
(`iclr25.shared.device.select_cpu_kernels`), so values that pass through BLAS, oneDNN, vectorised ufuncs or a
training loop are bit-identical on any x86-64 CPU with AVX2, whatever its vector width or vendor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iclr25.shared.device import KERNELS_ENV, PORTABLE_KERNELS, _x86_with_avx2

FINGERPRINT = Path(__file__).with_name("kernel_fingerprint.py")
# Made in portable mode on an Intel Xeon with AVX-512; the same digests must come out of any x86-64 CPU with AVX2.
PORTABLE_DIGESTS = {
    "torch.matmul": "e9668ee59c4d9cb3",
    "torch.exp_softmax": "614724ab45271a95",
    "torch.conv1d": "9b8233ba7f8b0619",
    "torch.layer_norm_gelu": "657902a6ea147015",
    "torch.training": "1e5361a828206422",
    "numpy.ufuncs": "13f2d153bb310c05",
    "numpy.matmul": "1108f4fb1a468d29",
    "scipy.lapack": "79cda596ba00c554",
}
needs_avx2 = pytest.mark.skipif(not _x86_with_avx2(), reason="portable kernels are defined for x86-64 CPUs with AVX2")


def _fingerprint(mode: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PORTABLE_KERNELS and k != KERNELS_ENV}
    if mode is not None:
        env[KERNELS_ENV] = mode
    out = subprocess.run([sys.executable, str(FINGERPRINT)], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@needs_avx2
def test_portable_kernels_give_the_recorded_digests_on_this_machine() -> None:
    result = _fingerprint(None)  # the default of every command
    assert result["kernels"]["mode"] == "portable"
    assert result["kernels"]["torch_cpu_capability"] == "DEFAULT"
    assert result["digests"] == PORTABLE_DIGESTS


@needs_avx2
def test_the_fingerprint_tells_native_kernels_apart() -> None:
    """The gate can fail: on a CPU with wider vectors than AVX2 (AVX-512), the native kernels round differently and
    the digests change; on an AVX2-only CPU native and portable may agree, so there the check is skipped."""
    result = _fingerprint("native")
    assert result["kernels"]["mode"] == "native"
    if result["kernels"]["torch_cpu_capability"] != "AVX512":
        pytest.skip("this CPU has no AVX-512: its native kernels are close to the portable ones")
    differ = [name for name, digest in result["digests"].items() if digest != PORTABLE_DIGESTS[name]]
    assert len(differ) >= 6, differ


def test_a_bad_kernel_mode_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, KERNELS_ENV: "fastest"}
    out = subprocess.run(
        [sys.executable, "-m", "iclr25.shared.cli", "list"], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().count("\n") == 0 and "ICLR25_KERNELS must be 'portable' or 'native'" in out.stderr


def test_a_run_records_the_kernels_it_used() -> None:
    """In a process where NumPy loaded before the kernels were chosen (this test session), a run says "native"."""
    from iclr25.shared.run import run_environment

    kernels = run_environment("eci-conformal")["kernels"]
    assert kernels["mode"] == "native"
