"""The SQL store: one implementation for SQLite and PostgreSQL (SQLAlchemy Core).

Elections and compare-and-set are single statements whose outcome the database decides:
``INSERT ... ON CONFLICT DO NOTHING RETURNING id`` and ``UPDATE ... WHERE status IN
(...)``. Write transactions on SQLite begin ``IMMEDIATE``; on PostgreSQL they run at
READ COMMITTED, where a blocked ``UPDATE`` re-checks its ``WHERE`` after the lock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Engine

from cronctl.jobs.model import ExecutionStatus, JobDefinition, Origin
from cronctl.store.base import (
    ExecutionRecord,
    GuardLock,
    LogEntry,
    LogLine,
    NewExecution,
    NodeIdInUse,
    NodeRecord,
    ScheduleState,
    Transition,
    TriggerRequest,
    require_aware,
    statuses,
)
from cronctl.store.engine import make_engine, normalize_url, translated, writer
from cronctl.store.memory import level_name, node_id_in_use_message
from cronctl.store.migrate import ensure_schema
from cronctl.store.rawsql import RawSql
from cronctl.store.snapshot import definition_snapshot, dumps
from cronctl.store.sqlrows import execution_row, node_row, schedule_row, trigger_row
from cronctl.store.tables import (
    guard_locks,
    job_executions,
    job_logs,
    job_schedules,
    scheduler_nodes,
    trigger_requests,
)
from cronctl.store.urls import kind_of, redact

_LIVE = (ExecutionStatus.PENDING.value, ExecutionStatus.RUNNING.value)
_X = job_executions.c


def _now(now: datetime | None) -> datetime:
    from datetime import UTC

    return datetime.now(UTC) if now is None else require_aware(now, "now")


def _aware(value: datetime | None, what: str) -> datetime | None:
    return None if value is None else require_aware(value, what)


class SqlStore:
    """The Store Protocol over SQLite or PostgreSQL. Thread-safe (a connection pool)."""

    persistent = True

    def __init__(self, engine: Engine, url: str, *, node_id: str = "") -> None:
        self.engine = engine
        self.node_id = node_id
        self._url = url
        self._writer = writer(engine)
        self.kind = kind_of(url)
        self.display_url = redact(url)
        dialect = pg_dialect if engine.dialect.name == "postgresql" else sqlite_dialect
        self._insert = dialect.insert
        self._raw = RawSql(engine)

    @classmethod
    def open(cls, url: str, *, node_id: str = "", auto_migrate: bool = True) -> SqlStore:
        url = normalize_url(url)
        engine = make_engine(url)
        try:
            ensure_schema(engine, url, auto_migrate=auto_migrate)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, url, node_id=node_id)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with translated(self._url), self.engine.connect() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with translated(self._url), self._writer.begin() as conn:
            yield conn

    @contextmanager
    def _raw_write(self) -> Iterator[Any]:
        """A DBAPI cursor in a write transaction (see :mod:`cronctl.store.rawsql`)."""
        with translated(self._url), self._writer.begin() as conn, self._raw.cursor(conn) as cur:
            yield cur

    @contextmanager
    def _raw_read(self) -> Iterator[Any]:
        with translated(self._url), self.engine.connect() as conn, self._raw.cursor(conn) as cur:
            yield cur

    # --- schedules -----------------------------------------------------------------

    def save_definitions(
        self, jobs: Sequence[JobDefinition], *, now: datetime | None = None
    ) -> None:
        at = _now(now)
        if not jobs:
            return
        rows = [(job.id, dumps(definition_snapshot(job))) for job in jobs]
        with self._raw_write() as cur:
            self._raw.save_definitions(cur, rows, at)

    def get_schedule(self, job_id: str) -> ScheduleState | None:
        with self._read() as conn:
            row = conn.execute(
                sa.select(job_schedules).where(job_schedules.c.job_id == job_id)
            ).first()
        return None if row is None else schedule_row(row)

    def list_schedules(self) -> list[ScheduleState]:
        with self._read() as conn:
            rows = conn.execute(sa.select(job_schedules).order_by(job_schedules.c.job_id))
            return [schedule_row(r) for r in rows]

    def advance_cursor(self, job_id: str, planned_at: datetime) -> datetime:
        with self._raw_write() as cur:
            self._raw.advance_cursors(cur, {job_id: planned_at})
            cursor = self._raw.cursor_of(cur, job_id)
        assert cursor is not None
        return cursor

    def advance_cursors(self, cursors: Mapping[str, datetime]) -> None:
        if cursors:
            with self._raw_write() as cur:
                self._raw.advance_cursors(cur, cursors)

    def job_states(self) -> dict[str, tuple[datetime | None, bool]]:
        with self._raw_read() as cur:
            return self._raw.job_states(cur)

    def paused_job_ids(self) -> set[str]:
        with self._raw_read() as cur:
            return self._raw.paused_job_ids(cur)

    def set_paused(self, job_id: str, paused: bool) -> None:
        with self._raw_write() as cur:
            self._raw.set_paused(cur, job_id, paused)

    def next_fencing_token(self, job_id: str) -> int:
        with self._raw_write() as cur:
            return self._raw.next_fencing_token(cur, job_id)

    # --- executions ----------------------------------------------------------------

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
        row = NewExecution(job_id, occurrence_id, scheduled_at, attempt, origin, node_id,
                           scope_node, fencing_token, target, status, started_at, now)
        return self.insert_executions([row])[0]

    def insert_executions(self, rows: Sequence[NewExecution]) -> list[int | None]:
        if not rows:
            return []
        with self._raw_write() as cur:
            return self._raw.insert_executions(cur, rows)

    def claim_execution(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime,
    ) -> bool:
        with self._raw_write() as cur:
            return self._raw.claim(cur, execution_id, node_id, fencing_token,
                                   require_aware(started_at, "started_at"))

    def insert_guarded(self, rows: Sequence[NewExecution]) -> list[int | str | None]:
        if not rows:
            return []
        with self._raw_write() as cur:
            return self._raw.insert_guarded(cur, rows)

    def claim_guarded(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime, locks: Sequence[str],
    ) -> bool | str:
        at = require_aware(started_at, "started_at")
        with self._raw_write() as cur:
            held = self._raw.take_locks(cur, execution_id, node_id, locks, at)
            if held is not None:
                return held
            if self._raw.claim(cur, execution_id, node_id, fencing_token, at):
                return True
            self._raw.release_executions(cur, [execution_id])
            return False

    def guard_locks(self) -> list[GuardLock]:
        with self._read() as conn:
            rows = conn.execute(sa.select(guard_locks).order_by(guard_locks.c.key))
            return [GuardLock(r.key, int(r.execution_id), r.node_id, r.acquired_at)
                    for r in rows]

    def release_locks(self, node_id: str) -> int:
        with self._write() as conn:
            return int(conn.execute(
                sa.delete(guard_locks).where(guard_locks.c.node_id == node_id)).rowcount)

    def release_stale_locks(self, now: datetime, ttl: timedelta) -> int:
        cutoff = require_aware(now, "now") - ttl
        N = scheduler_nodes.c
        live = sa.select(N.node_id).where(N.heartbeat_at > cutoff)
        with self._write() as conn:
            return int(conn.execute(
                sa.delete(guard_locks).where(guard_locks.c.node_id.not_in(live))).rowcount)

    def orphaned_executions(self) -> list[ExecutionRecord]:
        q = (sa.select(job_executions)
             .where(_X.status.in_(_LIVE), _X.scope == "",
                    _X.node_id.not_in(sa.select(scheduler_nodes.c.node_id)))
             .order_by(_X.scheduled_at, _X.id))
        with self._read() as conn:
            return [execution_row(r) for r in conn.execute(q)]

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
        change = Transition(execution_id, statuses(expected), new, error, started_at,
                            finished_at)
        return self.transitions([change])[0]

    def transitions(self, changes: Sequence[Transition]) -> list[bool]:
        if not changes:
            return []
        with self._raw_write() as cur:
            return self._raw.transitions(cur, changes)

    def get_execution(self, execution_id: int) -> ExecutionRecord | None:
        with self._read() as conn:
            row = conn.execute(sa.select(job_executions).where(_X.id == execution_id)).first()
        return None if row is None else execution_row(row)

    def list_executions(
        self,
        *,
        job_id: str | None = None,
        status: ExecutionStatus | Collection[ExecutionStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = 50,
    ) -> list[ExecutionRecord]:
        q = sa.select(job_executions)
        if job_id is not None:
            q = q.where(_X.job_id == job_id)
        if status is not None:
            q = q.where(_X.status.in_([s.value for s in statuses(status)]))
        if since is not None:
            q = q.where(_X.scheduled_at >= require_aware(since, "since"))
        if until is not None:
            q = q.where(_X.scheduled_at <= require_aware(until, "until"))
        q = q.order_by(_X.scheduled_at.desc(), _X.id.desc())
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [execution_row(r) for r in conn.execute(q)]

    def latest_executions(self, job_ids: Collection[str]) -> dict[str, ExecutionRecord]:
        if not job_ids:
            return {}
        rank = (
            sa.func.row_number()
            .over(partition_by=_X.job_id, order_by=(_X.scheduled_at.desc(), _X.id.desc()))
            .label("rank")
        )
        inner = sa.select(job_executions, rank).where(_X.job_id.in_(list(job_ids))).subquery()
        q = sa.select(*(inner.c[c.name] for c in job_executions.c)).where(inner.c.rank == 1)
        with self._read() as conn:
            return {r.job_id: execution_row(r) for r in conn.execute(q)}

    def executions_of_occurrence(self, job_id: str, occurrence_id: str) -> list[ExecutionRecord]:
        q = (
            sa.select(job_executions)
            .where(_X.job_id == job_id, _X.occurrence_id == occurrence_id)
            .order_by(_X.attempt, _X.id)
        )
        with self._read() as conn:
            return [execution_row(r) for r in conn.execute(q)]

    def pending_or_running(
        self,
        *,
        node_id: str | None = None,
        job_ids: Collection[str] | None = None,
    ) -> list[ExecutionRecord]:
        q = sa.select(job_executions).where(_X.status.in_(_LIVE))
        if node_id is not None:
            q = q.where(_X.node_id == node_id)
        if job_ids is not None:
            q = q.where(_X.job_id.in_(list(job_ids)))
        q = q.order_by(_X.scheduled_at, _X.id)
        with self._read() as conn:
            return [execution_row(r) for r in conn.execute(q)]

    def request_cancel(self, execution_id: int) -> bool:
        with self._write() as conn:
            result = conn.execute(
                sa.update(job_executions)
                .where(_X.id == execution_id, _X.status.in_(_LIVE))
                .values(cancel_requested=True)
            )
        return result.rowcount == 1

    def cancel_requested(self, execution_ids: Collection[int]) -> set[int]:
        if not execution_ids:
            return set()
        q = sa.select(_X.id).where(_X.id.in_(list(execution_ids)), _X.cancel_requested.is_(True))
        with self._read() as conn:
            return {int(i) for i in conn.execute(q).scalars()}

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        by_execution: dict[int, list[tuple[datetime, str, str]]] = {}
        for eid, at, level, message in batch:
            line = (require_aware(at, "log time"), level_name(level), message)
            by_execution.setdefault(int(eid), []).append(line)
        if not by_execution:
            return
        L = job_logs.c
        with self._write() as conn:
            # Lock the execution rows (PostgreSQL; SQLite already holds the write lock) so
            # that two writers of one execution's log cannot pick the same seq.
            existing = set(
                conn.execute(
                    sa.select(_X.id).where(_X.id.in_(list(by_execution))).with_for_update()
                ).scalars()
            )
            rows: list[dict[str, Any]] = []
            for eid, lines in by_execution.items():
                if eid not in existing:
                    continue
                last = conn.execute(
                    sa.select(sa.func.coalesce(sa.func.max(L.seq), 0)).where(L.execution_id == eid)
                ).scalar_one()
                for n, (at, level, message) in enumerate(lines, start=int(last) + 1):
                    rows.append(
                        {
                            "execution_id": eid,
                            "seq": n,
                            "at": at,
                            "level": level,
                            "message": message,
                        }
                    )
            if rows:
                conn.execute(sa.insert(job_logs), rows)

    def read_logs(
        self, execution_id: int, *, after_seq: int = 0, limit: int | None = None
    ) -> list[LogLine]:
        L = job_logs.c
        q = (
            sa.select(job_logs)
            .where(L.execution_id == execution_id, L.seq > after_seq)
            .order_by(L.seq)
        )
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [
                LogLine(int(r.execution_id), int(r.seq), r.at, r.level, r.message)
                for r in conn.execute(q)
            ]

    def record_progress(
        self, execution_id: int, done: float, total: float | None, message: str | None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                sa.update(job_executions)
                .where(_X.id == execution_id)
                .values(progress_done=done, progress_total=total, progress_message=message)
            )

    # --- requests --------------------------------------------------------------------

    def enqueue_trigger(
        self,
        job_id: str,
        origin: Origin = Origin.MANUAL,
        *,
        scheduled_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int | None:
        stmt = (
            self._insert(trigger_requests)
            .values(
                job_id=job_id,
                origin=Origin(origin).value,
                scheduled_at=_aware(scheduled_at, "scheduled_at"),
                requested_at=_now(now),
            )
            .on_conflict_do_nothing(index_elements=["job_id", "scheduled_at"])
            .returning(trigger_requests.c.id)
        )
        with self._write() as conn:
            rid = conn.execute(stmt).scalar_one_or_none()
        return None if rid is None else int(rid)

    def take_triggers(
        self,
        node_id: str,
        *,
        job_ids: Collection[str] | None = None,
        limit: int = 100,
        now: datetime | None = None,
    ) -> list[TriggerRequest]:
        T = trigger_requests.c
        at = _now(now)
        # A plain read first: usually nothing is waiting, and then no write transaction
        # (and no IN list of every job id) is needed.
        with self._raw_read() as cur:
            untaken = self._raw.untaken_triggers(cur)
        wanted = [i for i, job in untaken if job_ids is None or job in job_ids][:limit]
        if not wanted:
            return []
        q = sa.select(T.id).where(T.taken_by.is_(None), T.id.in_(wanted))
        # SKIP LOCKED: concurrent takers on PostgreSQL get disjoint requests instead of
        # waiting; SQLite's write lock serialises takers anyway (FOR UPDATE is dropped).
        q = q.order_by(T.id).limit(limit).with_for_update(skip_locked=True)
        with self._write() as conn:
            ids = list(conn.execute(q).scalars())
            if not ids:
                return []
            conn.execute(
                sa.update(trigger_requests)
                .where(T.id.in_(ids), T.taken_by.is_(None))
                .values(taken_by=node_id, taken_at=at)
            )
            rows = conn.execute(
                sa.select(trigger_requests)
                .where(T.id.in_(ids), T.taken_by == node_id, T.taken_at == at)
                .order_by(T.id)
            )
            return [trigger_row(r) for r in rows]

    def complete_trigger(
        self, request_id: int, *, execution_id: int | None = None, error: str | None = None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                sa.update(trigger_requests)
                .where(trigger_requests.c.id == request_id)
                .values(execution_id=execution_id, error=error, done=True)
            )

    def get_trigger(self, request_id: int) -> TriggerRequest | None:
        with self._read() as conn:
            row = conn.execute(
                sa.select(trigger_requests).where(trigger_requests.c.id == request_id)
            ).first()
        return None if row is None else trigger_row(row)

    # --- nodes ---------------------------------------------------------------------

    def register_node(
        self, node_id: str, host: str, pid: int, started_at: datetime, *, ttl: timedelta
    ) -> None:
        start = require_aware(started_at, "started_at")
        N = scheduler_nodes.c
        values = {"host": host, "pid": pid, "started_at": start, "heartbeat_at": start}
        with self._write() as conn:
            inserted = conn.execute(
                self._insert(scheduler_nodes)
                .values(node_id=node_id, **values)
                .on_conflict_do_nothing(index_elements=["node_id"])
                .returning(N.node_id)
            ).first()
            if inserted is not None:
                return
            # Take the row over only if its holder is dead or is us (a restart).
            taken = conn.execute(
                sa.update(scheduler_nodes)
                .where(
                    N.node_id == node_id,
                    sa.or_(
                        N.heartbeat_at <= start - ttl,
                        sa.and_(N.host == host, N.pid == pid),
                    ),
                )
                .values(**values)
            )
            if taken.rowcount == 1:
                return
            old = conn.execute(sa.select(scheduler_nodes).where(N.node_id == node_id)).first()
        assert old is not None
        raise NodeIdInUse(node_id_in_use_message(node_row(old)))

    def heartbeat(
        self, node_id: str, at: datetime, *, host: str | None = None, pid: int | None = None
    ) -> bool:
        when = require_aware(at, "at")
        N = scheduler_nodes.c
        q = sa.update(scheduler_nodes).where(N.node_id == node_id)
        if host is not None:
            q = q.where(N.host == host)
        if pid is not None:
            q = q.where(N.pid == pid)
        with self._write() as conn:
            result = conn.execute(q.values(heartbeat_at=when))
        return result.rowcount == 1

    def _nodes(self, condition: sa.ColumnElement[bool]) -> list[NodeRecord]:
        q = sa.select(scheduler_nodes).where(condition).order_by(scheduler_nodes.c.node_id)
        with self._read() as conn:
            return [node_row(r) for r in conn.execute(q)]

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        cutoff = require_aware(now, "now") - ttl
        return self._nodes(scheduler_nodes.c.heartbeat_at > cutoff)

    def expired_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        cutoff = require_aware(now, "now") - ttl
        return self._nodes(scheduler_nodes.c.heartbeat_at <= cutoff)

    def unregister_node(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute(sa.delete(scheduler_nodes).where(scheduler_nodes.c.node_id == node_id))


__all__ = ["SqlStore"]
