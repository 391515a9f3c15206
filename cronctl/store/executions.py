"""Execution rows: the election (insert-if-absent), compare-and-set of the status,
claims of rows written ahead, history queries and cancel requests."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

import sqlalchemy as sa

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.connection import LIVE, SqlConnection, X
from cronctl.store.records import (
    ExecutionRecord,
    NewExecution,
    Transition,
    require_aware,
    statuses,
)
from cronctl.store.sqlrows import execution_row
from cronctl.store.tables import (
    job_executions,
)


class Executions(SqlConnection):
    """The execution half of the Store Protocol (see :mod:`cronctl.store.base`)."""

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

    def discard_pending(self, execution_ids: Collection[int]) -> int:
        ids = sorted(set(execution_ids))
        deleted = 0
        with self._write() as conn:
            for start in range(0, len(ids), 500):
                deleted += conn.execute(sa.delete(job_executions).where(
                    X.id.in_(ids[start:start + 500]),
                    X.status == ExecutionStatus.PENDING.value)).rowcount
        return deleted

    def transition(
        self,
        execution_id: int,
        expected: ExecutionStatus | Collection[ExecutionStatus],
        new: ExecutionStatus,
        *,
        error: str | None = None,
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
        fencing_token: int | None = None,
    ) -> bool:
        change = Transition(execution_id, statuses(expected), new, error, started_at,
                            finished_at, fencing_token)
        return self.transitions([change])[0]

    def transitions(self, changes: Sequence[Transition]) -> list[bool]:
        if not changes:
            return []
        with self._raw_write() as cur:
            return self._raw.transitions(cur, changes)

    def get_execution(self, execution_id: int) -> ExecutionRecord | None:
        with self._read() as conn:
            row = conn.execute(sa.select(job_executions).where(X.id == execution_id)).first()
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
        wanted = (None if status is None
                  else list(dict.fromkeys(s.value for s in statuses(status))))
        if wanted is not None and len(wanted) > 1 and limit is not None:
            # One indexed query per status, merged here: for several statuses an index
            # ends in the order of none of them, and SQLite then walks the whole table
            # in (scheduled_at, id) order when few rows match (1M rows: 0.2 s).
            found = [r for one in wanted for r in self.list_executions(
                job_id=job_id, status=ExecutionStatus(one), since=since, until=until,
                limit=limit)]
            found.sort(key=lambda r: (r.scheduled_at, r.id), reverse=True)
            return found[:limit]
        q = sa.select(job_executions)
        if job_id is not None:
            q = q.where(X.job_id == job_id)
        if wanted is not None:
            q = q.where(X.status.in_(wanted))
        if since is not None:
            q = q.where(X.scheduled_at >= require_aware(since, "since"))
        if until is not None:
            q = q.where(X.scheduled_at <= require_aware(until, "until"))
        q = q.order_by(X.scheduled_at.desc(), X.id.desc())
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [execution_row(r) for r in conn.execute(q)]

    def latest_executions(self, job_ids: Collection[str]) -> dict[str, ExecutionRecord]:
        if not job_ids:
            return {}
        rank = (
            sa.func.row_number()
            .over(partition_by=X.job_id, order_by=(X.scheduled_at.desc(), X.id.desc()))
            .label("rank")
        )
        inner = sa.select(job_executions, rank).where(X.job_id.in_(list(job_ids))).subquery()
        q = sa.select(*(inner.c[c.name] for c in job_executions.c)).where(inner.c.rank == 1)
        with self._read() as conn:
            return {r.job_id: execution_row(r) for r in conn.execute(q)}

    def executions_of_occurrence(self, job_id: str, occurrence_id: str) -> list[ExecutionRecord]:
        q = (
            sa.select(job_executions)
            .where(X.job_id == job_id, X.occurrence_id == occurrence_id)
            .order_by(X.attempt, X.id)
        )
        with self._read() as conn:
            return [execution_row(r) for r in conn.execute(q)]

    def pending_or_running(
        self,
        *,
        node_id: str | None = None,
        job_ids: Collection[str] | None = None,
        node_ids: Collection[str] | None = None,
    ) -> list[ExecutionRecord]:
        q = sa.select(job_executions).where(X.status.in_(LIVE))
        if node_id is not None:
            q = q.where(X.node_id == node_id)
        if node_ids is not None:
            q = q.where(X.node_id.in_(list(node_ids)))
        if job_ids is not None:
            q = q.where(X.job_id.in_(list(job_ids)))
        # Sorted here, not by the database: live rows are few, and an ORDER BY made
        # SQLite walk the (scheduled_at, id) index over the whole table instead of
        # reading them through (status, scheduled_at, id) (1M rows: 0.2 s).
        with self._read() as conn:
            rows = [execution_row(r) for r in conn.execute(q)]
        return sorted(rows, key=lambda r: (r.scheduled_at, r.id))

    def record_process(self, execution_id: int, pgid: int, process_start: str | None) -> None:
        with self._write() as conn:
            conn.execute(sa.update(job_executions).where(X.id == execution_id)
                         .values(pgid=pgid, process_start=process_start))

    def request_cancel(self, execution_id: int) -> bool:
        with self._write() as conn:
            result = conn.execute(
                sa.update(job_executions)
                .where(X.id == execution_id, X.status.in_(LIVE))
                .values(cancel_requested=True)
            )
        return result.rowcount == 1

    def cancel_requested(self, execution_ids: Collection[int]) -> set[int]:
        if not execution_ids:
            return set()
        q = sa.select(X.id).where(X.id.in_(list(execution_ids)), X.cancel_requested.is_(True))
        with self._read() as conn:
            return {int(i) for i in conn.execute(q).scalars()}


__all__ = ["Executions"]
