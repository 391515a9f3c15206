"""The job model: frozen definitions and the enums of docs/behaviour.md#jobs.

A :class:`JobDefinition` is fully resolved: TOML over decorator over mode defaults has
already been applied by the loader, so everything below (core, runtime, store) reads
plain values and never re-derives a default.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any, TypeVar

# The DST policies belong to the cron engine; the job model uses the same enums.
from cronctl.cron.schedule import DstFold as DstFold
from cronctl.cron.schedule import DstGap as DstGap
from cronctl.jobs.calendar import Calendar
from cronctl.jobs.notify import NotifySpec

_E = TypeVar("_E", bound=enum.StrEnum)


def parse_choice(kind: type[_E], value: object) -> _E:
    """An enum value as users write it: any case, ``-`` for ``_``."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_")
        for member in kind:
            if member.value == key:
                return member
    allowed = ", ".join(m.value for m in kind)
    raise ValueError(f"{value!r} is not one of: {allowed}")


class _Choice(enum.StrEnum):
    """A str enum whose parse accepts any case and ``-`` for ``_``."""

    @classmethod
    def parse(cls, value: object) -> _Choice:
        return parse_choice(cls, value)


class Mode(_Choice):
    EVERY_INSTANCE = "every_instance"
    SINGLE_INSTANCE = "single_instance"


class Isolation(_Choice):
    """Where a Python target's attempt runs (commands always run as a process)."""

    THREAD = "thread"  # in the scheduler's process, on its worker threads
    # a child process of its own, like a command (docs/behaviour.md#sandbox-and-output)
    PROCESS = "process"


class OverlapPolicy(_Choice):
    SKIP = "skip"
    QUEUE_ONE = "queue_one"
    ALLOW = "allow"


class MisfirePolicy(_Choice):
    FIRE_NOW = "fire_now"
    SKIP = "skip"
    FIRE_ALL = "fire_all"


class ExecutionStatus(_Choice):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ABANDONED = "abandoned"
    CANCELLED = "cancelled"
    DEAD_LETTER = "dead_letter"
    # Taken over by recovery while its outcome was unknown (its node stopped answering):
    # never a guess such as failed (docs/behaviour.md#durability-and-clusters).
    LOST = "lost"

    @property
    def is_final(self) -> bool:
        return self not in (ExecutionStatus.PENDING, ExecutionStatus.RUNNING)


class Origin(_Choice):
    CRON = "cron"
    MISFIRE = "misfire"
    REPLAY = "replay"
    MANUAL = "manual"
    DEPENDENCY = "dependency"  # a dependent's occurrence, once its parents ended (section 8)


class AfterOutcome(_Choice):
    """What a parent's occurrence must have ended as for its dependent to run."""

    SUCCEEDED = "succeeded"  # the default
    FAILED = "failed"  # dead_letter (every attempt failed or timed out)
    ANY = "any"  # any final status


@dataclass(frozen=True)
class AfterEdge:
    """One entry of ``after``: ``"extract"`` or ``"load:any"``."""

    job_id: str
    outcome: AfterOutcome = AfterOutcome.SUCCEEDED

    def __str__(self) -> str:
        if self.outcome is AfterOutcome.SUCCEEDED:
            return self.job_id
        return f"{self.job_id}:{self.outcome.value}"


# --- targets -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServiceTarget:
    """``service:<namespace>.<service>.<operation>``, resolved through the registry per fire."""

    operation_id: str

    def __str__(self) -> str:
        return f"service:{self.operation_id}"


@dataclass(frozen=True, slots=True)
class PythonTarget:
    """``python:<module>:<function>``, imported on every fire."""

    module: str
    function: str

    def __str__(self) -> str:
        return f"python:{self.module}:{self.function}"


@dataclass(frozen=True, slots=True)
class Limits:
    """``limits = {...}`` of a command job (docs/behaviour.md#sandbox-and-output): each one applied
    to the child with ``setrlimit`` before exec; ``None`` leaves the scheduler's own limit."""

    memory: int | None = None  # bytes of address space (RLIMIT_AS)
    cpu_time: int | None = None  # seconds of CPU (RLIMIT_CPU)
    open_files: int | None = None  # RLIMIT_NOFILE
    processes: int | None = None  # RLIMIT_NPROC (per user; root is exempt)
    file_size: int | None = None  # bytes a file may grow to (RLIMIT_FSIZE)

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.memory, self.cpu_time, self.open_files,
                                           self.processes, self.file_size))


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """What a finished child used, from ``wait4``: its exit code or the name of the
    signal that ended it, user + system CPU of it and its reaped descendants, and its
    peak resident set size."""

    exit_code: int | None = None
    signal: str | None = None  # e.g. "SIGKILL"
    cpu_seconds: float | None = None
    max_rss_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class CommandTarget:
    """A child process: ``argv`` run without a shell unless ``shell`` (then ``argv[0]`` is
    the shell command line). ``user``/``group``: who it runs as
    (docs/behaviour.md#sandbox-and-output)."""

    argv: tuple[str, ...]
    shell: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    user: str | None = None
    group: str | None = None
    limits: Limits = Limits()

    def __str__(self) -> str:
        import shlex

        return self.argv[0] if self.shell else shlex.join(self.argv)


