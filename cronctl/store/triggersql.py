"""The statements on trigger requests, on a DB-API cursor: one implementation, run by the
SQL store (:class:`cronctl.store.triggers.TriggerRequests`, on the cursor of an
SQLAlchemy connection) and by :mod:`cronctl.store.reader` (plain ``sqlite3`` /
``psycopg``), so that ``cronctl trigger`` queues its request and waits for it without
importing SQLAlchemy.

Standard library only, like :mod:`cronctl.store.reads`, whose placeholders and instant
codec these statements use.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cronctl.jobs.model import Origin
from cronctl.store.reads import ReadQueries, decoded, read_instant
from cronctl.store.records import TriggerRequest, require_aware

# ``taken_by`` of a request that waits for its parents (``replay``/``trigger --chain``):
# not NULL, so no scheduler takes it, until a dependents' poll releases it.
CHAIN_WAIT = ""
TRIGGER_COLUMNS = ("id", "job_id", "origin", "scheduled_at", "requested_at", "taken_by",
                   "taken_at", "execution_id", "error", "done")
_TRIGGERS = f"SELECT {', '.join(TRIGGER_COLUMNS)} FROM trigger_requests"
# At most one request per (job, planned instant): the unique index of the table.
_ONE_PER_INSTANT = "ON CONFLICT (job_id, scheduled_at)"
_ENQUEUE = ("INSERT INTO trigger_requests (job_id, origin, scheduled_at, requested_at) "
            f"VALUES (?, ?, ?, ?) {_ONE_PER_INSTANT} DO NOTHING RETURNING id")
# A dependent's occurrence waits for its parents (taken_by = CHAIN_WAIT). An instant
# decided without running (an upstream skip: done, no execution) waits again; never one
# that ran, nor one already waiting or taken.
_WAIT_CHAIN = (
    "INSERT INTO trigger_requests (job_id, origin, scheduled_at, requested_at, taken_by) "
    f"VALUES (?, ?, ?, ?, ?) {_ONE_PER_INSTANT} DO UPDATE SET "
    "taken_by = excluded.taken_by, taken_at = NULL, done = ?, error = NULL, "
    "requested_at = excluded.requested_at, origin = excluded.origin "
    "WHERE trigger_requests.done = ? AND trigger_requests.execution_id IS NULL RETURNING id")


class TriggerQueries(ReadQueries):
    """The read queries and the trigger requests' statements in one dialect; each method
    takes an open DB-API cursor (a statement that writes: in the caller's transaction, or
    its own in autocommit)."""

    @staticmethod
    def trigger(r: Sequence[Any]) -> TriggerRequest:
        """A row of :data:`TRIGGER_COLUMNS` as a record."""
        requested_at = read_instant(r[4])
        assert requested_at is not None  # NOT NULL
        return TriggerRequest(
            id=int(r[0]), job_id=r[1], origin=Origin(r[2]), scheduled_at=read_instant(r[3]),
            requested_at=requested_at, taken_by=r[5], taken_at=read_instant(r[6]),
            execution_id=None if r[7] is None else int(r[7]), error=r[8], done=bool(r[9]))

    def select_triggers(self, cur: Any, where: str, params: Sequence[Any],
                        order: str = "id") -> list[TriggerRequest]:
        """The requests matching ``where`` (``?`` placeholders), ordered by ``order``."""
        return decoded(self._rows(cur, f"{_TRIGGERS} WHERE {where} ORDER BY {order}", params),
                       self.trigger, "trigger_requests")

    def get_trigger(self, cur: Any, request_id: int) -> TriggerRequest | None:
        found = self.select_triggers(cur, "id = ?", (request_id,))
        return found[0] if found else None

    def list_triggers(self, cur: Any, job_id: str, *, since: datetime, until: datetime
                      ) -> list[TriggerRequest]:
        """Requests of ``job_id`` for a planned instant in ``[since, until]``, oldest
        instant first (through the unique (job_id, scheduled_at) index)."""
        return self.select_triggers(
            cur, "job_id = ? AND scheduled_at >= ? AND scheduled_at <= ?",
            (job_id, self.ts(require_aware(since, "since")),
             self.ts(require_aware(until, "until"))), order="scheduled_at")

    def waiting_triggers(self, cur: Any, limit: int) -> list[TriggerRequest]:
        """Requests no scheduler has acted on yet (not done, no execution), oldest first,
        at most ``limit`` (through the (done, requested_at) index)."""
        return self.select_triggers(
            cur, "done = ? AND execution_id IS NULL", (False,),
            order=f"requested_at, id LIMIT {int(limit)}")

    def untaken_triggers(self, cur: Any) -> list[tuple[int, str]]:
        """(id, job id) of every request no scheduler took, oldest first."""
        cur.execute("SELECT id, job_id FROM trigger_requests WHERE taken_by IS NULL ORDER BY id")
        return [(int(i), j) for i, j in cur.fetchall()]

    def enqueue_trigger(self, cur: Any, job_id: str, origin: Origin,
                        scheduled_at: datetime | None, requested_at: datetime) -> int | None:
        """Insert a request; ``None`` when (job, ``scheduled_at``) already has one."""
        planned = None if scheduled_at is None else self.ts(
            require_aware(scheduled_at, "scheduled_at"))
        rows = self._rows(cur, _ENQUEUE, (job_id, Origin(origin).value, planned,
                                          self.ts(require_aware(requested_at, "now"))))
        return int(rows[0][0]) if rows else None

    def wait_chain(self, cur: Any, job_id: str, scheduled_at: datetime, requested_at: datetime
                   ) -> bool:
        """The dependent's request at ``scheduled_at`` waits for its parents (taken by
        :data:`CHAIN_WAIT`); False when nothing changed."""
        rows = self._rows(cur, _WAIT_CHAIN, (
            job_id, Origin.DEPENDENCY.value, self.ts(require_aware(scheduled_at, "scheduled_at")),
            self.ts(require_aware(requested_at, "now")), CHAIN_WAIT, False, True))
        return bool(rows)


__all__ = ["CHAIN_WAIT", "TRIGGER_COLUMNS", "TriggerQueries"]
