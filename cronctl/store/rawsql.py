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
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.reads import ReadQueries
from cronctl.store.records import NewExecution, Transition, require_aware, statuses

_COLUMNS = ("job_id", "occurrence_id", "scheduled_at", "attempt", "scope", "node_id",
            "origin", "status", "target", "fencing_token", "created_at", "started_at",
            "finished_at")
_KEY = "(job_id, occurrence_id, scope, attempt)"
_INSERT = (f"INSERT INTO job_executions ({', '.join(_COLUMNS)}) VALUES {{values}} "
           f"ON CONFLICT {_KEY} DO NOTHING RETURNING id{{more}}")
_ROW = "(" + ", ".join("?" * len(_COLUMNS)) + ")"
PG_CHUNK = 1000  # rows per multi-row INSERT (13 parameters each, far below the limit)
# SQLite: 76 rows of 13 parameters stay within 999, the least SQLITE_MAX_VARIABLE_NUMBER
# any build has (a multi-row VALUES is not bound by SQLITE_MAX_COMPOUND_SELECT).
SQLITE_CHUNK = 999 // len(_COLUMNS)
_RETURNED = ", job_id, occurrence_id, scope, attempt"

_CURSOR_UPSERT = (
    'INSERT INTO job_schedules (job_id, "cursor") VALUES (?, ?) ON CONFLICT (job_id) '
    'DO UPDATE SET "cursor" = excluded."cursor" '
    'WHERE job_schedules."cursor" IS NULL OR job_schedules."cursor" < excluded."cursor"'
)
_DEFINITION_UPSERT = (
    "INSERT INTO job_schedules (job_id, definition, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (job_id) DO UPDATE SET definition = excluded.definition, "
    "updated_at = excluded.updated_at"
)
_FENCING = (
    "INSERT INTO job_schedules (job_id, fencing_token) VALUES (?, 1) ON CONFLICT (job_id) "
    "DO UPDATE SET fencing_token = job_schedules.fencing_token + 1 RETURNING fencing_token"
)
_NODE_CURSOR_UPSERT = (
    'INSERT INTO node_cursors (job_id, node_id, "cursor") VALUES (?, ?, ?) '
    'ON CONFLICT (job_id, node_id) DO UPDATE SET "cursor" = excluded."cursor" '
    'WHERE node_cursors."cursor" < excluded."cursor"'
)

_LOCK_INSERT = ('INSERT INTO guard_locks ("key", execution_id, node_id, acquired_at) '
                'VALUES (?, ?, ?, ?) ON CONFLICT ("key") DO NOTHING')
# Serial-group fairness (see tables.group_waiters): an older live waiter of the group
# keeps the group's free lock from anyone else; a blocked fire registers (or refreshes)
# itself; the fire that takes the lock leaves the queue. A dead node's waiters are
# dropped with its locks; one that stopped retrying (it expired, or its job was removed)
# stops counting after WAITER_TTL, measured against the asking node's clock (a clock
# that is off shortens or stretches that, never blocks a group for good).
WAITER_TTL = timedelta(seconds=5)
_WAITER_OLDER = (
    'SELECT 1 FROM group_waiters w WHERE w."key" = ? AND w.seen_at > ? '
    "AND (w.planned < ? OR (w.planned = ? AND w.job_id < ?)) LIMIT 1"
)
_WAITER_UPSERT = (
    'INSERT INTO group_waiters ("key", job_id, planned, node_id, seen_at) '
    'VALUES (?, ?, ?, ?, ?) ON CONFLICT ("key", job_id, planned) '
    "DO UPDATE SET node_id = excluded.node_id, seen_at = excluded.seen_at"
)
_WAITER_DONE = 'DELETE FROM group_waiters WHERE "key" = ? AND job_id = ? AND planned = ?'
_WAITERS_GONE = 'DELETE FROM group_waiters WHERE "key" = ? AND seen_at <= ?'
GROUP_PREFIX = "group:"
_FINAL = frozenset(s for s in ExecutionStatus
                   if s not in (ExecutionStatus.PENDING, ExecutionStatus.RUNNING))
LOCK_CHUNK = 1000


