"""The dispatch seam: how the runtime starts one attempt of one occurrence.

Invariants every dispatcher keeps:
- ``start`` never raises for anything the target does; failures arrive as an
  :class:`Outcome` through ``on_done``, which is called exactly once per started attempt.
- ``on_done`` may be called from any thread; the runtime posts it to its inbox.
- ``resolve`` is cheap and raises :class:`TargetUnresolved` when the target cannot be
  found right now (the runtime then skips the fire without a row or a slot).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from cronctl.jobs.model import ExecutionStatus, JobDefinition, Origin, ResourceUsage


class TargetUnresolved(Exception):
    """The job's target cannot be resolved or imported right now."""


@dataclass(frozen=True)
class DispatchRequest:
    job: JobDefinition
    occurrence_id: str
    scheduled_at: datetime  # aware UTC: the planned instant (jitter not included)
    attempt: int
    origin: Origin
    execution_id: int | None = None  # None when untracked
    fencing_token: int | None = None
    # Called (on the dispatcher's thread) once a command runs, with its process group id
    # and its leader's identity (cronctl.processes): the runtime records them.
    on_spawn: Callable[[int, str | None], None] | None = field(
        default=None, compare=False, repr=False)
    # ``JobContext.still_owner``: whether the store still has this attempt as the one that
    # counts (None: untracked, always True). Built by the runtime, which has the store.
    still_owner: Callable[[], bool] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended: ``succeeded``, ``failed``, ``cancelled`` or ``abandoned``."""

    status: ExecutionStatus
    error: str | None = None
    exit_code: int | None = None
    # False when another attempt cannot go differently (a command that was not found or
    # may not be executed): the failure ends the occurrence, no retry.
    retryable: bool = True
    usage: ResourceUsage | None = None  # a command's figures from ``wait4``
    # Seconds before this outcome was reported that the attempt really ended (a group the
    # supervisor killed while the scheduler was frozen: docs/liveness.md).
    ended_ago: float = 0.0


class LogSink(Protocol):
    """Where an attempt's log lines and progress go (buffered; the runtime flushes)."""

    def log(self, level: int, message: str) -> None: ...

    def progress(self, done: float, total: float | None, message: str | None) -> None: ...


class ExecutionHandle(Protocol):
    def cancel(self) -> None:
        """Cooperative cancel: Python handlers see ``is_cancelled()``; commands get SIGTERM,
        then SIGKILL after ``kill_timeout``."""

    def abandon(self) -> None:
        """The attempt passed its ``timeout``: commands are killed (SIGTERM, then SIGKILL);
        Python handlers are left running but their result is ignored."""


class Dispatcher(Protocol):
    def resolve(self, job: JobDefinition) -> None: ...

    def start(
        self,
        request: DispatchRequest,
        sink: LogSink,
        on_done: Callable[[Outcome], None],
    ) -> ExecutionHandle: ...
