"""Progress on long work: a bar with rate and ETA on a terminal, a plain line every ~30 s otherwise (CI logs),
nothing when quiet (`--quiet`, or the environment variable ICLR25_QUIET=1, which child processes inherit).

    for step in progress(range(steps), desc="train", unit="step"):
        ...
    with progress(total=n, desc="sample") as bar:
        bar.update(batch)

In a log, the ~30 s clock is shared by every loop of the process, so a run made of many short loops still prints a
line every ~30 s; `Heartbeat` (which every run opened with `iclr25.shared.run.start_run` holds) fills the gaps no
loop reports: during one long step it prints the open loop's line, between loops a "still working" line.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, TextIO

QUIET_ENV = "ICLR25_QUIET"
INTERVAL_ENV = "ICLR25_PROGRESS_INTERVAL"  # seconds between plain lines (default 30)
LABEL_ENV = "ICLR25_PROGRESS_LABEL"  # a prefix for every plain line, e.g. the paper in `iclr25 reproduce --jobs N`


class _LogClock:
    """When this process last told the log something (a progress line or a heartbeat), and its loops that are open
    in a log (innermost last), whose line a heartbeat prints."""

    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.open: list[Progress] = []
        self.lock = threading.Lock()

    def due(self, now: float, interval: float) -> bool:
        """True (and the clock reset) when `interval` seconds have passed since the last line."""
        with self.lock:
            if now - self.last < interval:
                return False
            self.last = now
            return True

    def reset(self) -> None:
        with self.lock:
            self.last = time.perf_counter()

    def detach(self, bar: Progress) -> None:
        with self.lock:
            if bar in self.open:
                self.open.remove(bar)


_CLOCK = _LogClock()


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


def _interval() -> float:
    return float(os.environ.get(INTERVAL_ENV, 30.0))


def _labelled(text: str) -> str:
    label = os.environ.get(LABEL_ENV, "")
    return f"[{label}] {text}" if label else text


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
        self.interval = _interval() if interval is None else interval
        self.n = 0.0
        self.start = time.perf_counter()
        self._bar = None
        if not self.quiet and _interactive(self.stream):
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True, leave=False)
        elif not self.quiet:
            with _CLOCK.lock:
                _CLOCK.open.append(self)

    def update(self, n: float = 1) -> None:
        """Record `n` more units of work done."""
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif not self.quiet:
            now = time.perf_counter()
            if _CLOCK.due(now, self.interval):  # one clock for all loops: a line every ~interval in all
                print(_labelled(self.line(now)), file=self.stream, flush=True)
            if self.total and self.n >= self.total:
                _CLOCK.detach(self)

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
        _CLOCK.detach(self)

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


class Heartbeat:
    """While open, keeps a log from going silent for more than `interval` seconds (default ~30 s): when no line
    has been printed for that long, it prints the innermost open loop's progress line (a long step leaves its
    loop's count unchanged, but the elapsed time, rate and ETA move on), or `<label>: still working, elapsed mm:ss`
    between loops. Nothing on a terminal (the bars show it) or when quiet."""

    def __init__(
        self, label: str, *, interval: float | None = None, quiet: bool | None = None, stream: TextIO | None = None
    ) -> None:
        self.label = label
        self.interval = _interval() if interval is None else interval
        self.stream = stream
        self.quiet = is_quiet() if quiet is None else quiet
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.start = time.perf_counter()

    def _beat(self) -> None:
        while not self._stop.wait(max(0.05, self.interval - (time.perf_counter() - _CLOCK.last))):
            now = time.perf_counter()
            if _CLOCK.due(now, self.interval):
                bar = _CLOCK.open[-1] if _CLOCK.open else None
                line = bar.line(now) if bar else f"{self.label}: still working, elapsed {_clock(now - self.start)}"
                print(_labelled(line), file=self.stream or sys.stderr, flush=True)

    def __enter__(self) -> Heartbeat:
        if not self.quiet and not _interactive(self.stream or sys.stderr):
            _CLOCK.reset()
            self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{self.label}", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
