"""The store's read queries, row decoders and instant codec, on a DB-API cursor: one
implementation, run by the SQL store (on the cursor of an SQLAlchemy connection) and by
:mod:`cronctl.store.reader` (plain ``sqlite3`` / ``psycopg``, so that a read command does
not pay for importing SQLAlchemy). Both run the same query text.

Standard library only. SQL is written with ``?`` placeholders; :meth:`ReadQueries.sql`
gives PostgreSQL ``%s``. An instant is stored as fixed-width ISO 8601 UTC text on SQLite
(:func:`cronctl.ids.utc_iso`) and as ``timestamptz`` on PostgreSQL:
:func:`bind_instant` and :func:`read_instant` are the one codec (the table type
:class:`cronctl.store.tables.UtcDateTime` uses them too).

Every query reads its rows through an index that ends in its order (migration 0007;
``tests/integration/store/test_store_read_plans.py`` checks the plans).
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from cronctl import processes
from cronctl.ids import utc_iso
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.records import (
    DeliveryFailures,
    ExecutionRecord,
    LogLine,
    NodeRecord,
    ScheduleState,
    SkipRecord,
    require_aware,
    statuses,
)

LIVE = (ExecutionStatus.PENDING.value, ExecutionStatus.RUNNING.value)
# The predicate of the partial index of live rows (migration 0010), written out: a
# planner uses a partial index only for a query whose WHERE names its predicate, and
# SQLite cannot see that through bound parameters.
LIVE_WHERE = "status IN ('pending', 'running')"
LIVE_INDEX = "ix_job_executions_live"

EXECUTION_COLUMNS = (
    "id", "job_id", "occurrence_id", "scheduled_at", "attempt", "scope", "node_id", "origin",
    "status", "target", "fencing_token", "created_at", "started_at", "finished_at", "error",
    "progress_done", "progress_total", "progress_message", "cancel_requested", "pgid",
    "process_start", "exit_code", "signal", "cpu_seconds", "max_rss_bytes", "fenced_status",
    "fenced_at")
_EXECUTIONS = f"SELECT {', '.join(EXECUTION_COLUMNS)} FROM job_executions"
_SKIPS = ("SELECT id, job_id, scope, first_at, last_at, count, reason, node_id, created_at, "
          "detail FROM skip_records")
_SCHEDULES = ('SELECT job_id, definition, "cursor", paused, fencing_token, updated_at, '
              "first_seen FROM job_schedules")
_NODES = "n.node_id, n.host, n.pid, n.started_at, n.heartbeat_at, n.process_start"

# --- instants: the one codec ------------------------------------------------------------


def bind_instant(value: datetime, pg: bool) -> Any:
    """An aware instant as its column stores it: an aware UTC datetime for PostgreSQL's
    ``timestamptz``, the fixed-width text of :func:`cronctl.ids.utc_iso` on SQLite (its
    text order is time order). A naive datetime raises ``ValueError``."""
    if value.utcoffset() is None:
        raise ValueError(f"expected an aware datetime, got {value!r}")
    return value.astimezone(UTC) if pg else utc_iso(value)


def read_instant(value: Any) -> datetime | None:
    """A stored instant as an aware UTC datetime (``None`` stays ``None``): SQLite's text,
    or the datetime the PostgreSQL driver returns (naive only in a column created outside
    cronctl: read as UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value).astimezone(UTC)
    assert isinstance(value, datetime)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _instant(value: Any) -> datetime:
    """:func:`read_instant` of a NOT NULL column."""
    out = read_instant(value)
    assert out is not None
    return out


# --- liveness (the rules: cronctl.store.liveness) ---------------------------------------

# The PostgreSQL lock key of a node: a 64-bit hash the server computes.
PG_NODE_KEY = "hashtextextended('cronctl-node:' || {}, 0)"
# Advisory locks held in this database, as the bigint keys they were taken with (a bigint
# key shows in pg_locks as classid = high 32 bits, objid = low 32 bits, objsubid = 1).
PG_HELD = (
    "held AS (SELECT (classid::bigint << 32) | objid::bigint AS k FROM pg_locks "
    "WHERE locktype = 'advisory' AND objsubid = 1 AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))"
)
LOCK_GRACE = timedelta(seconds=2)  # the numbers: docs/liveness.md
RESTART_GRACE = timedelta(seconds=5)