Target = ServiceTarget | PythonTarget | CommandTarget


# --- the definition ----------------------------------------------------------------

EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")
DEFAULT_OUTPUT_LIMIT = 1024 * 1024  # [scheduler] output_limit
AUTO_LONG_RUNNING = "auto"  # long_running_after = "auto"
# The defaults of the duration keys: one object each, shared by every job that does not
# set the key (100,000 jobs built five new timedeltas each, 20 MB).
DEFAULT_MISFIRE_THRESHOLD = timedelta(seconds=60)
DEFAULT_RETRY_BACKOFF = timedelta(seconds=10)
DEFAULT_KILL_TIMEOUT = timedelta(seconds=10)
NO_JITTER = timedelta(0)
DEFAULT_AFTER_TIMEOUT = timedelta(hours=24)


# slots: no per-instance __dict__ (~400 bytes a job; 100,000 jobs stay resident in `run`)
@dataclass(frozen=True, slots=True)
class JobDefinition:
    """One validated job. ``schedule_text`` is what ``cronctl next``/``list`` show: the
    normalized cron expression, or ``@every <duration>`` for interval jobs.

    ``cron`` is the expression that fires: with ``H``
    (docs/behaviour.md#spread-calendars-and-dependencies) already resolved with the job's id, so
    everything that builds a schedule from it needs no id. ``cron_written`` is the expression as
    written (normalized, ``H`` kept) when it used ``H``, else ``None``; ``written_text`` gives it,
    or ``schedule_text`` without ``H``."""

    id: str
    target: Target
    cron: str | None = None
    cron_written: str | None = None  # with H as written; None when the expression has none
    every: timedelta | None = None
    anchor: datetime = EPOCH
    timezone: str = "UTC"
    enabled: bool = True
    mode: Mode = Mode.EVERY_INSTANCE
    overlap_policy: OverlapPolicy = OverlapPolicy.SKIP
    serial_group: str | None = None
    misfire_policy: MisfirePolicy = MisfirePolicy.SKIP
    misfire_threshold: timedelta = DEFAULT_MISFIRE_THRESHOLD
    catchup_limit: int = 100
    max_attempts: int = 3
    retry_backoff: timedelta = DEFAULT_RETRY_BACKOFF
    timeout: timedelta | None = None
    kill_timeout: timedelta = DEFAULT_KILL_TIMEOUT
    tracked: bool = True
    jitter: timedelta = NO_JITTER
    parameters: Mapping[str, Any] = field(default_factory=dict)
    payload: Any = None
    description: str | None = None
    dst_gap: DstGap = DstGap.AUTO
    dst_fold: DstFold = DstFold.AUTO
    late_after: timedelta | None = None  # not started this long after planned: "late"
    # Output kept per execution (docs/behaviour.md#sandbox-and-output): the first and the last half
    # of it.
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    # python:/service: targets: a process of their own (killable like a command, the
    # default) or the scheduler's threads (at-least-once under a freeze: docs/liveness.md)
    isolation: Isolation = Isolation.PROCESS
    # Running longer than this raises "long_running"; AUTO_LONG_RUNNING: from its history.
    long_running_after: timedelta | str | None = None
    notify: NotifySpec | None = None  # the job's own notify table (over the global one)
    # calendar = "NAME" or a list: an instant any of them excludes does not run (section 8)
    calendars: tuple[Calendar, ...] = ()
    # after = [...]: a dependent (section 8); its schedule is its parents' (copied in).
    after: tuple[AfterEdge, ...] = ()
    after_timeout: timedelta = DEFAULT_AFTER_TIMEOUT
    source: str = ""  # where it was defined: "jobs.d/a.toml:12" or "pkg.mod:Class.method"

    @property
    def schedule_text(self) -> str:
        if self.cron is not None:
            return self.cron
        assert self.every is not None
        from cronctl.durations import format_duration

        return f"@every {format_duration(self.every).replace(' ', '')}"

    @property
    def written_text(self) -> str:
        """The schedule as written: with its ``H`` items when it has any."""
        return self.cron_written if self.cron_written is not None else self.schedule_text


def _pickled_quickly(cls: type) -> None:
    """Give a slotted frozen dataclass a quick ``__getstate__``/``__setstate__``: the
    generated pair looks up ``fields()`` for every object, and unpickling 100,000 jobs
    (:mod:`cronctl.jobs.setcache`) spent 2.5 s in it. The state stays the tuple of the
    fields' values in declaration order."""
    names: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    setters = tuple(getattr(cls, name).__set__ for name in names)
    read = attrgetter(*names)

    def getstate(self: object) -> tuple[Any, ...]:
        values = read(self)
        return values if len(names) > 1 else (values,)

    def setstate(self: object, state: tuple[Any, ...]) -> None:
        for put, value in zip(setters, state, strict=True):
            put(self, value)

    setattr(cls, "__getstate__", getstate)  # noqa: B010 (replaces the generated pair)
    setattr(cls, "__setstate__", setstate)  # noqa: B010


for _cls in (ServiceTarget, PythonTarget, Limits, CommandTarget, JobDefinition):
    _pickled_quickly(_cls)
