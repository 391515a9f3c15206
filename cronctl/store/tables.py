"""SQLAlchemy Core tables: the schema the alembic migrations build (a test checks that
the two agree on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

from cronctl.store.reads import LIVE_INDEX, LIVE_WHERE, bind_instant, read_instant

# Deterministic constraint names, so migrations can refer to them on every dialect.
metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

SQLITE_TIMESTAMP_WIDTH = 27  # len("2026-03-08T07:00:00.000000Z")


class UtcDateTime(sa.types.TypeDecorator[datetime]):
    """An aware UTC datetime that round-trips to the microsecond.

    PostgreSQL: ``TIMESTAMP WITH TIME ZONE``. SQLite: the fixed-width string
    ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, whose text order is time order, so ``<``, ``max``
    and ``ORDER BY`` work in SQL. Naive datetimes are refused (they are bugs). The
    conversions are the store's one instant codec
    (:func:`cronctl.store.reads.bind_instant`, :func:`~cronctl.store.reads.read_instant`)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String(SQLITE_TIMESTAMP_WIDTH))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise ValueError(f"expected an aware datetime, got {value!r}")
        return bind_instant(value, dialect.name != "sqlite")

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return read_instant(value)


# Integer ids: BIGINT on PostgreSQL, INTEGER (the rowid alias) on SQLite.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

ID_LEN = 200  # job and node ids: docs/behaviour.md#jobs allows 1-200 chars
PROCESS_IDENT_LEN = 64  # "<boot id>:<start ticks>" (cronctl.processes.identity)

