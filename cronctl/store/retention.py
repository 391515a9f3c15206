"""Retention: deleting what ``[retention]`` no longer keeps
(docs/behaviour.md#retention-notifications-and-metrics).

A pass is many small transactions (:meth:`Retention.prune_step`), each deleting at most
``batch`` rows, so that a pass over millions of rows never holds SQLite's write lock (or
PostgreSQL row locks) for more than milliseconds at a time.

The executions phase walks ``job_executions`` once, oldest planned first, through the
index on ``scheduled_at`` (ties by id), from where the previous step stopped: rows
planned AND ended before the cutoff that are not live. Deleting in that order empties
whole pages (rows and log lines were written in about that order); deleting job by job
would touch every page once per job. A row is kept if it is one of the newest
``keep_last`` finished rows of its job (by planned time, then id: the order of
``cronctl history``): the oldest of those is read once per job and pass (an index seek
on ``(job_id, scheduled_at)``) and carried in :class:`PruneProgress`. A cached boundary
stays safe: new finished rows can only make it newer, and passes never delete above it.
Candidates are read outside the write transaction; the delete checks the status again,
and a finished row never becomes live again, so a concurrent pass (another node,
``cronctl prune``) at worst deletes the same rows twice. Skip records and done trigger
requests follow, oldest first.

Indexes: ``job_executions (scheduled_at)`` and ``(job_id, scheduled_at)`` (both older
than retention, so the fire path pays for no new index), ``skip_records (last_at)``,
``trigger_requests (done, requested_at)`` (revision 0004), and ``job_logs``' primary
key ``(execution_id, seq)`` for the lines, counted and deleted one execution at a time:
PostgreSQL plans an IN list of ids against a table without statistics (fresh, or with
autovacuum off) as a full scan, an equality on the key's first column never.

SQLite reuses the pages of deleted rows for new ones, so at a steady state the file stops
growing (measured: ``bench/bench_retention.py``). To also shrink it after a large
deletion (a first prune of a long history, a shorter retention), a file created by this
version has ``auto_vacuum = INCREMENTAL`` (see :mod:`cronctl.store.engine`) and
:meth:`Retention.reclaim_space` gives the free pages beyond a slack back to the file
system, a bounded number per transaction. PostgreSQL's autovacuum makes the space of
deleted rows reusable in the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cronctl.store.connection import LIVE, SqlConnection
from cronctl.store.reads import read_instant
from cronctl.store.records import require_aware
from cronctl.store.writerecords import (
    PRUNE_PHASES,
    PruneCounts,
    PrunePolicy,
    PruneProgress,
    PruneStep,
)

DEFAULT_BATCH = 2000  # rows deleted per transaction (executions + log lines, or records)
DRY_RUN_ROWS = 20_000  # executions a dry-run step looks at
VACUUM_PAGES = 2000  # pages (4 KiB each by default) given back per reclaim step

_NOT_LIVE = "status NOT IN (?, ?)"
_LINES = "(SELECT COUNT(*) FROM job_logs l WHERE l.execution_id = e.id)"
_WALK = (f"SELECT id, job_id, scheduled_at, {_LINES} FROM job_executions e "
         f"WHERE scheduled_at < ? AND finished_at < ? AND {_NOT_LIVE}{{after}} "
         "ORDER BY scheduled_at, id LIMIT ?")
_AFTER = " AND scheduled_at >= ? AND (scheduled_at > ? OR id > ?)"
_KEPT = (f"SELECT scheduled_at, id FROM job_executions WHERE job_id = ? AND {_NOT_LIVE} "
         "ORDER BY scheduled_at DESC, id DESC LIMIT 1 OFFSET ?")
_LOCK = ('INSERT INTO guard_locks ("key", execution_id, node_id, acquired_at) '
         'VALUES (?, 0, ?, ?) ON CONFLICT ("key") DO NOTHING')

Position = tuple[datetime, int]  # (scheduled_at, id)


def _ids(n: int) -> str:
    return ", ".join("?" * n)


class Retention(SqlConnection):
    """Retention of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def prune_step(self, policy: PrunePolicy, at: PruneProgress | None = None, *,
                   batch: int = DEFAULT_BATCH, dry_run: bool = False) -> PruneStep:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if policy.keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {policy.keep_last}")
        at = at or PruneProgress()
        if at.phase == "executions":
            return self._executions(policy, at, batch, dry_run)
        if at.phase == "skipped":
            cutoff = require_aware(policy.skipped_before, "skipped_before")
            n = self._oldest("skip_records", "last_at < ?", "last_at", (self._raw.ts(cutoff),),
                             batch, dry_run)
            return self._then("skipped", PruneCounts(skipped=n), n, batch, dry_run)
        if at.phase == "trigger_requests":
            cutoff = require_aware(policy.triggers_before, "triggers_before")
            n = self._oldest("trigger_requests", "done = ? AND requested_at < ?", "requested_at",
                             (True, self._raw.ts(cutoff)), batch, dry_run)
            return self._then("trigger_requests", PruneCounts(trigger_requests=n), n, batch,
                              dry_run)
        raise ValueError(f"unknown prune phase {at.phase!r} (one of {', '.join(PRUNE_PHASES)})")

    def prune(self, policy: PrunePolicy, *, batch: int = DEFAULT_BATCH,
              dry_run: bool = False) -> PruneCounts:
        total = PruneCounts()
        at: PruneProgress | None = PruneProgress()
        while at is not None:
            step = self.prune_step(policy, at, batch=batch, dry_run=dry_run)
            total += step.counts
            at = step.next
        return total

    # --- executions ------------------------------------------------------------------------

    def _executions(self, policy: PrunePolicy, at: PruneProgress, batch: int,
                    dry_run: bool) -> PruneStep:
        cutoff = self._raw.ts(require_aware(policy.executions_before, "executions_before"))
        kept = dict(at.kept)
        position = at.after
        limit = DRY_RUN_ROWS if dry_run else batch
        counts = PruneCounts()
        chosen: list[tuple[int, int]] = []  # (id, log lines), oldest first
        rows = 0
        with self._raw_read() as cur:
            candidates = self._walk(cur, cutoff, position, limit)
            examined = 0
            for eid, job, planned, lines in candidates:
                if not self._kept(cur, kept, job, planned, eid, policy.keep_last):
                    if dry_run:
                        counts += PruneCounts(executions=1, log_lines=lines)
                    elif chosen and rows + lines + 1 > batch:
                        break  # the next step starts with this one
                    else:
                        chosen.append((eid, lines))
                        rows += lines + 1
                        if rows > batch:  # alone more lines than a batch: its lines first
                            break
                position = (planned, eid)
                examined += 1
                if rows >= batch:
                    break
        done = examined == len(candidates) < limit
        if chosen:
            counts = self._delete(chosen, batch)
        return PruneStep(counts, PruneProgress("skipped") if done
                         else PruneProgress("executions", position, kept))

    def _walk(self, cur: Any, cutoff: Any, after: Position | None, limit: int
              ) -> list[tuple[int, str, datetime, int]]:
        """``(id, job, planned, log lines)`` of up to ``limit`` rows past ``after``."""
        params: list[Any] = [cutoff, cutoff, *LIVE]
        if after is not None:
            planned = self._raw.ts(after[0])
            params += [planned, planned, after[1]]
        cur.execute(self._raw.sql(_WALK.format(after="" if after is None else _AFTER)),
                    (*params, limit))
        out: list[tuple[int, str, datetime, int]] = []
        for eid, job, planned, lines in cur.fetchall():
            when = read_instant(planned)
            assert when is not None
            out.append((int(eid), str(job), when, int(lines)))
        return out

    def _kept(self, cur: Any, kept: dict[str, Position | None], job: str, planned: datetime,
              eid: int, keep_last: int) -> bool:
        """Whether the row is one of the newest ``keep_last`` finished rows of ``job``
        (the oldest of those is looked up once per job and pass, in ``kept``)."""
        if keep_last == 0:
            return False
        if job not in kept:
            cur.execute(self._raw.sql(_KEPT), (job, *LIVE, keep_last - 1))
            row = cur.fetchone()
            when = None if row is None else read_instant(row[0])
            kept[job] = None if row is None or when is None else (when, int(row[1]))
        oldest = kept[job]
        return oldest is None or (planned, eid) >= oldest

    def _delete(self, chosen: list[tuple[int, int]], batch: int) -> PruneCounts:
        """Delete ``chosen`` with their lines (at most ``batch`` rows in all), or, when the
        first has more lines than that alone, ``batch`` of its lines."""
        raw = self._raw
        ids = [eid for eid, _ in chosen]
        with self._raw_write() as cur:
            if chosen[0][1] + 1 > batch:  # one execution with more lines than a batch
                eid = ids[0]
                cur.execute(raw.sql(
                    "DELETE FROM job_logs WHERE execution_id = ? AND seq IN (SELECT seq FROM "
                    "job_logs WHERE execution_id = ? ORDER BY seq LIMIT ?)"), (eid, eid, batch))
                return PruneCounts(log_lines=int(cur.rowcount))
            cur.executemany(raw.sql("DELETE FROM job_logs WHERE execution_id = ?"),
                            [(eid,) for eid in ids])
            lines_deleted = int(cur.rowcount)
            cur.execute(raw.sql(f"DELETE FROM job_executions WHERE id IN ({_ids(len(ids))}) "
                                f"AND {_NOT_LIVE}"), (*ids, *LIVE))
            return PruneCounts(executions=int(cur.rowcount), log_lines=lines_deleted)

    # --- skip records, trigger requests ------------------------------------------------------

    def _oldest(self, table: str, where: str, order: str, params: tuple[Any, ...],
                batch: int, dry_run: bool) -> int:
        """Delete (or count) the oldest rows of ``table`` matching ``where``, at most
        ``batch`` of them."""
        if dry_run:
            with self._raw_read() as cur:
                cur.execute(self._raw.sql(f"SELECT COUNT(*) FROM {table} WHERE {where}"),
                            params)
                return int(cur.fetchone()[0])
        with self._raw_write() as cur:
            cur.execute(self._raw.sql(
                f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {where} "
                f"ORDER BY {order} LIMIT ?)"), (*params, batch))
            return int(cur.rowcount)

    @staticmethod
    def _then(phase: str, counts: PruneCounts, n: int, batch: int, dry_run: bool) -> PruneStep:
        if not dry_run and n >= batch:
            return PruneStep(counts, PruneProgress(phase))  # more of this phase
        following = PRUNE_PHASES.index(phase) + 1
        after = PRUNE_PHASES[following] if following < len(PRUNE_PHASES) else None
        return PruneStep(counts, None if after is None else PruneProgress(after))

    # --- one pass at a time, and the file's free space ---------------------------------------

    def take_maintenance_lock(self, key: str, *, node_id: str, now: datetime) -> bool:
        stamp = self._raw.ts(require_aware(now, "now"))
        with self._raw_write() as cur:
            cur.execute(self._raw.sql(_LOCK), (key, node_id, stamp))
            if cur.rowcount == 1:
                return True
            cur.execute(self._raw.sql('SELECT node_id FROM guard_locks WHERE "key" = ?'), (key,))
            row = cur.fetchone()
            return row is not None and row[0] == node_id

    def release_maintenance_lock(self, key: str, *, node_id: str) -> bool:
        with self._raw_write() as cur:
            cur.execute(self._raw.sql('DELETE FROM guard_locks WHERE "key" = ? AND node_id = ?'),
                        (key, node_id))
            return bool(cur.rowcount == 1)

    def reclaim_space(self, *, max_pages: int = VACUUM_PAGES, keep_fraction: float = 0.0
                      ) -> int:
        if self.engine.dialect.name != "sqlite":
            return 0
        with self._raw_write() as cur:
            cur.execute("PRAGMA auto_vacuum")
            if int(cur.fetchone()[0]) != 2:  # 2 = INCREMENTAL
                return 0
            cur.execute("PRAGMA page_count")
            total = int(cur.fetchone()[0])
            cur.execute("PRAGMA freelist_count")
            before = int(cur.fetchone()[0])
            pages = min(max_pages, before - int((total - before) * keep_fraction))
            if pages <= 0:
                return 0
            # Python's sqlite3 steps a statement that returns no rows once, and each step
            # of incremental_vacuum frees one page: one execute per page.
            for _ in range(pages):
                cur.execute("PRAGMA incremental_vacuum")
            cur.execute("PRAGMA freelist_count")
            return before - int(cur.fetchone()[0])


__all__ = ["DEFAULT_BATCH", "Retention"]
