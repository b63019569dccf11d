"""The run layer every reproduction and every verb that writes results uses (library code; `cli.py` only parses).

    with start_run(SLUG, scale, PRESETS, out=out, seed=seed, device=device, wandb=wandb,
                   overwrite=overwrite, config=config) as run:
        metrics = measure(run.config, run)                 # writes into run.dir, logs to run.logger
        return run.report(claims(metrics, run.config), metrics, throughput=...)

Run folders never lose a user's files:
- a folder the project made carries a marker file (`.iclr25-run.json`) saying whether its run is running,
  complete, failed or interrupted; a partial run can never be taken for a finished one;
- an existing folder is replaced (`overwrite=True`) only when it carries the marker, and never when it is the
  current folder, the home folder, the file-system root or a parent of the current folder;
- a replacement run writes into a temporary sibling that is renamed into place when its report is written, so
  a failed rerun leaves the old results as they were;
- a lock refuses a second concurrent writer; default folder names carry a random suffix and are created
  exclusively, so two runs started in the same second never share one.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from iclr25.shared import files
from iclr25.shared.device import kernels_in_effect, pinned_threads, run_threads
from iclr25.shared.fabric import Checkpointer, ScaleOut
from iclr25.shared.progress import Heartbeat, Progress
from iclr25.shared.results import Claim, Report, RunExistsError, atomic_write_text, environment

T = TypeVar("T")
MARKER = ".iclr25-run.json"
LOCK = ".iclr25-run.lock"
DEVICES = ("auto", "cpu", "cuda", "mps")
WANDB_MODES = ("off", "offline", "online")


class RunFolderError(ValueError):
    """A run folder that cannot be used: unsafe to replace, not ours, or in use by another run."""


RUN_DIR_ENV = "ICLR25_RUN_DIR"  # rank 0's run folder, for the processes a multi-process launch starts


def is_follower() -> bool:
    """True in a process that a multi-process launch (Lightning Fabric, torchrun, SLURM) started besides rank 0:
    it shares rank 0's run folder and writes nothing of its own."""
    for name in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"):
        value = os.environ.get(name, "0")
        if value.isdigit() and int(value) > 0:
            return True
    return False


# ------------------------------------------------------------------------------------------------ presets
def resolve_preset(presets: dict[str, T], scale: str, config: T | None = None) -> T:
    """`config` if given, else the preset named `scale`; an unknown scale is a ValueError naming the allowed ones."""
    if config is not None:
        return config
    if scale not in presets:
        raise ValueError(f"unknown scale {scale!r}: scale must be one of {', '.join(presets)}")
    return presets[scale]


def default_run_dir(slug: str, command: str, scale: str) -> Path:
    """`runs/<slug>/<command>-<scale>-<YYYYmmdd-HHMMSS>-<8 hex>` under the current folder: unique per run (two runs
    started in the same second share a name with probability about 1e-9)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / slug / f"{command}-{scale}-{stamp}-{secrets.token_hex(4)}"


def rerun_command(
    slug: str, scale: str, config: Any, presets: dict[str, Any], seed: int = 0, command: str = "reproduce"
) -> str:
    """The command that reruns a run: its preset, `--seed` unless 0, and a `key=value` per field of `config`
    that differs from the preset (in the form `build_config` reads back), for a Report's `command`."""
    text = f"iclr25-{slug} {command} --scale {scale}" + (f" --seed {seed}" if seed else "")
    if scale not in presets or not (dataclasses.is_dataclass(config) and dataclasses.is_dataclass(presets[scale])):
        return text
    base = dataclasses.asdict(presets[scale])
    for key, value in dataclasses.asdict(config).items():
        if value != base.get(key):
            shown = ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
            text += f" {key}={shown}"
    return text