job_schedules = sa.Table(
    "job_schedules",
    metadata,
    sa.Column("job_id", sa.String(ID_LEN), primary_key=True),
    sa.Column("definition", sa.Text(), nullable=False, server_default="{}"),
    sa.Column("cursor", UtcDateTime(), nullable=True),
    sa.Column("paused", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("fencing_token", sa.BigInteger(), nullable=False, server_default="0"),
    sa.Column("updated_at", UtcDateTime(), nullable=True),
    # When `run` first saved the job's definition: `why` and `replay` answer nothing
    # before it (rows older than revision 0011 hold the epoch: unknown).
    sa.Column("first_seen", UtcDateTime(), nullable=True),
    # The paused jobs, read every few seconds by each scheduler: without it, a scan
    # of every job's row (10,000 jobs: ~2 ms each time on SQLite).
    sa.Index("ix_job_schedules_paused_job_id", "paused", "job_id"),
)

job_executions = sa.Table(
    "job_executions",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("job_id", sa.String(ID_LEN), nullable=False),
    sa.Column("occurrence_id", sa.String(64), nullable=False),
    sa.Column("scheduled_at", UtcDateTime(), nullable=False),
    sa.Column("attempt", sa.Integer(), nullable=False),
    # '' for single_instance (unique cluster-wide), the node id for every_instance.
    sa.Column("scope", sa.String(ID_LEN), nullable=False, server_default=""),
    sa.Column("node_id", sa.String(ID_LEN), nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("target", sa.Text(), nullable=False, server_default=""),
    sa.Column("fencing_token", sa.BigInteger(), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=True),
    sa.Column("finished_at", UtcDateTime(), nullable=True),
    sa.Column("error", sa.Text(), nullable=True),
    sa.Column("progress_done", sa.Float(), nullable=True),
    sa.Column("progress_total", sa.Float(), nullable=True),
    sa.Column("progress_message", sa.Text(), nullable=True),
    sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()),
    # A command's process group and its leader's identity (cronctl.processes), so that
    # recovery on the same host can end what an interrupted attempt left running.
    sa.Column("pgid", sa.Integer(), nullable=True),
    sa.Column("process_start", sa.String(PROCESS_IDENT_LEN), nullable=True),
    # How a command ended and what it used, written with its final status (0012).
    sa.Column("exit_code", sa.Integer(), nullable=True),
    sa.Column("signal", sa.String(16), nullable=True),
    sa.Column("cpu_seconds", sa.Float(), nullable=True),
    sa.Column("max_rss_bytes", sa.BigInteger(), nullable=True),
    # A final status refused as stale (the attempt was taken over): kept, not applied.
    sa.Column("fenced_status", sa.String(16), nullable=True),
    sa.Column("fenced_at", UtcDateTime(), nullable=True),
    # The election: a second row for the same occurrence, scope and attempt is impossible.
    sa.UniqueConstraint("job_id", "occurrence_id", "scope", "attempt"),
    # One index per filter of the read commands (job, status, planned time), each ending
    # with their order (scheduled_at, id): see migration 0007.
    sa.Index("ix_job_executions_job_id_scheduled_at_id", "job_id", "scheduled_at", "id"),
    sa.Index("ix_job_executions_job_id_status_scheduled_at_id", "job_id", "status",
             "scheduled_at", "id"),
    sa.Index("ix_job_executions_scheduled_at_id", "scheduled_at", "id"),
    sa.Index("ix_job_executions_status_scheduled_at_id", "status", "scheduled_at", "id"),
    # The live rows alone (migration 0010): status and recovery read them through it.
    sa.Index(LIVE_INDEX, "scheduled_at", "id", sqlite_where=sa.text(LIVE_WHERE),
             postgresql_where=sa.text(LIVE_WHERE)),
)

job_logs = sa.Table(
    "job_logs",
    metadata,
    sa.Column(
        "execution_id",
        BigId,
        sa.ForeignKey("job_executions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("seq", sa.Integer(), primary_key=True),
    sa.Column("at", UtcDateTime(), nullable=False),
    sa.Column("level", sa.String(16), nullable=False),
    sa.Column("message", sa.Text(), nullable=False),
)

scheduler_nodes = sa.Table(
    "scheduler_nodes",
    metadata,
    sa.Column("node_id", sa.String(ID_LEN), primary_key=True),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer(), nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("heartbeat_at", UtcDateTime(), nullable=False),
    # The scheduler's process identity: on SQLite (one host) a node is live while it runs.
    sa.Column("process_start", sa.String(PROCESS_IDENT_LEN), nullable=True),
)

trigger_requests = sa.Table(
    "trigger_requests",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("job_id", sa.String(ID_LEN), nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    # NULL = run now (manual); else the planned instant (replay), at most one request each.
    sa.Column("scheduled_at", UtcDateTime(), nullable=True),
    sa.Column("requested_at", UtcDateTime(), nullable=False),
    sa.Column("taken_by", sa.String(ID_LEN), nullable=True),
    sa.Column("taken_at", UtcDateTime(), nullable=True),
    sa.Column("done", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("execution_id", sa.BigInteger(), nullable=True),
    sa.Column("error", sa.Text(), nullable=True),
    sa.UniqueConstraint("job_id", "scheduled_at"),
    sa.Index("ix_trigger_requests_taken_by_id", "taken_by", "id"),
    sa.Index("ix_trigger_requests_done_requested_at", "done", "requested_at"),  # retention
)

# Cluster-wide guards (serial groups, single_instance overlap): a row per held key,
# inserted in the transaction that inserts (or claims) the execution and deleted in the
# one that writes its final status, so holding the key and running are one fact.
guard_locks = sa.Table(
    "guard_locks",
    metadata,
    sa.Column("key", sa.String(ID_LEN + 16), primary_key=True),  # "group:<name>", "job:<id>"
    sa.Column("execution_id", BigId, nullable=False),
    sa.Column("node_id", sa.String(ID_LEN), nullable=False),
    sa.Column("acquired_at", UtcDateTime(), nullable=False),
    sa.Index("ix_guard_locks_execution_id", "execution_id"),
    sa.Index("ix_guard_locks_node_id", "node_id"),
)

# The skip ledger: planned instants that did not run, and why. A row is a run of
# consecutive planned instants of one job with one reason (``count`` of them, from
# ``first_at`` to ``last_at``); ``scope`` is '' for a cluster-wide decision
# (single_instance) and the node id for an every_instance job's node. The unique key
# makes each decision land once cluster-wide, whichever nodes take it.
skip_records = sa.Table(
    "skip_records",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("job_id", sa.String(ID_LEN), nullable=False),
    sa.Column("scope", sa.String(ID_LEN), nullable=False, server_default=""),
    sa.Column("first_at", UtcDateTime(), nullable=False),
    sa.Column("last_at", UtcDateTime(), nullable=False),
    sa.Column("count", sa.Integer(), nullable=False),
    sa.Column("reason", sa.String(32), nullable=False),
    sa.Column("node_id", sa.String(ID_LEN), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("detail", sa.Text(), nullable=True),
    sa.UniqueConstraint("job_id", "scope", "first_at"),
    sa.Index("ix_skip_records_job_id_last_at_id", "job_id", "last_at", "id"),
    sa.Index("ix_skip_records_last_at_id", "last_at", "id"),
)

# Fires waiting for a serial group held on another node: a free group lock goes to its
# oldest waiter (by planned instant, then job id), not to whichever node asks first, so a
# group busy most of the time cannot starve a waiting job (see guardsql.take_locks). A row
# lives while its fire retries (``seen_at``, refreshed by each try) and its node is live.
group_waiters = sa.Table(
    "group_waiters",
    metadata,
    sa.Column("key", sa.String(ID_LEN + 16), primary_key=True),  # "group:<name>"
    sa.Column("job_id", sa.String(ID_LEN), primary_key=True),
    sa.Column("planned", UtcDateTime(), primary_key=True),
    sa.Column("node_id", sa.String(ID_LEN), nullable=False),
    sa.Column("seen_at", UtcDateTime(), nullable=False),
    sa.Index("ix_group_waiters_node_id", "node_id"),
)

# Per-node cursors of every_instance jobs: each node fires such a job on its own, so
# its catch-up after downtime must depend on its own cursor, not on another node's.
node_cursors = sa.Table(
    "node_cursors",
    metadata,
    sa.Column("job_id", sa.String(ID_LEN), primary_key=True),
    sa.Column("node_id", sa.String(ID_LEN), primary_key=True),
    sa.Column("cursor", UtcDateTime(), nullable=False),
)

# Notifications decided by whichever node sees them first (a ``late`` occurrence, a
# misfire set, a skip): the node whose insert of the decision's key wins sends it, so
# each is sent once cluster-wide. ``key`` is a digest of the decision; old rows are
# deleted by the scheduler once no other node can still be deciding the same thing.
notify_marks = sa.Table(
    "notify_marks",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("event", sa.String(32), nullable=False),
    sa.Column("job_id", sa.String(ID_LEN), nullable=False),
    sa.Column("node_id", sa.String(ID_LEN), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Index("ix_notify_marks_created_at", "created_at"),
)

# Per node: notifications failing since when (cleared by the next delivery that works),
# for ``cronctl status``. ``last_error`` never holds a header or a webhook's path.
notify_failures = sa.Table(
    "notify_failures",
    metadata,
    sa.Column("node_id", sa.String(ID_LEN), primary_key=True),
    sa.Column("failing_since", UtcDateTime(), nullable=False),
    sa.Column("last_failure_at", UtcDateTime(), nullable=False),
    sa.Column("failures", sa.Integer(), nullable=False),
    sa.Column("last_error", sa.Text(), nullable=True),
)

__all__ = [
    "UtcDateTime",
    "guard_locks",
    "job_executions",
    "job_logs",
    "job_schedules",
    "metadata",
    "node_cursors",
    "notify_failures",
    "notify_marks",
    "scheduler_nodes",
    "skip_records",
    "trigger_requests",
]


# Who did what through the HTTP API (``cronctl serve``): one row per POST, written once
# the request was answered; ``cronctl audit`` lists them. Never a token, only its name.
audit_log = sa.Table(
    "audit_log",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("at", UtcDateTime(), nullable=False),
    sa.Column("actor", sa.String(ID_LEN), nullable=False),  # a token's name, or "unauthenticated"
    sa.Column("role", sa.String(16), nullable=True),  # read, operate; NULL when not known
    sa.Column("action", sa.String(32), nullable=False),  # trigger, cancel, pause, ...
    sa.Column("target", sa.String(ID_LEN), nullable=True),  # job id or execution id
    sa.Column("detail", sa.Text(), nullable=True),  # the request's parameters, as JSON
    sa.Column("status", sa.Integer(), nullable=False),  # the HTTP status answered
    sa.Column("result", sa.Text(), nullable=False),  # "ok", or the one-line error
    sa.Column("client", sa.String(64), nullable=True),  # the client's address
    sa.Index("ix_audit_log_at", "at"),
)

# The dashboard's browser sessions (``cronctl serve``): the sha256 of a random session id
# (the cookie holds the id; a reader of this table cannot log in with what it holds), the
# token it was opened with (by name and digest: a token removed or changed in the tokens
# file ends its sessions), and when it ends. Logout deletes the row. Kept in the state
# database because every replica of ``cronctl serve`` must see the same sessions.
api_sessions = sa.Table(
    "api_sessions",
    metadata,
    sa.Column("id_digest", sa.String(64), primary_key=True),
    sa.Column("token_name", sa.String(64), nullable=False),
    sa.Column("token_digest", sa.String(64), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Column("client", sa.String(64), nullable=True),
    sa.Index("ix_api_sessions_expires_at", "expires_at"),
)