def pg_dead(param: Callable[[str], str]) -> str:
    """The PostgreSQL condition "node row ``n`` is dead"; ``param`` spells a named
    parameter (``grace``, ``restart``, ``ttl``: :func:`pg_params`) in the driver's style."""
    return (
        "((n.process_start IS NOT NULL AND " + PG_NODE_KEY.format("n.node_id") + " NOT IN "
        f"(SELECT k FROM held) AND n.heartbeat_at < now() - {param('grace')} "
        f"AND pg_postmaster_start_time() < now() - {param('restart')}) "
        f"OR n.heartbeat_at <= now() - {param('ttl')})"
    )


def pg_params(ttl: timedelta) -> dict[str, Any]:
    return {"grace": LOCK_GRACE, "restart": RESTART_GRACE, "ttl": ttl}


_PG_NODES = (f"WITH {PG_HELD} SELECT {_NODES}, {pg_dead(lambda n: f'%({n})s')} AS dead "
             "FROM scheduler_nodes n ORDER BY n.node_id")


def dead_here(host: str, pid: int, ident: str | None, heartbeat_at: datetime,
              now: datetime, ttl: timedelta) -> bool:
    """The SQLite rule for one node row: its recorded process is gone, or it was
    recorded during an earlier boot of this host; without a process identity (or on
    another host), its heartbeat is older than ``ttl``."""
    if ident is not None and processes.on_this_boot(ident):
        return not processes.alive(pid, ident)
    if ident is not None and processes.boot_id() is not None and host == socket.gethostname():
        return True  # recorded during an earlier boot of this host
    return heartbeat_at <= now - ttl


# --- rows that cannot be read ---------------------------------------------------------

log = logging.getLogger("cronctl.store")
_R = TypeVar("_R")
_reported: set[tuple[str, str]] = set()  # (table, row id): said once per process


def decoded(rows: Iterable[Sequence[Any]], decode: Callable[[Sequence[Any]], _R],
            table: str) -> list[_R]:
    """``decode`` of each row; a row it cannot decode (a status or origin this version
    does not know, an instant that is not one: written by another version, or by hand)
    is skipped with one WARNING naming it, never a traceback that stops the scheduler or
    a command (docs/trust.md). The row itself is left as it is."""
    out: list[_R] = []
    for r in rows:
        try:
            out.append(decode(r))
        except _UNREADABLE as exc:
            _report(table, repr(r[0]) if r else "", r[1] if len(r) > 1 else "?",
                    f"cannot be read and is skipped: {exc}")
    return out


def cursor_instant(value: Any, table: str, job_id: str) -> datetime | None:
    """:func:`read_instant` of a job's cursor; one that is not an instant is taken as no
    cursor (the job goes on as one never handled), with one WARNING."""
    try:
        return read_instant(value)
    except _UNREADABLE as exc:
        _report(table, job_id, job_id, f"has a cursor that is not an instant ({exc}); "
                "taken as none")
        return None


_UNREADABLE = (ValueError, TypeError, IndexError, AssertionError)


def _report(table: str, row: str, job: Any, what: str) -> None:
    if (table, row) not in _reported:
        _reported.add((table, row))
        log.warning("%s row id=%s job=%s %s", table, row, job, what)


# --- the queries ----------------------------------------------------------------------