# ------------------------------------------------------------------------------------------------ folders
def _protected(path: Path) -> str | None:
    """Why `path` may never be a run folder (the current folder, home, root, a parent of the current folder)."""
    resolved, cwd = path.resolve(), Path.cwd().resolve()
    if resolved == cwd:
        return "is the current folder"
    if resolved == Path(resolved.anchor):
        return "is the file-system root"
    if resolved == Path.home().resolve():
        return "is the home folder"
    if cwd.is_relative_to(resolved):
        return "is a parent of the current folder"
    return None


def read_marker(path: Path) -> dict[str, Any] | None:
    """The marker of run folder `path`, or None when the folder carries none (or an unreadable one)."""
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("iclr25_run") == 1 else None


def check_run_folder(path: str | Path, overwrite: bool = False, resume: bool = False) -> None:
    """Refuse, with one line and before any work, a run folder that a run could not safely use. With `resume`, a
    folder holding an incomplete run is taken up again (its checkpoints continue it)."""
    if is_follower():
        return
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunFolderError(f"{path} exists and is not a folder; choose another --out")
    reason = _protected(path)
    if reason:
        raise RunFolderError(f"{path} {reason}; choose a new folder for the run's files with --out")
    if not path.exists():
        _check_creatable(path)
    entries = [p.name for p in path.iterdir()] if path.is_dir() else []
    if not [e for e in entries if e != LOCK]:
        return
    marker = read_marker(path)
    if marker is None:
        raise RunFolderError(f"{path} holds files that no iclr25 run made; choose another --out (nothing was changed)")
    status = marker.get("status")
    if _locked_by_other(path):
        raise RunFolderError(
            f"another run (pid {marker.get('pid', '?')}) is writing into {path}; wait or choose another --out"
        )
    if resume and status != "complete":
        return
    if resume and not overwrite:
        raise RunExistsError(f"{path} already holds a complete run: nothing to resume; choose another --out")
    if overwrite and _recorded_files(marker) is None:
        raise RunFolderError(
            f"{path} was made by an earlier iclr25 that did not record which files its run wrote, so --overwrite "
            "cannot tell them from yours; delete the folder yourself or choose another --out"
        )
    if not overwrite:
        what = (
            "a complete run"
            if status == "complete"
            else f"an incomplete run ({status}, started {marker.get('started', '?')})"
        )
        raise RunExistsError(f"{path} already holds {what}; pass --overwrite to replace it or choose another --out")


def _check_creatable(path: Path) -> None:
    """Refuse, before any work, a run folder that cannot be made (a file in its way, a read-only or virtual file
    system): a folder is made and removed again in its nearest existing parent."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise RunFolderError(f"{parent} is not a folder, so the run folder {path} cannot be made; choose another --out")
    try:
        os.rmdir(tempfile.mkdtemp(dir=parent, prefix=".iclr25-probe-"))
    except OSError as e:
        raise RunFolderError(f"cannot create the run folder {path} ({e.strerror}); choose another --out") from None


def _lock(path: Path) -> int | None:
    """Take the run folder's lock without waiting; None when another process holds it."""
    fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: a concurrent writer is not detected
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _locked_by_other(path: Path) -> bool:
    if not (path / LOCK).exists():
        return False
    fd = _lock(path)
    if fd is None:
        return True
    os.close(fd)
    return False


def _files_under(folder: Path) -> set[str]:
    """Every file (and symbolic link) under `folder`, relative to it, besides the run's marker and lock."""
    found: set[str] = set()
    for root, dirs, names in os.walk(folder):
        base = Path(root).relative_to(folder)
        links = [d for d in dirs if (Path(root) / d).is_symlink()]
        dirs[:] = [d for d in dirs if d not in links]
        found.update((base / name).as_posix() for name in [*names, *links])
    return found - {MARKER, LOCK}


def _recorded_files(marker: dict[str, Any] | None) -> set[str] | None:
    """The files a run recorded in its marker; None for a marker from before runs recorded them."""
    files = (marker or {}).get("files")
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else None


