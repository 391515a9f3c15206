"""The SQL store's plumbing: an engine, transactions that translate driver errors into
:class:`~cronctl.errors.StoreError`, and the prepared statements of the hot paths.

Every concern of the store (:mod:`~cronctl.store.schedules`,
:mod:`~cronctl.store.executions`, :mod:`~cronctl.store.locks`, :mod:`~cronctl.store.logs`,
:mod:`~cronctl.store.triggers`, :mod:`~cronctl.store.nodes`) is a class on top of this
one; :class:`~cronctl.store.sql.SqlStore` combines them.

Write transactions on SQLite begin ``IMMEDIATE``; on PostgreSQL they run at READ
COMMITTED, where a blocked ``UPDATE`` re-checks its ``WHERE`` after the lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Connection, Engine

from cronctl.jobs.model import ExecutionStatus
from cronctl.store.engine import translated, writer
from cronctl.store.rawsql import RawSql
from cronctl.store.records import require_aware
from cronctl.store.tables import job_executions
from cronctl.store.urls import kind_of, redact

LIVE = (ExecutionStatus.PENDING.value, ExecutionStatus.RUNNING.value)
X = job_executions.c


def now_or(now: datetime | None) -> datetime:
    """``now`` in UTC, or the current time for a bookkeeping column."""
    return datetime.now(UTC) if now is None else require_aware(now, "now")


def aware(value: datetime | None, what: str) -> datetime | None:
    return None if value is None else require_aware(value, what)


class SqlConnection:
    """An engine and its transactions. Thread-safe (a connection pool).

    On SQLite, write transactions of one store queue on a lock: SQLite allows one writer,
    and a second connection that finds the file locked backs off in SQLite's busy
    handler, which sleeps 1, 2, 5, 10... ms. Between the scheduler thread and the I/O
    thread of one process that turned every collision into milliseconds of lateness;
    on the lock they queue in microseconds. Reads are not locked (WAL readers never
    block writers); other processes still meet the busy handler."""

    persistent = True

    def __init__(self, engine: Engine, url: str, *, node_id: str = "") -> None:
        self.engine = engine
        self.node_id = node_id
        self._url = url
        self._writer = writer(engine)
        self.kind = kind_of(url)
        self.display_url = redact(url)
        # Only the engine's own dialect: importing the PostgreSQL one (with its asyncpg
        # and psycopg modules) costs a SQLite read command ~20 ms of start-up.
        self._insert: Callable[..., Any]
        if engine.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            self._insert = pg_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            self._insert = sqlite_insert
        self._raw = RawSql(engine)
        self._write_lock: AbstractContextManager[Any] = (
            threading.RLock() if engine.dialect.name == "sqlite" else nullcontext())

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with translated(self._url), self.engine.connect() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self._write_lock, translated(self._url), self._writer.begin() as conn:
            yield conn

    @contextmanager
    def _raw_write(self) -> Iterator[Any]:
        """A DBAPI cursor in a write transaction (see :mod:`cronctl.store.rawsql`)."""
        with (self._write_lock, translated(self._url), self._writer.begin() as conn,
              self._raw.cursor(conn) as cur):
            yield cur

    @contextmanager
    def _raw_read(self) -> Iterator[Any]:
        with translated(self._url), self.engine.connect() as conn, self._raw.cursor(conn) as cur:
            yield cur


__all__ = ["LIVE", "X", "SqlConnection", "aware", "now_or"]