class RawSql(ReadQueries):
    """The hot statements of one engine's dialect (and the read queries)."""

    def __init__(self, engine: sa.Engine) -> None:
        super().__init__(engine.dialect.name == "postgresql")
        self.engine = engine
        self._error: type[Exception] = engine.dialect.loaded_dbapi.Error
        self._updates: dict[tuple[bool, bool, bool, int, bool], str] = {}
        self._pg_inserts: dict[int, str] = {}
        self._sqlite_inserts: dict[int, str] = {}

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

    # --- statements ------------------------------------------------------------------------

    def _stamps(self) -> Callable[[datetime, str], Any]:
        """:meth:`ts` for the rows of one batch, each distinct instant converted once (a
        burst's rows share their planned, created and started instants)."""
        memo: dict[datetime, Any] = {}

        def stamp(value: datetime, what: str) -> Any:
            got = memo.get(value)
            if got is None:
                got = memo[value] = self.ts(require_aware(value, what))
            return got
        return stamp

    @staticmethod
    def _params(r: NewExecution, now: datetime, stamp: Callable[[datetime, str], Any]
                ) -> tuple[Any, ...]:
        started, finished = r.started_at, r.finished_at
        return (r.job_id, r.occurrence_id, stamp(r.scheduled_at, "scheduled_at"),
                r.attempt, r.scope_node or "", r.node_id, Origin(r.origin).value,
                ExecutionStatus(r.status).value, r.target, r.fencing_token,
                stamp(r.created_at or now, "now"),
                None if started is None else stamp(started, "started_at"),
                None if finished is None else stamp(finished, "finished_at"))

    def insert_executions(self, cur: Any, rows: Sequence[NewExecution]) -> list[int | None]:
        """Multi-row INSERTs; rows that lost are not returned (and RETURNING's order is
        not the rows'), so the winners are matched back by their unique key (a key
        repeated within the batch wins once)."""
        now = datetime.now(UTC)
        stamp = self._stamps()
        params = [self._params(r, now, stamp) for r in rows]
        won: dict[tuple[str, str, str, int], int] = {}
        if not self.pg:
            for start in range(0, len(params), SQLITE_CHUNK):
                chunk = params[start:start + SQLITE_CHUNK]
                cur.execute(self._sqlite_insert(len(chunk)), [v for p in chunk for v in p])
                for new_id, job_id, occ, scope, attempt in cur.fetchall():
                    won[(job_id, occ, scope, int(attempt))] = int(new_id)
            return [won.pop((p[0], p[1], p[4], p[3]), None) for p in params]
        # Rows in key order: two nodes inserting the same occurrences take the unique
        # index's locks in the same order, so their batches cannot deadlock.
        ordered = sorted(params, key=lambda p: (p[0], p[1], p[4], p[3]))
        # Numbered placeholders on a RawCursor: psycopg does not rewrite (parse) the
        # statement, which for %s cost ~40 us per row of a 1,000-row INSERT.
        from psycopg import RawCursor

        with RawCursor(cur.connection) as raw:
            for start in range(0, len(ordered), PG_CHUNK):
                chunk = ordered[start:start + PG_CHUNK]
                raw.execute(self._pg_insert(len(chunk)), [v for p in chunk for v in p])
                for new_id, job_id, occ, scope, attempt in raw.fetchall():
                    won[(job_id, occ, scope, int(attempt))] = int(new_id)
        return [won.pop((p[0], p[1], p[4], p[3]), None) for p in params]

    def _pg_insert(self, rows: int) -> str:
        """The multi-row INSERT of ``rows`` rows with ``$n`` placeholders (cached)."""
        sql = self._pg_inserts.get(rows)
        if sql is None:
            width = len(_COLUMNS)
            values = ", ".join("(" + ", ".join(f"${r * width + c + 1}" for c in range(width))
                               + ")" for r in range(rows))
            sql = self._pg_inserts[rows] = _INSERT.format(values=values, more=_RETURNED)
        return sql

    def _sqlite_insert(self, rows: int) -> str:
        """The multi-row INSERT of ``rows`` rows with ``?`` placeholders (cached)."""
        sql = self._sqlite_inserts.get(rows)
        if sql is None:
            sql = self._sqlite_inserts[rows] = _INSERT.format(
                values=", ".join([_ROW] * rows), more=_RETURNED)
        return sql

    def insert_guarded(self, cur: Any, rows: Sequence[NewExecution]) -> list[int | str | None]:
        """See :meth:`cronctl.store.base.Store.insert_guarded`. Rows without locks take the
        batch path; each row with locks is inserted, then its locks are taken in key order
        (one order for every node), and both are undone if a key is held."""
        out: list[int | str | None] = [None] * len(rows)
        plain = [i for i, r in enumerate(rows) if not r.locks]
        if plain:
            for i, new_id in zip(plain, self.insert_executions(cur, [rows[i] for i in plain]),
                                 strict=True):
                out[i] = new_id
        guarded = sorted((i for i, r in enumerate(rows) if r.locks),
                         key=lambda i: sorted(rows[i].locks))
        for i in guarded:
            r = rows[i]
            [new_id] = self.insert_executions(cur, [r])
            if new_id is None:
                continue
            held = self.take_locks(cur, new_id, r.node_id, r.locks,
                                   require_aware(r.created_at or datetime.now(UTC), "now"),
                                   waiter=(r.job_id, self.ts(r.scheduled_at)))
            if held is not None:
                cur.execute(self.sql("DELETE FROM job_executions WHERE id = ?"), (new_id,))
            out[i] = new_id if held is None else held
        return out

    def take_locks(self, cur: Any, execution_id: int, node_id: str, keys: Sequence[str],
                   at: datetime, *, waiter: tuple[str, Any] | None = None) -> str | None:
        """Take every key for ``execution_id``; on the first one held elsewhere, drop the
        ones taken and return that key. A serial group's key counts as held while an
        older fire of the group waits for it (FIFO across nodes); a fire that finds its
        group held joins that queue, and leaves it when it takes the group. ``waiter``:
        the row's (job id, planned instant as bound), when the caller has them."""
        stamp, gone = self.ts(at), self.ts(at - WAITER_TTL)
        for key in sorted(keys):
            if key.startswith(GROUP_PREFIX):
                waiter = waiter or self._waiter(cur, execution_id)
                taken = self._take_group(cur, key, execution_id, node_id, stamp, gone, waiter)
            else:
                cur.execute(self.sql(_LOCK_INSERT), (key, execution_id, node_id, stamp))
                taken = cur.rowcount == 1
            if not taken:
                self.release_executions(cur, [execution_id])
                return key
        return None

    def _take_group(self, cur: Any, key: str, execution_id: int, node_id: str, stamp: Any,
                    gone: Any, waiter: tuple[str, Any]) -> bool:
        job_id, planned = waiter
        cur.execute(self.sql(_WAITERS_GONE), (key, gone))  # (so the table stays small)
        cur.execute(self.sql(_WAITER_OLDER), (key, gone, planned, planned, job_id))
        taken = cur.fetchone() is None
        if taken:
            cur.execute(self.sql(_LOCK_INSERT), (key, execution_id, node_id, stamp))
            taken = cur.rowcount == 1
        if taken:
            cur.execute(self.sql(_WAITER_DONE), (key, job_id, planned))
        else:
            cur.execute(self.sql(_WAITER_UPSERT), (key, job_id, planned, node_id, stamp))
        return taken

    def _waiter(self, cur: Any, execution_id: int) -> tuple[str, Any]:
        """(job id, planned instant) of an execution row: its place in a group's queue."""
        cur.execute(self.sql("SELECT job_id, scheduled_at FROM job_executions WHERE id = ?"),
                    (execution_id,))
        job_id, planned = cur.fetchone()
        return str(job_id), planned

    def release_executions(self, cur: Any, execution_ids: Sequence[int]) -> None:
        for start in range(0, len(execution_ids), LOCK_CHUNK):
            chunk = execution_ids[start:start + LOCK_CHUNK]
            cur.execute(self.sql(f"DELETE FROM guard_locks WHERE execution_id IN "
                                 f"({', '.join('?' * len(chunk))})"), tuple(chunk))

    def transitions(self, cur: Any, changes: Sequence[Transition]) -> list[bool]:
        out = self._transitions(cur, changes)
        # Only changes that happened: a refused (stale) writer must not drop the locks of
        # whoever holds the row now.
        ended = [c.execution_id for c, ok in zip(changes, out, strict=True)
                 if ok and c.new in _FINAL]
        if ended:
            self.release_executions(cur, ended)
        return out

    def _transitions(self, cur: Any, changes: Sequence[Transition]) -> list[bool]:
        out: list[bool] = []
        stamp = self._stamps()
        for c in changes:
            allowed = [s.value for s in statuses(c.expected)]
            fenced = c.fencing_token is not None
            shape = (c.error is not None, c.started_at is not None, c.finished_at is not None,
                     len(allowed), fenced)
            sql = self._updates.get(shape)
            if sql is None:
                sets = ["status = ?"] + [f"{name} = ?" for name, on in zip(
                    ("error", "started_at", "finished_at"), shape[:3], strict=True) if on]
                # Fencing: a writer whose claim is stale (the row carries another token)
                # changes nothing.
                sql = self._updates[shape] = self.sql(
                    f"UPDATE job_executions SET {', '.join(sets)} WHERE id = ? AND status IN "
                    f"({', '.join('?' * len(allowed))})"
                    + (" AND fencing_token = ?" if fenced else ""))
            values: list[Any] = [ExecutionStatus(c.new).value]
            if c.error is not None:
                values.append(c.error)
            if c.started_at is not None:
                values.append(stamp(c.started_at, "started_at"))
            if c.finished_at is not None:
                values.append(stamp(c.finished_at, "finished_at"))
            tail = (c.fencing_token,) if fenced else ()
            cur.execute(sql, (*values, c.execution_id, *allowed, *tail))
            out.append(cur.rowcount == 1)
        return out

    def claim(self, cur: Any, execution_id: int, node_id: str, fencing_token: int | None,
              started_at: datetime) -> bool:
        cur.execute(self.sql(
            "UPDATE job_executions SET status = ?, node_id = ?, fencing_token = ?, "
            "started_at = ? WHERE id = ? AND status = ?"),
            (ExecutionStatus.RUNNING.value, node_id, fencing_token, self.ts(started_at),
             execution_id, ExecutionStatus.PENDING.value))
        return bool(cur.rowcount == 1)

    def advance_cursors(self, cur: Any, cursors: Mapping[str, datetime]) -> None:
        rows = [(job_id, self.ts(require_aware(at, "planned_at")))
                for job_id, at in sorted(cursors.items())]  # one lock order for every node
        if rows:
            cur.executemany(self.sql(_CURSOR_UPSERT), rows)

    def advance_node_cursors(self, cur: Any, node_id: str,
                             cursors: Mapping[str, datetime]) -> None:
        rows = [(job_id, node_id, self.ts(require_aware(at, "planned_at")))
                for job_id, at in sorted(cursors.items())]
        if rows:
            cur.executemany(self.sql(_NODE_CURSOR_UPSERT), rows)

    def node_cursors(self, cur: Any, node_id: str) -> dict[str, datetime]:
        cur.execute(self.sql('SELECT job_id, "cursor" FROM node_cursors WHERE node_id = ?'),
                    (node_id,))
        out: dict[str, datetime] = {}
        for job_id, at in cur.fetchall():
            when = self.from_ts(at)
            assert when is not None
            out[job_id] = when
        return out

    def cursor_of(self, cur: Any, job_id: str) -> datetime | None:
        cur.execute(self.sql('SELECT "cursor" FROM job_schedules WHERE job_id = ?'), (job_id,))
        row = cur.fetchone()
        return None if row is None else self.from_ts(row[0])

    def set_paused(self, cur: Any, job_id: str, paused: bool) -> None:
        cur.execute(self.sql("INSERT INTO job_schedules (job_id, paused) VALUES (?, ?) "
                             "ON CONFLICT (job_id) DO UPDATE SET paused = excluded.paused"),
                    (job_id, paused))

    def next_fencing_token(self, cur: Any, job_id: str) -> int:
        cur.execute(self.sql(_FENCING), (job_id,))
        return int(cur.fetchone()[0])

    def save_definitions(self, cur: Any, rows: Sequence[tuple[str, str]], at: datetime) -> None:
        stamp = self.ts(at)
        cur.executemany(self.sql(_DEFINITION_UPSERT),
                        [(job_id, text, stamp) for job_id, text in rows])

    def job_states(self, cur: Any) -> dict[str, tuple[datetime | None, bool]]:
        cur.execute('SELECT job_id, "cursor", paused FROM job_schedules')
        return {job_id: (self.from_ts(at), bool(paused)) for job_id, at, paused in cur.fetchall()}

    def paused_job_ids(self, cur: Any) -> set[str]:
        cur.execute(self.sql("SELECT job_id FROM job_schedules WHERE paused = ?"), (True,))
        return {row[0] for row in cur.fetchall()}

    def untaken_triggers(self, cur: Any) -> list[tuple[int, str]]:
        cur.execute("SELECT id, job_id FROM trigger_requests WHERE taken_by IS NULL ORDER BY id")
        return [(int(i), j) for i, j in cur.fetchall()]


__all__ = ["RawSql"]