class ReadQueries:
    """The read queries in one dialect; each method takes an open DB-API cursor."""

    def __init__(self, pg: bool) -> None:
        self.pg = pg
        self._text: dict[str, str] = {}
        self._live_executions = _EXECUTIONS if pg else f"{_EXECUTIONS} INDEXED BY {LIVE_INDEX}"

    def sql(self, text: str) -> str:
        if not self.pg:
            return text
        out = self._text.get(text)
        if out is None:
            out = self._text[text] = text.replace("?", "%s")
        return out

    def ts(self, value: datetime) -> Any:
        """An instant as this dialect's column binds it (:func:`bind_instant`)."""
        return bind_instant(value, self.pg)

    def _rows(self, cur: Any, text: str, params: Sequence[Any] = ()) -> list[Any]:
        cur.execute(self.sql(text), tuple(params))
        return list(cur.fetchall())

    # --- executions ------------------------------------------------------------------

    @staticmethod
    def execution(r: Sequence[Any]) -> ExecutionRecord:
        """A row of :data:`EXECUTION_COLUMNS` as a record (the one decoder of execution
        rows)."""
        at = read_instant
        return ExecutionRecord(
            id=int(r[0]), job_id=r[1], occurrence_id=r[2], scheduled_at=_instant(r[3]),
            attempt=int(r[4]), origin=Origin(r[7]), status=ExecutionStatus(r[8]),
            node_id=r[6], scope_node=r[5] or None,
            fencing_token=None if r[10] is None else int(r[10]), target=r[9],
            created_at=_instant(r[11]), started_at=at(r[12]), finished_at=at(r[13]),
            error=r[14],
            progress_done=None if r[15] is None else float(r[15]),
            progress_total=None if r[16] is None else float(r[16]),
            progress_message=r[17], cancel_requested=bool(r[18]),
            pgid=None if r[19] is None else int(r[19]), process_start=r[20],
            exit_code=None if r[21] is None else int(r[21]), signal=r[22],
            cpu_seconds=None if r[23] is None else float(r[23]),
            max_rss_bytes=None if r[24] is None else int(r[24]),
            fenced_status=None if r[25] is None else ExecutionStatus(r[25]),
            fenced_at=at(r[26]))

    def _executions(self, cur: Any, text: str, params: Sequence[Any] = ()
                    ) -> list[ExecutionRecord]:
        return decoded(self._rows(cur, text, params), self.execution, "job_executions")

    def get_execution(self, cur: Any, execution_id: int) -> ExecutionRecord | None:
        found = self._executions(cur, f"{_EXECUTIONS} WHERE id = ?", (execution_id,))
        return found[0] if found else None

    def list_executions(
        self, cur: Any, *, job_id: str | None = None,
        status: ExecutionStatus | Collection[ExecutionStatus] | None = None,
        since: datetime | None = None, until: datetime | None = None,
        limit: int | None = 50,
        before: tuple[datetime, int] | None = None,
    ) -> list[ExecutionRecord]:
        wanted = (None if status is None
                  else list(dict.fromkeys(s.value for s in statuses(status))))
        if wanted is not None and len(wanted) > 1 and limit is not None:
            # One indexed query per status, merged here: for several statuses an index
            # ends in the order of none of them, and SQLite then walks the whole table
            # in (scheduled_at, id) order when few rows match (1M rows: 0.2 s).
            found = [r for one in wanted for r in self.list_executions(
                cur, job_id=job_id, status=ExecutionStatus(one), since=since, until=until,
                limit=limit, before=before)]
            found.sort(key=lambda r: (r.scheduled_at, r.id), reverse=True)
            return found[:limit]
        where: list[str] = []
        params: list[Any] = []
        if job_id is not None:
            where.append("job_id = ?")
            params.append(job_id)
        if wanted is not None:
            if not wanted:
                return []
            where.append(f"status IN ({', '.join('?' * len(wanted))})")
            params.extend(wanted)
        if since is not None:
            where.append("scheduled_at >= ?")
            params.append(self.ts(require_aware(since, "since")))
        if until is not None:
            where.append("scheduled_at <= ?")
            params.append(self.ts(require_aware(until, "until")))
        if before is not None:
            at = self.ts(require_aware(before[0], "before"))
            where.append("(scheduled_at < ? OR (scheduled_at = ? AND id < ?))")
            params.extend([at, at, before[1]])
        return self._executions(cur, _newest_first(_EXECUTIONS, where, params, "scheduled_at",
                                                   limit), params)

    def slot_counts(self, cur: Any, job_ids: Collection[str], start: datetime,
                    width: timedelta, slots: int) -> dict[tuple[str, int], dict[str, int]]:
        """Executions per (job, slot, status): slot ``k`` holds ``scheduled_at`` in
        ``[start + k*width, start + (k+1)*width)``. One plain range count per slot on the
        (job_id, status, scheduled_at) index: the rows themselves are never read, and no
        expression is computed per row (bucketing 144,000 rows with one GROUP BY on a
        computed slot took 170 ms on SQLite; 48 range counts take about 70)."""
        if not job_ids or slots <= 0 or width <= timedelta(0):
            return {}
        require_aware(start, "start")
        ids = list(dict.fromkeys(job_ids))
        every = [s.value for s in ExecutionStatus]
        text = (f"SELECT job_id, status, COUNT(*) FROM job_executions "
                f"WHERE job_id IN ({', '.join('?' * len(ids))}) "
                f"AND status IN ({', '.join('?' * len(every))}) "
                "AND scheduled_at >= ? AND scheduled_at < ? GROUP BY job_id, status")
        out: dict[tuple[str, int], dict[str, int]] = {}
        for slot in range(slots):
            low = start + width * slot
            rows = self._rows(cur, text, [*ids, *every, self.ts(low), self.ts(low + width)])
            for job_id, status, count in rows:
                out.setdefault((job_id, slot), {})[status] = int(count)
        return out

    def latest_executions(self, cur: Any, job_ids: Iterable[str]
                          ) -> dict[str, ExecutionRecord]:
        return {job: rows[0] for job, rows in self.recent_executions(cur, job_ids).items()}

    def recent_executions(self, cur: Any, job_ids: Iterable[str], per_job: int = 1
                          ) -> dict[str, list[ExecutionRecord]]:
        """Each job's newest ``per_job`` executions, newest first, in one statement: for
        every id and rank, one seek into the end of its (job_id, scheduled_at, id) index
        range. The cost grows with the number of jobs asked about, never with their
        history (one query per job was 1,001 round trips for 1,000 jobs; ranking all rows
        with a window function read them all). The ids travel as one array (PostgreSQL)
        or JSON text (SQLite), once per rank."""
        wanted = list(dict.fromkeys(job_ids))
        if not wanted or per_job < 1:
            return {}
        ids: list[str] | str
        if self.pg:
            ids, source = wanted, "unnest(?::text[]) AS j(v)"
        else:
            ids, source = json.dumps(wanted), "json_each(?) AS j"
        ranks = " UNION ALL ".join(
            f"SELECT (SELECT x.id FROM job_executions x WHERE x.job_id = j.{{v}} "
            f"ORDER BY x.scheduled_at DESC, x.id DESC LIMIT 1 OFFSET {rank}) FROM {source}"
            for rank in range(per_job)).format(v="v" if self.pg else "value")
        out: dict[str, list[ExecutionRecord]] = {}
        for row in sorted(self._executions(cur, f"{_EXECUTIONS} WHERE id IN ({ranks})",
                                           (ids,) * per_job),
                          key=lambda r: (r.scheduled_at, r.id), reverse=True):
            out.setdefault(row.job_id, []).append(row)
        return out

    def executions_of_occurrence(self, cur: Any, job_id: str, occurrence_id: str
                                 ) -> list[ExecutionRecord]:
        return self._executions(
            cur, f"{_EXECUTIONS} WHERE job_id = ? AND occurrence_id = ? ORDER BY attempt, id",
            (job_id, occurrence_id))

    def pending_or_running(
        self, cur: Any, *, node_id: str | None = None,
        job_ids: Collection[str] | None = None, node_ids: Collection[str] | None = None,
    ) -> list[ExecutionRecord]:
        where = [LIVE_WHERE]
        params: list[Any] = []
        for column, values in (("node_id", None if node_id is None else [node_id]),
                               ("node_id", node_ids), ("job_id", job_ids)):
            if values is None:
                continue
            values = list(values)
            if not values:
                return []
            where.append(f"{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
        # Through the partial index of live rows, named on SQLite so that no statistics
        # can turn it into a scan of the whole history; sorted here, not by the database
        # (live rows are few).
        rows = self._executions(cur, f"{self._live_executions} WHERE {' AND '.join(where)}",
                                params)
        return sorted(rows, key=lambda r: (r.scheduled_at, r.id))

    def orphaned_executions(self, cur: Any) -> list[ExecutionRecord]:
        """Live single_instance rows whose node has no node row, oldest first."""
        return self._executions(
            cur, f"{self._live_executions} WHERE {LIVE_WHERE} "
            "AND scope = '' AND node_id NOT IN (SELECT node_id FROM scheduler_nodes) "
            "ORDER BY scheduled_at, id")

    # --- logs --------------------------------------------------------------------------

    def read_logs(self, cur: Any, execution_id: int, *, after_seq: int = 0,
                  limit: int | None = None) -> list[LogLine]:
        text = ("SELECT execution_id, seq, at, level, message FROM job_logs "
                "WHERE execution_id = ? AND seq > ? ORDER BY seq")
        params: list[Any] = [execution_id, after_seq]
        if limit is not None:
            text += " LIMIT ?"
            params.append(int(limit))
        out: list[LogLine] = []
        for eid, seq, at, level, message in self._rows(cur, text, params):
            out.append(LogLine(int(eid), int(seq), _instant(at), level, message))
        return out

    # --- skip records ------------------------------------------------------------------

    def _skips(self, cur: Any, text: str, params: Sequence[Any]) -> list[SkipRecord]:
        out: list[SkipRecord] = []
        for i, job_id, scope, first, last, count, reason, node, created, detail in self._rows(
                cur, text, params):
            out.append(SkipRecord(id=int(i), job_id=job_id, reason=reason,
                                  first_at=_instant(first), last_at=_instant(last),
                                  count=int(count), node_id=node, scope_node=scope or None,
                                  created_at=_instant(created), detail=detail))
        return out

    def list_skips(self, cur: Any, *, job_id: str | None = None,
                   since: datetime | None = None, until: datetime | None = None,
                   limit: int | None = 50) -> list[SkipRecord]:
        where: list[str] = []
        params: list[Any] = []
        if job_id is not None:
            where.append("job_id = ?")
            params.append(job_id)
        if since is not None:
            where.append("last_at >= ?")
            params.append(self.ts(require_aware(since, "since")))
        if until is not None:
            where.append("first_at <= ?")
            params.append(self.ts(require_aware(until, "until")))
        return self._skips(cur, _newest_first(_SKIPS, where, params, "last_at", limit), params)

    def skips_covering(self, cur: Any, job_id: str, at: datetime) -> list[SkipRecord]:
        when = self.ts(require_aware(at, "at"))
        return self._skips(cur, f"{_SKIPS} WHERE job_id = ? AND first_at <= ? AND last_at >= ? "
                                "ORDER BY first_at, id", (job_id, when, when))

    # --- schedules, nodes, notifications ---------------------------------------------

    def _schedule(self, r: Sequence[Any]) -> ScheduleState:
        return ScheduleState(job_id=r[0], definition=json.loads(r[1] or "{}"),
                             cursor=cursor_instant(r[2], "job_schedules", r[0]),
                             paused=bool(r[3]),
                             fencing=int(r[4]), updated_at=read_instant(r[5]),
                             first_seen=read_instant(r[6]))

    def get_schedule(self, cur: Any, job_id: str) -> ScheduleState | None:
        rows = self._rows(cur, f"{_SCHEDULES} WHERE job_id = ?", (job_id,))
        return self._schedule(rows[0]) if rows else None

    def paused_job_ids(self, cur: Any) -> set[str]:
        """Through the (paused, job_id) index, without decoding any definition."""
        cur.execute(self.sql("SELECT job_id FROM job_schedules WHERE paused = ?"), (True,))
        return {row[0] for row in cur.fetchall()}

    def list_schedules(self, cur: Any) -> list[ScheduleState]:
        return [self._schedule(r) for r in self._rows(cur, f"{_SCHEDULES} ORDER BY job_id")]

    def judged_nodes(self, cur: Any, now: datetime, ttl: timedelta
                     ) -> list[tuple[NodeRecord, bool]]:
        """Every node row with whether it is dead, by node id (the rules:
        :mod:`cronctl.store.liveness`)."""
        if self.pg:
            cur.execute(_PG_NODES, pg_params(ttl))
            return [(self._node(r), bool(r[6])) for r in cur.fetchall()]
        at = require_aware(now, "now")
        nodes = [self._node(r) for r in self._rows(
            cur, f"SELECT {_NODES} FROM scheduler_nodes n ORDER BY n.node_id")]
        return [(n, dead_here(n.host, n.pid, n.process_start, n.heartbeat_at, at, ttl))
                for n in nodes]

    @staticmethod
    def _node(r: Sequence[Any]) -> NodeRecord:
        return NodeRecord(r[0], r[1], int(r[2]), _instant(r[3]), _instant(r[4]), r[5])

    def get_node(self, cur: Any, node_id: str) -> NodeRecord | None:
        rows = self._rows(cur, f"SELECT {_NODES} FROM scheduler_nodes n WHERE n.node_id = ?",
                          (node_id,))
        return self._node(rows[0]) if rows else None

    def delivery_failures(self, cur: Any, node_ids: Collection[str] | None = None
                          ) -> list[DeliveryFailures]:
        text = ("SELECT node_id, failing_since, last_failure_at, failures, last_error "
                "FROM notify_failures")
        params: list[Any] = []
        if node_ids is not None:
            params = list(node_ids)
            if not params:
                return []
            text += f" WHERE node_id IN ({', '.join('?' * len(params))})"
        out: list[DeliveryFailures] = []
        for node, since, last, failures, error in self._rows(cur, text + " ORDER BY node_id",
                                                             params):
            out.append(DeliveryFailures(node, _instant(since), _instant(last), int(failures),
                                        error))
        return out


def _newest_first(select: str, where: list[str], params: list[Any], column: str,
                  limit: int | None) -> str:
    """``select`` filtered by ``where`` (AND), newest ``column`` first, at most ``limit``
    rows (its parameter appended to ``params``)."""
    text = select + (f" WHERE {' AND '.join(where)}" if where else "")
    text += f" ORDER BY {column} DESC, id DESC"
    if limit is not None:
        text += " LIMIT ?"
        params.append(int(limit))
    return text


__all__ = ["EXECUTION_COLUMNS", "LIVE", "ReadQueries", "bind_instant", "dead_here", "pg_dead",
           "pg_params", "read_instant"]
