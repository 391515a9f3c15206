"""What the fire path carries between its steps, and the rows and guard locks it writes.

Cluster-wide guards are lock rows (``guard_locks``) taken in the transaction that inserts
or claims the execution row and released in the one that writes its final status: a
serial group is ``group:<name>``, a single_instance job's overlap is ``job:<id>``. A
fire that finds one held on another node is skipped (its own job's lock under overlap
``skip``) or deferred by :data:`REMOTE_RETRY` (see
:meth:`cronctl.core.SchedulerCore.blocked`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronctl.core import Fire
from cronctl.dispatch.base import ExecutionHandle
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Mode, ResourceUsage
from cronctl.store.base import NewExecution, Store, group_lock, job_lock

# How soon a fire blocked by a guard held on another node tries again: short enough that a
# serial group keeps moving, long enough that a waiting node costs one small transaction
# per wait, not a busy loop.
REMOTE_RETRY = timedelta(milliseconds=500)


def locks_for(job: JobDefinition) -> tuple[str, ...]:
    """The guard keys an attempt of ``job`` holds while it runs."""
    keys: tuple[str, ...] = ()
    if job.mode is Mode.SINGLE_INSTANCE:
        keys = (job_lock(job.id),)
    if job.serial_group is not None:
        keys += (group_lock(job.serial_group),)
    return keys


@dataclass(slots=True)
class Ready:
    """A fire that passed its checks and is about to be recorded and dispatched."""

    fire: Fire
    job: JobDefinition
    tracked: bool
    token: int | None = None
    execution_id: int | None = None
    row: int | None = None  # a pending row written ahead for this attempt: claim it
    locks: tuple[str, ...] = ()
    written: bool = False  # its row (execution_id) was written while it waited for a slot


@dataclass(slots=True)
class Run:
    fire: Fire
    job: JobDefinition
    execution_id: int | None
    handle: ExecutionHandle | None = None
    cancel_sent: bool = False
    token: int | None = None  # the fencing token the attempt was claimed with
    started: datetime | None = None  # when its handler started (set by the runtime)
    usage: ResourceUsage | None = None  # a command's figures, from its outcome
    ended: datetime | None = None  # when its outcome came (kept if its status is refused)


def spawn_recorder(store: Store, submit: Callable[[Callable[[], object]], None],
                   execution_id: int | None) -> Callable[[int, str | None], None] | None:
    """Where a command's process group is recorded once it runs (on the I/O thread), so
    that recovery on this host can end what it leaves behind if this scheduler dies."""
    if execution_id is None or not store.persistent:
        return None

    def record(pgid: int, ident: str | None) -> None:
        submit(lambda: store.record_process(execution_id, pgid, ident))
    return record


def owner_check(store: Store, execution_id: int | None, node_id: str,
                token: int | None) -> Callable[[], bool] | None:
    """``JobContext.still_owner`` of a tracked attempt: its row is still ``running`` on
    this node with the token it was claimed with (docs/behaviour.md#durability-and-clusters). Reads
    the store on the handler's thread, only when the handler asks."""
    if execution_id is None or not store.persistent:
        return None

    def still_owner() -> bool:
        row = store.get_execution(execution_id)
        return (row is not None and row.status is ExecutionStatus.RUNNING
                and row.node_id == node_id and row.fencing_token == token)
    return still_owner


def takes_token(job: JobDefinition) -> bool:
    """Whether an attempt of ``job`` carries a fencing token (taken with its guard lock,
    in the transaction that writes or claims its row)."""
    return job.mode is Mode.SINGLE_INSTANCE


def fenced(r: Ready) -> bool:
    """Whether the row of ``r`` takes a fencing token: every single_instance attempt, and
    every attempt that recovery runs in place of an interrupted one
    (docs/behaviour.md#durability-and-clusters: the interrupted attempt's late final status is then
    refused against a real token)."""
    return takes_token(r.job) or r.fire.recovered_from is not None


def new_rows(tracked: list[Ready], node_id: str, now: datetime) -> list[NewExecution]:
    """The ``running`` rows of the tracked fires of one wake (dispatched right after)."""
    return [NewExecution(
        job_id=r.job.id, occurrence_id=r.fire.occurrence_id, scheduled_at=r.fire.planned,
        attempt=r.fire.attempt, origin=r.fire.origin, node_id=node_id,
        scope_node=None if takes_token(r.job) else node_id,
        fencing_token=r.token, target=str(r.job.target), status=ExecutionStatus.RUNNING,
        started_at=now, created_at=now, locks=r.locks, fenced=fenced(r)) for r in tracked]
