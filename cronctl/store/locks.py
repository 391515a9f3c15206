"""Guard locks: cluster-wide serial groups and single_instance overlap, taken with the
execution row in one transaction and released with its final status."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa

from cronctl.store.connection import SqlConnection
from cronctl.store.nodes import release_stale
from cronctl.store.records import ExecutionRecord, require_aware
from cronctl.store.tables import group_waiters, guard_locks
from cronctl.store.writerecords import Fenced, GuardLock, NewExecution


class GuardLocks(SqlConnection):
    """Guard locks of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def insert_guarded(self, rows: Sequence[NewExecution]
                       ) -> list[int | Fenced | str | None]:
        if not rows:
            return []
        with self._raw_write() as cur:
            return self._raw.insert_guarded(cur, rows)

    def claim_guarded(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime, locks: Sequence[str], fence: str | None = None,
    ) -> bool | Fenced | str:
        at = require_aware(started_at, "started_at")
        with self._raw_write() as cur:
            held = self._raw.take_locks(cur, execution_id, node_id, locks, at)
            if held is not None:
                return held
            token = None if fence is None else self._raw.next_fencing_token(cur, fence)
            if self._raw.claim(cur, execution_id, node_id,
                               fencing_token if token is None else token, at):
                return True if token is None else Fenced(execution_id, token)
            self._raw.release_executions(cur, [execution_id])
            return False

    def guard_locks(self) -> list[GuardLock]:
        with self._read() as conn:
            rows = conn.execute(sa.select(guard_locks).order_by(guard_locks.c.key))
            return [GuardLock(r.key, int(r.execution_id), r.node_id, r.acquired_at)
                    for r in rows]

    def release_locks(self, node_id: str) -> int:
        with self._write() as conn:
            conn.execute(sa.delete(group_waiters).where(group_waiters.c.node_id == node_id))
            return int(conn.execute(
                sa.delete(guard_locks).where(guard_locks.c.node_id == node_id)).rowcount)

    def release_stale_locks(self, now: datetime, ttl: timedelta, *,
                            keep: Collection[int] = ()) -> int:
        at = require_aware(now, "now")
        with self._write() as conn:
            return release_stale(conn, self.engine.dialect.name == "postgresql", at, ttl,
                                 keep=sorted(keep))

    def orphaned_executions(self) -> list[ExecutionRecord]:
        with self._raw_read() as cur:
            return self._raw.orphaned_executions(cur)


__all__ = ["GuardLocks"]
