"""Guard locks (single_instance overlap, serial groups) and fencing tokens, taken in the
transaction that inserts an execution's row: one dialect's statements on a DB-API cursor.

A wake of a busy cluster inserts hundreds of single_instance rows at once, each with its
job's lock and a fencing token. Taken row by row that was ~5 round trips a row (3 nodes
and 1,000 such jobs a second: ~7,000 statements a second on PostgreSQL), so rows whose
only guard is their job's lock go through :meth:`GuardQueries._insert_batch`: a few
multi-row statements for the whole wake. Rows with a serial group keep the row-by-row
path (its FIFO across nodes asks per row)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from cronctl.jobs.model import Origin
from cronctl.store.records import require_aware
from cronctl.store.rowsql import RowQueries
from cronctl.store.writerecords import Fenced, NewExecution

_LOCK_INSERT = ('INSERT INTO guard_locks ("key", execution_id, node_id, acquired_at) '
                'VALUES (?, ?, ?, ?) ON CONFLICT ("key") DO NOTHING')
# Serial-group fairness (see tables.group_waiters): an older live waiter of the group
# keeps the group's free lock from anyone else; a blocked fire registers (or refreshes)
# itself; the fire that takes the lock leaves the queue. A dead node's waiters are
# dropped with its locks; one that stopped retrying (it expired, or its job was removed)
# stops counting after WAITER_TTL, measured against the asking node's clock (a clock
# that is off shortens or stretches that, never blocks a group for good).
WAITER_TTL = timedelta(seconds=5)
_WAITER_OLDER = (
    'SELECT 1 FROM group_waiters w WHERE w."key" = ? AND w.seen_at > ? '
    "AND (w.planned < ? OR (w.planned = ? AND w.job_id < ?)) LIMIT 1"
)
_WAITER_UPSERT = (
    'INSERT INTO group_waiters ("key", job_id, planned, node_id, seen_at) '
    'VALUES (?, ?, ?, ?, ?) ON CONFLICT ("key", job_id, planned) '
    "DO UPDATE SET node_id = excluded.node_id, seen_at = excluded.seen_at"
)
_WAITER_DONE = 'DELETE FROM group_waiters WHERE "key" = ? AND job_id = ? AND planned = ?'
_WAITERS_GONE = 'DELETE FROM group_waiters WHERE "key" = ? AND seen_at <= ?'
# A scheduled instant that a skip record covers was decided already: a peer that saw the
# job's guard held (its last final status still waiting for the database) recorded it
# ``overlap``. The node that inserts the instant's row late, its guard now free, must not
# run it too; the reverse order is refused in :mod:`cronctl.store.skips`.
_SKIPS_SINCE = ("SELECT job_id, scope, first_at, last_at FROM skip_records "
                "WHERE last_at >= ? AND job_id IN ({ids})")
_LOCKS_INSERT = ('INSERT INTO guard_locks ("key", execution_id, node_id, acquired_at) '
                 'VALUES {values} ON CONFLICT ("key") DO NOTHING RETURNING "key"')
_TOKENS = ("INSERT INTO job_schedules (job_id, fencing_token) VALUES {values} "
           "ON CONFLICT (job_id) DO UPDATE SET fencing_token = job_schedules.fencing_token + 1 "
           "RETURNING job_id, fencing_token")
GROUP_PREFIX = "group:"
LOCK_CHUNK = 1000
# Rows of the batch path per statement: 4 parameters each stay within SQLite's least
# SQLITE_MAX_VARIABLE_NUMBER (999).
BATCH_CHUNK = 200


def _first_scheduled(r: NewExecution) -> bool:
    """A scheduled instant's first attempt: a skip record of its instant decides it."""
    return r.attempt == 1 and Origin(r.origin) is Origin.CRON


