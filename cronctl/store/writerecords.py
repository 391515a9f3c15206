"""The records the fire path and upkeep hand to the store: new execution rows, status
transitions, guard locks and fencing tokens, skip runs, log entries, and a prune pass's
policy and progress. (What the store hands out is in :mod:`cronctl.store.records`.)"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from cronctl.jobs.model import ExecutionStatus, Origin, ResourceUsage


@dataclass(frozen=True, slots=True)
class NewExecution:
    """One row for :meth:`Store.insert_executions`: the arguments of
    :meth:`Store.try_insert_execution` (``created_at`` is its ``now``)."""

    job_id: str
    occurrence_id: str
    scheduled_at: datetime
    attempt: int
    origin: Origin
    node_id: str
    scope_node: str | None
    fencing_token: int | None = None
    target: str = ""
    status: ExecutionStatus = ExecutionStatus.PENDING
    started_at: datetime | None = None
    created_at: datetime | None = None
    locks: tuple[str, ...] = ()  # guard keys to take with the row (:meth:`Store.insert_guarded`)
    finished_at: datetime | None = None  # a row written already final (imports, seeding)
    # Take the job's next fencing token in the row's own transaction, once its locks are
    # held (:meth:`Store.insert_guarded`; ``fencing_token`` is then ignored).
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class Fenced:
    """A row won together with its guard locks and the fencing token taken in the same
    transaction, after the locks: the job's tokens rise in the order its lock is taken,
    on every node."""

    execution_id: int
    token: int


@dataclass(frozen=True, slots=True)
class GuardLock:
    """A cluster-wide guard held by a running execution: ``group:<name>`` (serial group)
    or ``job:<id>`` (single_instance overlap)."""

    key: str
    execution_id: int
    node_id: str
    acquired_at: datetime


def group_lock(group: str) -> str:
    return f"group:{group}"


def job_lock(job_id: str) -> str:
    return f"job:{job_id}"


@dataclass(frozen=True, slots=True)
class Transition:
    """One compare-and-set for :meth:`Store.transitions` (the arguments of
    :meth:`Store.transition`). With ``fencing_token`` the change happens only if the row
    still carries that token (the writer's claim is not stale)."""

    execution_id: int
    expected: ExecutionStatus | tuple[ExecutionStatus, ...]
    new: ExecutionStatus
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    fencing_token: int | None = None
    usage: ResourceUsage | None = None  # a command's figures, written if the change happens


@dataclass(frozen=True, slots=True)
class SkipRun:
    """Planned instants of one job that did not run, for one reason: ``count`` consecutive
    planned instants from ``first_at`` to ``last_at`` (equal for a single instant).

    ``reason`` is a skip reason of docs/behaviour.md#durability-and-clusters (``overlap``,
    ``paused``, ``misfire``, ``unresolved_target``, ``superseded``, ``expired``). ``scope_node`` is
    ``None`` for a cluster-wide decision (single_instance) and the node id for an every_instance
    job; ``node_id`` is the node that decided."""

    job_id: str
    reason: str
    first_at: datetime
    last_at: datetime
    count: int
    node_id: str
    scope_node: str | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class PrunePolicy:
    """What a prune pass deletes (docs/behaviour.md#retention-notifications-and-metrics,
    ``[retention]``), as instants: the caller turns its durations into cutoffs with its own ``now``.

    - finished executions (any status but ``pending``/``running``) planned AND ended
      before ``executions_before``, except the newest ``keep_last`` finished executions
      of each job (newest by ``scheduled_at``, then id: the order of ``history``), and
      their log lines;
    - skip records whose newest instant (``last_at``) is before ``skipped_before``;
    - done trigger requests requested before ``triggers_before``."""

    executions_before: datetime
    keep_last: int
    skipped_before: datetime
    triggers_before: datetime


@dataclass(frozen=True, slots=True)
class PruneCounts:
    """Rows a prune deleted (or, in a dry run, would delete). ``skipped`` counts skip
    records (a run of consecutive skipped instants is one record)."""

    executions: int = 0
    skipped: int = 0
    log_lines: int = 0
    trigger_requests: int = 0

    def __add__(self, other: PruneCounts) -> PruneCounts:
        return PruneCounts(self.executions + other.executions, self.skipped + other.skipped,
                           self.log_lines + other.log_lines,
                           self.trigger_requests + other.trigger_requests)

    @property
    def total(self) -> int:
        return self.executions + self.skipped + self.log_lines + self.trigger_requests


PRUNE_PHASES = ("executions", "skipped", "trigger_requests")


@dataclass(frozen=True, slots=True)
class PruneProgress:
    """Where a prune pass stands between two :meth:`Store.prune_step` calls: the phase
    (one of :data:`PRUNE_PHASES`); in the executions phase the last row looked at
    (``(scheduled_at, id)``; ``None``: none yet) and, per job met so far, the oldest of
    its newest ``keep_last`` finished rows (``None``: it has no more than that)."""

    phase: str = "executions"
    after: tuple[datetime, int] | None = None
    kept: Mapping[str, tuple[datetime, int] | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PruneStep:
    """One :meth:`Store.prune_step`: what it deleted, and where the next step starts
    (``None``: the pass is complete)."""

    counts: PruneCounts
    next: PruneProgress | None


PRUNE_LOCK = "maintenance:prune"
"""The guard key the node running a prune pass holds (one pass at a time cluster-wide)."""


LogEntry = tuple[int, datetime, "str | int", str]
"""``(execution_id, at, level, message)``; ``level`` is a name ("INFO") or a logging int."""


__all__ = [
    "Fenced",
    "GuardLock",
    "LogEntry",
    "NewExecution",
    "PRUNE_LOCK",
    "PRUNE_PHASES",
    "PruneCounts",
    "PrunePolicy",
    "PruneProgress",
    "PruneStep",
    "SkipRun",
    "Transition",
    "group_lock",
    "job_lock",
]
