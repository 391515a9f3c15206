"""The SQL store: one implementation for SQLite and PostgreSQL (SQLAlchemy Core).

Elections and compare-and-set are single statements whose outcome the database decides:
``INSERT ... ON CONFLICT DO NOTHING RETURNING id`` and ``UPDATE ... WHERE status IN
(...)``. Write transactions on SQLite begin ``IMMEDIATE``; on PostgreSQL they run at
READ COMMITTED, where a blocked ``UPDATE`` re-checks its ``WHERE`` after the lock.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
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
    LogEntry,
    LogLine,
    NodeIdInUse,
    NodeRecord,
    ScheduleState,
    TriggerRequest,
    require_aware,
    statuses,
)
from cronctl.store.engine import make_engine, normalize_url, translated, writer
from cronctl.store.memory import level_name, node_id_in_use_message
from cronctl.store.migrate import ensure_schema
from cronctl.store.snapshot import definition_snapshot, dumps
from cronctl.store.tables import (
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


def _schedule(row: sa.Row[Any]) -> ScheduleState:
    m = row._mapping
    return ScheduleState(
        job_id=m["job_id"],
        definition=json.loads(m["definition"] or "{}"),
        cursor=m["cursor"],
        paused=bool(m["paused"]),
        fencing=int(m["fencing_token"]),
        updated_at=m["updated_at"],
    )


def _execution(row: sa.Row[Any]) -> ExecutionRecord:
    m = row._mapping
    return ExecutionRecord(
        id=int(m["id"]),
        job_id=m["job_id"],
        occurrence_id=m["occurrence_id"],
        scheduled_at=m["scheduled_at"],
        attempt=int(m["attempt"]),
        origin=Origin(m["origin"]),
        status=ExecutionStatus(m["status"]),
        node_id=m["node_id"],
        scope_node=m["scope"] or None,
        fencing_token=None if m["fencing_token"] is None else int(m["fencing_token"]),
        target=m["target"],
        created_at=m["created_at"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
        error=m["error"],
        progress_done=m["progress_done"],
        progress_total=m["progress_total"],
        progress_message=m["progress_message"],
        cancel_requested=bool(m["cancel_requested"]),
    )


def _node(row: sa.Row[Any]) -> NodeRecord:
    m = row._mapping
    return NodeRecord(m["node_id"], m["host"], int(m["pid"]), m["started_at"], m["heartbeat_at"])


def _trigger(row: sa.Row[Any]) -> TriggerRequest:
    m = row._mapping
    return TriggerRequest(
        id=int(m["id"]),
        job_id=m["job_id"],
        origin=Origin(m["origin"]),
        scheduled_at=m["scheduled_at"],
        requested_at=m["requested_at"],
        taken_by=m["taken_by"],
        taken_at=m["taken_at"],
        execution_id=None if m["execution_id"] is None else int(m["execution_id"]),
        error=m["error"],
        done=bool(m["done"]),
    )


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

    # --- schedules -----------------------------------------------------------------

    def _ensure_schedule(self, conn: Connection, job_id: str) -> None:
        conn.execute(
            self._insert(job_schedules)
            .values(job_id=job_id)
            .on_conflict_do_nothing(index_elements=["job_id"])
        )

    def save_definitions(
        self, jobs: Sequence[JobDefinition], *, now: datetime | None = None
    ) -> None:
        at = _now(now)
        if not jobs:
            return
        with self._write() as conn:
            for job in jobs:
                stmt = self._insert(job_schedules).values(
                    job_id=job.id, definition=dumps(definition_snapshot(job)), updated_at=at
                )
                conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=["job_id"],
                        set_={
                            "definition": stmt.excluded.definition,
                            "updated_at": stmt.excluded.updated_at,
                        },
                    )
                )

    def get_schedule(self, job_id: str) -> ScheduleState | None:
        with self._read() as conn:
            row = conn.execute(
                sa.select(job_schedules).where(job_schedules.c.job_id == job_id)
            ).first()
        return None if row is None else _schedule(row)

    def list_schedules(self) -> list[ScheduleState]:
        with self._read() as conn:
            rows = conn.execute(sa.select(job_schedules).order_by(job_schedules.c.job_id))
            return [_schedule(r) for r in rows]

    def advance_cursor(self, job_id: str, planned_at: datetime) -> datetime:
        planned = require_aware(planned_at, "planned_at")
        c = job_schedules.c
        with self._write() as conn:
            self._ensure_schedule(conn, job_id)
            conn.execute(
                sa.update(job_schedules)
                .where(c.job_id == job_id, sa.or_(c.cursor.is_(None), c.cursor < planned))
                .values(cursor=planned)
            )
            cursor = conn.execute(sa.select(c.cursor).where(c.job_id == job_id)).scalar_one()
        assert isinstance(cursor, datetime)
        return cursor

    def set_paused(self, job_id: str, paused: bool) -> None:
        with self._write() as conn:
            self._ensure_schedule(conn, job_id)
            conn.execute(
                sa.update(job_schedules)
                .where(job_schedules.c.job_id == job_id)
                .values(paused=paused)
            )

    def next_fencing_token(self, job_id: str) -> int:
        stmt = self._insert(job_schedules).values(job_id=job_id, fencing_token=1)
        stmt = stmt.on_conflict_do_update(
            index_elements=["job_id"],
            set_={"fencing_token": job_schedules.c.fencing_token + 1},
        )
        with self._write() as conn:
            token = conn.execute(stmt.returning(job_schedules.c.fencing_token)).scalar_one()
        return int(token)

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
        stmt = (
            self._insert(job_executions)
            .values(
                job_id=job_id,
                occurrence_id=occurrence_id,
                scheduled_at=require_aware(scheduled_at, "scheduled_at"),
                attempt=attempt,
                scope=scope_node or "",
                node_id=node_id,
                origin=Origin(origin).value,
                status=ExecutionStatus(status).value,
                target=target,
                fencing_token=fencing_token,
                created_at=_now(now),
                started_at=_aware(started_at, "started_at"),
            )
            .on_conflict_do_nothing(index_elements=["job_id", "occurrence_id", "scope", "attempt"])
            .returning(_X.id)
        )
        with self._write() as conn:
            new_id = conn.execute(stmt).scalar_one_or_none()
        return None if new_id is None else int(new_id)

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
        values: dict[str, Any] = {"status": ExecutionStatus(new).value}
        if error is not None:
            values["error"] = error
        if started_at is not None:
            values["started_at"] = require_aware(started_at, "started_at")
        if finished_at is not None:
            values["finished_at"] = require_aware(finished_at, "finished_at")
        allowed = [s.value for s in statuses(expected)]
        with self._write() as conn:
            result = conn.execute(
                sa.update(job_executions)
                .where(_X.id == execution_id, _X.status.in_(allowed))
                .values(**values)
            )
        return result.rowcount == 1

    def get_execution(self, execution_id: int) -> ExecutionRecord | None:
        with self._read() as conn:
            row = conn.execute(sa.select(job_executions).where(_X.id == execution_id)).first()
        return None if row is None else _execution(row)

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
            return [_execution(r) for r in conn.execute(q)]

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
            return {r.job_id: _execution(r) for r in conn.execute(q)}

    def executions_of_occurrence(self, job_id: str, occurrence_id: str) -> list[ExecutionRecord]:
        q = (
            sa.select(job_executions)
            .where(_X.job_id == job_id, _X.occurrence_id == occurrence_id)
            .order_by(_X.attempt, _X.id)
        )
        with self._read() as conn:
            return [_execution(r) for r in conn.execute(q)]

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
            return [_execution(r) for r in conn.execute(q)]

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
        q = sa.select(T.id).where(T.taken_by.is_(None))
        if job_ids is not None:
            q = q.where(T.job_id.in_(list(job_ids)))
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
            return [_trigger(r) for r in rows]

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
        return None if row is None else _trigger(row)

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
        raise NodeIdInUse(node_id_in_use_message(_node(old)))

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
            return [_node(r) for r in conn.execute(q)]

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
