"""Execution rows: the election (insert-if-absent), compare-and-set of the status,
claims of rows written ahead, history queries and cancel requests."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.connection import LIVE, SqlConnection, X
from cronctl.store.records import ExecutionRecord, require_aware, statuses
from cronctl.store.tables import (
    job_executions,
)
from cronctl.store.writerecords import NewExecution, Transition


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

    def record_fenced(self, execution_id: int, status: ExecutionStatus, at: datetime, *,
                      error: str | None = None) -> bool:
        values: dict[str, object] = {"fenced_status": ExecutionStatus(status).value,
                                     "fenced_at": require_aware(at, "at")}
        if error is not None:
            values["error"] = error
        with self._write() as conn:
            result = conn.execute(
                sa.update(job_executions)
                .where(X.id == execution_id, X.fenced_status.is_(None))
                .values(**values))
        return bool(result.rowcount == 1)

    def get_execution(self, execution_id: int) -> ExecutionRecord | None:
        with self._raw_read() as cur:
            return self._raw.get_execution(cur, execution_id)

    def list_executions(
        self,
        *,
        job_id: str | None = None,
        status: ExecutionStatus | Collection[ExecutionStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = 50,
        before: tuple[datetime, int] | None = None,
    ) -> list[ExecutionRecord]:
        with self._raw_read() as cur:
            return self._raw.list_executions(cur, job_id=job_id, status=status, since=since,
                                             until=until, limit=limit, before=before)

    def slot_counts(self, job_ids: Collection[str], start: datetime, width: timedelta,
                    slots: int) -> dict[tuple[str, int], dict[str, int]]:
        with self._raw_read() as cur:
            return self._raw.slot_counts(cur, job_ids, start, width, slots)

    def latest_executions(self, job_ids: Collection[str]) -> dict[str, ExecutionRecord]:
        with self._raw_read() as cur:
            return self._raw.latest_executions(cur, job_ids)

    def recent_executions(self, job_ids: Collection[str], per_job: int
                          ) -> dict[str, list[ExecutionRecord]]:
        with self._raw_read() as cur:
            return self._raw.recent_executions(cur, job_ids, per_job)

    def executions_of_occurrence(self, job_id: str, occurrence_id: str) -> list[ExecutionRecord]:
        with self._raw_read() as cur:
            return self._raw.executions_of_occurrence(cur, job_id, occurrence_id)

    def pending_or_running(
        self,
        *,
        node_id: str | None = None,
        job_ids: Collection[str] | None = None,
        node_ids: Collection[str] | None = None,
    ) -> list[ExecutionRecord]:
        with self._raw_read() as cur:
            return self._raw.pending_or_running(cur, node_id=node_id, job_ids=job_ids,
                                                node_ids=node_ids)

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