class GuardQueries(RowQueries):
    """Rows inserted together with their guard locks and fencing tokens."""

    def insert_guarded(self, cur: Any, rows: Sequence[NewExecution]
                       ) -> list[int | Fenced | str | None]:
        """See :meth:`cronctl.store.base.Store.insert_guarded`. Rows without locks take the
        plain batch path; rows whose one lock is their job's take :meth:`_insert_batch`;
        each other row with locks is inserted, then its locks are taken in key order
        (one order for every node), and both are undone if a key is held. A fenced row's
        token is taken last: while its lock is held no other transaction can take one
        for the job (on PostgreSQL the others wait on the lock's key, not on the token),
        so the job's tokens rise in the order its lock changes hands."""
        out: list[int | Fenced | str | None] = [None] * len(rows)
        plain = [i for i, r in enumerate(rows) if not r.locks and not r.fenced]
        if plain:
            for i, new_id in zip(plain, self.insert_executions(cur, [rows[i] for i in plain]),
                                 strict=True):
                out[i] = new_id
        batch = [i for i, r in enumerate(rows)
                 if len(r.locks) == 1 and not r.locks[0].startswith(GROUP_PREFIX)]
        if len({rows[i].locks[0] for i in batch}) != len(batch):
            batch = []  # one job twice in a wake (a catch-up beside its instant): in turn
        single = set(batch)
        # Groups first ("group:" sorts before "job:"), as every node does.
        guarded = sorted((i for i, r in enumerate(rows)
                          if (r.locks or r.fenced) and i not in single),
                         key=lambda i: sorted(rows[i].locks))
        for i in guarded:
            out[i] = self._insert_one(cur, rows[i])
        if batch:
            for i, got in zip(batch, self._insert_batch(cur, [rows[i] for i in batch]),
                              strict=True):
                out[i] = got
        return out

    def _insert_one(self, cur: Any, r: NewExecution) -> int | Fenced | str | None:
        [new_id] = self.insert_executions(cur, [r])
        if new_id is None:
            return None
        held = self.take_locks(cur, new_id, r.node_id, r.locks,
                               require_aware(r.created_at or datetime.now(UTC), "now"),
                               waiter=(r.job_id, self.ts(r.scheduled_at)))
        if held is not None:
            self._delete_rows(cur, [new_id])
            return held
        if _first_scheduled(r) and self._skipped_instants(cur, [r]):
            self.release_executions(cur, [new_id])
            self._delete_rows(cur, [new_id])
            return None
        if r.fenced:
            token = self.next_fencing_token(cur, r.job_id)
            self._set_tokens(cur, [(new_id, token)])
            return Fenced(new_id, token)
        return new_id

    def _insert_batch(self, cur: Any, rows: Sequence[NewExecution]
                      ) -> list[int | Fenced | str | None]:
        """Rows whose one guard is their own job's lock (distinct jobs), as
        :meth:`_insert_one` would do them in key order, in a few statements: the rows; the
        locks of those won (in key order); the rows whose lock is held are deleted; those
        whose instant a skip record covers are undone; the fenced rows' tokens, taken
        after every lock."""
        out: list[int | Fenced | str | None] = [None] * len(rows)
        # the rows this caller won, in key order: index -> new row id
        won = {i: new_id for i, new_id in sorted(
            ((i, new_id) for i, new_id in enumerate(self.insert_executions(cur, rows))
             if new_id is not None), key=lambda pair: rows[pair[0]].locks[0])}
        if not won:
            return out
        now = datetime.now(UTC)
        taken = self._take_job_locks(cur, [(rows[i].locks[0], eid, rows[i].node_id,
                                            self.ts(rows[i].created_at or now))
                                           for i, eid in won.items()])
        held = [i for i in won if rows[i].locks[0] not in taken]
        if held:
            self._delete_rows(cur, [won.pop(i) for i in held])
        for i in held:
            out[i] = rows[i].locks[0]
        decided = self._skipped_instants(cur, [rows[i] for i in won
                                               if _first_scheduled(rows[i])])
        undone = [won.pop(i) for i in list(won) if (
            rows[i].job_id, rows[i].scope_node or "", self.ts(rows[i].scheduled_at)) in decided]
        if undone:
            self.release_executions(cur, undone)
            self._delete_rows(cur, undone)
        fenced = [i for i in won if rows[i].fenced]
        tokens = self._take_tokens(cur, sorted(rows[i].job_id for i in fenced))
        if fenced:
            self._set_tokens(cur, [(won[i], tokens[rows[i].job_id]) for i in fenced])
        for i, eid in won.items():
            out[i] = Fenced(eid, tokens[rows[i].job_id]) if rows[i].fenced else eid
        return out

    def _take_job_locks(self, cur: Any, locks: Sequence[tuple[str, int, str, Any]]
                        ) -> set[str]:
        """Insert the locks (in the order given: key order); the keys this caller took."""
        taken: set[str] = set()
        for start in range(0, len(locks), BATCH_CHUNK):
            chunk = locks[start:start + BATCH_CHUNK]
            values = ", ".join(["(?, ?, ?, ?)"] * len(chunk))
            cur.execute(self.sql(_LOCKS_INSERT.format(values=values)),
                        [v for lock in chunk for v in lock])
            taken.update(str(key) for (key,) in cur.fetchall())
        return taken

    def _skipped_instants(self, cur: Any, rows: Sequence[NewExecution]
                          ) -> set[tuple[str, str, Any]]:
        """(job, scope, planned instant as bound) of those ``rows`` whose instant a skip
        record covers (see :data:`_SKIPS_SINCE`), in one query per chunk."""
        out: set[tuple[str, str, Any]] = set()
        for start in range(0, len(rows), BATCH_CHUNK):
            chunk = rows[start:start + BATCH_CHUNK]
            wanted = {(r.job_id, r.scope_node or "", self.ts(r.scheduled_at)) for r in chunk}
            since = min(at for _, _, at in wanted)
            ids = sorted({r.job_id for r in chunk})
            cur.execute(self.sql(_SKIPS_SINCE.format(ids=", ".join("?" * len(ids)))),
                        [since, *ids])
            for job_id, scope, first, last in cur.fetchall():
                out.update(w for w in wanted
                           if w[0] == job_id and w[1] == scope and first <= w[2] <= last)
        return out

    def _take_tokens(self, cur: Any, job_ids: Sequence[str]) -> dict[str, int]:
        """The next fencing token of each job (distinct, in key order)."""
        tokens: dict[str, int] = {}
        for start in range(0, len(job_ids), BATCH_CHUNK):
            chunk = job_ids[start:start + BATCH_CHUNK]
            cur.execute(self.sql(_TOKENS.format(values=", ".join(["(?, 1)"] * len(chunk)))),
                        list(chunk))
            tokens.update((str(j), int(t)) for j, t in cur.fetchall())
        return tokens

    def _set_tokens(self, cur: Any, pairs: Sequence[tuple[int, int]]) -> None:
        for start in range(0, len(pairs), BATCH_CHUNK):
            chunk = pairs[start:start + BATCH_CHUNK]
            cases = " ".join(["WHEN ? THEN ?"] * len(chunk))
            marks = ", ".join("?" * len(chunk))
            cur.execute(self.sql(f"UPDATE job_executions SET fencing_token = CASE id {cases} "
                                 f"END WHERE id IN ({marks})"),
                        [*(v for pair in chunk for v in pair), *(eid for eid, _ in chunk)])

    def _delete_rows(self, cur: Any, execution_ids: Sequence[int]) -> None:
        self._delete_in(cur, "DELETE FROM job_executions WHERE id", execution_ids)

    def _delete_in(self, cur: Any, delete: str, ids: Sequence[int]) -> None:
        """``delete`` (``DELETE FROM t WHERE c``) ``IN`` ``ids``, in chunks."""
        for start in range(0, len(ids), LOCK_CHUNK):
            chunk = ids[start:start + LOCK_CHUNK]
            cur.execute(self.sql(f"{delete} IN ({', '.join('?' * len(chunk))})"), tuple(chunk))

    def take_locks(self, cur: Any, execution_id: int, node_id: str, keys: Sequence[str],
                   at: datetime, *, waiter: tuple[str, Any] | None = None) -> str | None:
        """Take every key for ``execution_id``; on the first one held elsewhere, drop the
        ones taken and return that key. A serial group's key counts as held while an
        older fire of the group waits for it (FIFO across nodes); a fire that finds its
        group held joins that queue, and leaves it when it takes the group. ``waiter``:
        the row's (job id, planned instant as bound), when the caller has them."""
        stamp, gone = self.ts(at), self.ts(at - WAITER_TTL)
        for key in sorted(keys):
            if key.startswith(GROUP_PREFIX):
                waiter = waiter or self._waiter(cur, execution_id)
                taken = self._take_group(cur, key, execution_id, node_id, stamp, gone, waiter)
            else:
                cur.execute(self.sql(_LOCK_INSERT), (key, execution_id, node_id, stamp))
                taken = cur.rowcount == 1
            if not taken:
                self.release_executions(cur, [execution_id])
                return key
        return None

    def _take_group(self, cur: Any, key: str, execution_id: int, node_id: str, stamp: Any,
                    gone: Any, waiter: tuple[str, Any]) -> bool:
        job_id, planned = waiter
        cur.execute(self.sql(_WAITERS_GONE), (key, gone))  # (so the table stays small)
        cur.execute(self.sql(_WAITER_OLDER), (key, gone, planned, planned, job_id))
        taken = cur.fetchone() is None
        if taken:
            cur.execute(self.sql(_LOCK_INSERT), (key, execution_id, node_id, stamp))
            taken = cur.rowcount == 1
        if taken:
            cur.execute(self.sql(_WAITER_DONE), (key, job_id, planned))
        else:
            cur.execute(self.sql(_WAITER_UPSERT), (key, job_id, planned, node_id, stamp))
        return taken

    def _waiter(self, cur: Any, execution_id: int) -> tuple[str, Any]:
        """(job id, planned instant) of an execution row: its place in a group's queue."""
        cur.execute(self.sql("SELECT job_id, scheduled_at FROM job_executions WHERE id = ?"),
                    (execution_id,))
        job_id, planned = cur.fetchone()
        return str(job_id), planned

    def release_executions(self, cur: Any, execution_ids: Sequence[int]) -> None:
        self._delete_in(cur, "DELETE FROM guard_locks WHERE execution_id", execution_ids)

    def next_fencing_token(self, cur: Any, job_id: str) -> int:
        return self._take_tokens(cur, [job_id])[job_id]


__all__ = ["GROUP_PREFIX", "WAITER_TTL", "GuardQueries"]
