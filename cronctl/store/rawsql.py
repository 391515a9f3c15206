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
from cronctl.store.reads import read_instant
from cronctl.store.records import Fenced, NewExecution, Transition, require_aware, statuses
from cronctl.store.triggersql import TriggerQueries

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
# A scheduled instant that a skip record covers was decided already: a peer that saw the
# job's guard held (its last final status still waiting for the database) recorded it
# ``overlap``. The node that inserts the instant's row late, its guard now free, must not
# run it too; the reverse order is refused in :mod:`cronctl.store.skips`.
_SKIPPED = ("SELECT 1 FROM skip_records WHERE job_id = ? AND scope = ? AND last_at >= ? "
            "AND first_at <= ? LIMIT 1")
GROUP_PREFIX = "group:"
_FINAL = frozenset(s for s in ExecutionStatus
                   if s not in (ExecutionStatus.PENDING, ExecutionStatus.RUNNING))
LOCK_CHUNK = 1000
_OPTIONAL = ("error", "started_at", "finished_at")
# What an UPDATE of a Transition sets and checks: error, started_at, finished_at given;
# the statuses it may change from; fenced.
_Shape = tuple[bool, bool, bool, tuple[str, ...], bool]
_PG_TYPES = {"id": "bigint", "token": "bigint", "status": "text", "error": "text",
             "started_at": "timestamptz", "finished_at": "timestamptz"}


def _shape(c: Transition) -> _Shape:
    return (c.error is not None, c.started_at is not None, c.finished_at is not None,
            tuple(s.value for s in statuses(c.expected)), c.fencing_token is not None)


class RawSql(TriggerQueries):
    """The hot statements of one engine's dialect (and the read and trigger queries)."""

    def __init__(self, engine: sa.Engine) -> None:
        super().__init__(engine.dialect.name == "postgresql")
        self.engine = engine
        self._error: type[Exception] = engine.dialect.loaded_dbapi.Error
        self._updates: dict[_Shape, str] = {}
        self._batched: dict[tuple[_Shape, int], str] = {}
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
        memo: dict[tuple[datetime, int], Any] = {}

        def stamp(value: datetime, what: str) -> Any:
            # fold in the key: two datetimes of one zone compare (and hash) equal across
            # a DST fold although they are different instants.
            key = (value, value.fold)
            got = memo.get(key)
            if got is None:
                got = memo[key] = self.ts(require_aware(value, what))
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

    def insert_guarded(self, cur: Any, rows: Sequence[NewExecution]
                       ) -> list[int | Fenced | str | None]:
        """See :meth:`cronctl.store.base.Store.insert_guarded`. Rows without locks take the
        batch path; each row with locks is inserted, then its locks are taken in key order
        (one order for every node), and both are undone if a key is held. A fenced row's
        token is taken last: while its lock is held no other transaction can take one
        for the job (on PostgreSQL the others wait on the lock's key, not on the token),
        so the job's tokens rise in the order its lock changes hands."""
        out: list[int | Fenced | str | None] = [None] * len(rows)
        plain = [i for i, r in enumerate(rows) if not r.locks and not r.fenced]
        if plain:
            for i, new_id in zip(plain, self.insert_executions(cur, [rows[i] for i in plain]),
                                 strict=True):
                out[i] = new_id
        guarded = sorted((i for i, r in enumerate(rows) if r.locks or r.fenced),
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
                out[i] = held
            elif r.attempt == 1 and Origin(r.origin) is Origin.CRON and self._skipped(cur, r):
                self.release_executions(cur, [new_id])
                cur.execute(self.sql("DELETE FROM job_executions WHERE id = ?"), (new_id,))
            elif r.fenced:
                token = self.next_fencing_token(cur, r.job_id)
                cur.execute(self.sql("UPDATE job_executions SET fencing_token = ? WHERE id = ?"),
                            (token, new_id))
                out[i] = Fenced(new_id, token)
            else:
                out[i] = new_id
        return out

    def _skipped(self, cur: Any, r: NewExecution) -> bool:
        at = self.ts(r.scheduled_at)
        cur.execute(self.sql(_SKIPPED), (r.job_id, r.scope_node or "", at, at))
        return cur.fetchone() is not None

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
            when = read_instant(at)
            assert when is not None
            out[job_id] = when
        return out

    def cursor_of(self, cur: Any, job_id: str) -> datetime | None:
        cur.execute(self.sql('SELECT "cursor" FROM job_schedules WHERE job_id = ?'), (job_id,))
        row = cur.fetchone()
        return None if row is None else read_instant(row[0])

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
                        [(job_id, text, stamp, stamp) for job_id, text in rows])

    def job_states(self, cur: Any) -> dict[str, tuple[datetime | None, bool]]:
        cur.execute('SELECT job_id, "cursor", paused FROM job_schedules')
        return {job_id: (read_instant(at), bool(paused)) for job_id, at, paused in cur.fetchall()}


__all__ = ["RawSql"]