class RunFolder:
    """A run folder held by this process: files go into `work`, which is `path` itself or, when an old run is
    being replaced, a temporary sibling renamed onto `path` by `finish()`.

    The marker records every file the run wrote (`files`). Anything else in the folder (a file a user added
    after an earlier run) is foreign: never written over (`iclr25.shared.files` refuses it), and carried into
    the new folder when `--overwrite` replaces the run, so a run folder never loses a user's file."""

    def __init__(
        self, path: str | Path, overwrite: bool = False, *, paper: str = "", command: str = "", resume: bool = False
    ) -> None:
        self.path = Path(os.environ.get(RUN_DIR_ENV, path)) if is_follower() else Path(path)
        self.info = {"iclr25_run": 1, "paper": paper, "command": command, "pid": os.getpid()}
        self._fds: list[int] = []
        self.foreign: set[str] = set()
        self.follower = is_follower()
        if self.follower:  # rank 0 holds the folder, its marker and its lock
            self.work = self.path
            files.hold(self)
            return
        check_run_folder(self.path, overwrite, resume)
        marker = read_marker(self.path) if self.path.is_dir() else None
        continuing = resume and marker is not None and marker.get("status") != "complete"
        replacing = not continuing and self.path.is_dir() and any(p.name != LOCK for p in self.path.iterdir())
        if marker is not None:
            recorded = _recorded_files(marker)
            self.foreign = _files_under(self.path) - recorded if recorded is not None else set()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunFolderError(
                f"cannot create the run folder {self.path} ({e.strerror}); choose another --out"
            ) from None
        self._hold(self.path)
        if replacing:
            self.work = self.path.parent / f".{self.path.name}.staging-{secrets.token_hex(3)}"
            self.work.mkdir()
            self._hold(self.work)
        else:
            self.work = self.path
        files.hold(self)
        self.info["started"] = datetime.now(UTC).isoformat(timespec="seconds")
        self._mark("running")

    def is_foreign(self, relative: str) -> bool:
        """Whether `relative` (a path inside the folder) is, or holds, a file the project did not write."""
        return relative in self.foreign or any(f.startswith(relative + "/") for f in self.foreign)

    def _hold(self, folder: Path) -> None:
        fd = _lock(folder)
        if fd is None:
            self.release()
            raise RunFolderError(f"another run is writing into {folder}; wait or choose another --out")
        self._fds.append(fd)

    def _mark(self, status: str) -> None:
        if self.follower:
            return
        self.info["status"] = status
        if status != "running":
            self.info["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        self.info["files"] = sorted(_files_under(self.work) - self.foreign)
        atomic_write_text(self.work / MARKER, json.dumps(self.info, indent=2) + "\n")

    def finish(self) -> None:
        """Mark the run complete and, when replacing an old run, carry the old folder's foreign files into the new
        one, swap the new folder into place and delete what is left of the old one (only files a run wrote)."""
        if self.follower:
            files.release(self)
            return
        self._mark("complete")
        if self.work != self.path:
            for relative in sorted(self.foreign):
                target = self.work / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                (self.path / relative).rename(target)
            trash = self.path.parent / f".{self.path.name}.replaced-{secrets.token_hex(3)}"
            self.path.rename(trash)
            self.work.rename(self.path)
            self.work = self.path
            left = _files_under(trash) - (_recorded_files(read_marker(trash)) or set())
            if read_marker(trash) is not None and not left:  # only a folder holding nothing but what a run wrote
                shutil.rmtree(trash, ignore_errors=True)
        self.release()

    def abandon(self, status: str) -> None:
        """Mark the run `status` ("failed", "interrupted"); a replacement's staging folder is removed, the old
        run stays as it was."""
        if self.follower:
            files.release(self)
            return
        if self.work != self.path:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = self.path
        else:
            self._mark(status)
        self.release()

    def release(self) -> None:
        """Let go of the locks and of the right to write into the folder (idempotent)."""
        files.release(self)
        while self._fds:
            os.close(self._fds.pop())


@contextmanager
def open_run_folder(
    path: str | Path, overwrite: bool = False, *, paper: str = "", command: str = "", resume: bool = False
) -> Iterator[Path]:
    """A run folder for a verb without a claims report (train, eval, run on a user's data): the same rules as
    `start_run`; yields the folder to write into, marked complete when the block ends, incomplete if it raises.

        with open_run_folder(out, overwrite, paper=SLUG, command="train") as folder:
            ...  # write files into folder
    """
    folder = RunFolder(path, overwrite, paper=paper, command=command, resume=resume)
    try:
        yield folder.work
    except BaseException as e:
        folder.abandon("interrupted" if isinstance(e, KeyboardInterrupt) else "failed")
        raise
    folder.finish()


# ------------------------------------------------------------------------------------------------ the run
def check_wandb_mode(mode: str) -> None:
    """Refuse an unknown wandb mode, or offline/online when wandb is not installed (naming the extra)."""
    if mode not in WANDB_MODES:
        raise ValueError(f"wandb mode must be one of {', '.join(WANDB_MODES)}; got {mode!r}")
    if mode != "off":
        import importlib.util

        if importlib.util.find_spec("wandb") is None:
            raise ValueError(f"--wandb {mode} needs wandb, which is not installed: pip install 'iclr25-shared[wandb]'")


def _git_commit(folder: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def run_environment(slug: str) -> dict[str, Any]:
    """`environment()` plus the CPU kernels in effect, the package versions, the source commit when run from a
    checkout, and the CPU model. Never other environment variables (they may hold secrets)."""
    from importlib.metadata import PackageNotFoundError, version

    env = environment()
    env["kernels"] = kernels_in_effect()
    for dist in (f"iclr25-{slug}", "iclr25-shared"):
        with suppress(PackageNotFoundError):
            env[dist] = version(dist)
    module = sys.modules.get("iclr25." + slug.replace("-", "_"))
    if module is not None and getattr(module, "__file__", None):
        commit = _git_commit(Path(module.__file__).parent)
        if commit:
            env["commit"] = commit
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        env["cpu"] = cpu
    except (OSError, StopIteration):
        pass
    return env


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def launch_fabric(folder: Path, device: str, scale_out: ScaleOut) -> Any:
    """Launch a Lightning Fabric for `scale_out`; the processes it starts share `folder` (rank 0 writes)."""
    from iclr25.shared.fabric import make_fabric

    os.environ[RUN_DIR_ENV] = str(Path(folder).resolve())
    fabric = make_fabric(device, scale_out.devices, scale_out.num_nodes, scale_out.strategy, scale_out.precision)
    fabric.launch()
    return fabric


class Run:
    """One run: its resolved config, folder, device, metrics logger, progress and report (see `start_run`)."""

    def __init__(
        self,
        slug: str,
        scale: str,
        presets: dict[str, Any],
        config: Any,
        folder: RunFolder,
        *,
        seed: int,
        device: str,
        wandb: str,
        command: str,
        scale_out: ScaleOut | None = None,
    ) -> None:
        self.slug, self.scale, self.presets, self.config = slug, scale, presets, config
        self.folder, self.seed, self.requested_device, self.wandb, self.command = folder, seed, device, wandb, command
        self.scale_out = scale_out or ScaleOut()
        self._device: str | None = None
        self._logger: Any = None
        self._fabric: Any = None
        self.reported: Report | None = None
        self.threads: dict[str, int] = {}  # the CPU threads the run is pinned to (see `start_run`)
        self._wall0, self._cpu0 = time.perf_counter(), _cpu_seconds()

    @property
    def dir(self) -> Path:
        """The folder to write this run's files into."""
        return self.folder.work

    @property
    def device(self) -> str:
        """The compute device ("cpu", "cuda", "mps"), resolved (and torch configured) on first use."""
        if self._device is None:
            from iclr25.shared.device import configure_torch, pick_device

            self._device = pick_device(self.requested_device)
            configure_torch(self._device)
        return self._device

    @property
    def fabric(self) -> Any:
        """A launched Lightning Fabric for this run's `--devices/--num-nodes/--strategy/--precision` (one process
        unless asked for more; see `iclr25.shared.fabric`). The processes it starts share this run folder."""
        if self._fabric is None:
            self._fabric = launch_fabric(self.dir, self.requested_device, self.scale_out)
        return self._fabric

    def checkpointer(self, every: int, keep: int = 2, name: str = "") -> Checkpointer:
        """Checkpoints in `<run folder>/checkpoints[/name]` every `every` steps (`--checkpoint-every` overrides
        it); `checkpointer.resume(run.scale_out.resume, state, fabric)` continues a run."""
        return Checkpointer(self.dir / "checkpoints" / name, self.scale_out.checkpoint_every or every, keep)

    def training_options(self, name: str, every: int = 0) -> dict[str, Any]:
        """What one training loop of this run needs to scale out, as keyword arguments (`fabric`, `checkpointer`,
        `resume`): a Fabric only when several processes or a precision were asked for, checkpoints (in `checkpoints/<name>`)
        only when an interval (`every`, or `--checkpoint-every`) or `--resume` was given; nothing otherwise, so a
        default run trains exactly as without this layer."""
        options: dict[str, Any] = {}
        if self.scale_out.wants_fabric:
            options["fabric"] = self.fabric
        if self.scale_out.checkpoint_every or every or self.scale_out.resume:
            options["checkpointer"] = self.checkpointer(every=every, name=name)
            options["resume"] = self.scale_out.resume
        return options

    @property
    def logger(self) -> Any:
        """A `MetricsLogger` writing metrics.jsonl/csv into the run folder (and wandb when asked); in a process
        besides rank 0 of a multi-process run, a logger that records nothing."""
        if self._logger is None and self.folder.follower:
            from iclr25.shared.logging import NullLogger

            self._logger = NullLogger()
        if self._logger is None:
            from iclr25.shared.logging import MetricsLogger

            config = dataclasses.asdict(self.config) if dataclasses.is_dataclass(self.config) else {}
            self._logger = MetricsLogger(
                self.dir, wandb=self.wandb, name=f"{self.slug}-{self.command}-{self.scale}", config=config
            )
        return self._logger

    def log_scalars(self, values: dict[str, Any], step: int | None = None, prefix: str = "") -> None:
        """Log every finite number of a nested metrics dict (one row, keys joined with "/" under `prefix`), for
        studies whose parts are not training loops: a seed's or a repetition's results land in metrics.jsonl/csv
        (and wandb) as they are measured."""
        from iclr25.shared.results import _flatten

        row = {}
        for key, value in _flatten(values).items():
            if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
                value = value.item()
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            row[f"{prefix}{key.replace('.', '/')}"] = value
        if row:
            self.logger.log(row, step=step)

    def progress(
        self, iterable: Iterable[Any] | None = None, *, total: float | None = None, desc: str = "", unit: str = "it"
    ) -> Progress:
        """Progress output for a loop of this run (see `iclr25.shared.progress`)."""
        return Progress(iterable, total=total, desc=desc, unit=unit)

    def elapsed(self) -> tuple[float, float]:
        """(wall, cpu) seconds since the run started; cpu counts user+system of this process and finished children."""
        return time.perf_counter() - self._wall0, _cpu_seconds() - self._cpu0

    def report(
        self,
        claims: list[Claim],
        metrics: dict[str, Any],
        *,
        throughput: dict[str, float] | None = None,
        figures: Iterable[str] = (),
        notes: str = "",
        environment: dict[str, Any] | None = None,
        tolerances: dict[str, float] | None = None,
    ) -> Report:
        """Write results.json + report.md (with runtime, CPU time, the rerun command and the environment, plus
        any `environment` entries the run adds, and the `tolerances` it declares for `iclr25 compare`) atomically, mark
        the run complete, and return the report."""
        wall, cpu = self.elapsed()
        config = dataclasses.asdict(self.config) if dataclasses.is_dataclass(self.config) else dict(self.config)
        report = Report(
            paper=self.slug,
            scale=self.scale,
            claims=list(claims),
            metrics=metrics,
            config=config,
            throughput=dict(throughput or {}),
            runtime_s=wall,
            cpu_s=cpu,
            command=rerun_command(self.slug, self.scale, self.config, self.presets, self.seed, self.command),
            figures=list(figures),
            notes=notes,
            environment={**run_environment(self.slug), "threads": self.threads, **(environment or {})},
            tolerances=dict(tolerances or {}),
        )
        self.close_logger()
        if not self.folder.follower:
            report.write(self.dir)
        self.folder.finish()
        self.reported = report
        return report

    def close_logger(self) -> None:
        """Flush the metrics files and finish wandb (idempotent)."""
        if self._logger is not None:
            self._logger.close()


@contextmanager
def start_run(
    slug: str,
    scale: str,
    presets: dict[str, Any],
    *,
    out: str | Path | None = None,
    seed: int = 0,
    device: str = "auto",
    wandb: str = "off",
    overwrite: bool = False,
    config: Any = None,
    command: str = "reproduce",
    scale_out: ScaleOut | None = None,
) -> Iterator[Run]:
    """Open a run: look the preset up once, check the flags, claim the run folder (marker + lock) and yield a
    `Run`. The folder stays marked incomplete ("failed", "interrupted") unless `run.report(...)` is reached."""
    resolved = resolve_preset(presets, scale, config)
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    check_wandb_mode(wandb)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    if device in ("cuda", "mps"):  # an absent accelerator is refused now, not after the data work
        from iclr25.shared.device import pick_device

        pick_device(device)
    resume = scale_out is not None and scale_out.resume == "auto"
    if resume and out is None:
        raise ValueError("--resume auto continues the run in --out: name that folder")
    folder = RunFolder(
        out or default_run_dir(slug, command, scale), overwrite, paper=slug, command=command, resume=resume
    )
    run = Run(
        slug,
        scale,
        presets,
        resolved,
        folder,
        seed=seed,
        device=device,
        wandb=wandb,
        command=command,
        scale_out=scale_out,
    )
    if run.scale_out.distributed:  # the processes Lightning starts share this run folder
        os.environ[RUN_DIR_ENV] = str(Path(run.dir).resolve())
    try:
        with (
            pinned_threads(run_threads(resolved)) as run.threads,
            Heartbeat(f"{slug} {command}", quiet=True if folder.follower else None),
        ):
            yield run
    except BaseException as e:
        run.close_logger()
        folder.abandon("interrupted" if isinstance(e, KeyboardInterrupt) else "failed")
        raise
    run.close_logger()
    if run.reported is None:
        folder.abandon("incomplete")


def reproduction(
    slug: str,
    presets: dict[str, Any],
    *,
    check: Callable[[str, Any], None] | None = None,
    precision: bool = False,
) -> Callable[[Callable[[Run], Report]], Callable[..., Report]]:
    """Turn a package's reproduction body, `body(run) -> Report`, into its public entry point

        run(scale="quick", out=None, *, seed=0, device="auto", wandb="off", overwrite=False, config=None,
            scale_out=None) -> Report

    which opens the run with `start_run` and hands the `Run` to the body. `--resume` takes only 'auto' here
    (a reproduction trains many models: it continues the run in `out`). `check(scale, config)`, when given, sees
    the resolved config before the run folder is made (e.g. to refuse a preset whose data files are missing).
    `precision`: whether the body's loops apply `--precision` (through Fabric or the Lightning Trainer); where
    they do not, a `--precision` is refused before the run folder is made, never silently ignored, and the
    processes of a multi-process run train in float32 (a `32-true` Fabric).

        @reproduction(SLUG, PRESETS)
        def run(active: Run) -> Report:
            metrics = measure(active.config, active)
            return active.report(claims(metrics, active.config), metrics)
    """

    def decorate(body: Callable[[Run], Report]) -> Callable[..., Report]:
        def run(
            scale: str = "quick",
            out: str | Path | None = None,
            *,
            seed: int = 0,
            device: str = "auto",
            wandb: str = "off",
            overwrite: bool = False,
            config: Any = None,
            scale_out: ScaleOut | None = None,
        ) -> Report:
            if scale_out is not None and scale_out.resume not in (None, "auto"):
                raise ValueError("reproduce trains many models: --resume takes 'auto' (continue the run in --out)")
            if scale_out is not None and scale_out.precision is not None and not precision:
                raise ValueError(f"--precision: {slug}'s training loops apply no precision setting; leave it out")
            if scale_out is not None and not precision and scale_out.distributed:
                # loops that apply no precision train in float32 on every process (Fabric's own default would
                # autocast a wrapped model's forward to bf16 on GPUs that support it)
                scale_out = dataclasses.replace(scale_out, precision="32-true")
            if check is not None:
                check(scale, resolve_preset(presets, scale, config))
            options = dict(seed=seed, device=device, wandb=wandb, overwrite=overwrite, config=config)
            with start_run(slug, scale, presets, out=out, scale_out=scale_out, **options) as active:
                return body(active)

        run.__module__, run.__name__, run.__qualname__ = body.__module__, body.__name__, body.__qualname__
        run.__doc__ = body.__doc__
        return run

    return decorate


# ------------------------------------------------------------------------------------------------ exports
def lazy_exports(
    module: str, init_file: str, *eager: str
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` for a package `__init__` whose public API is the imports of its
    `if TYPE_CHECKING:` block: type checkers and readers see real imports, while at run time each name is
    imported from its submodule on first use, so importing the package stays cheap (no torch). `eager` names
    (e.g. "PAPER") are defined in the `__init__` itself and listed first in `__all__`.

        if TYPE_CHECKING:
            from iclr25.dist_loss.sorting import soft_sort
        __all__, __getattr__, __dir__ = lazy_exports(__name__, __file__, "PAPER")
    """
    exports = _type_checking_imports(module, Path(init_file))

    def __getattr__(name: str) -> Any:
        if name in exports:
            source, attr = exports[name]
            value = getattr(importlib.import_module(source), attr)
            setattr(sys.modules[module], name, value)  # later look-ups skip __getattr__
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[module])) | set(exports))

    return [*eager, *sorted(exports)], __getattr__, __dir__


def _type_checking_imports(module: str, init_file: Path) -> dict[str, tuple[str, str]]:
    """Public name -> (module, attribute) for every `from ... import ...` under a top-level `if TYPE_CHECKING:`."""
    import ast
    from importlib.util import resolve_name

    exports: dict[str, tuple[str, str]] = {}
    for node in ast.parse(init_file.read_text(encoding="utf-8")).body:
        test = getattr(node, "test", None)
        if not (isinstance(node, ast.If) and getattr(test, "id", getattr(test, "attr", "")) == "TYPE_CHECKING"):
            continue
        for item in node.body:
            if not isinstance(item, ast.ImportFrom):
                raise ValueError(f"{init_file}: the TYPE_CHECKING block may hold only 'from ... import ...' lines")
            source = resolve_name("." * item.level + (item.module or ""), module)
            for alias in item.names:
                exports[alias.asname or alias.name] = (source, alias.name)
    if not exports:
        raise ValueError(f"{init_file}: no 'if TYPE_CHECKING:' block of imports to export")
    return exports
