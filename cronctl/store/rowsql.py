"""The execution rows of a wake's fires as multi-row INSERTs, one dialect's statements on
a DB-API cursor (see :mod:`cronctl.store.rawsql` for why the hot statements are plain SQL
with values converted here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.records import require_aware
from cronctl.store.triggersql import TriggerQueries
from cronctl.store.writerecords import NewExecution

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


class RowQueries(TriggerQueries):
    """Inserting execution rows (and the read and trigger queries)."""

    def __init__(self, pg: bool) -> None:
        super().__init__(pg)
        self._pg_inserts: dict[int, str] = {}
        self._sqlite_inserts: dict[int, str] = {}

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


__all__ = ["RowQueries"]
