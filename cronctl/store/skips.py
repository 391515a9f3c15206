"""The skip ledger: planned instants that did not run, and why
(docs/behaviour.md#durability-and-clusters).

A row is a run of consecutive planned instants with one reason. Nodes that take the
same decision (every node sees a single_instance job's lock held at the same instant;
two nodes starting at once find the same misfire set) write the same ``(job, scope,
first_at)``: the unique key keeps one row, and a longer run for the same start extends
it, so each instant is recorded once cluster-wide. A run over an instant that has a
started execution (in the same scope) is not recorded: the instant ran, whatever a node
with a stale view decided about it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from cronctl.store.connection import SqlConnection, now_or
from cronctl.store.records import SkipRecord, require_aware
from cronctl.store.tables import skip_records
from cronctl.store.writerecords import SkipRun

_S = skip_records.c
_INSERT = ("INSERT INTO skip_records (job_id, scope, first_at, last_at, count, reason, "
           "node_id, created_at, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
           "ON CONFLICT (job_id, scope, first_at) DO NOTHING")
_EXTEND = ("UPDATE skip_records SET last_at = ?, count = ? "
           "WHERE job_id = ? AND scope = ? AND first_at = ? AND last_at < ?")
# An instant that has a started execution in the same scope ran: a skip decided for it
# by a node whose view was stale (it was cut off from the database, or its disk was
# full, while another node ran the instant) is not recorded. A ``pending`` row may still
# not start (a waiter that expires has its row deleted, after or before its skip).
_RAN = ("SELECT 1 FROM job_executions WHERE job_id = ? AND scope = ? "
        "AND scheduled_at >= ? AND scheduled_at <= ? AND status <> 'pending' LIMIT 1")


def _record(row: sa.Row[tuple[object, ...]]) -> SkipRecord:
    m = row._mapping
    return SkipRecord(id=int(m["id"]), job_id=m["job_id"], reason=m["reason"],
                      first_at=m["first_at"], last_at=m["last_at"], count=int(m["count"]),
                      node_id=m["node_id"], scope_node=m["scope"] or None,
                      created_at=m["created_at"], detail=m["detail"])


class SkipLedger(SqlConnection):
    """The skip ledger of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def record_skips(self, runs: Sequence[SkipRun], *, now: datetime | None = None
                     ) -> list[bool]:
        if not runs:
            return []
        stamp = self._raw.ts(now_or(now))
        out = [False] * len(runs)
        # In key order: nodes that decided the same instants (each node's core skips the
        # instants of a late set at start) insert the same keys, and in one order they
        # wait for each other instead of deadlocking (bench_scale cluster, 3 nodes).
        order = sorted(range(len(runs)), key=lambda i: (
            runs[i].job_id, runs[i].scope_node or "", runs[i].first_at))
        with self._raw_write() as cur:
            for i in order:
                r = runs[i]
                if r.count < 1:
                    raise ValueError(f"a skip run needs count >= 1, got {r.count}")
                first = self._raw.ts(require_aware(r.first_at, "first_at"))
                last = self._raw.ts(require_aware(r.last_at, "last_at"))
                scope = r.scope_node or ""
                cur.execute(self._raw.sql(_RAN), (r.job_id, scope, first, last))
                if cur.fetchone() is not None:
                    continue
                cur.execute(self._raw.sql(_INSERT), (r.job_id, scope, first, last, r.count,
                                                     r.reason, r.node_id, stamp, r.detail))
                if cur.rowcount == 1:
                    out[i] = True
                    continue
                cur.execute(self._raw.sql(_EXTEND), (last, r.count, r.job_id, scope, first,
                                                     last))
                out[i] = cur.rowcount == 1
        return out

    def list_skips(
        self,
        *,
        job_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = 50,
    ) -> list[SkipRecord]:
        with self._raw_read() as cur:
            return self._raw.list_skips(cur, job_id=job_id, since=since, until=until,
                                        limit=limit)

    def skips_covering(self, job_id: str, at: datetime) -> list[SkipRecord]:
        with self._raw_read() as cur:
            return self._raw.skips_covering(cur, job_id, at)


__all__ = ["SkipLedger"]
