"""Schedule rows: definition snapshots, cursors, the paused flag and fencing counters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from cronctl.jobs.model import JobDefinition
from cronctl.store.connection import SqlConnection, now_or
from cronctl.store.records import ScheduleState
from cronctl.store.snapshot import definition_snapshot, dumps

_SAVE_CHUNK = 500  # (its ids in one IN list: within SQLite's least variable limit, 999)


class Schedules(SqlConnection):
    """The schedule half of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def save_definitions(
        self, jobs: Sequence[JobDefinition], *, now: datetime | None = None
    ) -> None:
        at = now_or(now)
        # In chunks, a transaction each: 100,000 snapshots built at once held ~80 MB of
        # JSON text (which the process kept as RSS afterwards), and one transaction over
        # them all held SQLite's write lock against the fire path for seconds.
        # An unchanged definition is only read, never written: every node of a cluster
        # saves every job's at start, and a write locks the job's row, which the fire
        # path's fencing tokens and cursors also lock (three nodes starting with 100,000
        # jobs made those wait past the statement timeout).
        for start in range(0, len(jobs), _SAVE_CHUNK):
            rows = sorted((job.id, dumps(definition_snapshot(job)))
                          for job in jobs[start:start + _SAVE_CHUNK])
            with self._raw_read() as cur:
                saved = self._raw.saved_definitions(cur, [job_id for job_id, _ in rows])
            rows = [r for r in rows if saved.get(r[0]) != r[1]]
            if rows:
                with self._raw_write() as cur:
                    self._raw.save_definitions(cur, rows, at)

    def get_schedule(self, job_id: str) -> ScheduleState | None:
        with self._raw_read() as cur:
            return self._raw.get_schedule(cur, job_id)

    def list_schedules(self) -> list[ScheduleState]:
        with self._raw_read() as cur:
            return self._raw.list_schedules(cur)

    def advance_cursor(self, job_id: str, planned_at: datetime) -> datetime:
        with self._raw_write() as cur:
            self._raw.advance_cursors(cur, {job_id: planned_at})
            cursor = self._raw.cursor_of(cur, job_id)
        assert cursor is not None
        return cursor

    def advance_cursors(
        self, cursors: Mapping[str, datetime], *, node_id: str | None = None,
        node_cursors: Mapping[str, datetime] | None = None,
    ) -> None:
        if not cursors and not node_cursors:
            return
        with self._raw_write() as cur:
            self._raw.advance_cursors(cur, cursors)
            if node_cursors:
                if node_id is None:
                    raise ValueError("node_cursors need the node_id they belong to")
                self._raw.advance_node_cursors(cur, node_id, node_cursors)

    def node_cursors(self, node_id: str) -> dict[str, datetime]:
        with self._raw_read() as cur:
            return self._raw.node_cursors(cur, node_id)

    def job_states(self) -> dict[str, tuple[datetime | None, bool]]:
        with self._raw_read() as cur:
            return self._raw.job_states(cur)

    def paused_job_ids(self) -> set[str]:
        with self._raw_read() as cur:
            return self._raw.paused_job_ids(cur)

    def set_paused(self, job_id: str, paused: bool) -> None:
        with self._raw_write() as cur:
            self._raw.set_paused(cur, job_id, paused)

    def next_fencing_token(self, job_id: str) -> int:
        with self._raw_write() as cur:
            return self._raw.next_fencing_token(cur, job_id)


__all__ = ["Schedules"]
