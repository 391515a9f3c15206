"""Trigger requests: ``cronctl trigger``/``replay`` asking a running scheduler to act."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

import sqlalchemy as sa

from cronctl.jobs.model import Origin
from cronctl.store.connection import SqlConnection, aware, now_or
from cronctl.store.records import TriggerRequest
from cronctl.store.tables import (
    job_executions,
    skip_records,
    trigger_requests,
)
from cronctl.store.triggersql import CHAIN_WAIT


class TriggerRequests(SqlConnection):
    """Trigger requests of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def enqueue_trigger(
        self,
        job_id: str,
        origin: Origin = Origin.MANUAL,
        *,
        scheduled_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int | None:
        with self._raw_write() as cur:
            return self._raw.enqueue_trigger(cur, job_id, origin, scheduled_at, now_or(now))

    def take_triggers(
        self,
        node_id: str,
        *,
        job_ids: Collection[str] | None = None,
        limit: int = 100,
        now: datetime | None = None,
    ) -> list[TriggerRequest]:
        T = trigger_requests.c
        at = now_or(now)
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
            with self._raw.cursor(conn) as cur:
                return self._raw.select_triggers(
                    cur, f"id IN ({', '.join('?' * len(ids))}) AND taken_by = ? "
                    "AND taken_at = ?", (*ids, node_id, self._raw.ts(at)))

    def complete_trigger(
        self, request_id: int, *, execution_id: int | None = None, error: str | None = None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                sa.update(trigger_requests)
                .where(trigger_requests.c.id == request_id)
                .values(execution_id=execution_id, error=error, done=True)
            )

    def release_triggers(self, node_ids: Collection[str]) -> int:
        T, X = trigger_requests.c, job_executions.c
        nodes = [n for n in node_ids if n != CHAIN_WAIT]
        if not nodes:
            return 0
        released = 0
        with self._write() as conn:
            held = conn.execute(
                sa.select(T.id, T.job_id, T.origin, T.scheduled_at, T.requested_at, T.taken_by)
                .where(T.taken_by.in_(nodes), T.done.is_(False))).all()
            for rid, job_id, origin, scheduled_at, requested_at, taker in held:
                planned = scheduled_at if scheduled_at is not None else requested_at
                ran = conn.execute(
                    sa.select(X.id).where(X.job_id == job_id, X.scheduled_at == planned,
                                          X.origin == origin)
                    .order_by(X.attempt, X.id).limit(1)).scalar_one_or_none()
                change = ({"done": True, "execution_id": ran} if ran is not None
                          else {"taken_by": None, "taken_at": None})
                released += conn.execute(
                    sa.update(trigger_requests)
                    .where(T.id == rid, T.taken_by == taker, T.done.is_(False))
                    .values(**change)).rowcount
        return released

    def decide_dependent(
        self,
        job_id: str,
        scheduled_at: datetime,
        node_id: str,
        *,
        skip: tuple[str, str] | None = None,
        now: datetime | None = None,
    ) -> bool:
        at = now_or(now)
        planned = aware(scheduled_at, "scheduled_at")
        values: dict[str, object] = {"job_id": job_id, "origin": Origin.DEPENDENCY.value,
                                     "scheduled_at": planned, "requested_at": at}
        if skip is not None:
            values.update(taken_by=node_id, taken_at=at, done=True, error=skip[1])
        stmt = (self._insert(trigger_requests).values(**values)
                .on_conflict_do_nothing(index_elements=["job_id", "scheduled_at"])
                .returning(trigger_requests.c.id))
        with self._write() as conn:
            if conn.execute(stmt).scalar_one_or_none() is None:
                return False
            if skip is not None:
                conn.execute(
                    self._insert(skip_records).values(
                        job_id=job_id, scope="", first_at=planned, last_at=planned, count=1,
                        reason=skip[0], node_id=node_id, created_at=at, detail=skip[1])
                    .on_conflict_do_nothing(index_elements=["job_id", "scope", "first_at"]))
        return True

    def wait_chain(self, job_id: str, scheduled_at: datetime, *,
                   now: datetime | None = None) -> bool:
        with self._raw_write() as cur:
            return self._raw.wait_chain(cur, job_id, scheduled_at, now_or(now))

    def chain_waits(self, job_ids: Collection[str]) -> list[TriggerRequest]:
        if not job_ids:
            return []
        with self._raw_read() as cur:
            found = self._raw.select_triggers(cur, "taken_by = ? AND done = ?",
                                              (CHAIN_WAIT, False))
        return [r for r in found if r.job_id in job_ids]

    def release_chain(self, request_id: int, node_id: str, *, skip: str | None = None,
                      now: datetime | None = None) -> bool:
        T = trigger_requests.c
        values: dict[str, object] = {"taken_by": None}
        if skip is not None:
            values = {"taken_by": node_id, "taken_at": now_or(now), "done": True,
                      "error": skip}
        with self._write() as conn:
            done = conn.execute(sa.update(trigger_requests).where(
                T.id == request_id, T.taken_by == CHAIN_WAIT).values(**values))
        return bool(done.rowcount)

    def stranded_dependency_requests(self, job_ids: Collection[str]
                                     ) -> list[TriggerRequest]:
        if not job_ids:
            return []
        with self._raw_read() as cur:
            found = self._raw.select_triggers(
                cur, "origin = ? AND done = ? AND taken_by IS NOT NULL AND taken_by <> ?",
                (Origin.DEPENDENCY.value, False, CHAIN_WAIT))
        return [r for r in found if r.job_id in job_ids]

    def untake_trigger(self, request_id: int, taken_by: str) -> bool:
        T = trigger_requests.c
        with self._write() as conn:
            done = conn.execute(sa.update(trigger_requests).where(
                T.id == request_id, T.taken_by == taken_by, T.done.is_(False),
            ).values(taken_by=None, taken_at=None))
        return bool(done.rowcount)

    def get_trigger(self, request_id: int) -> TriggerRequest | None:
        with self._raw_read() as cur:
            return self._raw.get_trigger(cur, request_id)

    def waiting_triggers(self, limit: int) -> list[TriggerRequest]:
        with self._raw_read() as cur:
            return self._raw.waiting_triggers(cur, limit)

    def list_triggers(self, job_id: str, *, since: datetime, until: datetime
                      ) -> list[TriggerRequest]:
        with self._raw_read() as cur:
            return self._raw.list_triggers(cur, job_id, since=since, until=until)


__all__ = ["CHAIN_WAIT", "TriggerRequests"]
