"""The state database read without SQLAlchemy, for ``history``, ``logs``, ``status``,
``why``, ``list`` and ``trigger``: a thin adapter that runs the SQL store's own queries
(:class:`cronctl.store.reads.ReadQueries`), and the statements ``trigger`` queues its
request with (:class:`cronctl.store.triggersql.TriggerQueries`), on one connection of
the standard library's ``sqlite3`` or, on PostgreSQL, of ``psycopg`` (imported only
then), with the SQL store's error messages (:func:`cronctl.store.urls.database_error`).

Why it exists: a read command is one short process, and opening the full store imports
SQLAlchemy and checks the schema with alembic. On a 1M-execution database that made
``history``, ``logs``, ``status`` and ``why`` take 1.6-2.5x the wall time they take
through this reader, on SQLite and on PostgreSQL alike (measured for Step 10); the
import alone was 0.27 s of the 0.5 s ``trigger JOB`` took on 100,000 jobs (Step 11).

Only a database already at this cronctl's schema head is read this way. Anything else
(no cronctl tables, an older revision that ``auto_migrate`` may upgrade, a newer one, a
``file:`` URI, a URL psycopg reads otherwise than SQLAlchemy) makes :func:`open_reader`
return ``None``, and the caller opens the full store, which says what to do or upgrades.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from cronctl.errors import first_line
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.pgsession import session_args
from cronctl.store.records import (
    DeliveryFailures,
    ExecutionRecord,
    LogLine,
    NodeRecord,
    ScheduleState,
    SkipRecord,
    TriggerRequest,
)
from cronctl.store.schema import HEAD
from cronctl.store.triggersql import TriggerQueries
from cronctl.store.urls import database_error, kind_of, sqlite_path

SQLITE_TIMEOUT_S = 5.0  # = cronctl.store.engine.SQLITE_BUSY_TIMEOUT_MS
_T = TypeVar("_T")


class DbReader:
    """:class:`~cronctl.store.base.Requester` on one DB-API connection (autocommit: each
    query sees the latest committed state, each statement that writes is its own
    transaction, and no transaction is left open)."""

    def __init__(self, conn: Any, url: str, *, pg: bool, errors: tuple[type[Exception], ...],
                 transient: tuple[type[Exception], ...]) -> None:
        self._conn = conn
        self._url = url
        self._q = TriggerQueries(pg)
        self._errors = errors
        self._transient = transient

    def _run(self, query: Callable[[Any], _T]) -> _T:
        """``query`` on a fresh cursor; driver errors as the SQL store words them."""
        try:
            cur = self._conn.cursor()
            try:
                return query(cur)
            finally:
                cur.close()
        except self._errors as error:
            raise database_error(first_line(error), self._url,
                                 transient=isinstance(error, self._transient)) from None

    def get_execution(self, execution_id: int) -> ExecutionRecord | None:
        return self._run(lambda cur: self._q.get_execution(cur, execution_id))

    def list_executions(
        self, *, job_id: str | None = None,
        status: ExecutionStatus | Collection[ExecutionStatus] | None = None,
        since: datetime | None = None, until: datetime | None = None,
        limit: int | None = 50,
        before: tuple[datetime, int] | None = None,
    ) -> list[ExecutionRecord]:
        return self._run(lambda cur: self._q.list_executions(
            cur, job_id=job_id, status=status, since=since, until=until, limit=limit,
            before=before))

    def slot_counts(self, job_ids: Collection[str], start: datetime, width: timedelta,
                    slots: int) -> dict[tuple[str, int], dict[str, int]]:
        return self._run(lambda cur: self._q.slot_counts(cur, job_ids, start, width, slots))

    def latest_executions(self, job_ids: Collection[str]) -> dict[str, ExecutionRecord]:
        return self._run(lambda cur: self._q.latest_executions(cur, job_ids))

    def recent_executions(self, job_ids: Collection[str], per_job: int
                          ) -> dict[str, list[ExecutionRecord]]:
        return self._run(lambda cur: self._q.recent_executions(cur, job_ids, per_job))

    def executions_of_occurrence(self, job_id: str, occurrence_id: str
                                 ) -> list[ExecutionRecord]:
        return self._run(lambda cur: self._q.executions_of_occurrence(cur, job_id,
                                                                      occurrence_id))

    def pending_or_running(
        self, *, node_id: str | None = None, job_ids: Collection[str] | None = None,
        node_ids: Collection[str] | None = None,
    ) -> list[ExecutionRecord]:
        return self._run(lambda cur: self._q.pending_or_running(
            cur, node_id=node_id, job_ids=job_ids, node_ids=node_ids))

    def read_logs(self, execution_id: int, *, after_seq: int = 0, limit: int | None = None
                  ) -> list[LogLine]:
        return self._run(lambda cur: self._q.read_logs(cur, execution_id, after_seq=after_seq,
                                                       limit=limit))

    def list_skips(self, *, job_id: str | None = None, since: datetime | None = None,
                   until: datetime | None = None, limit: int | None = 50
                   ) -> list[SkipRecord]:
        return self._run(lambda cur: self._q.list_skips(cur, job_id=job_id, since=since,
                                                        until=until, limit=limit))

    def skips_covering(self, job_id: str, at: datetime) -> list[SkipRecord]:
        return self._run(lambda cur: self._q.skips_covering(cur, job_id, at))

    def get_schedule(self, job_id: str) -> ScheduleState | None:
        return self._run(lambda cur: self._q.get_schedule(cur, job_id))

    def list_schedules(self) -> list[ScheduleState]:
        return self._run(self._q.list_schedules)

    def paused_job_ids(self) -> set[str]:
        return self._run(self._q.paused_job_ids)

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        return self._run(lambda cur: [n for n, dead in self._q.judged_nodes(cur, now, ttl)
                                      if not dead])

    def delivery_failures(self, node_ids: Collection[str] | None = None
                          ) -> list[DeliveryFailures]:
        return self._run(lambda cur: self._q.delivery_failures(cur, node_ids))

    # --- trigger requests (cronctl trigger): the SQL store's own statements ------------

    def enqueue_trigger(self, job_id: str, origin: Origin = Origin.MANUAL, *,
                        scheduled_at: datetime | None = None, now: datetime | None = None
                        ) -> int | None:
        at = now if now is not None else datetime.now(UTC)
        return self._run(lambda cur: self._q.enqueue_trigger(cur, job_id, origin, scheduled_at,
                                                             at))

    def wait_chain(self, job_id: str, scheduled_at: datetime, *,
                   now: datetime | None = None) -> bool:
        at = now if now is not None else datetime.now(UTC)
        return self._run(lambda cur: self._q.wait_chain(cur, job_id, scheduled_at, at))

    def get_trigger(self, request_id: int) -> TriggerRequest | None:
        return self._run(lambda cur: self._q.get_trigger(cur, request_id))

    def waiting_triggers(self, limit: int) -> list[TriggerRequest]:
        return self._run(lambda cur: self._q.waiting_triggers(cur, limit))

    def close(self) -> None:
        self._conn.close()


def _at_head(conn: Any, errors: tuple[type[Exception], ...]) -> bool:
    """Whether the database is stamped with this cronctl's head (no table: False)."""
    try:
        cur = conn.cursor()
        try:
            cur.execute("SELECT version_num FROM alembic_version")
            rows = cur.fetchall()
        finally:
            cur.close()
    except errors:
        return False
    return [str(r[0]) for r in rows] == [HEAD]


