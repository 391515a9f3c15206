"""The store seam: one Protocol the SQL store keeps on SQLite and PostgreSQL, the union of
its roles (each a Protocol with its invariant: :class:`Reads`, :class:`Triggers`,
:class:`Liveness` here, :class:`~cronctl.store.firepath.FirePath` and
:class:`~cronctl.store.upkeep.Upkeep` in their modules). A caller that needs one role
takes that role; :class:`Store` is all of them.

Import-light on purpose (no SQLAlchemy): the runtime and the fast CLI commands import it
without opening a database. Its records are in :mod:`cronctl.store.records`; the
implementation is :class:`cronctl.store.sql.SqlStore`.

Conventions every implementation keeps:

- Every datetime passed in is *aware* (a naive one raises ``ValueError``); every one
  returned is aware UTC and equal, to the microsecond, to what was stored.
- The store never reads the clock on its own for a decision: methods that stamp
  bookkeeping columns take ``now`` (omitted where optional: the current UTC time).
- Every method is atomic on its own: it either happens completely or not at all.
- Failures the user can act on raise :class:`cronctl.errors.StoreError` (or a subclass
  in :mod:`cronctl.store.records`) naming the database (password redacted) and what to
  do; :class:`StoreUnavailable` marks a transient loss of the database: retry later.
- Methods are thread-safe; processes (on PostgreSQL, nodes) may share one database.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.firepath import FirePath
from cronctl.store.records import (
    AuditRecord,
    DeliveryFailures,
    ExecutionRecord,
    LogLine,
    NodeIdInUse,
    NodeRecord,
    ScheduleState,
    SchemaMismatch,
    SessionRecord,
    SkipRecord,
    StoreError,
    StoreUnavailable,
    TriggerRequest,
    require_aware,
    statuses,
)
from cronctl.store.upkeep import Upkeep
from cronctl.store.writerecords import (
    Fenced,
    GuardLock,
    LogEntry,
    NewExecution,
    PruneCounts,
    PrunePolicy,
    PruneProgress,
    PruneStep,
    SkipRun,
    Transition,
    group_lock,
    job_lock,
)

# --- the roles ---------------------------------------------------------------------------


class Reads(Protocol):
    """What the read commands (``history``, ``logs``, ``status``, ``why``, ``list``) read;
    :mod:`cronctl.store.reader` serves exactly this role without SQLAlchemy.

    Invariant: a read writes nothing and leaves no transaction open. Each call sees what
    was committed when it ran (two calls are not one snapshot); rows come in the order
    each method states; a row that does not exist is ``None`` or absent, never an
    error."""

    def get_execution(self, execution_id: int) -> ExecutionRecord | None: ...

    def list_executions(
        self,
        *,
        job_id: str | None = None,
        status: ExecutionStatus | Collection[ExecutionStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = 50,
        before: tuple[datetime, int] | None = None,
    ) -> list[ExecutionRecord]:
        """History, newest first: ordered by ``scheduled_at`` descending, then id
        descending (a later attempt of an occurrence before an earlier one). ``since`` and
        ``until`` bound ``scheduled_at`` (inclusive). ``limit=None`` means all. ``before``
        = (scheduled_at, id) of the last row of the previous page: only rows after it in
        this order (a keyset page; an offset would rescan the rows before it)."""
        ...

    def slot_counts(self, job_ids: Collection[str], start: datetime, width: timedelta,
                    slots: int) -> dict[tuple[str, int], dict[str, int]]:
        """How many executions (every attempt) of each job were planned in each of
        ``slots`` windows of ``width`` from ``start``, per status: keyed by (job id, slot
        index), only the non-empty ones. Reads the index, not the rows (the dashboard's
        strip of 100 per-minute jobs)."""
        ...

    def latest_executions(self, job_ids: Collection[str]) -> dict[str, ExecutionRecord]:
        """The newest execution (same order as :meth:`list_executions`) of each job that
        has one."""
        ...

    def recent_executions(self, job_ids: Collection[str], per_job: int
                          ) -> dict[str, list[ExecutionRecord]]:
        """The newest ``per_job`` executions (newest first, the order of
        :meth:`list_executions`) of each job that has one, in one read."""
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

    def read_logs(
        self, execution_id: int, *, after_seq: int = 0, limit: int | None = None
    ) -> list[LogLine]:
        """Lines with ``seq > after_seq``, oldest first (``-f`` follows with the last seq)."""
        ...

    def get_schedule(self, job_id: str) -> ScheduleState | None: ...

    def list_schedules(self) -> list[ScheduleState]:
        """All schedule rows, ordered by job id."""
        ...

    def paused_job_ids(self) -> set[str]:
        """Ids of the paused jobs (an index read: no definition is decoded)."""
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

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        """Nodes that are not dead (see :meth:`Liveness.dead_nodes`), by node id."""
        ...

    def delivery_failures(self, node_ids: Collection[str] | None = None
                          ) -> list[DeliveryFailures]:
        """Nodes whose notifications fail, by node id."""
        ...

    def waiting_triggers(self, limit: int) -> list[TriggerRequest]:
        """Trigger and replay requests no scheduler has acted on yet (not done, without
        an execution; taken or not), oldest ``requested_at`` first, at most ``limit``."""
        ...


class TriggerQueue(Protocol):
    """What ``cronctl trigger`` asks of the database: queue a request for a running
    scheduler (and its ``--chain``) and read it back. :mod:`cronctl.store.reader`
    serves this role without SQLAlchemy, with the same statements."""

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

    def wait_chain(self, job_id: str, scheduled_at: datetime, *,
                   now: datetime | None = None) -> bool:
        """``replay``/``trigger --chain``: the dependent ``job_id``'s occurrence at
        ``scheduled_at`` waits for its parents' occurrences there (a request no scheduler
        takes until :meth:`Triggers.release_chain`). An instant decided without running
        (an upstream skip) waits again; one that ran never does. False when nothing
        changed."""
        ...

    def get_trigger(self, request_id: int) -> TriggerRequest | None: ...


class Triggers(TriggerQueue, Protocol):
    """Requests from other processes (``cronctl trigger``, ``replay``) to a running
    scheduler, through the database.

    Invariant: each request is taken by exactly one scheduler, cluster-wide, and at most
    one request per (job, planned instant) ever exists, so an instant is never replayed
    twice."""

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

    def release_triggers(self, node_ids: Collection[str]) -> int:
        """Requests taken by ``node_ids`` (dead nodes, or this node's previous process)
        and not done: one whose execution row the taker had written is done with it
        (recovery of that row is the truth); any other is untaken again, so that exactly
        one live node takes it. The run of a request is planned at its ``scheduled_at``,
        or else its ``requested_at``, so its row is found. How many were released."""
        ...

    def decide_dependent(
        self,
        job_id: str,
        scheduled_at: datetime,
        node_id: str,
        *,
        skip: tuple[str, str] | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Decide a dependent's occurrence at ``scheduled_at`` (docs/behaviour.md#dependencies),
        once cluster-wide: the decision is the one request of (job, instant). Without ``skip``
        it is an untaken request (origin ``dependency``) that a scheduler takes and runs; with
        ``skip = (reason, detail)`` it is a request already done, and the instant's skip
        record (cluster-wide scope), written in the same transaction. False when the instant
        was already decided (by any node, or by a replay request)."""
        ...

    def chain_waits(self, job_ids: Collection[str]) -> list[TriggerRequest]:
        """The waiting requests of :meth:`wait_chain` for these jobs."""
        ...

    def release_chain(self, request_id: int, node_id: str, *, skip: str | None = None,
                      now: datetime | None = None) -> bool:
        """Decide a waiting request once: release it to be taken and run, or (``skip``,
        its reason text) close it. False when another node decided it first."""
        ...

    def stranded_dependency_requests(self, job_ids: Collection[str]
                                     ) -> list[TriggerRequest]:
        """Dependency requests of these jobs taken by a scheduler and not done: the
        caller gives back (:meth:`untake_trigger`) those of a dead node whose occurrence
        has no execution row (the node died between taking and recording it)."""
        ...

    def untake_trigger(self, request_id: int, taken_by: str) -> bool:
        """Make a request taken by ``taken_by`` (and not done) untaken again."""
        ...

    def list_triggers(self, job_id: str, *, since: datetime, until: datetime
                      ) -> list[TriggerRequest]:
        """The requests of ``job_id`` for a planned instant (replays) in ``[since,
        until]``, oldest instant first. Requests to run now (manual) have no instant and
        are never listed."""
        ...


class Liveness(Protocol):
    """Scheduler nodes: registration, heartbeats, which nodes are dead, and what the
    cluster takes back from a node that stopped or died (its guard locks, its
    single_instance executions).

    Invariant: liveness never trusts a node's wall clock (the rules:
    :mod:`cronctl.store.liveness`). On PostgreSQL a registered node holds an advisory
    lock on a session of this store's own, released by the server when that connection
    drops, and heartbeats are stamped and aged by the server's clock; on SQLite a node
    lives while its recorded process (pid and start time) runs. ``now`` and ``ttl``
    matter only where no better signal exists: a node whose heartbeat is older than
    ``ttl`` is dead (on SQLite only rows without a process identity, or of another
    host)."""

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

    def lock_evidence(self, node_id: str) -> tuple[bool, bool]:
        """PostgreSQL: whether the last :meth:`heartbeat` of ``node_id`` was stamped on the
        session that holds its lock (it confirmed the node's liveness), and whether a
        connection was refused since because the server is starting up or shutting down
        (proof of a restart, see docs/liveness.md). ``(False, False)`` on SQLite."""
        ...

    def server_now(self) -> datetime | None:
        """The database server's clock, read now (PostgreSQL: one round trip), the one
        reference of every node's wall clock; None on SQLite, whose clock is this host's
        own."""
        ...

    def get_node(self, node_id: str) -> NodeRecord | None: ...

    def file_replaced(self) -> str | None:
        """SQLite: why the file at the database's path is no longer the one this store
        opened (deleted or replaced: see :mod:`cronctl.store.sqlitefile`); ``None`` when it
        still is, and always on PostgreSQL. A stat, no query: called on each heartbeat."""
        ...

    def check_schema(self) -> None:
        """Raise :class:`SchemaMismatch` unless the database is still at this cronctl's
        schema head (another cronctl may have upgraded it meanwhile)."""
        ...

    def dead_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        """Nodes judged dead, by node id: on PostgreSQL, whose lock is free (and whose
        heartbeat is older than a short grace, by the server's clock) or whose heartbeat is
        older than ``ttl``; on SQLite, whose recorded process is gone."""
        ...

    def unregister_node(self, node_id: str) -> None:
        """Delete the node row (and on PostgreSQL release its lock)."""
        ...

    def release_locks(self, node_id: str) -> int:
        """Drop every lock ``node_id`` holds (its scheduler stopped or restarted); how
        many."""
        ...

    def release_stale_locks(self, now: datetime, ttl: timedelta, *,
                            keep: Collection[int] = ()) -> int:
        """Drop the locks of nodes that are dead (see :meth:`dead_nodes`) or have no node
        row at all (crashed or stopped); how many. The locks of the executions in
        ``keep`` stay: they are released when those rows are closed."""
        ...

    def orphaned_executions(self) -> list[ExecutionRecord]:
        """single_instance executions still ``pending`` or ``running`` whose node has no
        node row any more (it stopped gracefully and left them for the cluster), oldest
        ``scheduled_at`` first."""
        ...


class Audit(Protocol):
    """The audit log of the HTTP API (``cronctl serve``): one row per ``POST``, who (a
    token's name, never the token), what, when and the result; ``cronctl audit`` reads
    it. Rows are only ever added."""

    def record_audit(self, *, at: datetime, actor: str, role: str | None, action: str,
                     target: str | None, detail: str | None, status: int, result: str,
                     client: str | None) -> int:
        """Add one row; its id. Over-long values are cut, never refused."""
        ...

    def list_audit(self, *, since: datetime | None = None, limit: int | None = 50
                   ) -> list[AuditRecord]:
        """Rows with ``at >= since``, newest first, at most ``limit``."""
        ...


class ApiSessions(Protocol):
    """``cronctl serve``'s browser sessions, shared by every replica: a row per live
    session, keyed by the sha256 of its random id; logout deletes it."""

    def open_api_session(self, *, id_digest: str, token_name: str, token_digest: str,
                         created_at: datetime, expires_at: datetime,
                         client: str | None) -> None:
        """Add a session (and delete those expired by ``created_at``)."""
        ...

    def find_api_session(self, id_digest: str, now: datetime) -> SessionRecord | None:
        """The session, or ``None`` when there is none or it expired by ``now``."""
        ...

    def end_api_session(self, id_digest: str) -> bool:
        """Delete the session; whether there was one."""
        ...


@runtime_checkable
class Reader(Reads, Protocol):
    """What the read commands use: the :class:`Reads` role and ``close``; the full store
    and :class:`cronctl.store.reader.DbReader` are each one."""

    def close(self) -> None: ...


class Requester(Reader, TriggerQueue, Protocol):
    """What ``cronctl trigger`` uses: the reads, and its request queued and read back;
    the full store and :class:`cronctl.store.reader.DbReader` are each one."""


class Store(FirePath, Reads, Triggers, Liveness, Upkeep, Audit, ApiSessions, Protocol):
    """The durable state of cronctl: every role. See the module docstring for the
    conventions every method keeps."""

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


__all__ = [
    "ApiSessions",
    "Audit",
    "AuditRecord",
    "DeliveryFailures",
    "ExecutionRecord",
    "Fenced",
    "FirePath",
    "GuardLock",
    "group_lock",
    "job_lock",
    "Liveness",
    "LogEntry",
    "LogLine",
    "NodeIdInUse",
    "NewExecution",
    "NodeRecord",
    "PruneCounts",
    "PrunePolicy",
    "PruneProgress",
    "PruneStep",
    "Reader",
    "Reads",
    "Requester",
    "ScheduleState",
    "SchemaMismatch",
    "SkipRecord",
    "SkipRun",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Transition",
    "TriggerQueue",
    "TriggerRequest",
    "Triggers",
    "Upkeep",
    "require_aware",
    "statuses",
]
