"""Progress on long work: a bar with rate and ETA on a terminal, a plain line every ~30 s otherwise (CI logs),
nothing when quiet (`--quiet`, or the environment variable ICLR25_QUIET=1, which child processes inherit).

    for step in progress(range(steps), desc="train", unit="step"):
        ...
    with progress(total=n, desc="sample") as bar:
        bar.update(batch)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, TextIO

QUIET_ENV = "ICLR25_QUIET"
INTERVAL_ENV = "ICLR25_PROGRESS_INTERVAL"  # seconds between plain lines (default 30)


def is_quiet() -> bool:
    """True when progress output is switched off for this process and its children."""
    return os.environ.get(QUIET_ENV, "").lower() in ("1", "true", "yes")


def set_quiet(quiet: bool) -> None:
    """Switch progress output off (or back on) for this process and the processes it starts."""
    if quiet:
        os.environ[QUIET_ENV] = "1"
    else:
        os.environ.pop(QUIET_ENV, None)


def _interactive(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("CI")


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    """Counts work done; shows it as a tqdm bar (terminal), a periodic line (logs) or not at all (quiet)."""

    def __init__(
        self,
        iterable: Iterable[Any] | None = None,
        *,
        total: float | None = None,
        desc: str = "",
        unit: str = "it",
        quiet: bool | None = None,
        interval: float | None = None,
        stream: TextIO | None = None,
    ) -> None:
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.stream = stream or sys.stderr
        self.quiet = is_quiet() if quiet is None else quiet
        self.interval = float(os.environ.get(INTERVAL_ENV, 30.0)) if interval is None else interval
        self.n = 0.0
        self.start = self._last = time.perf_counter()
        self._bar = None
        if not self.quiet and _interactive(self.stream):
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True, leave=False)

    def update(self, n: float = 1) -> None:
        """Record `n` more units of work done."""
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif not self.quiet:
            now = time.perf_counter()
            if now - self._last >= self.interval:
                self._last = now
                print(self.line(now), file=self.stream, flush=True)

    def line(self, now: float | None = None) -> str:
        """One plain progress line: done/total, percent, rate, elapsed and ETA."""
        elapsed = (now or time.perf_counter()) - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        head = f"{self.desc}: " if self.desc else ""
        if self.total:
            eta = (self.total - self.n) / rate if rate > 0 else float("nan")
            eta_text = _clock(eta) if eta == eta else "?"
            return (
                f"{head}{self.n:g}/{self.total:g} {self.unit} ({100 * self.n / self.total:.0f}%), "
                f"{rate:.3g} {self.unit}/s, elapsed {_clock(elapsed)}, ETA {eta_text}"
            )
        return f"{head}{self.n:g} {self.unit}, {rate:.3g} {self.unit}/s, elapsed {_clock(elapsed)}"

    def close(self) -> None:
        """Close the bar (a terminal line is cleared; a log gets nothing more)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("Progress was created without an iterable; call update() instead")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    total: float | None = None,
    desc: str = "",
    unit: str = "it",
    quiet: bool | None = None,
) -> Progress:
    """Wrap `iterable` (or count `update()` calls up to `total`) with progress output; see the module docstring."""
    return Progress(iterable, total=total, desc=desc, unit=unit, quiet=quiet)
