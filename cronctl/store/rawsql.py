"""Prepared SQL for the store's hot paths, run on the DBAPI cursor of an SQLAlchemy
connection.

Building and compiling an SQLAlchemy Core statement costs ~0.3 ms per call; a write on
SQLite is ~0.05 ms. The scheduler writes on every tracked fire, so these statements are
plain SQL strings built once, with values converted here the way the table types would
(:class:`~cronctl.store.tables.UtcDateTime`: a fixed-width ISO string on SQLite, an
aware datetime on PostgreSQL). Transactions, pooling and error translation stay with
SQLAlchemy: a cursor is opened inside ``engine.begin()``/``connect()`` and driver
errors are re-raised as SQLAlchemy's, which :func:`~cronctl.store.engine.translated`
turns into :class:`~cronctl.errors.StoreError`.

Only ``?`` placeholders are written below; PostgreSQL gets ``%s``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cronctl.jobs.model import ExecutionStatus
from cronctl.store.guardsql import GuardQueries
from cronctl.store.reads import cursor_instant
from cronctl.store.records import statuses
from cronctl.store.writerecords import Transition

_USAGE = ("UPDATE job_executions SET exit_code = ?, signal = ?, cpu_seconds = ?, "
          "max_rss_bytes = ? WHERE id = ?")
_CURSOR_UPSERT = (
    'INSERT INTO job_schedules (job_id, "cursor") VALUES (?, ?) ON CONFLICT (job_id) '
    'DO UPDATE SET "cursor" = excluded."cursor" '
    'WHERE job_schedules."cursor" IS NULL OR job_schedules."cursor" < excluded."cursor"'
)
# first_seen: set by the first save, kept by every later one. An unchanged definition is
# not written again (each node of a cluster saves every job's at start: 100,000 rows
# rewritten per start were dead tuples and WAL on PostgreSQL, and a write lock on SQLite).
_DEFINITION_UPSERT = (
    "INSERT INTO job_schedules (job_id, definition, updated_at, first_seen) "
    "VALUES (?, ?, ?, ?) "
    "ON CONFLICT (job_id) DO UPDATE SET definition = excluded.definition, "
    "updated_at = excluded.updated_at, "
    "first_seen = COALESCE(job_schedules.first_seen, excluded.first_seen) "
    "WHERE job_schedules.definition <> excluded.definition "
    "OR job_schedules.first_seen IS NULL"
)
_NODE_CURSOR_UPSERT = (
    'INSERT INTO node_cursors (job_id, node_id, "cursor") VALUES (?, ?, ?) '
    'ON CONFLICT (job_id, node_id) DO UPDATE SET "cursor" = excluded."cursor" '
    'WHERE node_cursors."cursor" < excluded."cursor"'
)

_FINAL = frozenset(s for s in ExecutionStatus
                   if s not in (ExecutionStatus.PENDING, ExecutionStatus.RUNNING))
_OPTIONAL = ("error", "started_at", "finished_at")
# What an UPDATE of a Transition sets and checks: error, started_at, finished_at given;
# the statuses it may change from; fenced.
_Shape = tuple[bool, bool, bool, tuple[str, ...], bool]
_PG_TYPES = {"id": "bigint", "token": "bigint", "status": "text", "error": "text",
             "started_at": "timestamptz", "finished_at": "timestamptz"}


def _shape(c: Transition) -> _Shape:
    return (c.error is not None, c.started_at is not None, c.finished_at is not None,
            tuple(s.value for s in statuses(c.expected)), c.fencing_token is not None)


class RawSql(GuardQueries):
    """The hot statements of one engine's dialect (and the row, guard, read and trigger
    queries it inherits)."""

    def __init__(self, engine: sa.Engine) -> None:
        super().__init__(engine.dialect.name == "postgresql")
        self.engine = engine
        self._error: type[Exception] = engine.dialect.loaded_dbapi.Error
        self._updates: dict[_Shape, str] = {}
        self._batched: dict[tuple[_Shape, int], str] = {}

    @contextmanager
    def cursor(self, conn: Connection) -> Iterator[Any]:
        """A DBAPI cursor in ``conn``'s transaction; driver errors come out as SQLAlchemy's
        (a lost connection is invalidated, so the pool does not hand it out again)."""
        raw = conn.connection
        cur = raw.cursor()
        try:
            yield cur
        except self._error as error:
            disconnect = self.engine.dialect.is_disconnect(
                error, raw.dbapi_connection, cur)  # type: ignore[arg-type]
            if disconnect:
                conn.invalidate()
            raise sa.exc.DBAPIError.instance(None, None, error, self._error,
                                             connection_invalidated=disconnect) from error
        finally:
            cur.close()

    def transitions(self, cur: Any, changes: Sequence[Transition]) -> list[bool]:
        out = self._transitions(cur, changes)
        # Only changes that happened: a refused (stale) writer must not drop the locks of
        # whoever holds the row now.
        ended = [c.execution_id for c, ok in zip(changes, out, strict=True)
                 if ok and c.new in _FINAL]
        if ended:
            self.release_executions(cur, ended)
        used = [(u.exit_code, u.signal, u.cpu_seconds, u.max_rss_bytes, c.execution_id)
                for c, ok in zip(changes, out, strict=True)
                if ok and (u := c.usage) is not None]
        if used:  # (the figures ride with the status that happened, in its transaction)
            cur.executemany(self.sql(_USAGE), used)
        return out

    def _transitions(self, cur: Any, changes: Sequence[Transition]) -> list[bool]:
        """One ``UPDATE ... FROM`` (``unnest`` of one array per column on PostgreSQL, a
        multi-row VALUES on SQLite) ``... RETURNING id`` per shape of change: a burst's
        final statuses are a few statements, not one per row. On PostgreSQL each
        statement is a round trip and ~0.1 ms of driver work; on SQLite each releases
        and takes back the GIL while the write lock is held, and under a burst every
        taking back waits for the scheduler thread (bench/PROFILE.md). A batch that
        names an execution twice is applied row by row, in order."""
        ids = [c.execution_id for c in changes]
        stamp = self._stamps()
        if len(changes) < 2 or len(set(ids)) != len(ids):
            return [self._transition(cur, c, stamp) for c in changes]
        groups: dict[_Shape, list[list[Any]]] = {}
        for c in changes:
            groups.setdefault(_shape(c), []).append(self._values(c, stamp))
        won: set[int] = set()
        for shape, rows in groups.items():
            if self.pg:  # the statement's text is the same whatever the row count
                cur.execute(self._update_from(shape, 0),
                            [list(col) for col in zip(*rows, strict=True)])
                won.update(int(row[0]) for row in cur.fetchall())
                continue
            size = 999 // len(rows[0])  # the least SQLITE_MAX_VARIABLE_NUMBER of any build
            for start in range(0, len(rows), size):
                chunk = rows[start:start + size]
                cur.execute(self._update_from(shape, len(chunk)),
                            [v for row in chunk for v in row])
                won.update(int(row[0]) for row in cur.fetchall())
        return [i in won for i in ids]

    def _transition(self, cur: Any, c: Transition,
                    stamp: Callable[[datetime, str], Any]) -> bool:
        shape = _shape(c)
        sql = self._updates.get(shape)
        if sql is None:
            sets = ["status = ?"] + [f"{name} = ?" for name, on in zip(
                _OPTIONAL, shape[:3], strict=True) if on]
            # Fencing: a writer whose claim is stale (the row carries another token)
            # changes nothing.
            sql = self._updates[shape] = self.sql(
                f"UPDATE job_executions SET {', '.join(sets)} WHERE id = ? AND status IN "
                f"({', '.join('?' * len(shape[3]))})"
                + (" AND fencing_token = ?" if shape[4] else ""))
        values = self._values(c, stamp)
        eid, tail = values[0], values[2 + sum(shape[:3]):]
        cur.execute(sql, (*values[1:2 + sum(shape[:3])], eid, *shape[3], *tail))
        return bool(cur.rowcount == 1)

    @staticmethod
    def _values(c: Transition, stamp: Callable[[datetime, str], Any]) -> list[Any]:
        """id, status, then what the shape sets (error, started_at, finished_at), then the
        fencing token if any."""
        values: list[Any] = [c.execution_id, ExecutionStatus(c.new).value]
        if c.error is not None:
            values.append(c.error)
        if c.started_at is not None:
            values.append(stamp(c.started_at, "started_at"))
        if c.finished_at is not None:
            values.append(stamp(c.finished_at, "finished_at"))
        if c.fencing_token is not None:
            values.append(c.fencing_token)
        return values

    def _update_from(self, shape: _Shape, rows: int) -> str:
        """The batched UPDATE of one shape: over ``unnest`` of typed arrays (PostgreSQL,
        ``rows`` unused) or a VALUES list of ``rows`` rows (SQLite names its columns
        column1, column2, ...)."""
        key = (shape, 0 if self.pg else rows)
        sql = self._batched.get(key)
        if sql is not None:
            return sql
        names = ["id", "status"] + [n for n, on in zip(_OPTIONAL, shape[:3], strict=True)
                                    if on] + (["token"] if shape[4] else [])
        if self.pg:
            arrays = ", ".join(f"%s::{_PG_TYPES[n]}[]" for n in names)
            source, col = f"unnest({arrays}) AS v({', '.join(names)})", {n: n for n in names}
        else:
            row = "(" + ", ".join("?" * len(names)) + ")"
            source = f"(VALUES {', '.join([row] * rows)}) AS v"
            col = {n: f"column{i}" for i, n in enumerate(names, start=1)}
        allowed = ", ".join(f"'{s}'" for s in shape[3])  # status values, not user input
        sets = ", ".join(f"{n} = v.{col[n]}" for n in names[1:] if n != "token")
        if len(self._batched) > 64:  # SQLite: one text per chunk size; keep a few
            self._batched.clear()
        sql = self._batched[key] = (
            f"UPDATE job_executions SET {sets} FROM {source} "
            f"WHERE job_executions.id = v.{col['id']} "
            f"AND job_executions.status IN ({allowed})"
            + (f" AND job_executions.fencing_token = v.{col['token']}" if shape[4] else "")
            + " RETURNING job_executions.id")
        return sql

    def claim(self, cur: Any, execution_id: int, node_id: str, fencing_token: int | None,
              started_at: datetime) -> bool:
        cur.execute(self.sql(
            "UPDATE job_executions SET status = ?, node_id = ?, fencing_token = ?, "
            "started_at = ? WHERE id = ? AND status = ?"),
            (ExecutionStatus.RUNNING.value, node_id, fencing_token, self.ts(started_at),
             execution_id, ExecutionStatus.PENDING.value))
        return bool(cur.rowcount == 1)

    def advance_cursors(self, cur: Any, cursors: Mapping[str, datetime]) -> None:
        stamp = self._stamps()  # a burst's cursors share their instant: converted once
        rows = [(job_id, stamp(at, "planned_at"))
                for job_id, at in sorted(cursors.items())]  # one lock order for every node
        self._upsert_many(cur, _CURSOR_UPSERT, rows, ("text", "timestamptz"))

    def advance_node_cursors(self, cur: Any, node_id: str,
                             cursors: Mapping[str, datetime]) -> None:
        stamp = self._stamps()
        rows = [(job_id, node_id, stamp(at, "planned_at"))
                for job_id, at in sorted(cursors.items())]
        self._upsert_many(cur, _NODE_CURSOR_UPSERT, rows, ("text", "text", "timestamptz"))

    def _upsert_many(self, cur: Any, sql: str, rows: list[tuple[Any, ...]],
                     types: tuple[str, ...]) -> None:
        """``sql`` (an ``INSERT ... VALUES (?, ...) ON CONFLICT ...``) for every row, in
        the rows' order, in few statements (see :meth:`_transitions` for why): on
        PostgreSQL one over ``unnest`` of one array per column, on SQLite multi-row
        VALUES lists."""
        if not rows:
            return
        marks = "(" + ", ".join("?" * len(types)) + ")"
        if self.pg:
            arrays = ", ".join(f"%s::{t}[]" for t in types)
            batched = sql.replace(f"VALUES {marks}", f"SELECT * FROM unnest({arrays})", 1)
            assert batched != sql, sql
            cur.execute(self.sql(batched), [list(col) for col in zip(*rows, strict=True)])
            return
        size = 999 // len(types)
        for start in range(0, len(rows), size):
            chunk = rows[start:start + size]
            batched = sql.replace(f"VALUES {marks}", "VALUES " + ", ".join([marks] * len(chunk)),
                                  1)
            cur.execute(batched, [v for row in chunk for v in row])

    def node_cursors(self, cur: Any, node_id: str) -> dict[str, datetime]:
        cur.execute(self.sql('SELECT job_id, "cursor" FROM node_cursors WHERE node_id = ?'),
                    (node_id,))
        out: dict[str, datetime] = {}
        for job_id, at in cur.fetchall():
            when = cursor_instant(at, "node_cursors", job_id)
            if when is not None:
                out[job_id] = when
        return out

    def cursor_of(self, cur: Any, job_id: str) -> datetime | None:
        cur.execute(self.sql('SELECT "cursor" FROM job_schedules WHERE job_id = ?'), (job_id,))
        row = cur.fetchone()
        return None if row is None else cursor_instant(row[0], "job_schedules", job_id)

    def set_paused(self, cur: Any, job_id: str, paused: bool) -> None:
        cur.execute(self.sql("INSERT INTO job_schedules (job_id, paused) VALUES (?, ?) "
                             "ON CONFLICT (job_id) DO UPDATE SET paused = excluded.paused"),
                    (job_id, paused))

    def saved_definitions(self, cur: Any, job_ids: Sequence[str]) -> dict[str, str]:
        """The saved definition of each of ``job_ids`` that has one and a ``first_seen``
        (a row without is saved again: see :data:`_DEFINITION_UPSERT`)."""
        if not job_ids:
            return {}
        cur.execute(self.sql(f"SELECT job_id, definition FROM job_schedules WHERE job_id IN "
                             f"({', '.join('?' * len(job_ids))}) AND first_seen IS NOT NULL"),
                    tuple(job_ids))
        return {str(job_id): str(text) for job_id, text in cur.fetchall()}

    def save_definitions(self, cur: Any, rows: Sequence[tuple[str, str]], at: datetime) -> None:
        stamp = self.ts(at)
        cur.executemany(self.sql(_DEFINITION_UPSERT),
                        [(job_id, text, stamp, stamp) for job_id, text in rows])

    def job_states(self, cur: Any) -> dict[str, tuple[datetime | None, bool]]:
        cur.execute('SELECT job_id, "cursor", paused FROM job_schedules')
        return {job_id: (cursor_instant(at, "job_schedules", job_id), bool(paused))
                for job_id, at, paused in cur.fetchall()}


__all__ = ["RawSql"]
