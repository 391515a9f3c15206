"""What notifications need of the store (docs/behaviour.md#retention-notifications-and-metrics): the
marks that let one node of the cluster send a decision's event, the outcome of a job's previous
occurrence (for ``recovered``), and each node's delivery failures (for ``cronctl status``)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

import sqlalchemy as sa

from cronctl.jobs.model import ExecutionStatus
from cronctl.store.connection import SqlConnection, X, now_or
from cronctl.store.records import DeliveryFailures, require_aware
from cronctl.store.tables import notify_failures, notify_marks

_CLAIM = ('INSERT INTO notify_marks ("key", event, job_id, node_id, created_at) '
          'VALUES (?, ?, ?, ?, ?) ON CONFLICT ("key") DO NOTHING')
_FAILED = ("INSERT INTO notify_failures (node_id, failing_since, last_failure_at, failures, "
           "last_error) VALUES (?, ?, ?, 1, ?) ON CONFLICT (node_id) DO UPDATE SET "
           "last_failure_at = excluded.last_failure_at, last_error = excluded.last_error, "
           "failures = notify_failures.failures + 1")
# What ends an occurrence: a cancelled one says nothing about whether the job works.
_OUTCOMES = tuple(s.value for s in (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED,
                                    ExecutionStatus.ABANDONED, ExecutionStatus.DEAD_LETTER))
F = notify_failures.c


class Notices(SqlConnection):
    """The notification half of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def claim_notice(self, key: str, *, event: str, job_id: str, node_id: str,
                     now: datetime | None = None) -> bool:
        with self._raw_write() as cur:
            cur.execute(self._raw.sql(_CLAIM), (key, event, job_id, node_id,
                                                self._raw.ts(now_or(now))))
            return bool(cur.rowcount == 1)

    def forget_notices(self, before: datetime) -> int:
        require_aware(before, "before")
        with self._write() as conn:
            done = conn.execute(sa.delete(notify_marks)
                                .where(notify_marks.c.created_at < before))
            return int(done.rowcount or 0)

    def previous_outcome(self, job_id: str, before: datetime, *,
                         scope_node: str | None = None
                         ) -> tuple[datetime, ExecutionStatus] | None:
        require_aware(before, "before")
        query = (sa.select(X.scheduled_at, X.status)
                 .where(X.job_id == job_id, X.scheduled_at < before, X.status.in_(_OUTCOMES))
                 .order_by(X.scheduled_at.desc(), X.id.desc()).limit(1))
        if scope_node is not None:
            query = query.where(X.scope == scope_node)
        with self._read() as conn:
            found = conn.execute(query).first()
        return None if found is None else (found.scheduled_at, ExecutionStatus(found.status))

    def note_delivery(self, node_id: str, *, ok: bool, error: str | None = None,
                      now: datetime | None = None) -> None:
        if ok:
            with self._write() as conn:
                conn.execute(sa.delete(notify_failures).where(F.node_id == node_id))
            return
        at = self._raw.ts(now_or(now))
        with self._raw_write() as cur:
            cur.execute(self._raw.sql(_FAILED), (node_id, at, at, error))

    def delivery_failures(self, node_ids: Collection[str] | None = None
                          ) -> list[DeliveryFailures]:
        with self._raw_read() as cur:
            return self._raw.delivery_failures(cur, node_ids)


__all__ = ["Notices"]
