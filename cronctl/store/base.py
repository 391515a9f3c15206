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
    ExecutionRecord,
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

# --- the Protocol ------------------------------------------------------------------------


@runtime_checkable
class Store(Protocol):
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
    ) -> bool:
        """Compare-and-set the status: change it to ``new`` only if it currently is
        ``expected`` (or one of them). Returns whether this call changed it; of two racing
        callers exactly one wins. ``error``/``started_at``/``finished_at`` are written only
        when given (and only when the transition happens)."""
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

    def transitions(self, changes: Sequence[Transition]) -> list[bool]:
        """:meth:`transition` for each change, in order, in ONE transaction; whether each
        one happened. A change to a final status (neither ``pending`` nor ``running``)
        also releases the guard locks its execution holds, in the same transaction."""
        ...

    # --- guard locks (cluster-wide serial groups and single_instance overlap) ----------

    def insert_guarded(self, rows: Sequence[NewExecution]) -> list[int | str | None]:
        """:meth:`insert_executions`, where a row with ``locks`` is inserted only together
        with every one of its guard locks (``INSERT ... ON CONFLICT DO NOTHING`` on the
        key), all in ONE transaction: the new row id where this caller won the row and its
        locks; ``None`` where the row already existed; the key of a lock that another
        execution holds (then neither the row nor any lock was written). Of any number of
        concurrent callers taking one key, exactly one gets it."""
        ...

    def claim_guarded(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime, locks: Sequence[str],
    ) -> bool | str:
        """:meth:`claim_execution` together with ``locks``, in ONE transaction: True if the
        row was claimed and the locks taken; False if the row is not ``pending`` any more;
        the key of a lock another execution holds (the row stays ``pending``)."""
        ...

    def guard_locks(self) -> list[GuardLock]:
        """Every held lock, by key (``status`` and tests)."""
        ...

    def release_locks(self, node_id: str) -> int:
        """Drop every lock ``node_id`` holds (its scheduler stopped or restarted); how
        many."""
        ...

    def release_stale_locks(self, now: datetime, ttl: timedelta) -> int:
        """Drop the locks of nodes that are not live (heartbeat at or before ``now - ttl``,
        or no node row at all: crashed or stopped); how many."""
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
    ) -> list[ExecutionRecord]:
        """Executions still ``pending`` or ``running`` (optionally only those inserted by
        ``node_id``, or only of ``job_ids``), oldest ``scheduled_at`` first. Used for
        recovery, cluster-wide overlap and serial groups."""
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

    # --- the skip ledger -------------------------------------------------------------

    def record_skips(self, runs: Sequence[SkipRun], *, now: datetime | None = None
                     ) -> list[bool]:
        """Record planned instants that did not run, in ONE transaction. Written once
        cluster-wide: a run whose ``(job, scope, first_at)`` is already recorded changes
        nothing, except that a longer run extends it. Per run: whether this call
        recorded something new (the node that did is the one that notifies)."""
        ...

    def list_skips(
        self,
        *,
        job_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = 50,
    ) -> list[SkipRecord]:
        """Skip runs, newest ``last_at`` first; ``since``/``until`` keep the runs that
        overlap that window (inclusive). ``limit=None`` means all."""
        ...

    def skips_covering(self, job_id: str, at: datetime) -> list[SkipRecord]:
        """The runs of ``job_id`` whose span contains ``at`` (``why``)."""
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

    def register_node(
        self, node_id: str, host: str, pid: int, started_at: datetime, *, ttl: timedelta
    ) -> None:
        """Register (or re-register) this scheduler; ``started_at`` is also its first
        heartbeat. Raises :class:`NodeIdInUse` if a node with this id is live (heartbeat
        later than ``started_at - ttl``) with a different host or pid. Atomic: of two
        schedulers registering one id at once, one is refused."""
        ...

    def heartbeat(
        self, node_id: str, at: datetime, *, host: str | None = None, pid: int | None = None
    ) -> bool:
        """Record a heartbeat. False if the node row is gone (unregistered), or, when
        ``host``/``pid`` are given, if it now belongs to another process (it took the id
        over after this one's heartbeat expired): stop, or re-register."""
        ...

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        """Nodes whose last heartbeat is later than ``now - ttl``, by node id."""
        ...

    def expired_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        """Nodes whose last heartbeat is at or before ``now - ttl``, by node id."""
        ...

    def unregister_node(self, node_id: str) -> None: ...

    # --- retention ---------------------------------------------------------------------

    def prune_step(self, policy: PrunePolicy, at: PruneProgress | None = None, *,
                   batch: int = 2000, dry_run: bool = False) -> PruneStep:
        """One small step of a prune pass (see :class:`PrunePolicy` for what is deleted),
        starting where ``at`` says (``None``: the beginning), in ONE transaction that
        deletes at most ``batch`` rows (executions and their log lines together; an
        execution with more lines than that is deleted over several steps, lines
        first). Returns what it deleted and where the next step starts (``None``: done).

        Never deletes a ``pending`` or ``running`` execution, nor one of the newest
        ``keep_last`` finished executions of a job (newest by ``scheduled_at``, then id,
        as :meth:`list_executions` orders them); an execution goes once it was both
        planned and ended before the cutoff. ``dry_run`` counts instead of deleting
        (many rows per step) and writes nothing. Safe to run concurrently with the
        scheduler and with another pass: rows already deleted are simply not counted
        again."""
        ...

    def prune(self, policy: PrunePolicy, *, batch: int = 2000,
              dry_run: bool = False) -> PruneCounts:
        """A whole pass: :meth:`prune_step` until done (many small transactions, so NOT
        atomic as a whole; each step is). Run twice with the same policy, the second
        pass deletes nothing."""
        ...

    def take_maintenance_lock(self, key: str, *, node_id: str, now: datetime) -> bool:
        """Take the cluster-wide lock ``key`` (a guard lock row with no execution) for
        ``node_id``; True if it now holds it (also when it already did). It is released
        by :meth:`release_maintenance_lock`, and like every guard lock by
        :meth:`release_locks` and :meth:`release_stale_locks` when its node stops or
        dies, so a node that dies holding it never wedges the cluster."""
        ...

    def release_maintenance_lock(self, key: str, *, node_id: str) -> bool:
        """Drop ``key`` if ``node_id`` holds it; whether it did."""
        ...

    def reclaim_space(self, *, max_pages: int = 2000, keep_fraction: float = 0.0) -> int:
        """SQLite files with ``auto_vacuum = INCREMENTAL``: give up to ``max_pages`` free
        pages back to the file system, keeping free pages up to ``keep_fraction`` of the
        pages in use (for new rows), in ONE short transaction; how many were given back.
        0 on PostgreSQL (autovacuum makes deleted rows' space reusable) and on SQLite
        files without incremental vacuum (free pages are still reused by new rows)."""
        ...



__all__ = [
    "ExecutionRecord",
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