def _open_sqlite(url: str) -> DbReader | None:
    import sqlite3
    from urllib.parse import quote

    path = sqlite_path(url)
    if path is None or path.startswith("file:") or "?" in url:
        return None  # in memory, or options only the full store understands
    errors = (sqlite3.Error,)
    try:
        # mode=rw: never creates the file (an operator command must not).
        conn = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True,
                               timeout=SQLITE_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error:
        return None  # the full store says what is wrong with the file
    if not _at_head(conn, errors):
        conn.close()
        return None
    return DbReader(conn, url, pg=False, errors=errors,
                    transient=(sqlite3.OperationalError, sqlite3.InterfaceError))


def _open_postgres(url: str) -> DbReader | None:
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower() not in ("postgresql", "postgres", "postgresql+psycopg"):
        return None  # another driver named in the URL: the full store decides
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    errors = (psycopg.Error,)
    conninfo = f"postgresql://{rest}"
    try:
        mine = session_args("cronctl", str(conninfo_to_dict(conninfo).get("options") or ""))
        conn = psycopg.connect(conninfo, autocommit=True, **mine)  # type: ignore[arg-type]
    except psycopg.OperationalError as error:
        raise database_error(first_line(error), url, transient=True) from None
    except psycopg.Error:
        return None  # a URL libpq reads otherwise than SQLAlchemy: the full store
    if not _at_head(conn, errors):
        conn.close()
        return None
    return DbReader(conn, url, pg=True, errors=errors,
                    transient=(psycopg.OperationalError, psycopg.InterfaceError))


def open_reader(url: str) -> DbReader | None:
    """A reader of the database at ``url`` if it is at the schema head, else ``None``
    (open the full store instead). Raises :class:`cronctl.errors.StoreError` when a
    PostgreSQL server cannot be reached or refuses the login."""
    kind = kind_of(url)
    if kind == "sqlite":
        return _open_sqlite(url)
    if kind == "postgresql":
        return _open_postgres(url)
    return None


__all__ = ["DbReader", "open_reader"]
