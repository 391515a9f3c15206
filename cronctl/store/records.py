"""The records the store hands out, its errors, and small helpers.

Import-light (no SQLAlchemy): the scheduler, the runtime and the fast CLI commands
import these without opening a database. What the fire path and upkeep hand TO the
store is in :mod:`cronctl.store.writerecords`: a read command does not build those
classes (each frozen dataclass costs about a millisecond to create at import)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cronctl.errors import StoreError
from cronctl.jobs.model import ExecutionStatus, Origin

# --- errors ----------------------------------------------------------------------------


class StoreUnavailable(StoreError):
    """The database cannot be reached right now (server down, network, lock timeout).

    Transient: ``cronctl run`` logs it, retries with backoff, and lets the misfire policy
    cover what was missed once the database is back."""


class SchemaMismatch(StoreError):
    """The database schema is not the one this cronctl needs (missing tables with
    ``auto_migrate`` off, or a newer revision than this cronctl knows)."""


class NodeIdInUse(StoreError):
    """Another live scheduler already holds this ``node_id``."""


# --- rows --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleState:
    """The durable per-job state.

    ``cursor`` is the last planned UTC instant the scheduler has handled (dispatch
    confirmed, or deliberately skipped); it never moves backwards. ``fencing`` is the last
    fencing token handed out for this job (0 = none yet). ``definition`` is the JSON
    snapshot written by :meth:`Store.save_definitions` (``{}`` when the row was created by
    a cursor/pause/fencing call before any definition was saved). ``first_seen`` is when
    a scheduler first saved the job's definition (``None``: never; the epoch for rows
    older than that record): nothing of the job was planned before it; ``updated_at``
    when a saved definition last changed."""

    job_id: str
    definition: Mapping[str, Any]
    cursor: datetime | None
    paused: bool
    fencing: int
    updated_at: datetime | None
    first_seen: datetime | None = None


@dataclass(frozen=True)
class ExecutionRecord:
    """One attempt of one occurrence.

    ``scope_node`` is ``None`` for single_instance executions (one per occurrence and
    attempt, cluster-wide) and the firing node's id for every_instance executions (one
    per occurrence, node and attempt). ``node_id`` is the node that inserted the row
    (and runs it)."""

    id: int
    job_id: str
    occurrence_id: str
    scheduled_at: datetime
    attempt: int
    origin: Origin
    status: ExecutionStatus
    node_id: str
    scope_node: str | None
    fencing_token: int | None
    target: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    progress_done: float | None = None
    progress_total: float | None = None
    progress_message: str | None = None
    cancel_requested: bool = False
    pgid: int | None = None  # a command's process group (its leader's pid)
    process_start: str | None = None  # the leader's identity (cronctl.processes)
    # How a command ended and what it used (docs/behaviour.md#sandbox-and-output), with its final
    # status.
    exit_code: int | None = None
    signal: str | None = None
    cpu_seconds: float | None = None
    max_rss_bytes: int | None = None
    # A final status refused as stale (its attempt was taken over), kept beside it.
    fenced_status: ExecutionStatus | None = None
    fenced_at: datetime | None = None

    @property
    def occurrence_began(self) -> bool:
        """Whether this row shows its occurrence was dealt with: an attempt started (a
        retry's row is written ahead, so its occurrence began) or the row ended. A first
        attempt written ahead while its fire waits for a slot, a serial group or a parent
        is ``pending`` with no ``started_at``: its occurrence has not begun (it can be late)."""
        return (self.attempt > 1 or self.started_at is not None
                or self.status is not ExecutionStatus.PENDING)


@dataclass(frozen=True)
class NodeRecord:
    """A registered scheduler (or ``cronctl trigger --here`` process). ``heartbeat_at`` is
    stamped by the database server's clock on PostgreSQL; ``process_start`` is the
    process's identity (:mod:`cronctl.processes`), ``None`` when it was not recorded."""

    node_id: str
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    process_start: str | None = None


@dataclass(frozen=True)
class LogLine:
    """One job log line; ``seq`` increases by one per line within an execution, from 1."""

    execution_id: int
    seq: int
    at: datetime
    level: str
    message: str


@dataclass(frozen=True)
class SessionRecord:
    """A live browser session of the dashboard: the token it was opened with (its name
    and digest, never the token) and its lifetime."""

    token_name: str
    token_digest: str
    created_at: datetime
    expires_at: datetime
    client: str | None


@dataclass(frozen=True)
class AuditRecord:
    """One ``POST`` to the HTTP API: who (the token's name, never the token), what (the
    action and its target), when, and what came of it (the HTTP status and ``"ok"`` or
    the one-line error)."""

    id: int
    at: datetime
    actor: str
    role: str | None
    action: str
    target: str | None
    detail: str | None
    status: int
    result: str
    client: str | None


@dataclass(frozen=True)
class TriggerRequest:
    """A request from another process (``cronctl trigger``/``replay``) for a running
    scheduler. ``scheduled_at`` is ``None`` for "now" (manual) and the planned instant
    to run for replays. Once a scheduler took it, ``taken_by``/``taken_at`` are set;
    once it acted, ``execution_id`` (or ``error``) tells the requester what happened."""

    id: int
    job_id: str
    origin: Origin
    scheduled_at: datetime | None
    requested_at: datetime
    taken_by: str | None = None
    taken_at: datetime | None = None
    execution_id: int | None = None
    error: str | None = None
    done: bool = False


@dataclass(frozen=True, slots=True)
class SkipRecord:
    """A stored :class:`SkipRun`."""

    id: int
    job_id: str
    reason: str
    first_at: datetime
    last_at: datetime
    count: int
    node_id: str
    scope_node: str | None
    created_at: datetime
    detail: str | None = None


def require_aware(value: datetime, what: str = "datetime") -> datetime:
    """``value`` converted to UTC; raises ValueError for a naive datetime (a caller bug)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware, got naive {value.isoformat()}")
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class DeliveryFailures:
    """A node whose notifications fail: since when, how many, the last error (one line,
    never a header or a webhook's path)."""

    node_id: str
    failing_since: datetime
    last_failure_at: datetime
    failures: int
    last_error: str | None


def statuses(value: ExecutionStatus | Collection[ExecutionStatus]) -> tuple[ExecutionStatus, ...]:
    """Normalize a status-or-collection argument."""
    if isinstance(value, ExecutionStatus):
        return (value,)
    return tuple(value)


__all__ = [
    "SessionRecord",
    "DeliveryFailures",
    "ExecutionRecord",
    "LogLine",
    "NodeIdInUse",
    "NodeRecord",
    "ScheduleState",
    "SchemaMismatch",
    "SkipRecord",
    "StoreError",
    "StoreUnavailable",
    "TriggerRequest",
    "require_aware",
    "statuses",
]
