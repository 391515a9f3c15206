"""Finding ``late`` occurrences (docs/behaviour.md#retention-notifications-and-metrics):
``late_after`` passed since the planned instant and the occurrence has not started.

Runs on the notification thread, about once a second. Per job with ``late_after`` (and
``late`` among its events), the planned instants whose ``late_after`` passed since the
last pass are checked: one this node started, skipped or saw run elsewhere is not late
(``handled``, kept by the scheduler thread); otherwise, for a job with rows, the store
says whether any node started it or recorded it skipped (a ``pending`` first attempt
written ahead for a fire that waits is not a start). What is left is late; the
caller makes sure only one node of the cluster sends it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from cronctl.core import needs_store, schedule_for
from cronctl.core.timing import ScheduleLike
from cronctl.jobs.model import JobDefinition
from cronctl.store.base import Store

MAX_PER_PASS = 1000  # instants per job and pass; beyond that the check skips ahead


class LateChecker:
    def __init__(self, *, store: Store, handled: Mapping[str, datetime],
                 occurrence_id: Callable[[str, datetime], str]) -> None:
        self._store = store
        self._handled = handled
        self._occ = occurrence_id
        self._next: dict[str, datetime | None] = {}  # job id -> next instant to check
        self._schedules: dict[str, tuple[JobDefinition, ScheduleLike]] = {}
        # Instants planned before the scheduler started (or, for a job added by a reload,
        # before it was added) are the misfire policy's, not late: they were never due here.
        self._since: datetime | None = None

    def start(self, now: datetime) -> None:
        self._since = now

    def due(self, jobs: Sequence[JobDefinition], now: datetime) -> list[tuple[JobDefinition,
                                                                               datetime]]:
        """The ``(job, planned)`` found late by ``now``; ``jobs`` are the jobs to watch."""
        late: list[tuple[JobDefinition, datetime]] = []
        since, self._since = self._since or now, None
        seen: set[str] = set()
        for job in jobs:
            assert job.late_after is not None
            seen.add(job.id)
            schedule = self._schedule(job)
            limit = now - job.late_after
            nxt = self._next[job.id] if job.id in self._next else _first(schedule, since)
            checked = 0
            while nxt is not None and nxt <= limit:
                if checked == MAX_PER_PASS:  # far behind (a suspended host): skip ahead
                    nxt = schedule.next_after(limit)
                    break
                checked += 1
                if self._not_started(job, nxt):
                    late.append((job, nxt))
                nxt = schedule.next_after(nxt)
            self._next[job.id] = nxt
        for gone in set(self._next) - seen:
            del self._next[gone]
            self._schedules.pop(gone, None)
        return late

    def _not_started(self, job: JobDefinition, planned: datetime) -> bool:
        handled = self._handled.get(job.id)
        if handled is not None and handled >= planned:
            return False
        if not needs_store(job) or not self._store.persistent:
            return True
        rows = self._store.executions_of_occurrence(job.id, self._occ(job.id, planned))
        if any(r.occurrence_began for r in rows):
            return False  # started (here or on another node), or ended
        # A row written ahead for a fire still waiting (a slot, a serial group, a parent)
        # is not a start: the wait is exactly what late_after is there to point out.
        return not self._store.skips_covering(job.id, planned)

    def _schedule(self, job: JobDefinition) -> ScheduleLike:
        got = self._schedules.get(job.id)
        if got is None or got[0] is not job:
            if got is not None and got[0].schedule_text != job.schedule_text:
                self._next.pop(job.id, None)  # a new schedule: start from now
            got = self._schedules[job.id] = (job, schedule_for(job))
        return got[1]


def _first(schedule: ScheduleLike, after: datetime) -> datetime | None:
    return schedule.next_after(after - timedelta(microseconds=1))
