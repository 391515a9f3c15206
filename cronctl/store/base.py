"""The store seam: one Protocol the SQL store keeps on SQLite and PostgreSQL.

This module is import-light on purpose (no SQLAlchemy): the scheduler, the runtime and
the fast CLI commands import it without opening a database. The records it speaks in
are in :mod:`cronctl.store.records`; the implementation is :class:`cronctl.store.sql.SqlStore`.

Conventions every implementation keeps:

- Every datetime passed in is *aware*; every datetime returned is aware UTC and equal,
  to the microsecond, to what was stored. A naive datetime is a bug and raises
  ``ValueError``.
- The store never reads the clock on its own. Methods that stamp bookkeeping columns
  take ``now``; where ``now`` is optional and omitted, the store uses the current UTC
  time for that bookkeeping column only (never for a decision).
- Every method is atomic on its own: it either happens completely or not at all.
- Failures the user can act on raise :class:`cronctl.errors.StoreError` (or a subclass
  in :mod:`cronctl.store.records`) whose message names the database (password
  redacted) and what to do.
  :class:`StoreUnavailable` marks a transient loss of the database: retry later.
- Methods are safe to call from several threads; several processes (and, on
  PostgreSQL, several nodes) may share one database.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from cronctl.jobs.model import ExecutionStatus, JobDefinition, Origin
from cronctl.store.records import (
    DeliveryFailures,
    ExecutionRecord,
    Fenced,
    GuardLock,
    LogEntry,
    LogLine,
    NewExecution,
    NodeIdInUse,
    NodeRecord,
    PruneCounts,
    PrunePolicy,
    PruneProgress,
    PruneStep,
    ScheduleState,
    SchemaMismatch,
    SkipRecord,
    SkipRun,
    StoreError,
    StoreUnavailable,
    Transition,
    TriggerRequest,
    group_lock,
    job_lock,
    require_aware,
    statuses,
)
from cronctl.store.upkeep import Upkeep

# --- the Protocol ------------------------------------------------------------------------


@runtime_checkable
class Store(Upkeep, Protocol):
    """The durable state of cronctl. See the module docstring for the conventions."""

    @property
    def kind(self) -> str:
        """``"sqlite"`` or ``"postgresql"``; ``"memory"`` for ``database = "none"`` (a
        private SQLite file that is removed when the store closes)."""
        ...

    @property
    def persistent(self) -> bool:
        """False for ``database = "none"``: nothing survives the process."""
        ...

    @property
    def display_url(self) -> str:
        """The database URL with any password replaced by ``***``."""
        ...

    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""
        ...

    # --- schedules -------------------------------------------------------------------

    def save_definitions(
        self, jobs: Sequence[JobDefinition], *, now: datetime | None = None
    ) -> None:
        """Upsert one schedule row per job with a JSON snapshot of its definition.

        Cursor, paused flag and fencing counter of existing rows are kept. Rows of jobs
        not in ``jobs`` are left alone (a job that comes back keeps its cursor)."""
        ...

    def get_schedule(self, job_id: str) -> ScheduleState | None: ...

    def list_schedules(self) -> list[ScheduleState]:
        """All schedule rows, ordered by job id."""
        ...

    def advance_cursor(self, job_id: str, planned_at: datetime) -> datetime:
        """Set the cursor to ``max(cursor, planned_at)`` and return the resulting cursor.

        Never moves backwards, also when two nodes race. Creates the row if missing."""
        ...

    def advance_cursors(
        self, cursors: Mapping[str, datetime], *, node_id: str | None = None,
        node_cursors: Mapping[str, datetime] | None = None,
    ) -> None:
        """:meth:`advance_cursor` for every ``job id -> planned instant``, and the same
        for ``node_id``'s own cursors of every_instance jobs (``node_cursors``), in ONE
        transaction (all or nothing). Neither kind ever moves backwards."""
        ...

    def node_cursors(self, node_id: str) -> dict[str, datetime]:
        """``job id -> cursor`` of ``node_id``'s every_instance jobs: each node catches up
        from its own cursor, never from another node's."""
        ...

    def job_states(self) -> dict[str, tuple[datetime | None, bool]]:
        """``job id -> (cursor, paused)`` of every schedule row, without decoding the
        definitions (what the scheduler needs at start-up)."""
        ...

    def paused_job_ids(self) -> set[str]:
        """Ids of the paused jobs (the scheduler polls this; cheap)."""
        ...

    def set_paused(self, job_id: str, paused: bool) -> None:
        """Pause or resume the job cluster-wide. Creates the row if missing."""
        ...

    def next_fencing_token(self, job_id: str) -> int:
        """Atomically increment and return the job's fencing counter (first call: 1).

        Tokens of one job strictly increase across every caller, thread and node."""
        ...

    # --- executions ------------------------------------------------------------------

    def try_insert_execution(
        self,
        *,
        job_id: str,
        occurrence_id: str,
        scheduled_at: datetime,
        attempt: int,
        origin: Origin,
        node_id: str,
        scope_node: str | None,
        fencing_token: int | None = None,
        target: str = "",
        status: ExecutionStatus = ExecutionStatus.PENDING,
        started_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int | None:
        """The election: insert the attempt unless it exists; return the new row id if this
        caller won, ``None`` if a row for the same (job, occurrence, scope, attempt)
        already exists (inserted by anyone, any time).

        ``scope_node=None`` means single_instance (the row is unique per occurrence and
        attempt, cluster-wide); a node id means every_instance (unique per occurrence,
        node and attempt). Exactly one of any number of concurrent callers wins."""
        ...

    def transition(
        self,
        execution_id: int,
        expected: ExecutionStatus | Collection[ExecutionStatus],
        new: ExecutionStatus,
        *,
        error: str | None = None,
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
        fencing_token: int | None = None,
    ) -> bool:
        """Compare-and-set the status: change it to ``new`` only if it currently is
        ``expected`` (or one of them). Returns whether this call changed it; of two racing
        callers exactly one wins. ``error``/``started_at``/``finished_at`` are written only
        when given (and only when the transition happens).

        Fencing: with ``fencing_token`` (the token the writer claimed the row with) the
        change also requires the row to carry that token, so a writer whose claim is stale
        changes nothing. A row that recovery closed (its node was judged dead) is not
        ``running`` any more, so the late final status of its first node is refused
        either way; the runtime logs that refusal (SPEC section 4, "Fencing")."""
        ...

    def claim_execution(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime,
    ) -> bool:
        """Start a ``pending`` row written ahead (a retry waiting for its backoff, or one
        left by a scheduler that is gone): compare-and-set it to ``running`` and record
        who runs it (``node_id``, ``fencing_token``) and since when. False if it is not
        ``pending`` any more; of racing callers exactly one wins."""
        ...

    def insert_executions(self, rows: Sequence[NewExecution]) -> list[int | None]:
        """:meth:`try_insert_execution` for each row, in ONE transaction: the new row id
        where this caller won, ``None`` where a row with the same (job, occurrence, scope,
        attempt) already existed (inserted by anyone, any time, or earlier in ``rows``).
        Results are in the order of ``rows``."""
        ...

    def discard_pending(self, execution_ids: Collection[int]) -> int:
        """Delete those of ``execution_ids`` that are still ``pending`` (rows written for
        attempts that then never started: their instants get skip records instead, or
        the misfire policy decides at the next start); returns how many were deleted."""
        ...

    def transitions(self, changes: Sequence[Transition]) -> list[bool]:
        """:meth:`transition` for each change, in order, in ONE transaction; whether each
        one happened. A change to a final status (neither ``pending`` nor ``running``)
        that happens also releases the guard locks its execution holds, in the same
        transaction (a refused one releases nothing: they may be another claimant's)."""
        ...

    # --- guard locks (cluster-wide serial groups and single_instance overlap) ----------

    def insert_guarded(self, rows: Sequence[NewExecution]
                       ) -> list[int | Fenced | str | None]:
        """:meth:`insert_executions`, where a row with ``locks`` is inserted only together
        with every one of its guard locks (``INSERT ... ON CONFLICT DO NOTHING`` on the
        key), all in ONE transaction: the new row id where this caller won the row and its
        locks (a :class:`Fenced` for a ``fenced`` row: the job's next fencing token was
        taken after the locks, in that transaction, and written on the row); ``None``
        where the row already existed; the key of a lock that another execution holds
        (then neither the row nor any lock was written). Of any number of concurrent
        callers taking one key, exactly one gets it."""
        ...

    def claim_guarded(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime, locks: Sequence[str], fence: str | None = None,
    ) -> bool | Fenced | str:
        """:meth:`claim_execution` together with ``locks``, in ONE transaction: True if the
        row was claimed and the locks taken (a :class:`Fenced` when ``fence`` names the
        row's job: its next fencing token was taken after the locks, in that transaction,
        in place of ``fencing_token``); False if the row is not ``pending`` any more; the
        key of a lock another execution holds (the row stays ``pending``)."""
        ...

    def guard_locks(self) -> list[GuardLock]:
        """Every held lock, by key (``status`` and tests)."""
        ...

    def release_locks(self, node_id: str) -> int:
        """Drop every lock ``node_id`` holds (its scheduler stopped or restarted); how
        many."""
        ...

    def release_stale_locks(self, now: datetime, ttl: timedelta) -> int:
        """Drop the locks of nodes that are dead (see :meth:`dead_nodes`) or have no node
        row at all (crashed or stopped); how many."""
        ...

    def orphaned_executions(self) -> list[ExecutionRecord]:
        """single_instance executions still ``pending`` or ``running`` whose node has no
        node row any more (it stopped gracefully and left them for the cluster), oldest
        ``scheduled_at`` first."""
        ...

    def get_execution(self, execution_id: int) -> ExecutionRecord | None: ...

    def list_executions(
        self,
        *,
        job_id: str | None = None,
        status: ExecutionStatus | Collection[ExecutionStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = 50,
    ) -> list[ExecutionRecord]:
        """History, newest first: ordered by ``scheduled_at`` descending, then id
        descending (a later attempt of an occurrence before an earlier one). ``since`` and
        ``until`` bound ``scheduled_at`` (inclusive). ``limit=None`` means all."""
        ...

    def latest_executions(self, job_ids: Collection[str]) -> dict[str, ExecutionRecord]:
        """The newest execution (same order as :meth:`list_executions`) of each job that
        has one."""
        ...

    def executions_of_occurrence(self, job_id: str, occurrence_id: str) -> list[ExecutionRecord]:
        """Every attempt of one occurrence (any scope), oldest attempt first."""
        ...

    def pending_or_running(
        self,
        *,
        node_id: str | None = None,
        job_ids: Collection[str] | None = None,
        node_ids: Collection[str] | None = None,
    ) -> list[ExecutionRecord]:
        """Executions still ``pending`` or ``running`` (optionally only those inserted by
        ``node_id``, or by one of ``node_ids``, or only of ``job_ids``), oldest
        ``scheduled_at`` first. Used for recovery, cluster-wide overlap and serial
        groups."""
        ...

    def record_process(self, execution_id: int, pgid: int, process_start: str | None) -> None:
        """Record the process group a command attempt runs in and its leader's identity
        (:mod:`cronctl.processes`), so that recovery on the same host can end what the
        attempt left running."""
        ...

    def request_cancel(self, execution_id: int) -> bool:
        """Flag a ``pending`` or ``running`` execution for cancellation. Returns False if it
        does not exist or has already ended (nothing is changed then)."""
        ...

    def cancel_requested(self, execution_ids: Collection[int]) -> set[int]:
        """The subset of ``execution_ids`` flagged for cancellation (the runtime polls)."""
        ...

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        """Append log lines; each execution's lines get consecutive ``seq`` numbers in the
        order given. Lines of an execution that does not exist are dropped silently
        (an untracked fire has no row)."""
        ...

    def read_logs(
        self, execution_id: int, *, after_seq: int = 0, limit: int | None = None
    ) -> list[LogLine]:
        """Lines with ``seq > after_seq``, oldest first (``-f`` follows with the last seq)."""
        ...

    def record_progress(
        self, execution_id: int, done: float, total: float | None, message: str | None
    ) -> None:
        """Overwrite the execution's progress snapshot."""
        ...

    # --- requests from other processes -------------------------------------------------

    def enqueue_trigger(
        self,
        job_id: str,
        origin: Origin = Origin.MANUAL,
        *,
        scheduled_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int | None:
        """Queue a request for a running scheduler; returns its id.

        With ``scheduled_at`` (replay) at most one request per (job, instant) ever exists:
        a second request for the same instant returns ``None`` and changes nothing."""
        ...

    def take_triggers(
        self,
        node_id: str,
        *,
        job_ids: Collection[str] | None = None,
        limit: int = 100,
        now: datetime | None = None,
    ) -> list[TriggerRequest]:
        """Claim untaken requests (optionally only for ``job_ids``), oldest first. Each
        request is taken by exactly one caller, cluster-wide."""
        ...

    def complete_trigger(
        self, request_id: int, *, execution_id: int | None = None, error: str | None = None
    ) -> None:
        """Record what came of a taken request (``done`` becomes True)."""
        ...

    def get_trigger(self, request_id: int) -> TriggerRequest | None: ...

    # --- nodes -------------------------------------------------------------------------
    # Liveness never trusts a node's wall clock (the rules: cronctl.store.liveness). On
    # PostgreSQL a registered node holds an advisory lock on a session of this store's
    # own, released by the server when that connection drops, and heartbeats are stamped
    # and aged by the server's clock; on SQLite a node lives while its recorded process
    # (pid and start time) runs. ``now`` and ``ttl`` matter only where no better signal
    # exists: a node whose heartbeat is older than ``ttl`` is dead (on SQLite only rows
    # without a process identity, or of another host).

    @property
    def beat_interval(self) -> float | None:
        """The longest a live node may go between heartbeats for the liveness rule to hold
        (seconds; PostgreSQL, where a node whose lock connection dropped takes its lock
        again at its next heartbeat); ``None``: heartbeats play no part in it beyond
        ``ttl`` (SQLite)."""
        ...

    def register_node(
        self, node_id: str, host: str, pid: int, started_at: datetime, *, ttl: timedelta,
        process_start: str | None = None,
    ) -> None:
        """Register (or re-register) this process as node ``node_id``; on PostgreSQL take
        its lock (held until :meth:`unregister_node` or :meth:`close`).
        ``process_start`` is the identity of process ``pid``
        (:func:`cronctl.processes.identity`). Raises :class:`NodeIdInUse` if another live
        process holds the id. Atomic: of two registering one id at once, one is refused."""
        ...

    def heartbeat(
        self, node_id: str, at: datetime, *, host: str | None = None, pid: int | None = None
    ) -> bool:
        """Record a heartbeat (at ``at`` on SQLite, by the server's clock on PostgreSQL,
        where a dropped lock session is opened again and the lock re-taken first). False
        if the node row is gone (unregistered), if the lock is held by another process, or,
        when ``host``/``pid`` are given, if the row now belongs to another process (it took
        the id over after this one was judged dead): stop, or re-register."""
        ...

    def get_node(self, node_id: str) -> NodeRecord | None: ...

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        """Nodes that are not dead (see :meth:`dead_nodes`), by node id."""
        ...

    def dead_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        """Nodes judged dead, by node id: on PostgreSQL, whose lock is free (and whose
        heartbeat is older than a short grace, by the server's clock) or whose heartbeat is
        older than ``ttl``; on SQLite, whose recorded process is gone."""
        ...

    def unregister_node(self, node_id: str) -> None:
        """Delete the node row (and on PostgreSQL release its lock)."""
        ...

__all__ = [
    "DeliveryFailures",
    "ExecutionRecord",
    "Fenced",
    "GuardLock",
    "group_lock",
    "job_lock",
    "LogEntry",
    "LogLine",
    "NodeIdInUse",
    "NewExecution",
    "NodeRecord",
    "PruneCounts",
    "PrunePolicy",
    "PruneProgress",
    "PruneStep",
    "ScheduleState",
    "SchemaMismatch",
    "SkipRecord",
    "SkipRun",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Transition",
    "TriggerRequest",
    "require_aware",
    "statuses",
]
